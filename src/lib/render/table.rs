//! comfy-table tables for status output.
//!
//! Styled (Unicode borders, bold headers) only when the caller says the
//! stream is a terminal and `NO_COLOR` is unset; otherwise plain
//! space-separated columns that are easy to read in a log.

use super::human::{compact_nodes, duration};
use super::records::{NamespaceRecord, NodeRecord, ReservationRecord};
use comfy_table::{presets, Attribute, Cell, ContentArrangement, Table};

/// Whether to style a table for a stream that is (or not) a terminal.
pub fn styled(is_tty: bool) -> bool {
    is_tty && !crate::cli::common::no_color()
}

/// A new table with these headers.
pub fn new_table(headers: &[&str], styled: bool) -> Table {
    let mut t = Table::new();
    if styled {
        t.load_preset(presets::UTF8_HORIZONTAL_ONLY)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(
                headers
                    .iter()
                    .map(|h| Cell::new(h).add_attribute(Attribute::Bold)),
            );
    } else {
        t.load_preset(presets::NOTHING)
            .force_no_tty()
            .set_header(headers.iter().map(Cell::new));
    }
    t
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_string(), T::to_string)
}

/// Reservations; `now` (Unix seconds) turns expiry into time left.
pub fn reservations(rows: &[ReservationRecord], now: u64, styled: bool) -> Table {
    let mut t = new_table(
        &[
            "ALLOC_ID", "REQ_ID", "OWNER", "OWNERS", "INHERIT", "SHARE", "NODES", "LEFT", "STATE",
        ],
        styled,
    );
    for r in rows {
        t.add_row(vec![
            r.alloc_id.clone(),
            opt(&r.request_id),
            r.owner_nspace.clone(),
            r.owners.len().to_string(),
            r.inherit.clone(),
            if r.share { "yes" } else { "no" }.to_string(),
            compact_nodes(&r.nodes),
            r.expires_at
                .map_or_else(|| "-".into(), |e| duration(e.saturating_sub(now))),
            r.state.clone(),
        ]);
    }
    t
}

/// Namespaces.
pub fn namespaces(rows: &[NamespaceRecord], styled: bool) -> Table {
    let mut t = new_table(
        &["NSPACE", "PARENT", "NPROCS", "STATE", "ALLOCATIONS"],
        styled,
    );
    for r in rows {
        t.add_row(vec![
            r.nspace.clone(),
            opt(&r.parent),
            opt(&r.nprocs),
            r.state.clone(),
            if r.allocations.is_empty() {
                "-".into()
            } else {
                r.allocations.join(",")
            },
        ]);
    }
    t
}

/// Nodes.
pub fn nodes(rows: &[NodeRecord], styled: bool) -> Table {
    let mut t = new_table(&["NODE", "SLOTS", "ALLOC_ID", "STATE"], styled);
    for r in rows {
        t.add_row(vec![
            r.name.clone(),
            opt(&r.slots),
            r.alloc_id.clone().unwrap_or_else(|| "(default)".into()),
            r.state.clone(),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_tables() {
        let rows = vec![ReservationRecord {
            alloc_id: "a1".into(),
            owner_nspace: "job@1".into(),
            owners: vec!["job@1".into(), "job@2".into()],
            inherit: "child".into(),
            nodes: vec!["n01".into(), "n02".into()],
            expires_at: Some(1_000 + 3_720),
            state: "reserved".into(),
            ..Default::default()
        }];
        let s = reservations(&rows, 1_000, false).to_string();
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[0].contains("ALLOC_ID") && lines[0].contains("STATE"),
            "{s}"
        );
        assert!(
            lines[1].contains("a1") && lines[1].contains("n[01-02]") && lines[1].contains("1h 02m"),
            "{s}"
        );
        assert!(!s.contains('\u{1b}'), "no escape codes in plain output");
        let n = nodes(
            &[NodeRecord {
                name: "n1".into(),
                state: "up".into(),
                ..Default::default()
            }],
            false,
        )
        .to_string();
        assert!(n.contains("(default)"));
        let ns = namespaces(
            &[NamespaceRecord {
                nspace: "j@1".into(),
                state: "running".into(),
                ..Default::default()
            }],
            false,
        );
        assert!(ns.to_string().contains("j@1"));
    }
}
