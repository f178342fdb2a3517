//! comfy-table tables for status output.
//!
//! On a terminal: a rule under the header only (no rule after every row,
//! no borders), the header bold unless `NO_COLOR` is set. Elsewhere: plain space-separated columns with no escape
//! codes, easy to read in a log or with `awk`.

use super::human::{compact_nodes, duration};
use super::records::{BatchRecord, NamespaceRecord, NodeRecord, QueueRecord, ReservationRecord};
use comfy_table::{presets, Attribute, Cell, ContentArrangement, Table};

/// A rule under the header and nothing else (comfy-table preset string:
/// header line and its intersections only).
const HEADER_RULE_ONLY: &str = "     ──            ";

/// How a table is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Not a terminal: plain columns.
    Plain,
    /// A terminal: a rule under the header; bold header when `color`.
    Terminal {
        /// Bold header (false with `NO_COLOR`).
        color: bool,
    },
}

/// The style for a stream that is (or not) a terminal, honouring `NO_COLOR`.
pub(crate) fn style(is_tty: bool) -> Style {
    if is_tty {
        Style::Terminal {
            color: !crate::cli::common::no_color(),
        }
    } else {
        Style::Plain
    }
}

/// A new table with these headers.
pub(crate) fn new_table(headers: &[&str], style: Style) -> Table {
    let mut t = Table::new();
    match style {
        Style::Terminal { color } => {
            // Rows are never wrapped to the terminal's width (as squeue):
            // a terminal that reports no width (0 columns, e.g. `script`)
            // would squeeze every column to one character.
            t.load_preset(HEADER_RULE_ONLY)
                .set_content_arrangement(ContentArrangement::Disabled);
            if color {
                t.set_header(
                    headers
                        .iter()
                        .map(|h| Cell::new(h).add_attribute(Attribute::Bold)),
                );
            } else {
                t.force_no_tty().set_header(headers.iter().map(Cell::new));
            }
        }
        Style::Plain => {
            t.load_preset(presets::NOTHING)
                .force_no_tty()
                .set_header(headers.iter().map(Cell::new));
        }
    }
    t
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_string(), T::to_string)
}

/// A list joined by `join`, or `-` when empty.
fn list(v: &[String], join: impl Fn(&[String]) -> String) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        join(v)
    }
}

/// A table with these headers and one row a record, its cells given by `row`.
fn table<R>(headers: &[&str], rows: &[R], style: Style, row: impl Fn(&R) -> Vec<String>) -> Table {
    let mut t = new_table(headers, style);
    for r in rows {
        t.add_row(row(r));
    }
    t
}

/// Reservations; `now` (Unix seconds) turns expiry into time left.
pub(crate) fn reservations(rows: &[ReservationRecord], now: u64, style: Style) -> Table {
    let headers = [
        "ALLOC_ID", "REQ_ID", "OWNER", "OWNERS", "INHERIT", "SHARE", "NODES", "LEFT", "STATE",
    ];
    table(&headers, rows, style, |r| {
        vec![
            r.alloc_id.clone(),
            opt(&r.request_id),
            r.owner_nspace.clone(),
            r.owners.len().to_string(),
            r.inherit.map_or("unknown", |i| i.word()).to_string(),
            if r.share { "yes" } else { "no" }.to_string(),
            compact_nodes(&r.nodes),
            r.expires_at
                .map_or_else(|| "-".into(), |e| duration(e.saturating_sub(now))),
            match &r.reason {
                Some(why) => format!("{} ({why})", r.state),
                None => r.state.clone(),
            },
        ]
    })
}

/// Namespaces.
pub(crate) fn namespaces(rows: &[NamespaceRecord], style: Style) -> Table {
    let headers = [
        "NSPACE",
        "NAME",
        "USER",
        "PARENT",
        "NPROCS",
        "STATE",
        "ALLOCATIONS",
        "COMMAND",
    ];
    table(&headers, rows, style, |r| {
        vec![
            r.nspace.clone(),
            opt(&r.name),
            opt(&r.user),
            opt(&r.parent),
            opt(&r.nprocs),
            r.state.clone(),
            list(&r.allocations, |a| a.join(",")),
            opt(&r.command.as_deref().map(short_command)),
        ]
    })
}

/// A command line cut to fit a table cell (the JSON keeps it whole).
fn short_command(c: &str) -> String {
    const MAX: usize = 40;
    if c.chars().count() <= MAX {
        c.to_string()
    } else {
        let head: String = c.chars().take(MAX - 1).collect();
        format!("{head}…")
    }
}

/// Nodes.
pub(crate) fn nodes(rows: &[NodeRecord], style: Style) -> Table {
    let headers = ["NODE", "SLOTS", "ALLOC_ID", "ORIGIN", "STATE", "JOBS"];
    table(&headers, rows, style, |r| {
        vec![
            r.name.clone(),
            opt(&r.slots),
            r.alloc_id.clone().unwrap_or_else(|| "(default)".into()),
            r.origin.clone().unwrap_or_else(|| "-".into()),
            r.state_text(),
            list(&r.jobs, |v| v.join(",")),
        ]
    })
}

/// Scheduler queues: capacity and free nodes (what `sinfo` shows).
pub(crate) fn queues(rows: &[QueueRecord], style: Style) -> Table {
    let headers = ["QUEUE", "STATE", "NODES", "FREE", "PENDING", "FREE_NODES"];
    table(&headers, rows, style, |r| {
        vec![
            r.queue.clone(),
            opt(&r.state),
            r.nodes.to_string(),
            r.free.to_string(),
            r.pending.to_string(),
            list(&r.free_nodes, compact_nodes),
        ]
    })
}

/// `pwatch --status`: this user's batch scripts, as sacct lists them.
pub(crate) fn batch_jobs(rows: &[BatchRecord], style: Style) -> Table {
    let headers = [
        "REQ_ID",
        "ALLOC_ID",
        "STATE",
        "EXIT",
        "STOPPED_BY",
        "COMMAND",
        "LOG",
    ];
    table(&headers, rows, style, |r| {
        let state = r.state.word().to_string();
        let exit = match (&r.exit_code, &r.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(sig)) => sig.clone(),
            _ => "-".into(),
        };
        let stopped = r.stopped_by.map_or("-", |w| w.word()).to_string();
        vec![
            r.request_id.clone(),
            r.alloc_id.clone().unwrap_or_else(|| "-".into()),
            state,
            exit,
            stopped,
            r.command.clone(),
            match (&r.log, r.output_lost_bytes) {
                (Some(l), Some(n)) => format!("{l} ({n} bytes lost: log full)"),
                (Some(l), None) => l.clone(),
                (None, _) => "-".into(),
            },
        ]
    })
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
            inherit: Some(crate::proto::Inheritance::Child),
            nodes: vec!["n01".into(), "n02".into()],
            expires_at: Some(1_000 + 3_720),
            state: "reserved".into(),
            ..Default::default()
        }];
        let s = reservations(&rows, 1_000, Style::Plain).to_string();
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
            Style::Plain,
        )
        .to_string();
        assert!(n.contains("(default)"));
        let ns = namespaces(
            &[NamespaceRecord {
                nspace: "j@1".into(),
                state: "running".into(),
                ..Default::default()
            }],
            Style::Plain,
        );
        assert!(ns.to_string().contains("j@1"));
    }

    #[test]
    fn terminal_tables_have_one_rule() {
        let rows: Vec<NodeRecord> = (1..=3)
            .map(|i| NodeRecord {
                name: format!("n{i}"),
                slots: Some(2),
                slots_used: Some(1),
                state: "busy".into(),
                ..Default::default()
            })
            .collect();
        let s = nodes(&rows, Style::Terminal { color: false }).to_string();
        let rules = s.lines().filter(|l| l.contains('─')).count();
        assert_eq!(rules, 1, "one rule, under the header:\n{s}");
        assert_eq!(s.lines().count(), 5, "header, rule, three rows:\n{s}");
        assert!(s.lines().nth(1).unwrap().contains('─'), "{s}");
        assert!(s.contains("busy 1/2"), "{s}");
        assert!(!s.contains('\u{1b}'), "NO_COLOR: no escape codes:\n{s}");
        let q = queues(
            &[QueueRecord {
                queue: "default".into(),
                nodes: 4,
                free: 2,
                free_nodes: vec!["s003".into(), "s004".into()],
                pending: 0,
                state: Some("drain".into()),
                node_names: Vec::new(),
            }],
            Style::Plain,
        )
        .to_string();
        assert!(q.contains("s[003-004]") && q.contains("default"), "{q}");
        assert!(q.contains("STATE") && q.contains("drain"), "{q}");
    }
}
