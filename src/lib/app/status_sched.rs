//! `pwatch --status` on a DVM that a scheduler (psched) serves: PRRTE
//! master keeps a reservation's nodes as granted, with no owner, rule or
//! time left, keeps the nodes a partial release gave back, and lists the
//! nodes psched parks in its own reservation as that reservation's. psched
//! knows the truth and says how to reach it
//! ([`crate::conn::sched_contact`]); its answer amends the DVM's, so the
//! tables read as they do on pdvm: each grant with its nodes, owner, rule
//! and time left; parked nodes as the scheduler's free nodes (in the
//! scheduler's table, not the DVM's nodes); the scheduler's queues.

use std::collections::HashSet;
use std::time::Duration;

use crate::conn::discover::ProcessEnv;
use crate::conn::{sched_contact, ConnectOptions};
use crate::ops::status_query::{self, Answers, Want};
use crate::ops::Session;
use crate::render::ReservationRecord;

/// Longest wait for the scheduler's answer; without one the DVM's stands.
const SCHED_WAIT: Duration = Duration::from_secs(3);

/// What the scheduler attached to the DVM of `s` reports for `want`, when
/// it has left a trusted contact file and answers in time.
pub(crate) fn ask_scheduler(s: &Session, want: &Want) -> Option<Answers> {
    if !(want.reservations || want.nodes || want.sched) {
        return None;
    }
    let dvm = s.conn().server().0;
    let path = sched_contact::find(dvm, &ConnectOptions::default(), &ProcessEnv)?;
    let opts = ConnectOptions {
        uri: Some(format!("file:{}", path.display())),
        force_tool: true,
        ..ConnectOptions::default()
    };
    let mut sched = Session::connect(&opts).ok()?;
    sched.set_timeout(SCHED_WAIT);
    let a = status_query::status(
        &sched,
        Want {
            reservations: true,
            jobs: false,
            ended_jobs: false,
            nodes: false,
            sched: want.sched,
        },
    );
    let _ = sched.finalize();
    matches!(a.reservations, Some(Ok(_))).then_some(a)
}

/// The nodes the scheduler holds now for `alloc_ids` (those of them it
/// holds), when it answers: PRRTE master keeps listing a node that left a
/// grant (one the node source took away, one a partial release gave
/// back), so its own reservation table overstates what a job may use.
pub(crate) fn held_nodes(s: &Session, alloc_ids: &[String]) -> Option<Vec<String>> {
    let want = Want {
        reservations: true,
        ..Want::default()
    };
    let Some(Ok(grants)) = ask_scheduler(s, &want)?.reservations else {
        return None;
    };
    let mine: Vec<&ReservationRecord> = grants
        .iter()
        .filter(|g| alloc_ids.contains(&g.alloc_id))
        .collect();
    if mine.is_empty() {
        return None;
    }
    let mut nodes: Vec<String> = Vec::new();
    for n in mine.iter().flat_map(|g| g.nodes.iter()) {
        if !nodes.contains(n) {
            nodes.push(n.clone());
        }
    }
    Some(nodes)
}

/// Amend the DVM's answers `dvm` with the scheduler's `sched`.
pub(crate) fn amend(dvm: &mut Answers, sched: Answers) {
    let Some(Ok(grants)) = sched.reservations else {
        return;
    };
    let parked = parked_nodes(dvm, &grants);
    if let Some(Ok(nodes)) = &mut dvm.nodes {
        nodes.retain(|n| !parked.contains(&n.name));
        let granted = |n: &str| grants.iter().any(|g| g.nodes.iter().any(|m| m == n));
        for n in nodes.iter_mut().filter(|n| n.origin.is_empty()) {
            if granted(&n.name) {
                n.origin = "scheduler".into();
            }
        }
    }
    let theirs = match dvm.reservations.take() {
        Some(Ok(v)) => v,
        _ => Vec::new(),
    };
    dvm.reservations = Some(Ok(merge(theirs, grants)));
    if let Some(Ok(q)) = sched.sched {
        if !matches!(dvm.sched, Some(Ok(ref mine)) if !mine.is_empty()) {
            dvm.sched = Some(Ok(q));
        }
    }
}

/// The nodes the DVM lists in its reservations that no grant of psched's
/// holds: parked, or left by a grant psched ended (a partial release).
fn parked_nodes(dvm: &Answers, grants: &[ReservationRecord]) -> HashSet<String> {
    let held: HashSet<&String> = grants.iter().flat_map(|g| &g.nodes).collect();
    let Some(Ok(res)) = &dvm.reservations else {
        return HashSet::new();
    };
    res.iter()
        .flat_map(|r| r.nodes.iter())
        .filter(|n| !held.contains(n))
        .cloned()
        .collect()
}

/// psched's grants, each with what only the DVM knows (its session number
/// and owner set); the DVM's other reservations are psched's parking or
/// grants it ended that PRRTE still lists.
fn merge(dvm: Vec<ReservationRecord>, grants: Vec<ReservationRecord>) -> Vec<ReservationRecord> {
    let out: Vec<ReservationRecord> = grants
        .into_iter()
        .map(|mut g| {
            if let Some(d) = dvm.iter().find(|d| d.alloc_id == g.alloc_id) {
                g.session_id = g.session_id.or(d.session_id);
                if g.owner_nspace.is_empty() {
                    g.owner_nspace.clone_from(&d.owner_nspace);
                }
                if g.owners.is_empty() {
                    g.owners.clone_from(&d.owners);
                }
                g.share = g.share || d.share;
                g.warn_to = g.warn_to.take().or_else(|| d.warn_to.clone());
            }
            if g.owners.is_empty() && !g.owner_nspace.is_empty() {
                g.owners = vec![g.owner_nspace.clone()];
            }
            g
        })
        .collect();
    // Every allocation request reaches the DVM's scheduler: a reservation
    // the DVM still lists and psched does not hold is one psched ended
    // that PRRTE has not torn down yet (or its parking), not the user's.
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::status::NodeEntry;

    fn res(id: &str, nodes: &[&str]) -> ReservationRecord {
        ReservationRecord {
            alloc_id: id.into(),
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            state: "active".into(),
            ..ReservationRecord::default()
        }
    }

    fn node(name: &str) -> NodeEntry {
        NodeEntry {
            name: name.into(),
            slots: 2,
            ..NodeEntry::default()
        }
    }

    /// PRRTE master after `prelease alloc.1 -w node02`: it still lists
    /// node02 for alloc.1, and every node in psched's parking reservation;
    /// psched holds alloc.1 on node03 with its owner and time left.
    #[test]
    fn the_schedulers_grants_win_and_parking_is_left_out() {
        let mut dvm = Answers {
            reservations: Some(Ok(vec![
                res("psched.idle.psched-1-2-0", &["node02", "node03", "node04"]),
                res("alloc.1", &["node02", "node03"]),
                res("alloc.9", &["node05"]),
            ])),
            nodes: Some(Ok(vec![
                node("node01"),
                node("node02"),
                node("node03"),
                node("node04"),
            ])),
            ..Answers::default()
        };
        dvm.reservations.as_mut().unwrap().as_mut().unwrap()[1].session_id = Some(4);
        let mut granted = res("alloc.1", &["node03"]);
        granted.owner_nspace = "prte@5".into();
        granted.expires_in = Some(60);
        granted.expires_at = Some(1000);
        let sched = Answers {
            reservations: Some(Ok(vec![granted])),
            ..Answers::default()
        };
        amend(&mut dvm, sched);
        let r = dvm.reservations.unwrap().unwrap();
        let ids: Vec<&str> = r.iter().map(|r| r.alloc_id.as_str()).collect();
        assert_eq!(
            ids,
            ["alloc.1"],
            "alloc.9: ended by psched, still listed by PRRTE"
        );
        assert_eq!(r[0].nodes, ["node03"]);
        assert_eq!(r[0].owners, ["prte@5"]);
        assert_eq!(r[0].session_id, Some(4));
        assert_eq!(r[0].expires_at, Some(1000));
        let n: Vec<(String, String)> = dvm
            .nodes
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|n| (n.name, n.origin))
            .collect();
        assert_eq!(
            n,
            [
                ("node01".into(), String::new()),
                ("node03".into(), "scheduler".into())
            ]
        );
    }

    #[test]
    fn without_the_schedulers_reservations_nothing_changes() {
        let mut dvm = Answers {
            reservations: Some(Ok(vec![res("psched.idle.x", &["node02"])])),
            ..Answers::default()
        };
        amend(&mut dvm, Answers::default());
        assert_eq!(dvm.reservations.unwrap().unwrap().len(), 1);
    }
}
