//! How reservations end (§8.2.1.9): unconditional triggers, the four
//! namespace-termination dispositions, scheduler events, DVM teardown.

use crate::sched::{NodeOrigin, SchedEvent, Scheduler};

use super::error::{DvmError, Rule};
use super::jobs::{JobState, NsKind};
use super::model::{Dvm, ResStage};
use super::types::{Effect, EndHow, EndWhy};

impl Dvm {
    /// Ends reservation `id`. `Released` returns its nodes to the scheduler
    /// (scheduler nodes leave the DVM and their jobs are killed; carved startup
    /// nodes revert to the default session); `Unreserved` keeps every node in
    /// the DVM's default session and kills nobody. A still-queued allocation is
    /// simply dropped. `reclaimed` = the scheduler already took the nodes back.
    pub(crate) fn end_reservation_inner(
        &mut self,
        id: &str,
        how: EndHow,
        why: EndWhy,
        reclaimed: bool,
        sched: &mut Scheduler,
        now: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let Some(r) = self.res.get_mut(id) else {
            return fx;
        };
        let mut events = Vec::new();
        if r.stage == ResStage::Queued {
            fx.push(r.dropped());
            if !reclaimed {
                if let Ok((_, _, ev)) = sched.cancel(id, now) {
                    events = ev;
                }
            }
            self.forget(id);
            fx.push(Effect::ReservationEnded {
                alloc_id: id.to_string(),
                how: EndHow::Cancelled,
                why,
            });
            fx.extend(self.apply_sched(events, sched, now));
            return fx;
        }
        let dropped = r.drop_extends();
        if !dropped.is_empty() && !reclaimed {
            if let Ok((_, _, ev)) = sched.cancel(id, now) {
                events.extend(ev);
            }
        }
        fx.extend(dropped);
        let nodes = r.nodes.clone();
        let leaves = how == EndHow::Released;
        if !reclaimed {
            let ev = if leaves {
                sched
                    .release(id, None, now)
                    .map(|(_, ev)| ev)
                    .unwrap_or_default()
            } else {
                sched.unreserve(id, now)
            };
            events.extend(ev);
        }
        let reason = match why {
            EndWhy::Expired => "allocation time limit expired",
            EndWhy::Teardown => "DVM teardown",
            EndWhy::OwnerRelease => "released by its owner",
            EndWhy::SchedulerRelease => "released by the scheduler",
            _ => "returned to the scheduler by its inheritance disposition",
        };
        for &i in &nodes {
            self.detach_node(i, leaves, reason, &mut fx);
        }
        self.report_left(&nodes, &mut fx);
        self.report_unreserved(id, &nodes, &mut fx);
        self.forget(id);
        fx.push(Effect::ReservationEnded {
            alloc_id: id.to_string(),
            how,
            why,
        });
        fx.extend(self.apply_sched(events, sched, now));
        fx
    }

    /// Ends reservation `id` through the scheduler (see
    /// [`Dvm::end_reservation_inner`]).
    pub(crate) fn end_reservation(
        &mut self,
        id: &str,
        how: EndHow,
        why: EndWhy,
        sched: &mut Scheduler,
        now: u64,
    ) -> Vec<Effect> {
        self.end_reservation_inner(id, how, why, false, sched, now)
    }

    /// Turns scheduler events into DVM changes and effects.
    pub fn apply_sched(
        &mut self,
        events: Vec<SchedEvent>,
        sched: &mut Scheduler,
        now: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        for ev in events {
            match ev {
                SchedEvent::WarnDue {
                    alloc_id,
                    remaining_secs,
                } => {
                    if self.cfg.compat {
                        continue;
                    }
                    if let Some(r) = self.res.get(&alloc_id) {
                        fx.push(Effect::Warn {
                            to: r.requester.clone(),
                            alloc_id,
                            req_id: r.req_id.clone(),
                            remaining_secs,
                        });
                    }
                }
                SchedEvent::Expired { alloc_id, .. } => {
                    fx.extend(self.end_reservation_inner(
                        &alloc_id,
                        EndHow::Released,
                        EndWhy::Expired,
                        true,
                        sched,
                        now,
                    ));
                }
                SchedEvent::QueuedGranted {
                    alloc_id,
                    nodes,
                    extend,
                } => {
                    let Some(r) = self.res.get_mut(&alloc_id) else {
                        continue;
                    };
                    let mut inherit = None;
                    let mut warns = false;
                    let (to, req_id) = if extend {
                        match r.queued_extends.pop_front() {
                            Some(q) => {
                                inherit = q.inherit;
                                warns = q.warns;
                                (q.to, q.req_id)
                            }
                            None => (r.requester.clone(), r.req_id.clone()),
                        }
                    } else {
                        r.stage = ResStage::Active;
                        (r.requester.clone(), r.req_id.clone())
                    };
                    if extend {
                        self.extend_granted(&alloc_id, to.clone(), inherit, warns);
                    }
                    self.place_nodes(&alloc_id, &nodes, sched, &mut fx);
                    fx.push(Effect::Granted {
                        to,
                        alloc_id: alloc_id.clone(),
                        req_id,
                        nodes,
                    });
                    if extend {
                        fx.extend(self.settle_after_extend(&alloc_id, inherit, sched, now));
                    }
                }
            }
        }
        fx
    }

    /// Lets simulated time pass: fires warnings, expiries and the queued
    /// grants they unblock.
    pub fn advance(&mut self, sched: &mut Scheduler, now: u64) -> Vec<Effect> {
        let ev = sched.advance(now);
        self.apply_sched(ev, sched, now)
    }

    /// Applies the dispositions of the reservations owned by namespace
    /// `owner`, once it has ended: NONE/DEFAULT fire (at its death, or at
    /// once when an EXTEND set them after it), CHILD-flavoured ones fire once
    /// it has no live derived child left.
    pub(crate) fn settle_owner(
        &mut self,
        owner: u32,
        sched: &mut Scheduler,
        now: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let e = self.gen.at(owner);
        if e.owned.is_empty() || !e.ended {
            return fx;
        }
        let drained = e.live_desc == 0;
        let owned = e.owned.clone();
        for id in owned {
            let Some(r) = self.res.get(&id) else {
                continue;
            };
            let inh = r.inherit;
            let fire = !inh.waits_for_children() || drained;
            if fire {
                let how = if inh.returns_to_scheduler() {
                    EndHow::Released
                } else {
                    EndHow::Unreserved
                };
                fx.extend(self.end_reservation(&id, how, EndWhy::Disposition(inh), sched, now));
            }
        }
        fx
    }

    /// A job ended (its processes are gone): frees its slots, records its exit
    /// status and fires every disposition its termination settles, including
    /// CHILD drains of ancestors anywhere up its genealogy.
    pub fn job_terminated(
        &mut self,
        nspace: &str,
        exit_status: i32,
        sched: &mut Scheduler,
        now: u64,
    ) -> Result<Vec<Effect>, DvmError> {
        self.namespace_ended(nspace, Some(exit_status), sched, now)
    }

    /// A tool disconnected: its namespace terminates (§8.2.1.9.2 applies to
    /// reservations it owns).
    pub fn tool_disconnected(
        &mut self,
        nspace: &str,
        sched: &mut Scheduler,
        now: u64,
    ) -> Result<Vec<Effect>, DvmError> {
        self.namespace_ended(nspace, None, sched, now)
    }

    fn namespace_ended(
        &mut self,
        nspace: &str,
        exit_status: Option<i32>,
        sched: &mut Scheduler,
        now: u64,
    ) -> Result<Vec<Effect>, DvmError> {
        let i = self
            .gen
            .get(nspace)
            .ok_or(DvmError::NotFound(Rule::UnknownNamespace))?;
        if !self.gen.at(i).live {
            return Ok(Vec::new());
        }
        let placement = std::mem::take(&mut self.gen.at_mut(i).placement);
        let per = self.gen.at(i).slots_per_proc.max(1);
        for (n, procs) in placement {
            let node = &mut self.nodes[n];
            node.in_use = node.in_use.saturating_sub(procs.saturating_mul(per));
            node.jobs.retain(|&(j, _)| j != i);
        }
        self.gen.at_mut(i).exit_status = exit_status;
        let candidates = self.gen.end(i);
        let mut fx = Vec::new();
        for c in candidates {
            fx.extend(self.settle_owner(c, sched, now));
        }
        if self.gen.at(i).kind == NsKind::Job {
            self.remember_ended_job(i);
        } else {
            self.forget_if_unneeded(i);
        }
        Ok(fx)
    }

    /// Trigger 2: the DVM tears down. Every reservation ends, every running
    /// job is killed, every scheduler node leaves, the scheduler gets
    /// everything back.
    pub fn teardown(&mut self, sched: &mut Scheduler) -> Vec<Effect> {
        let mut fx = Vec::new();
        let mut ids: Vec<(u64, String)> =
            self.res.values().map(|r| (r.seq, r.id.clone())).collect();
        ids.sort();
        for (_, id) in ids {
            let Some(mut r) = self.forget(&id) else {
                continue;
            };
            let queued = r.stage == ResStage::Queued;
            if queued {
                fx.push(r.dropped());
            }
            fx.extend(r.drop_extends());
            fx.push(Effect::ReservationEnded {
                alloc_id: id,
                how: if queued {
                    EndHow::Cancelled
                } else {
                    EndHow::Released
                },
                why: EndWhy::Teardown,
            });
        }
        for e in self.gen.ents.iter_mut() {
            if e.live && e.state == JobState::Running && !e.placement.is_empty() {
                e.state = JobState::Killing("DVM teardown".to_string());
                fx.push(Effect::KillJob {
                    nspace: e.name.clone(),
                    reason: "DVM teardown".to_string(),
                });
            }
        }
        let mut left = Vec::new();
        for n in self.nodes.iter_mut() {
            n.session = None;
            n.alloc = None;
            if n.member && n.origin == NodeOrigin::Scheduler {
                n.member = false;
                n.in_use = 0;
                n.jobs.clear();
                left.push(n.name.clone());
            }
        }
        if !left.is_empty() {
            fx.push(Effect::NodesLeft { nodes: left });
        }
        sched.teardown();
        self.torn_down = true;
        fx
    }
}
