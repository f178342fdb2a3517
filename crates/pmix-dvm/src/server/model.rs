//! The model driver: pdvm's reservation model ([`crate::dvm`]) and
//! simulated scheduler ([`crate::sched`]) with the clock that feeds them
//! time, and the replies waiting on them (queued allocation requests, the
//! request id and owner of each granted allocation). Its state is private:
//! every change goes through a method that passes the scheduler and the
//! model time along, so the server never wires them by hand.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::dvm::{AllocOutcome, AllocRequest, Dvm, DvmError, Effect, Placement};
use crate::sched::Scheduler;
use crate::schema::records::ReservationRecord;

use super::ident::ProcName;

/// Model time: real time since start, scaled by `--time-scale`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    start: Instant,
    scale: f64,
}

impl Clock {
    /// A clock starting now.
    pub(crate) fn new(scale: f64) -> Self {
        let scale = if scale.is_finite() && scale > 0.0 {
            scale
        } else {
            1.0
        };
        Clock {
            start: Instant::now(),
            scale,
        }
    }

    /// Model milliseconds now.
    pub(crate) fn now_ms(&self) -> u64 {
        (self.start.elapsed().as_secs_f64() * 1000.0 * self.scale) as u64
    }

    /// Real time until model instant `at_ms`.
    pub(crate) fn until(&self, at_ms: u64) -> Duration {
        let now = self.now_ms();
        let ahead = at_ms.saturating_sub(now) as f64 / self.scale;
        let longest = super::reactor::LONGEST_TIMER.as_secs_f64();
        Duration::from_secs_f64((ahead / 1000.0).min(longest)) + Duration::from_millis(1)
    }
}

/// A queued allocation request waiting for its reply.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// Connection id.
    pub conn: u64,
    /// Request tag.
    pub tag: u32,
    /// Requesting process, as the model names it.
    pub to: ProcName,
}

/// The model, the scheduler, the clock and the replies waiting on them.
pub(crate) struct ModelDriver {
    dvm: Dvm,
    sched: Scheduler,
    clock: Clock,
    next_ns: u64,
    pending: HashMap<String, VecDeque<Pending>>,
    grants: HashMap<String, (Option<String>, String)>,
}

impl ModelDriver {
    /// Drive `dvm` and `sched` on `clock`.
    pub(crate) fn new(dvm: Dvm, sched: Scheduler, clock: Clock) -> ModelDriver {
        ModelDriver {
            dvm,
            sched,
            clock,
            next_ns: 1,
            pending: HashMap::new(),
            grants: HashMap::new(),
        }
    }

    /// The model, for its read-only views.
    pub(crate) fn dvm(&self) -> &Dvm {
        &self.dvm
    }

    /// The scheduler, for its read-only views.
    pub(crate) fn sched(&self) -> &Scheduler {
        &self.sched
    }

    /// The number of the next namespace pdvm mints.
    pub(crate) fn next_ns_number(&mut self) -> u64 {
        let n = self.next_ns;
        self.next_ns += 1;
        n
    }

    /// An allocation request.
    pub(crate) fn allocate(&mut self, req: &AllocRequest) -> Result<AllocOutcome, DvmError> {
        let now = self.clock.now_ms();
        self.dvm.allocate(req, &mut self.sched, now)
    }

    /// Scheduler deadlines that have come: their effects (none when none is due).
    pub(crate) fn advance_due(&mut self) -> Vec<Effect> {
        let now = self.clock.now_ms();
        if self.sched.next_deadline().is_some_and(|d| d <= now) {
            self.dvm.advance(&mut self.sched, now)
        } else {
            Vec::new()
        }
    }

    /// Real time until the scheduler's next deadline.
    pub(crate) fn until_next_deadline(&self) -> Option<Duration> {
        self.sched.next_deadline().map(|t| self.clock.until(t))
    }

    /// A tool took namespace `nspace`.
    pub(crate) fn tool_connected(&mut self, nspace: &str) -> Result<(), DvmError> {
        self.dvm.tool_connected(nspace)
    }

    /// A tool connected under a namespace pdvm minted for it.
    pub(crate) fn tool_connected_minted(&mut self, nspace: &str) -> Result<(), DvmError> {
        self.dvm.tool_connected_minted(nspace)
    }

    /// The tool of namespace `nspace` left.
    pub(crate) fn tool_disconnected(&mut self, nspace: &str) -> Result<Vec<Effect>, DvmError> {
        let now = self.clock.now_ms();
        self.dvm.tool_disconnected(nspace, &mut self.sched, now)
    }

    /// Job `nspace` ended with `status`.
    pub(crate) fn job_terminated(
        &mut self,
        nspace: &str,
        status: i32,
    ) -> Result<Vec<Effect>, DvmError> {
        let now = self.clock.now_ms();
        self.dvm
            .job_terminated(nspace, status, &mut self.sched, now)
    }

    /// Record a planned spawn as job `nspace` (child of `parent`).
    pub(crate) fn commit_spawn(
        &mut self,
        plan: &Placement,
        nspace: &str,
        parent: Option<&str>,
    ) -> Result<(), DvmError> {
        self.dvm.commit_spawn(plan, nspace, parent)
    }

    /// End everything (pdvm is going away).
    pub(crate) fn teardown(&mut self) -> Vec<Effect> {
        self.dvm.teardown(&mut self.sched)
    }

    /// Reservation `id` as of now.
    pub(crate) fn reservation(&self, id: &str) -> Option<ReservationRecord> {
        self.dvm.reservation(id, &self.sched, self.clock.now_ms())
    }

    /// Every reservation as of now.
    pub(crate) fn reservations(&self) -> Vec<ReservationRecord> {
        self.dvm.reservations(&self.sched, self.clock.now_ms())
    }

    /// A queued request on `alloc_id` waits for its reply.
    pub(crate) fn queue_reply(&mut self, alloc_id: &str, p: Pending) {
        self.pending
            .entry(alloc_id.to_string())
            .or_default()
            .push_back(p);
    }

    /// The queued request of `to` on `alloc_id`: exactly that requester's
    /// (never another's, so a reply cannot reach the wrong peer).
    pub(crate) fn take_reply(&mut self, alloc_id: &str, to: &ProcName) -> Option<Pending> {
        let q = self.pending.get_mut(alloc_id)?;
        let i = q.iter().position(|p| &p.to == to)?;
        let p = q.remove(i);
        if q.is_empty() {
            self.pending.remove(alloc_id);
        }
        p
    }

    /// Remember a granted allocation's request id and owner (the model
    /// forgets them before the event announcing its end).
    pub(crate) fn remember_grant(&mut self, alloc_id: &str, req_id: Option<String>, owner: String) {
        // The first request id stays: an EXTEND's (or its absence) does
        // not replace the NEW's in the reservation's end event.
        let e = self
            .grants
            .entry(alloc_id.to_string())
            .or_insert((None, String::new()));
        if e.0.is_none() {
            e.0 = req_id;
        }
        e.1 = owner;
    }

    /// What [`ModelDriver::remember_grant`] kept, once.
    pub(crate) fn forget_grant(&mut self, alloc_id: &str) -> Option<(Option<String>, String)> {
        self.grants.remove(alloc_id)
    }
}
