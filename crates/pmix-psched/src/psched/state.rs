//! psched's decisions, without I/O: the pure [`Scheduler`] plus what the
//! DVM needs echoed, the answers still owed for queued requests, the
//! partitions and the ledger. Time comes in as milliseconds since the Unix
//! epoch; what to send comes out as [`Out`] messages.

use std::collections::HashMap;

use crate::codec::{Info, WireVersion};
use crate::error::Result;
use crate::proto::status::Status;
use crate::proto::Inheritance;
use crate::sched::{NodeAsk, SchedError, SchedEvent, SchedRequest, Scheduler, Submit};

use super::ledger::{Grant, Ledger};
pub use super::out::{Granted, Out, UnaskedEnd};
use super::wire::{self, Forwarded};
use super::Partition;

/// Most requests waiting in the queue: a NEW beyond it is refused
/// `PMIX_ERR_OUT_OF_RESOURCE` (bounded memory whatever the DVM sends).
pub const MAX_QUEUED: usize = 4096;

/// What psched keeps beside the scheduler's own books for one allocation.
#[derive(Debug, Clone, Default)]
struct Meta {
    req_id: Option<String>,
    echo: Vec<Info>,
    queue: String,
    /// Whether the DVM was told of the allocation (its first grant).
    told: bool,
    /// The DVM's request still waiting for an answer (a queued request).
    owed: Option<u32>,
    /// When the DVM was told of the grant (ms since the epoch).
    granted_at: u64,
    /// The requester's inheritance rule.
    inherit: Option<Inheritance>,
}

/// psched's state: see the module documentation.
pub struct State {
    sched: Scheduler,
    pool: Vec<String>,
    meta: HashMap<String, Meta>,
    parts: Vec<Partition>,
    ledger: Ledger,
    wire: WireVersion,
    scale: f64,
}

/// The sentence psched gives with a refusal of `e` (PRRTE hands it to the
/// requester, which shows it as pdvm's); `pool` is how many nodes it has.
fn sched_why(e: SchedError, pool: usize) -> String {
    match e {
        SchedError::UnknownNode => format!("a node named is none of psched's {pool} nodes"),
        SchedError::DuplicateNode => "a node is named twice, or named and excluded".into(),
        SchedError::TooMany => format!(
            "PMIX_ALLOC_NUM_NODES exceeds every node psched could ever grant (its pool has {pool})"
        ),
        SchedError::NoSuchAllocation => "no allocation of that id is psched's".into(),
        SchedError::ZeroTime => "a time limit of zero seconds".into(),
        SchedError::StillQueued => "the allocation is still waiting in psched's queue".into(),
        SchedError::NothingQueued => "no request of that id waits in psched's queue".into(),
        SchedError::NotInAllocation => {
            "the partial release names nodes the allocation does not hold".into()
        }
    }
}

fn sched_status(e: SchedError) -> Status {
    match e {
        SchedError::UnknownNode | SchedError::NoSuchAllocation | SchedError::NothingQueued => {
            Status::ERR_NOT_FOUND
        }
        SchedError::TooMany => Status::ERR_OUT_OF_RESOURCE,
        _ => Status::ERR_BAD_PARAM,
    }
}

impl State {
    /// A state over `pool` with partitions `parts`, re-entering every grant
    /// of `ledger` (a grant that no longer fits the pool is dropped).
    pub fn new(pool: &[String], parts: Vec<Partition>, ledger: Ledger) -> State {
        let mut sched = Scheduler::with_names(pool);
        sched.set_next_id(ledger.next_id);
        let mut meta = HashMap::new();
        let mut kept = Vec::new();
        for g in &ledger.grants {
            if sched
                .restore(&g.alloc_id, &g.nodes, g.expires_at_ms, g.warn_secs)
                .is_ok()
            {
                meta.insert(
                    g.alloc_id.clone(),
                    Meta {
                        req_id: g.req_id.clone(),
                        queue: g.queue.clone(),
                        told: true,
                        inherit: g.inherit,
                        ..Meta::default()
                    },
                );
                kept.push(g.clone());
            }
        }
        sched.restore_retained(&ledger.retained);
        let ledger = Ledger {
            grants: kept,
            ..ledger
        };
        State {
            sched,
            pool: pool.to_vec(),
            meta,
            parts,
            ledger,
            wire: WireVersion::V41,
            scale: 1.0,
        }
    }

    /// Start serving the DVM `dvm` (its namespace) on wire `wire`. The
    /// requests still waiting came over the connection that ended: their
    /// requesters are gone with it, so they are dropped (a grant made now
    /// would go to nobody, or to the wrong DVM). What a DVM before kept
    /// went with it.
    pub fn attach(&mut self, dvm: &str, wire: WireVersion) {
        self.wire = wire;
        if self.ledger.dvm.as_deref() != Some(dvm) {
            self.ledger.dvm = Some(dvm.to_string());
            let _ = self.sched.free_retained(0);
        }
        let waiting: Vec<String> = self
            .sched
            .pending()
            .into_iter()
            .map(|p| p.alloc_id)
            .collect();
        for id in waiting {
            if let Ok((_, was_new, _)) = self.sched.cancel(&id, 0) {
                if was_new {
                    self.meta.remove(&id);
                }
            }
        }
        for m in self.meta.values_mut() {
            m.owed = None;
        }
    }

    /// The ledger as it should be on disk now.
    pub fn ledger(&self) -> Ledger {
        let mut l = self.ledger.clone();
        l.next_id = self.sched.next_id_number();
        l.grants = self
            .sched
            .allocations()
            .into_iter()
            .filter(|a| !a.queued)
            .map(|a| {
                let m = self.meta.get(&a.alloc_id).cloned().unwrap_or_default();
                Grant {
                    alloc_id: a.alloc_id,
                    req_id: m.req_id,
                    nodes: a.nodes,
                    expires_at_ms: a.expires_at_ms,
                    warn_secs: a.warn_secs,
                    session: None,
                    queue: m.queue,
                    inherit: m.inherit,
                    slurm_jobs: Vec::new(),
                }
            })
            .collect();
        l.retained = self.sched.retained_names();
        l.pool = self.pool.clone();
        l.partitions = self.parts.clone();
        l.pending = self.sched.pending();
        l
    }

    /// Never grant `nodes` again while this DVM lives (their daemon did not
    /// come up): each is held back as soon as it is free.
    pub fn hold_back(&mut self, nodes: &[String]) {
        if !nodes.is_empty() {
            self.sched.restore_retained(nodes);
        }
    }

    /// Free nodes of the pool.
    pub fn free_nodes(&self) -> Vec<String> {
        self.sched.free_names()
    }

    /// When the next warning or expiry falls due (ms since the epoch).
    pub fn next_deadline(&self) -> Option<u64> {
        self.sched.next_deadline()
    }

    /// Serve one allocation request the DVM sent on `tag`.
    pub fn on_alloc(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        use crate::proto::{Directive, Received};
        match ask.directive {
            Received::Known(Directive::New) => self.on_new(tag, ask, now),
            Received::Known(Directive::Extend) => self.on_extend(tag, ask, now),
            Received::Known(Directive::Release) => self.on_release(tag, &ask, now),
            Received::Known(Directive::ReqCancel) => self.on_cancel(tag, &ask, now),
            _ => self.refuse(
                tag,
                Status::ERR_NOT_SUPPORTED,
                "psched serves NEW, EXTEND, RELEASE and REQ_CANCEL",
            ),
        }
    }

    /// Refuse `tag` as `st`, saying `why` (`PMIX_EVENT_TEXT_MESSAGE`).
    fn refuse(&self, tag: u32, st: Status, why: &str) -> Result<Vec<Out>> {
        Ok(vec![Out::Answer(tag, wire::refusal(self.wire, st, why)?)])
    }

    /// Refuse `tag` for the scheduler's error `e`.
    fn refuse_for(&self, tag: u32, e: SchedError) -> Result<Vec<Out>> {
        self.refuse(tag, sched_status(e), &sched_why(e, self.pool.len()))
    }

    /// Refuse `tag`: the request names no allocation or request of psched's.
    fn refuse_unknown(&self, tag: u32) -> Result<Vec<Out>> {
        self.refuse(
            tag,
            Status::ERR_NOT_FOUND,
            "no allocation or request of that id is psched's",
        )
    }

    fn partition(&self, name: Option<&str>) -> Option<&Partition> {
        match name {
            None => self.parts.first(),
            Some(n) => self.parts.iter().find(|p| p.name == n),
        }
    }

    /// Run the clock `f` times faster: time limits and warning thresholds
    /// are divided by `f` when granted, the seconds left in a warning
    /// multiplied back (for trying workflows, as `pdvm --time-scale`).
    pub fn set_time_scale(&mut self, f: f64) {
        if f.is_finite() && f > 0.0 {
            self.scale = f;
        }
    }

    fn to_real(&self, secs: Option<u32>) -> Option<u32> {
        secs.map(|s| ((f64::from(s) / self.scale).ceil() as u32).max(1))
    }

    fn request(&self, ask: &Forwarded, time_secs: Option<u32>) -> SchedRequest {
        let want = if !ask.attrs.nodes_named().is_empty() {
            NodeAsk::List(ask.attrs.nodes_named().to_vec())
        } else {
            match ask.attrs.num_nodes {
                Some(n) if n > 0 => NodeAsk::Count(n),
                _ => NodeAsk::Nothing,
            }
        };
        SchedRequest {
            ask: want,
            exclude: ask.attrs.nodes_excluded().to_vec(),
            time_secs: self.to_real(time_secs),
            warn_secs: self.to_real(ask.attrs.warn_timeout),
        }
    }

    fn on_new(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        if self.sched.queue_len() >= MAX_QUEUED {
            return self.refuse(
                tag,
                Status::ERR_OUT_OF_RESOURCE,
                &format!("psched's queue is full ({MAX_QUEUED} requests wait)"),
            );
        }
        let Some(part) = self.partition(ask.attrs.queue.as_deref()).cloned() else {
            let names: Vec<&str> = self.parts.iter().map(|p| p.name.as_str()).collect();
            let why = format!(
                "no partition `{}` (psched's: {})",
                ask.attrs.queue.as_deref().unwrap_or(""),
                names.join(", ")
            );
            return self.refuse(tag, Status::ERR_NOT_FOUND, &why);
        };
        let time = ask.attrs.time_secs.or(part.default_secs);
        if let (Some(t), Some(max)) = (time, part.max_secs) {
            if t > max {
                let why = format!(
                    "time limit {t} s exceeds partition {}'s maximum of {max} s",
                    part.name
                );
                return self.refuse(tag, Status::ERR_BAD_PARAM, &why);
            }
        }
        let req = self.request(&ask, time);
        let (id, sub) = match self.sched.submit_new(&req, now) {
            Ok(x) => x,
            Err(e) => return self.refuse_for(tag, e),
        };
        self.meta.insert(
            id.clone(),
            Meta {
                req_id: ask.attrs.req_id.clone(),
                echo: ask.echo.clone(),
                queue: part.name.clone(),
                told: false,
                owed: Some(tag),
                granted_at: now,
                inherit: ask.attrs.inheritance(),
            },
        );
        match sub {
            Submit::Granted(nodes) => self.granted(&id, &nodes, now),
            Submit::Queued => Ok(Vec::new()),
        }
    }

    /// Answer the owed request of `id` with `nodes`.
    fn granted(&mut self, id: &str, nodes: &[String], now: u64) -> Result<Vec<Out>> {
        let Some(m) = self.meta.get_mut(id) else {
            return Ok(Vec::new());
        };
        m.granted_at = now;
        let Some(tag) = m.owed.take() else {
            return Ok(Vec::new());
        };
        let new = !m.told;
        m.told = true;
        Ok(vec![Out::Grant(Granted {
            tag,
            alloc_id: id.to_string(),
            nodes: nodes.to_vec(),
            echo: m.echo.clone(),
            new,
        })])
    }

    fn find_id(&self, ask: &Forwarded) -> Option<String> {
        if let Some(id) = &ask.attrs.alloc_id {
            return Some(id.clone());
        }
        let rid = ask.attrs.req_id.as_ref()?;
        self.meta
            .iter()
            .find(|(_, m)| m.req_id.as_ref() == Some(rid))
            .map(|(id, _)| id.clone())
    }

    fn on_extend(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(&ask) else {
            return self.refuse_unknown(tag);
        };
        let req = self.request(&ask, ask.attrs.time_secs);
        match self.sched.submit_extend(&id, &req, now) {
            Err(e) => self.refuse_for(tag, e),
            Ok(sub) => {
                if let Some(m) = self.meta.get_mut(&id) {
                    m.owed = Some(tag);
                    m.echo = ask.echo.clone();
                    m.inherit = ask.attrs.inheritance().or(m.inherit);
                }
                match sub {
                    Submit::Granted(nodes) => self.granted(&id, &nodes, now),
                    Submit::Queued => Ok(Vec::new()),
                }
            }
        }
    }

    fn on_release(&mut self, tag: u32, ask: &Forwarded, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse_unknown(tag);
        };
        let part = Some(ask.attrs.nodes_named()).filter(|l| !l.is_empty());
        match self.sched.release(&id, part, now) {
            Err(e) => self.refuse_for(tag, e),
            Ok((nodes, ev)) => {
                let whole = part.is_none();
                if whole {
                    self.meta.remove(&id);
                }
                // The release first: its nodes leave before the queued
                // grants they unblock reach anyone.
                let mut out = vec![Out::Release {
                    tag,
                    alloc_id: id,
                    nodes,
                    whole,
                }];
                out.extend(self.events(ev, now)?);
                Ok(out)
            }
        }
    }

    fn on_cancel(&mut self, tag: u32, ask: &Forwarded, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse_unknown(tag);
        };
        match self.sched.cancel(&id, now) {
            Err(e) => self.refuse_for(tag, e),
            Ok((_n, was_new, ev)) => {
                // The cancel's own answer first: the withdrawn request's
                // requester may be what relays the canceller (a palloc
                // holder), and it ends once answered.
                let mut out = vec![Out::Answer(
                    tag,
                    wire::answer(self.wire, Status(0), Some(&id), &[], &[])?,
                )];
                let owed = self.meta.get_mut(&id).and_then(|m| m.owed.take());
                if let Some(t) = owed {
                    let echo = self
                        .meta
                        .get(&id)
                        .map(|m| m.echo.clone())
                        .unwrap_or_default();
                    let body = wire::cancelled(self.wire, &echo, ask.requestor.as_deref())?;
                    out.push(Out::Answer(t, body));
                }
                if was_new {
                    self.meta.remove(&id);
                }
                out.extend(self.events(ev, now)?);
                Ok(out)
            }
        }
    }

    /// The DVM says a reservation ended by itself (`PMIX_SESSION_COMPLETE`
    /// with its `PMIX_ALLOC_ID`): its nodes come back to the pool.
    pub fn on_session_done(&mut self, alloc_id: &str, now: u64) -> Result<Vec<Out>> {
        let stop = self
            .meta
            .get(alloc_id)
            .and_then(|m| m.inherit)
            .is_some_and(Inheritance::returns_to_scheduler);
        match self.sched.release(alloc_id, None, now) {
            Ok((nodes, ev)) => {
                self.meta.remove(alloc_id);
                let mut out = vec![Out::Returned {
                    alloc_id: alloc_id.to_string(),
                    nodes,
                    stop,
                }];
                out.extend(self.events(ev, now)?);
                Ok(out)
            }
            Err(_) => Ok(Vec::new()),
        }
    }

    /// The DVM lists `live` as its allocations: a grant it no longer lists
    /// (told of at least `settle_ms` ago) was ended by the DVM itself (its
    /// owner's disposition fired, which PRRTE master does not report).
    /// Under NONE or CHILD its nodes come back to the pool; under DEFAULT
    /// or CHILD_DEFAULT (or no rule given) they stay in the DVM, retained
    /// until that DVM is gone. Returns what that unblocked.
    pub fn reconcile(&mut self, live: &[String], now: u64, settle_ms: u64) -> Result<Vec<Out>> {
        self.ledger.reconciled_at_ms = Some(now);
        let gone: Vec<String> = self
            .sched
            .allocations()
            .into_iter()
            .filter(|a| !a.queued && !live.contains(&a.alloc_id))
            .filter(|a| {
                self.meta.get(&a.alloc_id).is_some_and(|m| {
                    m.owed.is_none() && now.saturating_sub(m.granted_at) >= settle_ms
                })
            })
            .map(|a| a.alloc_id)
            .collect();
        let mut out = Vec::new();
        for id in gone {
            let back = self
                .meta
                .get(&id)
                .and_then(|m| m.inherit)
                .unwrap_or(Inheritance::Default)
                .returns_to_scheduler();
            if back {
                out.extend(self.on_session_done(&id, now)?);
            } else {
                self.meta.remove(&id);
                let ev = self.sched.unreserve(&id, now);
                out.extend(self.events(ev, now)?);
            }
        }
        Ok(out)
    }

    /// The administrator's release of `alloc_id` (`psched --release`): the
    /// scheduler may release any reservation (spec 001 §8.2.1.7). Its nodes
    /// come back to the pool and the DVM is told to end the session, as at
    /// expiry. `None` when psched holds no such grant.
    pub fn admin_release(&mut self, alloc_id: &str, now: u64) -> Result<Option<Vec<Out>>> {
        if self.sched.allocation(alloc_id).is_none_or(|a| a.queued) {
            return Ok(None);
        }
        let Ok((nodes, ev)) = self.sched.release(alloc_id, None, now) else {
            return Ok(None);
        };
        self.meta.remove(alloc_id);
        let mut out = vec![Out::End {
            alloc_id: alloc_id.to_string(),
            nodes,
            why: UnaskedEnd::Admin,
        }];
        out.extend(self.events(ev, now)?);
        Ok(Some(out))
    }

    /// Fire what fell due by `now`.
    pub fn tick(&mut self, now: u64) -> Result<Vec<Out>> {
        let ev = self.sched.advance(now);
        self.events(ev, now)
    }

    fn events(&mut self, ev: Vec<SchedEvent>, now: u64) -> Result<Vec<Out>> {
        let mut out = Vec::new();
        for e in ev {
            match e {
                SchedEvent::WarnDue {
                    alloc_id,
                    remaining_secs,
                } => {
                    let secs = (f64::from(remaining_secs) * self.scale).round() as u32;
                    out.push(Out::Warn { alloc_id, secs })
                }
                SchedEvent::Expired { alloc_id, nodes } => {
                    self.meta.remove(&alloc_id);
                    out.push(Out::End {
                        alloc_id,
                        nodes,
                        why: UnaskedEnd::Expired,
                    });
                }
                SchedEvent::QueuedGranted {
                    alloc_id, nodes, ..
                } => out.extend(self.granted(&alloc_id, &nodes, now)?),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Directive;

    fn pool(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    fn batch() -> Vec<Partition> {
        vec![Partition {
            name: "batch".into(),
            default_secs: Some(60),
            max_secs: Some(600),
        }]
    }

    fn ask(directive: Directive, n: Option<u32>, id: Option<&str>) -> Forwarded {
        Forwarded {
            directive: directive.into(),
            attrs: crate::proto::AllocAttrs {
                num_nodes: n,
                alloc_id: id.map(String::from),
                ..Default::default()
            },
            ..Forwarded::default()
        }
    }

    fn answered(out: &[Out]) -> Vec<u32> {
        out.iter()
            .filter_map(|o| match o {
                Out::Answer(t, _)
                | Out::Grant(Granted { tag: t, .. })
                | Out::Release { tag: t, .. } => Some(*t),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn what_does_not_fit_waits_and_is_answered_on_release() {
        let mut st = State::new(&pool(2), batch(), Ledger::default());
        let a = st
            .on_alloc(10, ask(Directive::New, Some(2), None), 0)
            .unwrap();
        assert_eq!(answered(&a), [10]);
        let b = st
            .on_alloc(11, ask(Directive::New, Some(1), None), 0)
            .unwrap();
        assert!(b.is_empty(), "queued, not answered: {b:?}");
        let id = st.ledger().grants[0].alloc_id.clone();
        let r = st
            .on_alloc(12, ask(Directive::Release, None, Some(&id)), 1)
            .unwrap();
        assert_eq!(answered(&r), [12, 11], "the release, then the queued NEW");
        assert_eq!(st.free_nodes().len(), 1);
    }

    #[test]
    fn over_the_partition_maximum_is_refused() {
        let mut st = State::new(&pool(1), batch(), Ledger::default());
        let mut a = ask(Directive::New, Some(1), None);
        a.attrs.time_secs = Some(601);
        let out = st.on_alloc(1, a, 0).unwrap();
        assert_eq!(answered(&out), [1]);
        assert!(st.ledger().grants.is_empty());
    }

    #[test]
    fn a_restored_ledger_never_hands_out_a_held_node() {
        let mut st = State::new(&pool(2), batch(), Ledger::default());
        st.on_alloc(1, ask(Directive::New, Some(1), None), 0)
            .unwrap();
        let saved = st.ledger();
        let held = saved.grants[0].nodes.clone();
        let mut again = State::new(&pool(2), batch(), saved);
        again
            .on_alloc(2, ask(Directive::New, Some(1), None), 0)
            .unwrap();
        let l = again.ledger();
        assert_eq!(l.grants.len(), 2);
        assert_ne!(l.grants[0].alloc_id, l.grants[1].alloc_id);
        assert_ne!(l.grants[1].nodes, held);
    }

    #[test]
    fn expiry_frees_nodes_and_terminates_the_session() {
        let mut st = State::new(&pool(1), batch(), Ledger::default());
        st.attach("dvm@0", WireVersion::V61);
        st.on_alloc(1, ask(Directive::New, Some(1), None), 0)
            .unwrap();
        let out = st.tick(60_000).unwrap();
        assert!(
            matches!(out.as_slice(), [Out::End { why: UnaskedEnd::Expired, nodes, .. }] if nodes == &["n1"]),
            "{out:?}"
        );
        assert_eq!(st.free_nodes(), ["n1"]);
        assert!(st.ledger().grants.is_empty());
    }

    #[test]
    fn reconcile_keeps_default_nodes_in_the_dvm() {
        let mut st = State::new(&pool(2), batch(), Ledger::default());
        for rule in [None, Some(Inheritance::ChildDefault)] {
            let mut a = ask(Directive::New, Some(1), None);
            a.attrs.inherit = rule.map(Into::into);
            st.on_alloc(1, a, 0).unwrap();
        }
        st.reconcile(&[], u64::MAX, 0).unwrap();
        assert!(st.ledger().grants.is_empty());
        assert!(st.free_nodes().is_empty(), "both kept by the DVM");
        assert_eq!(st.ledger().retained.len(), 2);
        let again = State::new(&pool(2), batch(), st.ledger());
        assert!(again.free_nodes().is_empty(), "kept across a restart");
    }

    #[test]
    fn time_scale_divides_limits_and_multiplies_the_warning_back() {
        let mut st = State::new(&pool(1), batch(), Ledger::default());
        st.set_time_scale(60.0);
        let mut a = ask(Directive::New, Some(1), None);
        a.attrs.time_secs = Some(600);
        a.attrs.warn_timeout = Some(300);
        st.on_alloc(1, a, 0).unwrap();
        let g = &st.ledger().grants[0];
        assert_eq!(g.expires_at_ms, Some(10_000), "10 minutes in 10 s");
        assert!(st.tick(4_999).unwrap().is_empty());
        let warned = st.tick(5_000).unwrap();
        let Some(Out::Warn { secs, .. }) = warned.first() else {
            panic!("{warned:?}");
        };
        assert_eq!(*secs, 300, "seconds left in the requester's time");
    }

    #[test]
    fn admin_release_frees_and_terminates() {
        let mut st = State::new(&pool(1), batch(), Ledger::default());
        st.on_alloc(1, ask(Directive::New, Some(1), None), 0)
            .unwrap();
        let id = st.ledger().grants[0].alloc_id.clone();
        let out = st.admin_release(&id, 1).unwrap().expect("held");
        assert!(
            matches!(
                out.as_slice(),
                [Out::End {
                    why: UnaskedEnd::Admin,
                    ..
                }]
            ),
            "{out:?}"
        );
        assert_eq!(st.free_nodes(), ["n1"]);
        assert!(st.admin_release(&id, 2).unwrap().is_none());
    }

    #[test]
    fn reconcile_frees_what_the_dvm_no_longer_lists() {
        let mut st = State::new(&pool(2), batch(), Ledger::default());
        let mut a = ask(Directive::New, Some(1), None);
        a.attrs.inherit = Some(Inheritance::None.into());
        st.on_alloc(1, a, 0).unwrap();
        let id = st.ledger().grants[0].alloc_id.clone();
        st.reconcile(std::slice::from_ref(&id), u64::MAX, 0)
            .unwrap();
        assert_eq!(st.free_nodes().len(), 1, "listed: kept");
        st.reconcile(&[], u64::MAX, 0).unwrap();
        assert_eq!(st.free_nodes().len(), 2, "not listed: freed");
    }
}
