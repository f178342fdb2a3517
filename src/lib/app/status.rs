//! `pwatch --status`: reservations, namespaces and nodes, as tables or JSON
//! lines, from the DVM's status queries. A DVM that answers none of the
//! reservation queries (PRRTE before spec 001) still lists its namespaces.

use crate::cli::request::{StatusWatch, StatusWhat};
use crate::ops::{query, status_query, Session};
use crate::render::{table, NamespaceRecord, NodeRecord, ReservationRecord};

use super::{now_secs, Ui};

/// One snapshot of what was asked for; `None` where the DVM did not answer,
/// with the status name it answered instead.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Reservations, or why not.
    pub reservations: Option<Result<Vec<ReservationRecord>, String>>,
    /// Namespaces, or why not.
    pub namespaces: Option<Result<Vec<NamespaceRecord>, String>>,
    /// Nodes, or why not.
    pub nodes: Option<Result<Vec<NodeRecord>, String>>,
}

/// `CHILD_DEFAULT` → `child-default`.
pub fn inherit_word(s: &str) -> String {
    if s.is_empty() {
        "default".into()
    } else {
        s.to_ascii_lowercase().replace('_', "-")
    }
}

/// The printed form of a reservation the DVM reported.
pub fn reservation(r: status_query::ReservationRecord, now: u64) -> ReservationRecord {
    ReservationRecord {
        alloc_id: r.alloc_id,
        request_id: r.request_id,
        owner_nspace: r.owner,
        owners: r.owners,
        inherit: inherit_word(&r.inheritance),
        share: r.share,
        nodes: r.nodes,
        expires_at: r.expires_in.map(|t| now + u64::from(t)),
        state: r.state,
    }
}

/// The printed form of a node the DVM reported.
pub fn node(n: status_query::NodeRecord) -> NodeRecord {
    NodeRecord {
        state: if n.used > 0 {
            format!("busy {}/{}", n.used, n.slots)
        } else {
            "idle".into()
        },
        name: n.name,
        slots: Some(n.slots),
        alloc_id: (!n.session.is_empty()).then_some(n.session),
    }
}

/// The printed form of a job the DVM reported.
pub fn namespace(j: status_query::JobRecord) -> NamespaceRecord {
    NamespaceRecord {
        nspace: j.nspace,
        parent: j.parent,
        nprocs: j.nprocs,
        state: j.state,
        allocations: Vec::new(),
    }
}

/// Sort key for namespaces: `prte-vm-1@10` after `prte-vm-1@9`.
pub fn nspace_order(n: &str) -> (String, u64, String) {
    match n.rsplit_once('@') {
        Some((base, num)) => match num.parse::<u64>() {
            Ok(k) => (base.to_string(), k, String::new()),
            Err(_) => (base.to_string(), u64::MAX, num.to_string()),
        },
        None => (n.to_string(), 0, String::new()),
    }
}

/// Ask the DVM for what `w` names.
pub fn snapshot(s: &Session, w: &StatusWatch) -> Snapshot {
    let now = now_secs() as u64;
    let mut snap = Snapshot::default();
    for what in &w.what {
        match what {
            StatusWhat::Reservations => {
                snap.reservations = Some(
                    status_query::reservations(s, None)
                        .map(|v| v.into_iter().map(|r| reservation(r, now)).collect())
                        .map_err(|e| e.status.name().to_string()),
                )
            }
            StatusWhat::Nodes => {
                snap.nodes = Some(
                    status_query::nodes(s)
                        .map(|v| v.into_iter().map(node).collect())
                        .map_err(|e| e.status.name().to_string()),
                )
            }
            StatusWhat::Namespaces => {
                let jobs = status_query::jobs(s)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| v.into_iter().map(namespace).collect());
                snap.namespaces = Some(match jobs {
                    Some(v) => Ok(v),
                    None => query::namespaces(s)
                        .map(|mut v| {
                            v.sort_by_key(|n| nspace_order(n));
                            v.into_iter()
                                .map(|n| NamespaceRecord {
                                    nspace: n,
                                    parent: None,
                                    nprocs: None,
                                    state: "known".into(),
                                    allocations: Vec::new(),
                                })
                                .collect()
                        })
                        .map_err(|e| e.status.name().to_string()),
                });
            }
            StatusWhat::All => {}
        }
    }
    fill_node_allocations(&mut snap);
    snap
}

/// A DVM that does not say which reservation a node belongs to (PRRTE)
/// still says which nodes each reservation has: fill the node rows from
/// that.
fn fill_node_allocations(snap: &mut Snapshot) {
    let (Some(Ok(res)), Some(Ok(nodes))) = (&snap.reservations, &mut snap.nodes) else {
        return;
    };
    for n in nodes.iter_mut().filter(|n| n.alloc_id.is_none()) {
        n.alloc_id = res
            .iter()
            .find(|r| r.nodes.contains(&n.name))
            .map(|r| r.alloc_id.clone());
    }
}

/// Print a snapshot: JSON lines, or tables with a heading each.
pub fn print(snap: &Snapshot, ui: &Ui) {
    let styled = table::styled(ui.stdout_tty);
    let now = now_secs() as u64;
    let several = [
        snap.reservations.is_some(),
        snap.namespaces.is_some(),
        snap.nodes.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count()
        > 1;
    let unreported = |what: &str, why: &str| {
        let msg = format!("this DVM does not report {what} ({why})");
        if ui.json {
            ui.note(&msg);
        } else {
            ui.result(&format!("{what}: not reported by this DVM ({why})"));
        }
    };
    let heading = |h: &str| {
        if several && !ui.json {
            ui.result(&format!("{h}:"));
        }
    };
    if let Some(r) = &snap.reservations {
        match r {
            Ok(rows) if ui.json => rows.iter().for_each(|x| ui.record(x)),
            Ok(rows) => {
                heading("RESERVATIONS");
                ui.result(&table::reservations(rows, now, styled).to_string());
            }
            Err(why) => unreported("reservations", why),
        }
    }
    if let Some(r) = &snap.namespaces {
        match r {
            Ok(rows) if ui.json => rows.iter().for_each(|x| ui.record(x)),
            Ok(rows) => {
                heading("NAMESPACES");
                ui.result(&table::namespaces(rows, styled).to_string());
            }
            Err(why) => unreported("namespaces", why),
        }
    }
    if let Some(r) = &snap.nodes {
        match r {
            Ok(rows) if ui.json => rows.iter().for_each(|x| ui.record(x)),
            Ok(rows) => {
                heading("NODES");
                ui.result(&table::nodes(rows, styled).to_string());
            }
            Err(why) => unreported("nodes", why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(inherit_word("CHILD_DEFAULT"), "child-default");
        assert_eq!(inherit_word(""), "default");
        let r = reservation(
            status_query::ReservationRecord {
                alloc_id: "a".into(),
                owner: "j@1".into(),
                inheritance: "CHILD".into(),
                expires_in: Some(60),
                ..Default::default()
            },
            1000,
        );
        assert_eq!((r.inherit.as_str(), r.expires_at), ("child", Some(1060)));
        assert_eq!(r.owner_nspace, "j@1");
        let n = node(status_query::NodeRecord {
            name: "n1".into(),
            session: String::new(),
            slots: 4,
            used: 2,
            origin: "startup".into(),
        });
        assert_eq!(n.alloc_id, None);
        assert_eq!(n.state, "busy 2/4");
    }
}
