//! Positive counts (`-N`, `-n`, `-c`, `--count`) and non-negative counts.

const POSITIVE_FORMS: &str = "a positive whole number such as 1, 4 or 128";

/// Parse a strictly positive count. Refuses `0`, negative numbers, signs,
/// fractions and anything that is not decimal digits.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let n = parse_digits(s, POSITIVE_FORMS)?;
    if n == 0 {
        return Err(format!(
            "`0` is not a valid count: expected {POSITIVE_FORMS}"
        ));
    }
    Ok(n)
}

/// [`parse_count`] bounded to `u32` (process counts, PMIx `maxprocs`).
pub fn parse_count_u32(s: &str) -> Result<u32, String> {
    let n = parse_count(s)?;
    u32::try_from(n).map_err(|_| {
        format!(
            "`{s}` is too large: expected a positive whole number up to {}",
            u32::MAX
        )
    })
}

/// Parse a count that may be zero (e.g. `pdvm --scheduler-nodes 0`).
pub fn parse_nonneg_count(s: &str) -> Result<u64, String> {
    parse_digits(s, "a whole number such as 0, 4 or 128")
}

fn parse_digits(s: &str, forms: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("`{s}` is negative: expected {forms}"));
    }
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{s}` is not a count: expected {forms}"));
    }
    t.parse::<u64>()
        .map_err(|_| format!("`{s}` is too large: expected {forms} up to {}", u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::super::cases::{accepts, refuses};
    use super::*;

    #[test]
    fn accepts_positive() {
        accepts(parse_count, &[("1", 1), (" 42 ", 42)]);
        accepts(parse_count_u32, &[("4294967295", u32::MAX)]);
        accepts(parse_nonneg_count, &[("0", 0)]);
    }

    #[test]
    fn refuses_zero_negative_and_junk() {
        refuses(
            parse_count,
            &["0", "-1", "+3", "1.5", "", "ten", "99999999999999999999999"],
            "positive whole number",
        );
        assert!(parse_count_u32("4294967296").is_err());
        refuses(parse_nonneg_count, &["-2"], "negative");
    }
}
