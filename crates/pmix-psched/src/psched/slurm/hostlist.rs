//! Slurm's host lists (`node[02-03,07],gpu1`) expanded in psched itself,
//! so following a job's nodes costs no command; and the node names psched
//! lets reach a Slurm command line.

/// The names of the host list `list`: comma-separated parts, each with any
/// number of bracketed ranges (`a[1-2]b[01-02]`), zero padding kept.
/// `None` when `list` is malformed (an unclosed bracket, a bad range).
pub fn expand(list: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for part in split_top(list) {
        if !part.is_empty() {
            expand_part(part, &mut out)?;
        }
    }
    Some(out)
}

/// `list` split at the commas outside brackets.
fn split_top(list: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(list[start..].trim());
    parts
}

fn expand_part(part: &str, out: &mut Vec<String>) -> Option<()> {
    let Some(open) = part.find('[') else {
        (!part.contains(']')).then(|| out.push(part.to_string()))?;
        return Some(());
    };
    let close = open + part[open..].find(']')?;
    let (head, body, tail) = (&part[..open], &part[open + 1..close], &part[close + 1..]);
    let mut tails = Vec::new();
    expand_part(tail, &mut tails)?;
    if tail.is_empty() {
        tails = vec![String::new()];
    }
    for range in body.split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let width = lo.len();
        let (a, b): (u64, u64) = (lo.parse().ok()?, hi.parse().ok()?);
        if b < a || b - a > 100_000 {
            return None;
        }
        for n in a..=b {
            for t in &tails {
                out.push(format!("{head}{n:0width$}{t}"));
            }
        }
    }
    Some(())
}

/// Why `name` may not be handed to a Slurm command as a node name: Slurm
/// reads a value with `/` as a file of names, one starting with `-` as an
/// option, and splits at whitespace, commas and brackets.
pub fn bad_node_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("an empty node name");
    }
    if name.starts_with('-') {
        return Some("a node name may not start with '-'");
    }
    if name.contains('/') {
        return Some("a node name may not contain '/' (Slurm reads it as a file)");
    }
    if name
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ',' | '[' | ']' | '='))
    {
        return Some("a node name may not contain whitespace, ',', '[', ']' or '='");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn ranges_lists_and_padding() {
        assert_eq!(expand("node02").unwrap(), v(&["node02"]));
        assert_eq!(
            expand("node[02-04,07]").unwrap(),
            v(&["node02", "node03", "node04", "node07"])
        );
        assert_eq!(
            expand("a[08-10],b1,c[9-10]").unwrap(),
            v(&["a08", "a09", "a10", "b1", "c9", "c10"])
        );
        assert_eq!(
            expand("r[1-2]n[01-02]").unwrap(),
            v(&["r1n01", "r1n02", "r2n01", "r2n02"])
        );
        assert_eq!(expand("").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn malformed_lists_are_none() {
        for bad in ["node[02-", "node[b-c]", "node[5-2]", "node]"] {
            assert_eq!(expand(bad), None, "{bad}");
        }
    }

    #[test]
    fn names_slurm_would_misread_are_refused() {
        for bad in [
            "/etc/passwd",
            "a/b",
            "-w",
            "a b",
            "",
            "a,b",
            "n[1-2]",
            "x\ty",
        ] {
            assert!(bad_node_name(bad).is_some(), "{bad:?}");
        }
        for ok in ["node02", "gpu-1", "n.example"] {
            assert_eq!(bad_node_name(ok), None, "{ok}");
        }
    }
}
