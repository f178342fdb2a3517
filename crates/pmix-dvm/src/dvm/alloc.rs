//! Allocation requests: the decision table (§8.2.1.5), NEW/EXTEND/RELEASE/
//! REQ_CANCEL, and the error table (§8.2.1.8).
//!
//! Every request is fully validated — including the scheduler's own checks via
//! [`Scheduler::check`] — before any state changes, so a rejection has no
//! partial effect and costs the scheduler nothing (not even an allocation id).

use std::collections::{HashSet, VecDeque};

use crate::proto::{Directive, Inheritance, Received};
use crate::sched::{NodeAsk, SchedError, SchedRequest, Scheduler, Submit};

use super::error::{DvmError, Rule};
use super::model::{Dvm, QueuedExtend, ResStage, Reservation};
use super::types::{
    AllocAttrs, AllocOutcome, AllocStatus, Effect, EndHow, EndWhy, Requester, RequesterClass,
};

/// Memory of a pdvm node per slot, in MB (a node of S slots has S × this).
pub(super) const MEM_PER_SLOT_MB: u64 = 4096;

/// An allocation request as the server hands it to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocRequest {
    /// Who asks.
    pub requester: Requester,
    /// `pmix_alloc_directive_t` as sent (an unknown code is refused).
    pub directive: Received<Directive>,
    /// Decoded attributes.
    pub attrs: AllocAttrs,
}

/// What an allocation request gets: an outcome, or a refusal that changed
/// nothing.
type Answer = Result<AllocOutcome, DvmError>;

/// The answer naming allocation `alloc_id`, echoing `req_id`.
fn outcome(
    alloc_id: String,
    req_id: Option<&String>,
    status: AllocStatus,
    effects: Vec<Effect>,
) -> AllocOutcome {
    AllocOutcome {
        alloc_id,
        req_id: req_id.cloned(),
        status,
        effects,
    }
}

fn sched_err(e: SchedError) -> DvmError {
    match e {
        SchedError::UnknownNode => DvmError::BadParam(Rule::UnknownNode),
        SchedError::DuplicateNode => DvmError::BadParam(Rule::DuplicateNode),
        SchedError::TooMany => DvmError::OutOfResource(Rule::TooManyNodes),
        SchedError::ZeroTime => DvmError::BadParam(Rule::ZeroTime),
        SchedError::StillQueued => DvmError::ResourceBusy(Rule::ExtendQueued),
        SchedError::NoSuchAllocation => DvmError::NotFound(Rule::ExtendNotFound),
        SchedError::NothingQueued => DvmError::NotFound(Rule::CancelNotFound),
        SchedError::NotInAllocation => DvmError::BadParam(Rule::ReleaseBadPart),
    }
}

impl Dvm {
    /// Answers an allocation request. On `Err` nothing changed anywhere.
    pub fn allocate(&mut self, req: &AllocRequest, sched: &mut Scheduler, now: u64) -> Answer {
        let a = &req.attrs;
        let Received::Known(directive) = req.directive else {
            return Err(DvmError::BadParam(Rule::BadDirective));
        };
        // §8.2.1.8 row 1 (TARGET is unknown to a compat DVM: ignored there).
        if !self.cfg.compat
            && req.requester.class == RequesterClass::Application
            && a.target.is_some()
        {
            return Err(DvmError::NoPermissions(Rule::AppTarget));
        }
        match directive {
            Directive::New => self.alloc_new(req, sched, now),
            Directive::Extend => self.alloc_extend(req, sched, now),
            Directive::Release => self.alloc_release(req, sched, now),
            Directive::Reaquire => Err(DvmError::NotSupported(Rule::ReacquireNotSupported)),
            Directive::ReqCancel => self
                .alloc_cancel(req, sched, now)
                .map(|o| o.cancelled_by(&req.requester)),
        }
    }

    fn parse_inherit(&self, a: &AllocAttrs) -> Result<Option<Inheritance>, DvmError> {
        let Some(v) = a.inherit else {
            return Ok(None);
        };
        // A value outside the type is malformed whatever the mode.
        let i = v.known().ok_or(DvmError::BadParam(Rule::InheritInvalid))?;
        // §8.2.1.10: only the default disposition exists in compat mode;
        // asking for it explicitly is harmless, anything else is refused.
        if self.cfg.compat && i != Inheritance::Default {
            return Err(DvmError::NotSupported(Rule::InheritNotSupported));
        }
        Ok(Some(i))
    }

    /// What a NEW or EXTEND asks for: its disposition, then its nodes and
    /// time as the scheduler takes them.
    fn parse_grow(&self, a: &AllocAttrs) -> Result<(Option<Inheritance>, SchedRequest), DvmError> {
        Ok((self.parse_inherit(a)?, self.sched_request(a)?))
    }

    fn sched_request(&self, a: &AllocAttrs) -> Result<SchedRequest, DvmError> {
        let ask = match (&a.node_list, a.num_nodes) {
            (Some(list), n) => {
                if n.is_some_and(|n| n as usize != list.len()) {
                    return Err(DvmError::BadParam(Rule::CountListMismatch));
                }
                if list.is_empty() {
                    NodeAsk::Nothing
                } else {
                    NodeAsk::List(list.clone())
                }
            }
            (None, Some(n)) if n > 0 => NodeAsk::Count(n),
            _ => NodeAsk::Nothing,
        };
        Ok(SchedRequest {
            ask,
            exclude: a.exclude.clone().unwrap_or_default(),
            time_secs: a.time_secs,
            // §8.2.1.10: a compat DVM never forwards WARN_TIMEOUT.
            warn_secs: if self.cfg.compat {
                None
            } else {
                a.warn_timeout
            },
        })
    }

    fn alloc_new(&mut self, req: &AllocRequest, sched: &mut Scheduler, now: u64) -> Answer {
        let a = &req.attrs;
        let (inherit, sreq) = self.parse_grow(a)?;
        if sreq.ask == NodeAsk::Nothing {
            return Err(DvmError::BadParam(Rule::NoNodes));
        }
        self.check_node_resources(a, &sreq.ask)?;
        sched.check(&sreq).map_err(sched_err)?;

        // Decision table (§8.2.1.5): TARGET names the owner for tools;
        // SHARE=true routes nodes to the default session.
        let owner_ns = match (&a.target, self.cfg.compat) {
            (Some(t), false) => t.clone(),
            _ => req.requester.nspace.clone(),
        };
        let share = !self.cfg.compat && a.share == Some(true);

        let (id, submit) = sched.submit_new(&sreq, now).map_err(sched_err)?;
        self.ensure_requester(&req.requester);
        let owner = self.gen.ensure(&owner_ns);
        let owners = VecDeque::from([owner_ns.clone()]);
        let r = Reservation {
            id: id.clone(),
            seq: self.next_seq,
            req_id: a.req_id.clone(),
            owner,
            owner_lookup: owners.iter().cloned().collect::<HashSet<_>>(),
            owners,
            inherit: inherit.unwrap_or(Inheritance::Default),
            inherit_given: inherit.is_some(),
            share,
            nodes: Vec::new(),
            requester: (req.requester.nspace.clone(), req.requester.rank),
            stage: ResStage::Queued,
            queued_extends: VecDeque::new(),
        };
        self.next_seq += 1;
        self.res.insert(id.clone(), r);
        if let Some(q) = &a.req_id {
            self.by_req.entry(q.clone()).or_default().push(id.clone());
        }
        self.gen.at_mut(owner).owned.push(id.clone());

        let mut fx = Vec::new();
        let status = match submit {
            Submit::Granted(nodes) => {
                if let Some(r) = self.res.get_mut(&id) {
                    r.stage = ResStage::Active;
                }
                self.place_nodes(&id, &nodes, sched, &mut fx);
                AllocStatus::Granted { nodes }
            }
            Submit::Queued => AllocStatus::Queued,
        };
        // An owning namespace that already ended (e.g. a TARGET that has
        // finished) gets its disposition applied at once.
        if self.gen.at(owner).ended {
            fx.extend(self.settle_owner(owner, sched, now));
        }
        Ok(outcome(id, a.req_id.as_ref(), status, fx))
    }

    /// CPUs and memory no node count could ever provide are refused
    /// (`PMIX_ERR_OUT_OF_RESOURCE`) rather than granted on nodes too small:
    /// a pdvm node has one CPU per slot and [`MEM_PER_SLOT_MB`] per slot;
    /// `PMIX_ALLOC_NUM_CPUS` counts over all the nodes asked for,
    /// `PMIX_ALLOC_MEM_SIZE` is per node.
    fn check_node_resources(&self, a: &AllocAttrs, ask: &NodeAsk) -> Result<(), DvmError> {
        let nodes = match ask {
            NodeAsk::Count(k) => u64::from(*k),
            NodeAsk::List(l) => l.len() as u64,
            NodeAsk::Nothing => 0,
        };
        let slots = u64::from(self.cfg.slots);
        if a.num_cpus.is_some_and(|c| c > nodes.saturating_mul(slots)) {
            return Err(DvmError::OutOfResource(Rule::TooManyCpus));
        }
        if a.mem_mb
            .is_some_and(|m| m > slots.saturating_mul(MEM_PER_SLOT_MB))
        {
            return Err(DvmError::OutOfResource(Rule::TooMuchMemory));
        }
        Ok(())
    }

    fn alloc_extend(&mut self, req: &AllocRequest, sched: &mut Scheduler, now: u64) -> Answer {
        let a = &req.attrs;
        let (inherit, sreq) = self.parse_grow(a)?;
        let id = self.resolve_named(
            req,
            [Rule::ExtendNoId, Rule::ExtendNotOwner, Rule::ExtendNotFound],
        )?;
        if self
            .res
            .get(&id)
            .is_some_and(|r| r.stage == ResStage::Queued)
        {
            return Err(DvmError::ResourceBusy(Rule::ExtendQueued));
        }
        sched.check(&sreq).map_err(sched_err)?;

        let tag = self.next_seq;
        let submit = sched
            .submit_extend_tagged(&id, &sreq, now, tag)
            .map_err(sched_err)?;
        self.next_seq += 1;
        self.ensure_requester(&req.requester);
        let to = (req.requester.nspace.clone(), req.requester.rank);
        let mut fx = Vec::new();
        let status = match submit {
            Submit::Granted(nodes) => {
                self.extend_granted(&id, to, inherit, a.warn_timeout.is_some());
                self.place_nodes(&id, &nodes, sched, &mut fx);
                fx.extend(self.settle_after_extend(&id, inherit, sched, now));
                AllocStatus::Granted { nodes }
            }
            Submit::Queued => {
                // Nothing changes until the grant (RFC 002: a cancelled
                // queued EXTEND leaves no side effect).
                if let Some(r) = self.res.get_mut(&id) {
                    r.queued_extends.push_back(QueuedExtend {
                        to,
                        req_id: a.req_id.clone(),
                        inherit,
                        tag,
                        warns: a.warn_timeout.is_some(),
                    });
                }
                AllocStatus::Queued
            }
        };
        Ok(outcome(id, a.req_id.as_ref(), status, fx))
    }

    /// Applies what a granted EXTEND changes besides nodes: the recorded
    /// disposition, and, when it asked for a warning (`warns`), the
    /// warning's recipient (§8.2.1.9.5); an EXTEND without a threshold
    /// leaves the warning with whoever asked for it.
    pub(crate) fn extend_granted(
        &mut self,
        id: &str,
        to: (String, u32),
        inherit: Option<Inheritance>,
        warns: bool,
    ) {
        if let Some(r) = self.res.get_mut(id) {
            if let Some(i) = inherit {
                r.inherit = i;
                r.inherit_given = true;
            }
            if warns {
                r.requester = to;
            }
        }
    }

    /// After a granted EXTEND that set a disposition: when the owning
    /// namespace has already ended (a draining CHILD reservation switched to
    /// NONE/DEFAULT, say), the new disposition is settled at once rather
    /// than never.
    pub(crate) fn settle_after_extend(
        &mut self,
        id: &str,
        inherit: Option<Inheritance>,
        sched: &mut Scheduler,
        now: u64,
    ) -> Vec<Effect> {
        let Some(owner) = self.res.get(id).map(|r| r.owner) else {
            return Vec::new();
        };
        if inherit.is_none() || !self.gen.at(owner).ended {
            return Vec::new();
        }
        self.settle_owner(owner, sched, now)
    }

    /// The reservation an EXTEND, RELEASE or REQ_CANCEL names (by alloc id
    /// or request id), checked for ownership. `rules` are the refusals for
    /// (no id given, not owned, not found), in that order.
    fn resolve_named(&self, req: &AllocRequest, rules: [Rule; 3]) -> Result<String, DvmError> {
        let [no_id, not_owner, not_found] = rules;
        let a = &req.attrs;
        if a.alloc_id.is_none() && a.req_id.is_none() {
            return Err(DvmError::BadParam(no_id));
        }
        self.find_for(a.alloc_id.as_deref(), a.req_id.as_deref(), &req.requester)
            .map_err(|owned_elsewhere| {
                if owned_elsewhere {
                    DvmError::NoPermissions(not_owner)
                } else {
                    DvmError::NotFound(not_found)
                }
            })
    }

    fn alloc_release(&mut self, req: &AllocRequest, sched: &mut Scheduler, now: u64) -> Answer {
        let a = &req.attrs;
        let id = self.resolve_named(
            req,
            [
                Rule::ReleaseNoId,
                Rule::ReleaseNotOwner,
                Rule::ReleaseNotFound,
            ],
        )?;
        let Some(r) = self.res.get(&id) else {
            return Err(DvmError::NotFound(Rule::ReleaseNotFound));
        };
        // Which nodes: whole (None) or a validated subset.
        let part: Option<Vec<usize>> = match (&a.node_list, a.num_nodes) {
            (Some(list), _) => {
                let mut v = Vec::with_capacity(list.len());
                for n in list {
                    let i = self
                        .node_by_name
                        .get(n)
                        .copied()
                        .filter(|i| r.nodes.contains(i) && !v.contains(i))
                        .ok_or(DvmError::BadParam(Rule::ReleaseBadPart))?;
                    v.push(i);
                }
                Some(v)
            }
            (None, Some(k)) => {
                if k == 0 || k as usize > r.nodes.len() {
                    return Err(DvmError::BadParam(Rule::ReleaseBadPart));
                }
                // The most recently granted nodes go first.
                Some(r.nodes.iter().rev().take(k as usize).copied().collect())
            }
            (None, None) => None,
        };
        let whole = match &part {
            None => true,
            Some(v) => v.len() == r.nodes.len() || r.stage == ResStage::Queued,
        };
        let mut fx = Vec::new();
        let mut released = Vec::new();
        if whole {
            released = r
                .nodes
                .iter()
                .map(|&i| self.nodes[i].name.clone())
                .collect();
            let why = if req.requester.class == RequesterClass::Scheduler {
                EndWhy::SchedulerRelease
            } else {
                EndWhy::OwnerRelease
            };
            fx = self.end_reservation(&id, EndHow::Released, why, sched, now);
        } else if let Some(v) = part {
            let names: Vec<String> = v.iter().map(|&i| self.nodes[i].name.clone()).collect();
            let (back, ev) = sched.release(&id, Some(&names), now).map_err(sched_err)?;
            for &i in &v {
                self.detach_node(i, true, "released by its owner", &mut fx);
            }
            if let Some(r) = self.res.get_mut(&id) {
                r.nodes.retain(|i| !v.contains(i));
            }
            self.report_left(&v, &mut fx);
            self.report_unreserved(&id, &v, &mut fx);
            released = back;
            fx.extend(self.apply_sched(ev, sched, now));
        }
        Ok(outcome(
            id,
            a.req_id.as_ref(),
            AllocStatus::Released { nodes: released },
            fx,
        ))
    }

    fn alloc_cancel(&mut self, req: &AllocRequest, sched: &mut Scheduler, now: u64) -> Answer {
        let a = &req.attrs;
        if a.alloc_id.is_none() && a.req_id.is_none() {
            return self.cancel_all_of(req, sched, now);
        }
        // A queued EXTEND named by its own request id (RFC 002).
        if let (None, Some(q)) = (&a.alloc_id, &a.req_id) {
            if let Some((id, tag)) = self.find_queued_extend(q) {
                if !self
                    .res
                    .get(&id)
                    .is_some_and(|r| r.owned_by(&req.requester))
                {
                    return Err(DvmError::NoPermissions(Rule::CancelNotOwner));
                }
                let fx = self.cancel_extend(&id, tag, sched, now)?;
                return Ok(outcome(
                    id,
                    a.req_id.as_ref(),
                    AllocStatus::Cancelled { count: 1 },
                    fx,
                ));
            }
        }
        let id = self.resolve_named(
            req,
            [Rule::CancelNoId, Rule::CancelNotOwner, Rule::CancelNotFound],
        )?;
        let (count, fx) = self.cancel_queued_of(&id, sched, now)?;
        Ok(outcome(
            id,
            a.req_id.as_ref(),
            AllocStatus::Cancelled { count },
            fx,
        ))
    }

    /// The (allocation, tag) of the queued EXTEND carrying request id `q`.
    fn find_queued_extend(&self, q: &str) -> Option<(String, u64)> {
        let mut best: Option<(u64, String, u64)> = None;
        for r in self.res.values() {
            for e in &r.queued_extends {
                if e.req_id.as_deref() == Some(q) && best.as_ref().is_none_or(|b| e.tag > b.0) {
                    best = Some((e.tag, r.id.clone(), e.tag));
                }
            }
        }
        best.map(|(_, id, tag)| (id, tag))
    }

    /// Cancels the one queued EXTEND `tag` of reservation `id`.
    fn cancel_extend(
        &mut self,
        id: &str,
        tag: u64,
        sched: &mut Scheduler,
        now: u64,
    ) -> Result<Vec<Effect>, DvmError> {
        let ev = sched.cancel_tagged(id, tag, now).map_err(sched_err)?;
        let mut fx = Vec::new();
        if let Some(r) = self.res.get_mut(id) {
            if let Some(k) = r.queued_extends.iter().position(|e| e.tag == tag) {
                fx.extend(r.queued_extends.remove(k).map(|q| q.dropped(id)));
            }
        }
        fx.extend(self.apply_sched(ev, sched, now));
        Ok(fx)
    }

    /// Cancels everything queued for reservation `id`: the reservation
    /// itself while it waits for its first grant, else its queued EXTENDs.
    fn cancel_queued_of(
        &mut self,
        id: &str,
        sched: &mut Scheduler,
        now: u64,
    ) -> Result<(usize, Vec<Effect>), DvmError> {
        let (count, was_new, ev) = sched.cancel(id, now).map_err(sched_err)?;
        let mut fx = if was_new {
            // The scheduler has already dropped it from its queue.
            self.end_reservation_inner(
                id,
                EndHow::Cancelled,
                EndWhy::RequestCancelled,
                true,
                sched,
                now,
            )
        } else {
            self.res
                .get_mut(id)
                .map(Reservation::drop_extends)
                .unwrap_or_default()
        };
        fx.extend(self.apply_sched(ev, sched, now));
        Ok((count, fx))
    }

    /// REQ_CANCEL naming nothing: cancels every outstanding request of the
    /// requester's namespace — queued NEWs it sent and queued EXTENDs it
    /// sent (RFC 002). `PMIX_ERR_NOT_FOUND` when there is none.
    fn cancel_all_of(&mut self, req: &AllocRequest, sched: &mut Scheduler, now: u64) -> Answer {
        let ns = &req.requester.nspace;
        // (submission order, allocation, Some(tag) for an EXTEND).
        let mut mine: Vec<(u64, String, Option<u64>)> = Vec::new();
        for r in self.res.values() {
            if r.stage == ResStage::Queued {
                if &r.requester.0 == ns {
                    mine.push((r.seq, r.id.clone(), None));
                }
                continue;
            }
            for e in &r.queued_extends {
                if &e.to.0 == ns {
                    mine.push((e.tag, r.id.clone(), Some(e.tag)));
                }
            }
        }
        if mine.is_empty() {
            return Err(DvmError::NotFound(Rule::CancelNotFound));
        }
        // Latest first: removing a request behind others never lets one of
        // ours still waiting in front be granted in between.
        mine.sort();
        let first = mine[0].1.clone();
        let mut fx = Vec::new();
        let mut count = 0;
        for (_, id, tag) in mine.into_iter().rev() {
            let done = match tag {
                Some(tag) => self.cancel_extend(&id, tag, sched, now).map(|f| (1, f)),
                None => self.cancel_queued_of(&id, sched, now),
            };
            if let Ok((n, mut more)) = done {
                count += n;
                fx.append(&mut more);
            }
        }
        Ok(outcome(first, None, AllocStatus::Cancelled { count }, fx))
    }
}
