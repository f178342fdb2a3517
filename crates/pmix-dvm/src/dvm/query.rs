//! Read-only views of the model, for pwatch-style queries and for tests.

use serde::Serialize;

use crate::sched::{NodeOrigin, Scheduler};

use super::jobs::{JobState, NsKind};
use super::model::{Dvm, ResStage, Reservation};

pub(super) use crate::schema::records::{ReservationRecord, ReservationState};

/// One node of the DVM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeView {
    /// Node name.
    pub name: String,
    /// Slots.
    pub slots: u32,
    /// Slots in use.
    pub in_use: u32,
    /// Startup or scheduler node.
    pub origin: NodeOrigin,
    /// `None` = default session, else the reservation id.
    pub session: Option<String>,
    /// The allocation the node belongs to (shared allocations included).
    pub alloc: Option<String>,
    /// Namespaces with processes on it.
    pub jobs: Vec<String>,
}

/// One job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobView {
    /// Its namespace.
    pub nspace: String,
    /// Parent namespace (tool or job), if any.
    pub parent: Option<String>,
    /// `running`, `killing` or `terminated`.
    pub state: &'static str,
    /// Why it is being killed, when it is.
    pub kill_reason: Option<String>,
    /// (node, procs) for the nodes it still runs on.
    pub nodes: Vec<(String, u32)>,
    /// Exit status once terminated.
    pub exit_status: Option<i32>,
}

/// Everything observable, for before/after comparisons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// All reservations.
    pub reservations: Vec<ReservationRecord>,
    /// All DVM nodes.
    pub nodes: Vec<NodeView>,
    /// All jobs.
    pub jobs: Vec<JobView>,
    /// Scheduler: own nodes free.
    pub sched_free: usize,
    /// Scheduler: requests queued.
    pub sched_queued: usize,
    /// Scheduler: the next allocation id it would mint.
    pub sched_next_id: String,
}

impl Dvm {
    /// All reservations, oldest first.
    pub fn reservations(&self, sched: &Scheduler, now: u64) -> Vec<ReservationRecord> {
        let mut v: Vec<_> = self.res.values().collect();
        v.sort_by_key(|r| r.seq);
        v.into_iter().map(|r| self.view_of(r, sched, now)).collect()
    }

    /// One reservation by id.
    pub fn reservation(&self, id: &str, sched: &Scheduler, now: u64) -> Option<ReservationRecord> {
        self.res.get(id).map(|r| self.view_of(r, sched, now))
    }

    fn view_of(&self, r: &Reservation, sched: &Scheduler, now: u64) -> ReservationRecord {
        let sv = sched.allocation(&r.id);
        let exp = sv.as_ref().and_then(|s| s.expires_at_ms);
        let o = self.gen.at(r.owner);
        let state = match r.stage {
            ResStage::Queued => ReservationState::Queued,
            ResStage::Active if o.ended && r.inherit.waits_for_children() => {
                ReservationState::Draining
            }
            ResStage::Active => ReservationState::Active,
        };
        ReservationRecord {
            reason: None,
            alloc_id: r.id.clone(),
            request_id: r.req_id.clone(),
            session_id: Some(u32::try_from(r.seq).unwrap_or(u32::MAX)),
            owner_nspace: o.name.clone(),
            owners: r.owners.iter().cloned().collect(),
            inherit: Some(r.inherit),
            share: r.share,
            nodes: r
                .nodes
                .iter()
                .map(|&i| self.nodes[i].name.clone())
                .collect(),
            expires_at: None,
            expires_in: exp.map(|e| e.saturating_sub(now).div_ceil(1000)),
            warn_secs: sv.and_then(|s| s.warn_secs),
            warn_to: Some(format!("{}:{}", r.requester.0, r.requester.1)),
            state: state.word().to_string(),
        }
    }

    /// All nodes currently part of the DVM, startup nodes first.
    pub fn nodes(&self) -> Vec<NodeView> {
        self.nodes
            .iter()
            .filter(|n| n.member)
            .map(|n| NodeView {
                name: n.name.clone(),
                slots: n.slots,
                in_use: n.in_use,
                origin: n.origin,
                session: n.session.clone(),
                alloc: n.alloc.clone(),
                jobs: n
                    .jobs
                    .iter()
                    .map(|&(j, _)| self.gen.at(j).name.clone())
                    .collect(),
            })
            .collect()
    }

    /// The jobs running and the ended ones kept (the last
    /// [`Dvm::job_history`] to end, and older ones something still needs),
    /// in launch order.
    pub fn jobs(&self) -> Vec<JobView> {
        let mut kept: Vec<_> = self
            .gen
            .ents
            .iter()
            .filter(|e| e.kind == NsKind::Job)
            .collect();
        kept.sort_unstable_by_key(|e| e.born);
        kept.into_iter()
            .map(|e| {
                let (state, why) = match &e.state {
                    JobState::Running => ("running", None),
                    JobState::Killing(r) => ("killing", Some(r.clone())),
                    JobState::Terminated => ("terminated", None),
                };
                JobView {
                    nspace: e.name.clone(),
                    parent: e.parent.map(|p| self.gen.at(p).name.clone()),
                    state,
                    kill_reason: why,
                    nodes: e
                        .placement
                        .iter()
                        .map(|&(n, c)| (self.nodes[n].name.clone(), c))
                        .collect(),
                    exit_status: e.exit_status,
                }
            })
            .collect()
    }

    /// The spawn tree job `nspace` belongs to, as PRRTE master reports it
    /// in a job's end (`PMIX_SPAWN_TREE_ROOT`, `PMIX_SPAWN_TREE_ACTIVE`):
    /// the nearest tool it descends from by spawns (or, when no tool
    /// launched it, its topmost job ancestor, itself included), and the
    /// jobs of that tree still running, `nspace` not counted.
    pub fn spawn_tree(&self, nspace: &str) -> Option<(String, u32)> {
        let i = self.gen.get(nspace)?;
        let root = self.tree_root(i);
        let r = self.gen.at(root);
        let active = if r.live_desc == 0 && !(r.kind == NsKind::Job && r.live) {
            0
        } else {
            let in_tree = |k: usize, e: &super::jobs::NsEntry| {
                e.kind == NsKind::Job && e.live && k as u32 != i && self.tree_root(k as u32) == root
            };
            let n = self
                .gen
                .ents
                .iter()
                .enumerate()
                .filter(|(k, e)| in_tree(*k, e))
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        };
        Some((r.name.clone(), active))
    }

    /// The root of entry `i`'s spawn tree (see [`Dvm::spawn_tree`]).
    fn tree_root(&self, i: u32) -> u32 {
        let mut cur = i;
        while let Some(p) = self.gen.at(cur).parent {
            match self.gen.at(p).kind {
                NsKind::Tool => return p,
                NsKind::Job => cur = p,
                NsKind::Placeholder => break,
            }
        }
        cur
    }

    /// True when the namespace has at least one live derived child.
    pub fn has_live_descendants(&self, nspace: &str) -> bool {
        self.gen
            .get(nspace)
            .is_some_and(|i| self.gen.at(i).live_desc > 0)
    }

    /// Everything observable, model and scheduler.
    pub fn snapshot(&self, sched: &Scheduler, now: u64) -> Snapshot {
        Snapshot {
            reservations: self.reservations(sched, now),
            nodes: self.nodes(),
            jobs: self.jobs(),
            sched_free: sched.free_own_count(),
            sched_queued: sched.queue_len(),
            sched_next_id: sched.peek_next_id(),
        }
    }
}
