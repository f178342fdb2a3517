//! Memory sizes for `palloc --mem` (`PMIX_ALLOC_MEM_SIZE`, megabytes as a float).

const MEM_FORMS: &str = "a positive size in megabytes (512) or with a unit: 512K, 512M, 4G, 1T \
(also KB/MB/GB/TB or KiB/MiB/GiB/TiB, powers of 1024; decimals such as 1.5G allowed)";

/// Parse a memory size and return megabytes (MiB) as `f32`.
pub fn parse_mem_mb(s: &str) -> Result<f32, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let factor: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "m" | "mb" | "mib" => 1.0,
        "k" | "kb" | "kib" => 1.0 / 1024.0,
        "g" | "gb" | "gib" => 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0,
        _ => return Err(format!("`{s}` has an unknown unit: expected {MEM_FORMS}")),
    };
    let valid_num =
        !num.is_empty() && num.bytes().filter(|b| *b == b'.').count() <= 1 && num != ".";
    let value: f64 = if valid_num { num.parse().ok() } else { None }
        .ok_or_else(|| format!("`{s}` is not a memory size: expected {MEM_FORMS}"))?;
    let mb = value * factor;
    if mb.is_nan() || mb <= 0.0 {
        return Err(format!(
            "`{s}` is not a positive size: expected {MEM_FORMS}"
        ));
    }
    if mb > f64::from(f32::MAX) {
        return Err(format!("`{s}` is too large: expected {MEM_FORMS}"));
    }
    Ok(mb as f32)
}

#[cfg(test)]
mod tests {
    use super::super::cases::{accepts, refuses};
    use super::*;

    #[test]
    fn sizes() {
        accepts(
            parse_mem_mb,
            &[
                ("512", 512.0),
                ("512M", 512.0),
                ("4G", 4096.0),
                ("1.5g", 1536.0),
                ("1T", 1_048_576.0),
                ("512K", 0.5),
                ("2GiB", 2048.0),
            ],
        );
        refuses(
            parse_mem_mb,
            &["", "0", "0G", "-4G", "4X", "G", "1.2.3", ".", "4 G x"],
            "512M",
        );
    }
}
