//! Short human-readable pieces: durations, compact node lists, the grant line.

use super::records::AllocationRecord;

/// A duration as two units at most: `45s`, `5m 07s`, `1h 02m`, `2d 03h`.
pub(crate) fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d {h:02}h")
    } else if h > 0 {
        format!("{h}h {m:02}m")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}

/// Compress node names into bracket ranges where consecutive names share a
/// prefix and digit width: `node01,node02,node03,gpu7` → `node[01-03],gpu7`.
/// Order of first appearance of each prefix is kept.
pub(crate) fn compact_nodes(names: &[String]) -> String {
    // (prefix, width, numbers) groups; names without a numeric tail stay alone.
    let mut groups: Vec<(String, usize, Vec<u64>)> = Vec::new();
    let mut singles: Vec<(usize, String)> = Vec::new();
    for n in names {
        let tail = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, digits) = n.split_at(n.len() - tail);
        match digits.parse::<u64>() {
            Ok(v) if tail > 0 && tail <= 18 => {
                let width = if digits.starts_with('0') && tail > 1 {
                    tail
                } else {
                    0
                };
                match groups
                    .iter_mut()
                    .find(|(p, w, _)| p == prefix && *w == width)
                {
                    Some(g) => g.2.push(v),
                    None => groups.push((prefix.to_string(), width, vec![v])),
                }
            }
            _ => singles.push((groups.len(), n.clone())),
        }
    }
    let mut parts: Vec<String> = Vec::new();
    let mut single_iter = singles.into_iter().peekable();
    for (gi, (prefix, width, mut nums)) in groups.into_iter().enumerate() {
        while let Some((_, s)) = single_iter.next_if(|(at, _)| *at <= gi) {
            parts.push(s);
        }
        nums.sort_unstable();
        nums.dedup();
        if nums.len() == 1 {
            parts.push(format!("{prefix}{:0width$}", nums[0]));
            continue;
        }
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < nums.len() {
            let start = nums[i];
            let mut end = start;
            while i + 1 < nums.len() && nums[i + 1] == end + 1 {
                i += 1;
                end = nums[i];
            }
            ranges.push(if start == end {
                format!("{start:0width$}")
            } else {
                format!("{start:0width$}-{end:0width$}")
            });
            i += 1;
        }
        parts.push(format!("{prefix}[{}]", ranges.join(",")));
    }
    parts.extend(single_iter.map(|(_, s)| s));
    parts.join(",")
}

/// The one-line grant palloc prints, e.g.
/// `granted alloc.3 (request r1): 2 nodes node[01-02], time limit 1h 00m, reserved for job@1, inherit child`.
pub(crate) fn allocation_line(a: &AllocationRecord) -> String {
    let mut s = format!("granted {}", a.alloc_id);
    if let Some(r) = &a.request_id {
        s.push_str(&format!(" (request {r})"));
    }
    let n = a.nodes.len();
    if n == 0 {
        s.push_str(": nodes not reported");
    } else {
        s.push_str(&format!(": {n} node{} ", if n == 1 { "" } else { "s" }));
        s.push_str(&compact_nodes(&a.nodes));
    }
    if let Some(t) = a.time_limit_secs {
        s.push_str(&format!(", time limit {}", duration(t)));
    } else if let (Some(at), "extend") = (a.expires_at, a.directive.as_str()) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        s.push_str(&format!(
            ", expires in {}",
            duration(at.saturating_sub(now))
        ));
    }
    s.push_str(if a.reserved { ", reserved" } else { ", shared" });
    if let Some(o) = &a.owner_nspace {
        s.push_str(&format!(" for {o}"));
    }
    s.push_str(&format!(", inherit {}", a.inherit.word()));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse::expand_nodelist;

    #[test]
    fn durations() {
        assert_eq!(duration(45), "45s");
        assert_eq!(duration(307), "5m 07s");
        assert_eq!(duration(3_720), "1h 02m");
        assert_eq!(duration(183_600), "2d 03h");
        assert_eq!(duration(0), "0s");
    }

    #[test]
    fn compaction_round_trips() {
        let names = expand_nodelist("node[01-03],gpu7,node05,login,n[8-10]").unwrap();
        let c = compact_nodes(&names);
        assert_eq!(c, "node[01-03,05],gpu7,login,n[8-10]");
        let mut back = expand_nodelist(&c).unwrap();
        let mut orig = names.clone();
        back.sort();
        orig.sort();
        assert_eq!(back, orig);
    }

    #[test]
    fn grant_line() {
        let a = AllocationRecord {
            alloc_id: "a3".into(),
            request_id: Some("r1".into()),
            nodes: vec!["n1".into(), "n2".into()],
            time_limit_secs: Some(3600),
            reserved: true,
            owner_nspace: Some("job@1".into()),
            inherit: crate::proto::Inheritance::Child,
            ..Default::default()
        };
        assert_eq!(
            allocation_line(&a),
            "granted a3 (request r1): 2 nodes n[1-2], time limit 1h 00m, reserved for job@1, inherit child"
        );
    }
}

/// `secs` since the epoch as a UTC wall-clock time, `2026-11-25 04:45:07
/// UTC` (the header of each `pwatch --status --interval` snapshot).
pub(crate) fn utc_clock(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod clock_tests {
    #[test]
    fn utc_clock_reads_as_a_date() {
        assert_eq!(super::utc_clock(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc_clock(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(super::utc_clock(1_795_581_907), "2026-11-25 04:45:07 UTC");
    }
}
