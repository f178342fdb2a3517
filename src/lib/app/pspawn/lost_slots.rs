//! Slots a launch PRRTE lost keeps taken (issue 40): in a burst, PRRTE
//! master now and then loses a launch into a reservation beside a grow of
//! the DVM. The job stays listed, its processes placed with no pid
//! (`PMIX_PROC_STATE_LAUNCH_UNDERWAY`) for ever, and their slots stay
//! taken: neither terminating the job nor killing its processes frees
//! them while that DVM runs (PRRTE 3.0.14 shows it TERMINATED then, still
//! with no pid, its slots still taken: docs/conformance.md D14). A pspawn waiting for those slots
//! ([`super::wait`]) would wait for ever, and its `palloc` with it. So a
//! busy answer looks at the jobs on the allocation's nodes: a job none of
//! whose processes ever started, seen so at two looks at least
//! [`STUCK_AFTER`] apart, is a lost launch, and when the slots left beside
//! such jobs cannot hold the job, pspawn asks the scheduler for as many
//! more nodes for the allocation (an EXTEND, when the scheduler says it
//! has them free) and waits on; without them the wait ends with the
//! reason ([`replace`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cli::request::SpawnRequest;
use crate::ops::Session;

/// How long a job must stay unstarted before it counts as a lost launch:
/// a launch under way takes far less, even on a loaded machine (with 6 s,
/// a fresh clone's full test run, eight tests at once on two cores, took
/// a slow launch for a lost one twice).
pub(crate) const STUCK_AFTER: Duration = Duration::from_secs(20);

/// One wait's looks at the jobs with no started process on its
/// allocation's nodes: when each was first seen so.
#[derive(Debug, Default)]
pub(crate) struct LostSlots {
    first_seen: HashMap<String, Instant>,
}

/// A job found unstarted on the allocation's nodes at one look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unstarted {
    /// Its namespace.
    pub nspace: String,
    /// Its processes (each takes a slot).
    pub procs: u32,
    /// The allocation's nodes it is placed on.
    pub nodes: Vec<String>,
}

/// The allocation's capacity and what lost launches hold of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Look {
    /// Slots of the allocation's nodes (`None`: unknown).
    pub capacity: Option<u64>,
    /// Jobs with no started process on those nodes.
    pub unstarted: Vec<Unstarted>,
}

impl LostSlots {
    /// Judge one look taken at `now` for a job needing `needed` slots in
    /// `targets`: what keeps the slots busy for ever and on how many
    /// nodes, or `None` to keep waiting.
    pub(crate) fn judge(
        &mut self,
        look: &Look,
        now: Instant,
        needed: u64,
        targets: &str,
    ) -> Option<(String, u32)> {
        self.first_seen
            .retain(|ns, _| look.unstarted.iter().any(|u| &u.nspace == ns));
        let mut lost = Vec::new();
        for u in &look.unstarted {
            let first = *self.first_seen.entry(u.nspace.clone()).or_insert(now);
            if now.duration_since(first) >= STUCK_AFTER {
                lost.push(u);
            }
        }
        let capacity = look.capacity?;
        let held: u64 = lost.iter().map(|u| u64::from(u.procs)).sum();
        if lost.is_empty() || capacity.saturating_sub(held) >= needed {
            return None;
        }
        let jobs: Vec<String> = lost
            .iter()
            .map(|u| format!("{} on {}", u.nspace, u.nodes.join(",")))
            .collect();
        let mut nodes: Vec<&String> = lost.iter().flat_map(|u| &u.nodes).collect();
        nodes.sort();
        nodes.dedup();
        let why = format!(
            "the DVM lost the launch of {} (no process of it ever started, it stays listed as \
launching) and keeps {held} of the {capacity} slot(s) of allocation {targets} taken while it runs \
(PRRTE master frees them neither on terminate nor on kill)",
            jobs.join(", ")
        );
        Some((why, u32::try_from(nodes.len()).unwrap_or(u32::MAX)))
    }
}

/// Look at the jobs on the nodes of `req`'s allocations; `None` when the
/// DVM does not say (nothing is judged then).
pub(crate) fn look(s: &Session, req: &SpawnRequest) -> Option<Look> {
    let mut names: Vec<String> = Vec::new();
    for id in &req.targets {
        let list = crate::ops::status_query::reservations(s, Some(id)).ok()?;
        names.extend(
            list.into_iter()
                .filter(|r| &r.alloc_id == id)
                .flat_map(|r| r.nodes),
        );
    }
    names.sort();
    names.dedup();
    if names.is_empty() {
        return None;
    }
    let nodes = crate::ops::status_query::nodes(s).ok()?;
    let capacity = names.iter().try_fold(0u64, |c, n| {
        let slots = nodes.iter().find(|r| &r.name == n).map(|r| r.slots)?;
        (slots > 0).then_some(c + u64::from(slots))
    });
    let mut unstarted = Vec::new();
    for j in crate::ops::status_query::jobs(s).ok()? {
        let on: Vec<String> = j
            .nodes
            .iter()
            .filter(|n| names.contains(n))
            .cloned()
            .collect();
        if on.is_empty() {
            continue;
        }
        let procs = crate::ops::query::proc_table(s, &j.nspace).ok()?;
        // Launching, or stopped after it was lost (PRRTE 3.0.14 shows it
        // TERMINATED), its processes never had a pid.
        let never_started = !procs.is_empty() && procs.iter().all(|p| p.pid == 0);
        if never_started {
            unstarted.push(Unstarted {
                nspace: j.nspace,
                procs: u32::try_from(procs.len()).unwrap_or(u32::MAX),
                nodes: on,
            });
        }
    }
    Some(Look {
        capacity,
        unstarted,
    })
}

/// How long a replacement asked of the scheduler may wait in its queue
/// (behind the requests of a burst) before pspawn gives up.
pub(crate) const REPLACEMENT_PATIENCE: Duration = Duration::from_secs(600);

/// Ask the scheduler for `nodes` more nodes for allocation `target`, in
/// place of those lost launches keep busy. The EXTEND is sent when the
/// scheduler could ever grant them: its pool has that many nodes besides
/// the allocation's own. It is answered at once when that many are free,
/// else it waits in the scheduler's queue like any request (in a burst
/// every node is held, and one is handed back within moments) for up to
/// [`REPLACEMENT_PATIENCE`]. `Err` says why no replacement comes.
pub(crate) fn replace(s: &Session, target: &str, nodes: u32) -> Result<(), String> {
    let want = crate::ops::status_query::Want {
        sched: true,
        ..Default::default()
    };
    let queues = crate::app::status_sched::ask_scheduler(s, &want)
        .and_then(|a| a.sched)
        .and_then(|q| q.ok())
        .unwrap_or_default();
    let free = queues.iter().map(|e| e.free.len()).max().unwrap_or(0);
    let pool = queues.iter().map(|e| e.nodes as usize).max().unwrap_or(0);
    let own = crate::ops::status_query::reservations(s, Some(target))
        .map(|l| {
            l.iter()
                .filter(|r| r.alloc_id == target)
                .map(|r| r.nodes.len())
                .sum::<usize>()
        })
        .unwrap_or(0);
    let wanted = nodes as usize;
    if free < wanted && pool.saturating_sub(own) < wanted {
        return Err(format!(
            "the scheduler has {free} free node(s), {nodes} needed, and {pool} in all, \
{own} of them this allocation's"
        ));
    }
    let info = [
        crate::codec::Info::new(crate::proto::keys::ALLOC_ID, target),
        crate::codec::Info::new(crate::proto::keys::ALLOC_NUM_NODES, nodes),
    ];
    crate::ops::alloc::allocate_queued(
        s,
        crate::proto::Directive::Extend,
        &info,
        REPLACEMENT_PATIENCE,
    )
    .map(|_| ())
    .map_err(|e| format!("asking for {nodes} more node(s) failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(capacity: u64, unstarted: &[(&str, u32)]) -> Look {
        Look {
            capacity: Some(capacity),
            unstarted: unstarted
                .iter()
                .map(|(ns, procs)| Unstarted {
                    nspace: ns.to_string(),
                    procs: *procs,
                    nodes: vec!["node05".into()],
                })
                .collect(),
        }
    }

    #[test]
    fn a_job_unstarted_at_two_looks_far_enough_apart_ends_the_wait() {
        let mut l = LostSlots::default();
        let t0 = Instant::now();
        assert_eq!(l.judge(&look(1, &[("p@98", 1)]), t0, 1, "alloc.37"), None);
        let soon = t0 + STUCK_AFTER / 2;
        assert_eq!(l.judge(&look(1, &[("p@98", 1)]), soon, 1, "alloc.37"), None);
        let (why, nodes) = l
            .judge(&look(1, &[("p@98", 1)]), t0 + STUCK_AFTER, 1, "alloc.37")
            .expect("a lost launch holds the only slot");
        assert!(
            why.contains("p@98 on node05") && why.contains("alloc.37"),
            "{why}"
        );
        assert_eq!(nodes, 1, "one node lost");
    }

    #[test]
    fn a_job_that_started_meanwhile_or_slots_left_beside_it_keep_the_wait() {
        let mut l = LostSlots::default();
        let t0 = Instant::now();
        l.judge(&look(1, &[("p@98", 1)]), t0, 1, "a");
        assert_eq!(l.judge(&look(1, &[]), t0 + STUCK_AFTER, 1, "a"), None);
        assert_eq!(
            l.judge(&look(1, &[("p@98", 1)]), t0 + STUCK_AFTER, 1, "a"),
            None,
            "seen again afresh: its clock starts again"
        );
        let mut l = LostSlots::default();
        l.judge(&look(4, &[("p@98", 1)]), t0, 2, "a");
        assert_eq!(
            l.judge(&look(4, &[("p@98", 1)]), t0 + STUCK_AFTER, 2, "a"),
            None,
            "three slots are left for two processes: other jobs may free them"
        );
    }
}
