//! psched's state as the answer to a tool's status query, so that
//! `pwatch --status` pointed at psched (`psched --status-uri FILE`, then
//! `pwatch --status --uri file:FILE`) shows its queues (nodes, free nodes,
//! pending requests), its grants as reservations with their expiry, and its
//! pool as nodes. Pure: the ledger snapshot and the time come in.

use crate::codec::{DataArray, Info, Query, Value, WireVersion};
use crate::proto::keys;
use crate::proto::status::Status;
use crate::schema::status::{
    answer, reservation_infos, NodeEntry, QueueEntry, ReservationRecord, QUERY_SCHED,
};

use super::ledger::Ledger;

/// The queues: one per partition, each with the whole pool (psched's
/// partitions share its nodes); the waiting requests are counted in the
/// first (they do not record theirs).
fn queues(l: &Ledger) -> Vec<QueueEntry> {
    if !l.source_partitions.is_empty() {
        return source_queues(l);
    }
    let free = free_nodes(l);
    let nodes = u32::try_from(l.pool.len()).unwrap_or(u32::MAX);
    let mut parts: Vec<String> = l.partitions.iter().map(|p| p.name.clone()).collect();
    if parts.is_empty() {
        parts.push("batch".into());
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, queue)| QueueEntry {
            queue,
            nodes,
            free: free.clone(),
            pending: if i == 0 {
                u32::try_from(l.pending.len()).unwrap_or(u32::MAX)
            } else {
                0
            },
            ..QueueEntry::default()
        })
        .collect()
}

/// The node source's partitions (Slurm's) as queues: their state, nodes
/// and idle nodes; psched's waiting requests counted in the first.
fn source_queues(l: &Ledger) -> Vec<QueueEntry> {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    l.source_partitions
        .iter()
        .enumerate()
        .map(|(i, p)| QueueEntry {
            queue: p.name.clone(),
            nodes: count(p.nodes.len()),
            free: p.idle.clone(),
            pending: if i == 0 { count(l.pending.len()) } else { 0 },
            state: Some(p.state.clone()),
            node_names: p.nodes.clone(),
        })
        .collect()
}

/// The pool's nodes a grant could take now: neither granted, nor kept by
/// the DVM, nor broken (a node a lost launch or a daemon that never came
/// up keeps from every grant).
fn free_nodes(l: &Ledger) -> Vec<String> {
    l.pool
        .iter()
        .filter(|n| {
            !l.retained.contains(n)
                && !l.dvm_side.broken.contains(n)
                && !l.grants.iter().any(|g| g.nodes.contains(n))
        })
        .cloned()
        .collect()
}

/// The grants (`active`) and the requests still waiting (`queued`) as
/// reservations; psched does not know the owners (the DVM does).
fn reservations(l: &Ledger, now_ms: u64) -> Vec<ReservationRecord> {
    let mut out: Vec<ReservationRecord> = l
        .grants
        .iter()
        .map(|g| ReservationRecord {
            alloc_id: g.alloc_id.clone(),
            owner_nspace: owner_of(l, &g.alloc_id),
            request_id: g.req_id.clone(),
            session_id: g.session,
            inherit: g.inherit,
            nodes: g.nodes.clone(),
            expires_in: g
                .expires_at_ms
                .map(|e| e.saturating_sub(now_ms).div_ceil(1000)),
            warn_secs: g.warn_secs,
            state: "active".into(),
            ..ReservationRecord::default()
        })
        .collect();
    out.extend(l.pending.iter().map(|p| ReservationRecord {
        alloc_id: p.alloc_id.clone(),
        state: "queued".into(),
        reason: p.reason.clone(),
        ..ReservationRecord::default()
    }));
    out
}

/// The namespace owning grant `alloc_id` as the DVM named it at the grant
/// (empty when psched was not told: a shared grant).
fn owner_of(l: &Ledger, alloc_id: &str) -> String {
    l.dvm_side
        .owners
        .iter()
        .find(|o| o.alloc_id == alloc_id)
        .map(|o| o.nspace.clone())
        .unwrap_or_default()
}

/// The pool as nodes: the grant holding each (none: free), one slot each
/// (what PRRTE master gives a scheduler's node), origin `scheduler`.
fn nodes(l: &Ledger) -> Vec<NodeEntry> {
    l.pool
        .iter()
        .map(|n| NodeEntry {
            name: n.clone(),
            session: l
                .grants
                .iter()
                .find(|g| g.nodes.contains(n))
                .map(|g| g.alloc_id.clone())
                .unwrap_or_default(),
            slots: 1,
            used: 0,
            origin: "scheduler".into(),
        })
        .collect()
}

/// The answer to `queries`: the scheduler's queues, reservations and nodes
/// for the keys pwatch asks; nothing for other keys (`PMIX_ERR_NOT_FOUND`
/// when none was answered).
pub fn answer_queries(
    l: &Ledger,
    queries: &[Query],
    wire: WireVersion,
    now_ms: u64,
) -> (Status, Vec<Info>) {
    let mut out = Vec::new();
    for k in queries.iter().flat_map(|q| &q.keys) {
        match k.as_str() {
            QUERY_SCHED => out.push(answer(
                QUERY_SCHED,
                queues(l).iter().map(QueueEntry::to_value).collect(),
            )),
            keys::QUERY_ALLOC_STATUS => out.push(answer(
                keys::QUERY_ALLOC_STATUS,
                reservations(l, now_ms)
                    .iter()
                    .map(|r| Value::DataArray(DataArray::infos(reservation_infos(r, wire))))
                    .collect(),
            )),
            keys::QUERY_ALLOCATION => out.push(answer(
                keys::QUERY_ALLOCATION,
                nodes(l).iter().map(NodeEntry::to_value).collect(),
            )),
            _ => {}
        }
    }
    let st = if out.is_empty() {
        Status::ERR_NOT_FOUND
    } else {
        Status::SUCCESS
    };
    (st, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psched::ledger::Grant;
    use crate::schema::status::entries;

    fn ledger() -> Ledger {
        Ledger {
            pool: vec!["n1".into(), "n2".into(), "n3".into()],
            retained: vec!["n3".into()],
            grants: vec![Grant {
                alloc_id: "alloc.1".into(),
                req_id: Some("r".into()),
                nodes: vec!["n1".into()],
                expires_at_ms: Some(61_000),
                warn_secs: None,
                session: Some(1),
                queue: "batch".into(),
                inherit: None,
                slurm_jobs: Vec::new(),
            }],
            ..Ledger::default()
        }
    }

    fn ask(key: &str) -> Vec<Query> {
        vec![Query {
            keys: vec![key.into()],
            qualifiers: Vec::new(),
        }]
    }

    #[test]
    fn queues_reservations_and_nodes_are_answered() {
        let l = ledger();
        let (st, infos) = answer_queries(&l, &ask(QUERY_SCHED), WireVersion::V61, 1_000);
        assert!(st.is_success());
        let q = QueueEntry::from_infos(entries(&infos, QUERY_SCHED).unwrap()[0]);
        assert_eq!((q.nodes, q.free.clone()), (3, vec!["n2".to_string()]));
        let key = keys::QUERY_ALLOC_STATUS;
        let (_, infos) = answer_queries(&l, &ask(key), WireVersion::V61, 1_000);
        let r = crate::schema::status::reservation_from_infos(entries(&infos, key).unwrap()[0], 0);
        assert_eq!((r.alloc_id.as_str(), r.expires_in), ("alloc.1", Some(60)));
        let key = keys::QUERY_ALLOCATION;
        let (_, infos) = answer_queries(&l, &ask(key), WireVersion::V61, 1_000);
        let n = NodeEntry::from_infos(entries(&infos, key).unwrap()[0]);
        assert_eq!((n.name.as_str(), n.session.as_str()), ("n1", "alloc.1"));
    }

    #[test]
    fn other_keys_are_not_found() {
        let (st, infos) = answer_queries(&ledger(), &ask("pmix.qry.nspaces"), WireVersion::V41, 0);
        assert_eq!(st, Status::ERR_NOT_FOUND);
        assert!(infos.is_empty());
    }
}
