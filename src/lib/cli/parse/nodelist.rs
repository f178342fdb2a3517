//! Node lists: `node[01-04],gpu7`, `rack[1-2]-n[1-3]`, `file:PATH`.
//!
//! Grammar (Slurm hostlist style):
//! - a list is names separated by commas;
//! - a name is literal text (`A-Z a-z 0-9 . _ -`) with any number of bracket
//!   groups; each group holds comma-separated numbers or `lo-hi` ranges, and
//!   the name expands to the cartesian product of its groups, left to right;
//! - a range keeps the digit width of its lower bound (`[08-10]` → `08 09 10`);
//! - `file:PATH` reads the file (at most [`MAX_FILE_BYTES`]): one name or list
//!   per line, commas allowed, blank lines and lines starting with `#` ignored.
//!
//! The total expansion is bounded by [`MAX_NODES`]; the bound is checked
//! before any name is generated. Duplicates are dropped, first one wins.

use std::collections::HashSet;

/// Most names one node list may expand to.
pub const MAX_NODES: usize = 1_000_000;
/// Largest `file:` node list read.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

const NODELIST_FORMS: &str = "comma-separated names with optional bracket ranges, e.g. \
node07, node[01-04],gpu7, rack[1-2]-n[1,3-5], or file:PATH (one name or list per line)";

/// A literal piece or a bracket group of a single name expression.
#[derive(Debug)]
enum Piece {
    Text(String),
    Group(Vec<(u64, u64, usize)>),
}

/// An expanded node list as one flag value (a newtype, so clap treats the
/// whole list as a single value).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeList(pub Vec<String>);

/// [`parse_nodelist`] wrapped as a [`NodeList`], for clap `value_parser`.
pub fn parse_nodelist_arg(s: &str) -> Result<NodeList, String> {
    parse_nodelist(s).map(NodeList)
}

/// A `--host` value: a node list whose names may each end in `:N`, the
/// slots to use there (the form PRRTE's and Open MPI's `-H node04:2`
/// take); the suffix is kept on every name its item expands to
/// (`node[01-02]:2` → `node01:2`, `node02:2`). `file:PATH` is a plain list.
pub fn parse_hostlist_arg(s: &str) -> Result<NodeList, String> {
    if s.starts_with("file:") {
        return parse_nodelist_arg(s);
    }
    let items = split_top(s).ok_or_else(|| {
        format!("`{s}` is not a valid host list (unbalanced brackets): expected {NODELIST_FORMS}")
    })?;
    let mut out = Vec::new();
    for item in items {
        let (names, slots) = match item.rsplit_once(':') {
            Some((n, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => {
                let k: u32 = k.parse().ok().filter(|k| *k > 0).ok_or_else(|| {
                    format!(
                        "`{item}`: the slot count after `:` must be 1 to {}",
                        u32::MAX
                    )
                })?;
                (n, Some(k))
            }
            _ => (item, None),
        };
        for name in expand_nodelist(names)? {
            out.push(match slots {
                Some(k) => format!("{name}:{k}"),
                None => name,
            });
            if out.len() > MAX_NODES {
                return Err(format!("`{s}` names more than {MAX_NODES} hosts"));
            }
        }
    }
    Ok(NodeList(out))
}

/// Parse a flag value: a node list expression or `file:PATH`.
pub fn parse_nodelist(s: &str) -> Result<Vec<String>, String> {
    match s.strip_prefix("file:") {
        Some(path) => read_file(path),
        None => expand_nodelist(s),
    }
}

/// Expand a node list expression (no `file:` indirection).
pub fn expand_nodelist(s: &str) -> Result<Vec<String>, String> {
    let mut out = Acc::default();
    out.add_expr(s, s)?;
    Ok(out.names)
}

fn read_file(path: &str) -> Result<Vec<String>, String> {
    use std::io::Read;
    if path.is_empty() {
        return Err(format!("`file:` needs a path: expected {NODELIST_FORMS}"));
    }
    let f = std::fs::File::open(path)
        .map_err(|e| format!("cannot read node list file `{path}`: {e}"))?;
    let mut text = String::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read node list file `{path}`: {e}"))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "node list file `{path}` is larger than {MAX_FILE_BYTES} bytes"
        ));
    }
    let mut out = Acc::default();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        out.add_expr(l, &format!("{path}:{}: {l}", i + 1))?;
    }
    if out.names.is_empty() {
        return Err(format!(
            "node list file `{path}` names no nodes: expected {NODELIST_FORMS}"
        ));
    }
    Ok(out.names)
}

#[derive(Default)]
struct Acc {
    names: Vec<String>,
    seen: HashSet<String>,
}

impl Acc {
    fn add_expr(&mut self, expr: &str, shown: &str) -> Result<(), String> {
        let bad = |why: &str| {
            format!("`{shown}` is not a valid node list ({why}): expected {NODELIST_FORMS}")
        };
        let items = split_top(expr).ok_or_else(|| bad("unbalanced brackets"))?;
        for item in items {
            let item = item.trim();
            if item.is_empty() {
                return Err(bad("empty name"));
            }
            let pieces = pieces(item).map_err(|w| bad(&w))?;
            let mut count: usize = 1;
            for p in &pieces {
                if let Piece::Group(rs) = p {
                    let mut n: usize = 0;
                    for (lo, hi, _) in rs {
                        let span = usize::try_from(hi - lo).ok().and_then(|d| d.checked_add(1));
                        n = span.and_then(|d| n.checked_add(d)).unwrap_or(usize::MAX);
                    }
                    count = count.saturating_mul(n);
                }
            }
            if count > MAX_NODES.saturating_sub(self.names.len()) {
                return Err(format!(
                    "`{shown}` expands to more than {MAX_NODES} node names; name fewer nodes or use a shorter range"
                ));
            }
            for name in expand_item(&pieces) {
                if self.seen.insert(name.clone()) {
                    self.names.push(name);
                }
            }
        }
        Ok(())
    }
}

/// Cartesian expansion of one name, iteratively (no recursion, so a long
/// expression cannot exhaust the stack). The caller has bounded the count.
fn expand_item(pieces: &[Piece]) -> Vec<String> {
    let mut cur = vec![String::new()];
    for p in pieces {
        match p {
            Piece::Text(t) => cur.iter_mut().for_each(|s| s.push_str(t)),
            Piece::Group(rs) => {
                let mut next = Vec::new();
                for s in &cur {
                    for &(lo, hi, width) in rs {
                        for v in lo..=hi {
                            next.push(format!("{s}{v:0width$}"));
                        }
                    }
                }
                cur = next;
            }
        }
    }
    cur
}

/// Split at commas outside brackets; `None` when brackets are unbalanced or nested.
fn split_top(s: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut depth = 0u32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return None,
            ']' if depth == 1 => depth = 0,
            ']' => return None,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return None;
    }
    out.push(&s[start..]);
    Some(out)
}

fn pieces(item: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut rest = item;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').ok_or("unbalanced brackets")?;
            out.push(Piece::Group(group(&after[..end])?));
            rest = &after[end + 1..];
        } else {
            let end = rest.find('[').unwrap_or(rest.len());
            let text = &rest[..end];
            if let Some(c) = text
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
            {
                return Err(format!("character `{c}` is not allowed in a node name"));
            }
            out.push(Piece::Text(text.to_string()));
            rest = &rest[end..];
        }
    }
    Ok(out)
}

fn group(body: &str) -> Result<Vec<(u64, u64, usize)>, String> {
    if body.is_empty() {
        return Err("empty brackets".into());
    }
    body.split(',')
        .map(|r| {
            let r = r.trim();
            let (lo_s, hi_s) = r.split_once('-').unwrap_or((r, r));
            let lo = bracket_number(lo_s)?;
            let hi = bracket_number(hi_s)?;
            if hi < lo {
                return Err(format!("range `{r}` runs backwards"));
            }
            Ok((lo, hi, lo_s.len()))
        })
        .collect()
}

fn bracket_number(s: &str) -> Result<u64, String> {
    if s.is_empty() || s.len() > 18 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "`{s}` inside brackets is not a number of at most 18 digits"
        ));
    }
    s.parse()
        .map_err(|_| format!("`{s}` inside brackets is not a number"))
}

#[cfg(test)]
mod tests {

    #[test]
    fn host_lists_take_a_slot_count_per_item() {
        let h = |s: &str| parse_hostlist_arg(s).map(|l| l.0);
        assert_eq!(h("node04:2").unwrap(), ["node04:2"]);
        assert_eq!(
            h("node[01-02]:3,gpu7").unwrap(),
            ["node01:3", "node02:3", "gpu7"]
        );
        assert_eq!(h("n[1,3]").unwrap(), ["n1", "n3"]);
        assert!(h("node04:0").is_err());
        assert!(h("node04:").is_err());
        assert!(h("node04:x").is_err());
        assert!(h("node[01-02").is_err());
    }

    use super::*;

    #[test]
    fn ranges_and_products() {
        assert_eq!(
            expand_nodelist("node[01-04],gpu7").unwrap(),
            ["node01", "node02", "node03", "node04", "gpu7"]
        );
        assert_eq!(
            expand_nodelist("rack[1-2]-n[1-3]").unwrap(),
            ["rack1-n1", "rack1-n2", "rack1-n3", "rack2-n1", "rack2-n2", "rack2-n3"]
        );
        assert_eq!(expand_nodelist("n[8-10]").unwrap(), ["n8", "n9", "n10"]);
        assert_eq!(
            expand_nodelist("n[1,3,5-6]").unwrap(),
            ["n1", "n3", "n5", "n6"]
        );
        assert_eq!(expand_nodelist("a,b,a").unwrap(), ["a", "b"]);
    }

    #[test]
    fn refusals() {
        for b in [
            "", "a,,b", "n[1-", "n]", "n[[1]]", "n[]", "n[3-1]", "n[a-b]", "bad name", "n[1-2",
            "a,",
        ] {
            assert!(
                expand_nodelist(b).unwrap_err().contains("node[01-04]"),
                "{b}"
            );
        }
        let e = expand_nodelist("n[0-999999999999999999]").unwrap_err();
        assert!(e.contains("more than 1000000"), "{e}");
        let e = expand_nodelist("a[0-999]b[0-999]c[0-9]").unwrap_err();
        assert!(e.contains("more than"), "{e}");
        assert!(expand_nodelist("a[0-999]b[0-999]").is_ok());
    }
}
