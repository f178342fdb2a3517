//! Durations.
//!
//! **One rule for every duration flag** (`palloc -t`, `--warn-timeout`,
//! `pspawn --timeout`, `pwatch --timeout/--interval/--extend-by/--warn-timeout`):
//! a plain number is **minutes**, as in Slurm (`salloc -t 90`, `srun
//! --time`); seconds, hours and days are written with a unit (`45s`, `2h`,
//! `1d`) or in Slurm's clock forms. Only `--wait-to-connect` keeps
//! OpenPMIx's meaning (plain number = seconds), see [`parse_connect_secs`].
//!
//! Accepted forms (all yield whole seconds, must be greater than zero and at
//! most `u32::MAX` seconds):
//!
//! | form | meaning |
//! |------|---------|
//! | `90` | minutes |
//! | `45:00` | minutes:seconds |
//! | `2:00:00` | hours:minutes:seconds |
//! | `1-12` | days-hours |
//! | `1-12:30` | days-hours:minutes |
//! | `1-00:00:00` | days-hours:minutes:seconds |
//! | `2h`, `30m`, `45s`, `1d`, `1h30m` | suffixed units, combinable in d,h,m,s order |
//!
//! A time limit (`palloc -t`) also accepts `UNLIMITED` (or `infinite`), as
//! Slurm does: no time limit is asked for.

/// The one unit rule, quoted in every duration flag's help.
pub const DURATION_RULE: &str =
    "a plain number is minutes; or 45s, 30m, 2h, 1d, MM:SS, [D-]HH:MM:SS";

/// The valid forms, quoted in every error message.
pub const DURATION_FORMS: &str =
    "N (a plain number: minutes), MM:SS, H:MM:SS, D-H, D-H:MM, D-H:MM:SS, \
or units such as 45s, 30m, 2h, 1d, 1h30m";

/// Parse a time limit: a plain number means minutes (Slurm's habit).
pub fn parse_time_limit(s: &str) -> Result<u64, String> {
    parse_with_unit(s, 60)
}

/// A time limit that may be `UNLIMITED` (`palloc -t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeLimit(pub Option<u64>);

/// Parse `palloc -t`: any duration ([`parse_time_limit`]) or `UNLIMITED` /
/// `infinite` (any case), which asks for no time limit.
pub fn parse_time_limit_or_unlimited(s: &str) -> Result<TimeLimit, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite") {
        return Ok(TimeLimit(None));
    }
    parse_time_limit(s)
        .map(|v| TimeLimit(Some(v)))
        .map_err(|e| format!("{e}, or UNLIMITED"))
}

/// Parse a wait or interval: the same rule as every duration, a plain
/// number means minutes.
pub fn parse_duration_secs(s: &str) -> Result<u64, String> {
    parse_with_unit(s, 60)
}

/// Parse `--wait-to-connect`, OpenPMIx's flag: a plain number is seconds
/// there (its meaning upstream), units and clock forms as elsewhere.
pub fn parse_connect_secs(s: &str) -> Result<u64, String> {
    parse_with_unit(s, 1)
}

/// Parse a warning lead time for `PMIX_ALLOC_WARN_TIMEOUT` (a `uint32_t` of
/// seconds): any duration form, a plain number meaning minutes.
pub fn parse_warn_secs(s: &str) -> Result<u32, String> {
    let v = parse_duration_secs(s)?;
    u32::try_from(v).map_err(|_| too_long(s))
}

fn too_long(s: &str) -> String {
    format!("`{s}` is too long: the limit is {} seconds", u32::MAX)
}

fn bad(s: &str, why: &str) -> String {
    format!("`{s}` is not a valid duration ({why}): expected {DURATION_FORMS}")
}

fn parse_with_unit(s: &str, bare_unit: u64) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(bad(s, "empty"));
    }
    if t.starts_with('-') {
        return Err(bad(s, "negative"));
    }
    let secs = if t.bytes().all(|b| b.is_ascii_digit()) {
        number(s, t)?
            .checked_mul(bare_unit)
            .ok_or_else(|| too_long(s))?
    } else if t.bytes().any(|b| b.is_ascii_alphabetic()) {
        suffixed(s, t)?
    } else {
        clock(s, t)?
    };
    if secs == 0 {
        return Err(bad(s, "must be longer than zero"));
    }
    if secs > u64::from(u32::MAX) {
        return Err(too_long(s));
    }
    Ok(secs)
}

fn number(s: &str, field: &str) -> Result<u64, String> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(s, "fields must be whole numbers"));
    }
    field.parse::<u64>().map_err(|_| too_long(s))
}

/// `[D-]H:MM:SS`, `MM:SS`, `D-H`, `D-H:MM`.
fn clock(s: &str, t: &str) -> Result<u64, String> {
    let (days, rest, has_days) = match t.split_once('-') {
        Some((d, r)) => (number(s, d)?, r, true),
        None => (0, t, false),
    };
    let fields: Vec<&str> = rest.split(':').collect();
    let nums = fields
        .iter()
        .map(|f| number(s, f))
        .collect::<Result<Vec<u64>, String>>()?;
    // With days the fields are H[:MM[:SS]]; without, MM:SS or H:MM:SS.
    let (h, m, sec) = match (has_days, nums.as_slice()) {
        (true, [h]) => (*h, 0, 0),
        (true, [h, m]) => (*h, *m, 0),
        (true, [h, m, x]) => (*h, *m, *x),
        (false, [m, x]) => (0, *m, *x),
        (false, [h, m, x]) => (*h, *m, *x),
        _ => return Err(bad(s, "wrong number of fields")),
    };
    if has_days && h >= 24 {
        return Err(bad(s, "hours after a day count must be below 24"));
    }
    let leading_is_minutes = !has_days && nums.len() == 2;
    if sec >= 60 || (!leading_is_minutes && m >= 60) {
        return Err(bad(
            s,
            "minutes and seconds after the first field must be below 60",
        ));
    }
    days.checked_mul(86_400)
        .and_then(|d| h.checked_mul(3_600).and_then(|x| x.checked_add(d)))
        .and_then(|x| m.checked_mul(60).and_then(|y| y.checked_add(x)))
        .and_then(|x| x.checked_add(sec))
        .ok_or_else(|| too_long(s))
}

/// `1d`, `2h`, `30m`, `45s`, `1h30m`: units in strictly decreasing order.
fn suffixed(s: &str, t: &str) -> Result<u64, String> {
    let mut total: u64 = 0;
    let mut digits = String::new();
    let mut last_rank = u8::MAX;
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let (rank, unit) = match c.to_ascii_lowercase() {
            'd' => (3u8, 86_400u64),
            'h' => (2, 3_600),
            'm' => (1, 60),
            's' => (0, 1),
            _ => return Err(bad(s, "units are d, h, m and s")),
        };
        if digits.is_empty() {
            return Err(bad(s, "each unit needs a number before it"));
        }
        if rank >= last_rank {
            return Err(bad(s, "units must appear once each, largest first"));
        }
        last_rank = rank;
        let n = number(s, &digits)?;
        digits.clear();
        total = n
            .checked_mul(unit)
            .and_then(|v| v.checked_add(total))
            .ok_or_else(|| too_long(s))?;
    }
    if !digits.is_empty() {
        return Err(bad(s, "a number after the last unit has no unit"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::super::cases::{accepts, refuses};
    use super::*;

    #[test]
    fn time_limit_forms() {
        accepts(
            parse_time_limit,
            &[
                ("90", 5_400),
                ("45:00", 2_700),
                ("2:00:00", 7_200),
                ("1-00:00:00", 86_400),
                ("1-12", 129_600),
                ("1-12:30", 131_400),
                ("2h", 7_200),
                ("30m", 1_800),
                ("45s", 45),
                ("1d", 86_400),
                ("1h30m", 5_400),
                ("90:30", 5_430),
            ],
        );
    }

    #[test]
    fn one_rule_for_plain_numbers() {
        accepts(
            parse_duration_secs,
            &[("90", 5_400), ("90s", 90), ("2m", 120)],
        );
        accepts(parse_warn_secs, &[("5", 300), ("300s", 300)]);
        accepts(parse_connect_secs, &[("3", 3)]);
    }

    #[test]
    fn unlimited() {
        accepts(
            parse_time_limit_or_unlimited,
            &[
                ("UNLIMITED", TimeLimit(None)),
                ("infinite", TimeLimit(None)),
                ("30", TimeLimit(Some(1_800))),
            ],
        );
        refuses(parse_time_limit_or_unlimited, &["forever"], "UNLIMITED");
        assert!(parse_time_limit("UNLIMITED").is_err());
    }

    #[test]
    fn refusals_list_forms() {
        refuses(
            parse_time_limit,
            &[
                "", "0", "-5", "1:2:3:4", "1:60", "1:00:60", "1-24", "5x", "h", "30m1h", "1h1h",
                "10 m", "1.5h", "2h5",
            ],
            "D-H:MM:SS",
        );
        refuses(parse_time_limit, &["99999999999"], "too long");
        assert!(parse_time_limit("999999999999999999999d").is_err());
    }
}
