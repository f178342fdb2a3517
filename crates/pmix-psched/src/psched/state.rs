//! psched's own pool as a node source ([`NodeSource`]), without I/O: the
//! pure [`Scheduler`] plus the partitions and the time scale. Time comes in
//! as milliseconds since the Unix epoch; what happened goes out as
//! [`SourceEvent`]s, the ledger's changes among them.

use std::collections::{BTreeSet, HashMap};

use crate::proto::status::Status;
use crate::sched::{
    NodeAsk, SchedError, SchedEvent, SchedPendingView, SchedRequest, Scheduler, Submit,
};

use super::ledger::{Grant, Ledger};
use super::ledger_change::{when_changed, LedgerChange};
pub use super::out::{Ending, Granted, Out, UnaskedEnd};
use super::source::{Ask, Decision, Give, Heard, NodeSource, Refusal, Released, SourceEvent};
use super::Partition;

/// Most requests waiting in the queue: a NEW beyond it is refused
/// `PMIX_ERR_OUT_OF_RESOURCE` (bounded memory whatever the DVM sends).
pub const MAX_QUEUED: usize = 4096;

/// psched's pool: see the module documentation.
pub struct State {
    sched: Scheduler,
    pool: Vec<String>,
    /// Each allocation's partition.
    queues: HashMap<String, String>,
    parts: Vec<Partition>,
    scale: f64,
    /// What happened since [`NodeSource::what_happened`] last took it.
    news: Vec<SourceEvent>,
    /// Allocations whose grant changed since then.
    touched: BTreeSet<String>,
    /// What the ledger was last told: the next id, the retained nodes,
    /// the queue.
    said: (u64, Vec<String>, Vec<SchedPendingView>),
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
    /// A pool of `pool` with partitions `parts`, re-entering every grant
    /// of `ledger` (a grant that no longer fits the pool is dropped from
    /// it: `ledger` is left as this pool keeps it).
    pub fn new(pool: &[String], parts: Vec<Partition>, ledger: &mut Ledger) -> State {
        let mut sched = Scheduler::with_names(pool);
        sched.set_next_id(ledger.next_id);
        let mut queues = HashMap::new();
        ledger.grants.retain(|g| {
            let ok = sched
                .restore(&g.alloc_id, &g.nodes, g.expires_at_ms, g.warn_secs)
                .is_ok();
            if ok {
                queues.insert(g.alloc_id.clone(), g.queue.clone());
            }
            ok
        });
        sched.restore_retained(&ledger.retained);
        ledger.next_id = sched.next_id_number();
        ledger.retained = sched.retained_names();
        ledger.pending = sched.pending();
        ledger.pool = pool.to_vec();
        ledger.partitions = parts.clone();
        State {
            said: (ledger.next_id, ledger.retained.clone(), Vec::new()),
            sched,
            pool: pool.to_vec(),
            queues,
            parts,
            scale: 1.0,
            news: Vec::new(),
            touched: BTreeSet::new(),
        }
    }

    /// Free nodes of the pool.
    pub fn free_nodes(&self) -> Vec<String> {
        self.sched.free_names()
    }

    fn refusal(&self, e: SchedError) -> Refusal {
        Refusal::saying(sched_status(e), sched_why(e, self.pool.len()))
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

    fn request(&self, ask: &Ask, time_secs: Option<u32>) -> SchedRequest {
        let a = &ask.attrs;
        let want = if !a.nodes_named().is_empty() {
            NodeAsk::List(a.nodes_named().to_vec())
        } else {
            match a.num_nodes {
                Some(n) if n > 0 => NodeAsk::Count(n),
                _ => NodeAsk::Nothing,
            }
        };
        SchedRequest {
            ask: want,
            exclude: a.nodes_excluded().to_vec(),
            time_secs: self.to_real(time_secs),
            warn_secs: self.to_real(a.warn_timeout),
        }
    }

    fn new_alloc(&mut self, ask: &Ask, now: u64) -> Decision {
        if self.sched.queue_len() >= MAX_QUEUED {
            return Decision::Refused(Refusal::saying(
                Status::ERR_OUT_OF_RESOURCE,
                format!("psched's queue is full ({MAX_QUEUED} requests wait)"),
            ));
        }
        let Some(part) = self.partition(ask.attrs.queue.as_deref()).cloned() else {
            let names: Vec<&str> = self.parts.iter().map(|p| p.name.as_str()).collect();
            let why = format!(
                "no partition `{}` (psched's: {})",
                ask.attrs.queue.as_deref().unwrap_or(""),
                names.join(", ")
            );
            return Decision::Refused(Refusal::saying(Status::ERR_NOT_FOUND, why));
        };
        let time = ask.attrs.time_secs.or(part.default_secs);
        if let (Some(t), Some(max)) = (time, part.max_secs) {
            if t > max {
                let why = format!(
                    "time limit {t} s exceeds partition {}'s maximum of {max} s",
                    part.name
                );
                return Decision::Refused(Refusal::saying(Status::ERR_BAD_PARAM, why));
            }
        }
        let req = self.request(ask, time);
        match self.sched.submit_new(&req, now) {
            Err(e) => Decision::Refused(self.refusal(e)),
            Ok((alloc_id, sub)) => {
                self.queues.insert(alloc_id.clone(), part.name);
                self.decided(alloc_id, sub)
            }
        }
    }

    fn extend(&mut self, id: &str, ask: &Ask, now: u64) -> Decision {
        let req = self.request(ask, ask.attrs.time_secs);
        match self.sched.submit_extend(id, &req, now) {
            Err(e) => Decision::Refused(self.refusal(e)),
            Ok(sub) => self.decided(id.to_string(), sub),
        }
    }

    fn decided(&mut self, alloc_id: String, sub: Submit) -> Decision {
        match sub {
            Submit::Granted(nodes) => {
                self.touched.insert(alloc_id.clone());
                Decision::Granted { alloc_id, nodes }
            }
            Submit::Queued => Decision::Waits { alloc_id },
        }
    }

    fn events(&mut self, ev: Vec<SchedEvent>) {
        for e in ev {
            match e {
                SchedEvent::WarnDue {
                    alloc_id,
                    remaining_secs,
                } => {
                    let secs = (f64::from(remaining_secs) * self.scale).round() as u32;
                    self.news.push(SourceEvent::Warn { alloc_id, secs })
                }
                SchedEvent::Expired { alloc_id, nodes } => {
                    self.touched.insert(alloc_id.clone());
                    self.news.push(SourceEvent::Ended(Ending {
                        alloc_id,
                        nodes,
                        why: UnaskedEnd::Expired,
                    }));
                }
                SchedEvent::QueuedGranted {
                    alloc_id, nodes, ..
                } => {
                    self.touched.insert(alloc_id.clone());
                    self.news.push(SourceEvent::Ready { alloc_id, nodes });
                }
            }
        }
    }

    /// The ledger's changes since the last call: each touched grant, the
    /// next id, the retained nodes, the queue.
    fn book(&mut self) {
        for id in std::mem::take(&mut self.touched) {
            let c = match self.sched.allocation(&id).filter(|a| !a.queued) {
                Some(a) => LedgerChange::Grant(Grant {
                    alloc_id: a.alloc_id,
                    req_id: None,
                    nodes: a.nodes,
                    expires_at_ms: a.expires_at_ms,
                    warn_secs: a.warn_secs,
                    session: None,
                    queue: self.queues.get(&id).cloned().unwrap_or_default(),
                    inherit: None,
                    slurm_jobs: Vec::new(),
                }),
                None => {
                    self.queues.remove(&id);
                    LedgerChange::Gone(id)
                }
            };
            self.news.push(SourceEvent::Book(c));
        }
        let said = &mut self.said;
        let changes = [
            when_changed(
                &mut said.0,
                self.sched.next_id_number(),
                LedgerChange::NextId,
            ),
            when_changed(
                &mut said.1,
                self.sched.retained_names(),
                LedgerChange::Retained,
            ),
            when_changed(&mut said.2, self.sched.pending(), LedgerChange::Pending),
        ];
        let changes = changes.into_iter().flatten().map(SourceEvent::Book);
        self.news.extend(changes);
    }
}

impl NodeSource for State {
    fn grant(&mut self, ask: &Ask, now: u64) -> Decision {
        match &ask.extend {
            None => self.new_alloc(ask, now),
            Some(id) => self.extend(id, ask, now),
        }
    }

    fn release(&mut self, alloc_id: &str, what: Give<'_>, now: u64) -> Result<Released, Refusal> {
        let (nodes, whole, ev) = match what {
            Give::KeptByDvm => {
                let Some(a) = self.sched.allocation(alloc_id) else {
                    return Err(self.refusal(SchedError::NoSuchAllocation));
                };
                (a.nodes, true, self.sched.unreserve(alloc_id, now))
            }
            Give::All(_) | Give::Nodes(_) => {
                let part = match what {
                    Give::Nodes(n) => Some(n),
                    _ => None,
                };
                let (nodes, ev) = self
                    .sched
                    .release(alloc_id, part, now)
                    .map_err(|e| self.refusal(e))?;
                (nodes, part.is_none(), ev)
            }
        };
        self.touched.insert(alloc_id.to_string());
        self.events(ev);
        Ok(Released { nodes, whole })
    }

    fn cancel(&mut self, alloc_id: &str, now: u64) -> Result<(), Refusal> {
        let (_, was_new, ev) = self
            .sched
            .cancel(alloc_id, now)
            .map_err(|e| self.refusal(e))?;
        if was_new {
            self.queues.remove(alloc_id);
        }
        self.events(ev);
        Ok(())
    }

    fn what_happened(&mut self, now: u64) -> Vec<SourceEvent> {
        let ev = self.sched.advance(now);
        self.events(ev);
        self.book();
        std::mem::take(&mut self.news)
    }

    fn next_deadline(&self, _now: u64) -> Option<u64> {
        self.sched.next_deadline()
    }

    fn hear(&mut self, news: Heard<'_>) {
        match news {
            // What the DVM before kept is free again.
            Heard::Attached { new_dvm: true } => {
                let (_, ev) = self.sched.free_retained(0);
                self.events(ev);
            }
            Heard::Attached { new_dvm: false } => {}
            // Each is held back as soon as it is free.
            Heard::Broken(nodes) => {
                if !nodes.is_empty() {
                    self.sched.restore_retained(nodes);
                }
            }
        }
    }

    fn idle(&self) -> Vec<String> {
        self.sched.free_names()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::WireVersion;
    use crate::proto::{Directive, Inheritance};
    use crate::psched::requests::Requests;
    use crate::psched::wire::Forwarded;

    /// The DVM's requests over a pool of `n` nodes, as `ledger` kept them.
    fn over(n: usize, mut ledger: Ledger) -> Requests {
        let st = State::new(&pool(n), batch(), &mut ledger);
        Requests::new(Box::new(st), ledger)
    }

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
        let mut st = over(2, Ledger::default());
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
        assert_eq!(st.idle().len(), 1);
    }

    #[test]
    fn over_the_partition_maximum_is_refused() {
        let mut st = over(1, Ledger::default());
        let mut a = ask(Directive::New, Some(1), None);
        a.attrs.time_secs = Some(601);
        let out = st.on_alloc(1, a, 0).unwrap();
        assert_eq!(answered(&out), [1]);
        assert!(st.ledger().grants.is_empty());
    }

    #[test]
    fn a_restored_ledger_never_hands_out_a_held_node() {
        let mut st = over(2, Ledger::default());
        st.on_alloc(1, ask(Directive::New, Some(1), None), 0)
            .unwrap();
        let saved = st.ledger().clone();
        let held = saved.grants[0].nodes.clone();
        let mut again = over(2, saved);
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
        let mut st = over(1, Ledger::default());
        st.attach("dvm@0", WireVersion::V61, 0);
        st.on_alloc(1, ask(Directive::New, Some(1), None), 0)
            .unwrap();
        let out = st.tick(60_000).unwrap();
        assert!(
            matches!(out.as_slice(), [Out::End(Ending { why: UnaskedEnd::Expired, nodes, .. })] if nodes == &["n1"]),
            "{out:?}"
        );
        assert_eq!(st.idle(), ["n1"]);
        assert!(st.ledger().grants.is_empty());
    }

    #[test]
    fn reconcile_keeps_default_nodes_in_the_dvm() {
        let mut st = over(2, Ledger::default());
        for rule in [None, Some(Inheritance::ChildDefault)] {
            let mut a = ask(Directive::New, Some(1), None);
            a.attrs.inherit = rule.map(Into::into);
            st.on_alloc(1, a, 0).unwrap();
        }
        // Before their time limit: the source's timers fire as it is asked.
        st.reconcile(&[], 1, 0).unwrap();
        assert!(st.ledger().grants.is_empty());
        assert!(st.idle().is_empty(), "both kept by the DVM");
        assert_eq!(st.ledger().retained.len(), 2);
        let again = over(2, st.ledger().clone());
        assert!(again.idle().is_empty(), "kept across a restart");
    }

    #[test]
    fn time_scale_divides_limits_and_multiplies_the_warning_back() {
        let mut l = Ledger::default();
        let mut pool1 = State::new(&pool(1), batch(), &mut l);
        pool1.set_time_scale(60.0);
        let mut st = Requests::new(Box::new(pool1), l);
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
        let mut st = over(1, Ledger::default());
        st.on_alloc(1, ask(Directive::New, Some(1), None), 0)
            .unwrap();
        let id = st.ledger().grants[0].alloc_id.clone();
        let out = st.admin_release(&id, 1).unwrap().expect("held");
        assert!(
            matches!(
                out.as_slice(),
                [Out::End(Ending {
                    why: UnaskedEnd::Admin,
                    ..
                })]
            ),
            "{out:?}"
        );
        assert_eq!(st.idle(), ["n1"]);
        assert!(st.admin_release(&id, 2).unwrap().is_none());
    }

    #[test]
    fn reconcile_frees_what_the_dvm_no_longer_lists() {
        let mut st = over(2, Ledger::default());
        let mut a = ask(Directive::New, Some(1), None);
        a.attrs.inherit = Some(Inheritance::None.into());
        st.on_alloc(1, a, 0).unwrap();
        let id = st.ledger().grants[0].alloc_id.clone();
        st.reconcile(std::slice::from_ref(&id), u64::MAX, 0)
            .unwrap();
        assert_eq!(st.idle().len(), 1, "listed: kept");
        st.reconcile(&[], u64::MAX, 0).unwrap();
        assert_eq!(st.idle().len(), 2, "not listed: freed");
    }

    /// The pool, shared with the test that looks into its scheduler.
    struct Shared(std::rc::Rc<std::cell::RefCell<State>>);

    impl NodeSource for Shared {
        fn grant(&mut self, ask: &Ask, now: u64) -> Decision {
            self.0.borrow_mut().grant(ask, now)
        }
        fn release(
            &mut self,
            id: &str,
            what: Give<'_>,
            now: u64,
        ) -> std::result::Result<Released, Refusal> {
            self.0.borrow_mut().release(id, what, now)
        }
        fn cancel(&mut self, id: &str, now: u64) -> std::result::Result<(), Refusal> {
            self.0.borrow_mut().cancel(id, now)
        }
        fn what_happened(&mut self, now: u64) -> Vec<SourceEvent> {
            self.0.borrow_mut().what_happened(now)
        }
        fn next_deadline(&self, now: u64) -> Option<u64> {
            self.0.borrow().next_deadline(now)
        }
        fn hear(&mut self, news: Heard<'_>) {
            self.0.borrow_mut().hear(news)
        }
    }

    #[test]
    fn the_ledger_built_from_changes_is_the_schedulers_after_every_step() {
        let mut l = Ledger::default();
        let pool = std::rc::Rc::new(std::cell::RefCell::new(State::new(
            &pool(3),
            batch(),
            &mut l,
        )));
        let mut st = Requests::new(Box::new(Shared(pool.clone())), l);
        let same = |st: &Requests, step: &str| {
            let s = &pool.borrow().sched;
            let granted: Vec<(String, Vec<String>, Option<u64>)> = s
                .allocations()
                .into_iter()
                .filter(|a| !a.queued)
                .map(|a| (a.alloc_id, a.nodes, a.expires_at_ms))
                .collect();
            let l = st.ledger();
            let held: Vec<(String, Vec<String>, Option<u64>)> = l
                .grants
                .iter()
                .map(|g| (g.alloc_id.clone(), g.nodes.clone(), g.expires_at_ms))
                .collect();
            assert_eq!(held, granted, "{step}");
            assert_eq!(l.retained, s.retained_names(), "{step}");
            assert_eq!(l.next_id, s.next_id_number(), "{step}");
            assert_eq!(l.pending, s.pending(), "{step}");
        };
        st.attach("dvm@0", WireVersion::V61, 0);
        st.on_alloc(1, ask(Directive::New, Some(2), None), 0)
            .unwrap();
        same(&st, "a grant");
        st.on_alloc(2, ask(Directive::New, Some(2), None), 0)
            .unwrap();
        same(&st, "one waits");
        let a = st.ledger().grants[0].alloc_id.clone();
        let mut part = ask(Directive::Release, None, Some(&a));
        part.attrs.node_list = Some(vec!["n1".into()]);
        st.on_alloc(3, part, 1).unwrap();
        same(&st, "a partial release");
        st.on_alloc(4, ask(Directive::Extend, Some(1), Some(&a)), 2)
            .unwrap();
        same(&st, "an extension");
        let mut rule = ask(Directive::New, Some(1), None);
        rule.attrs.inherit = Some(Inheritance::Default.into());
        st.on_alloc(5, rule, 3).unwrap();
        same(&st, "a third");
        st.reconcile(&[], 4, 0).unwrap();
        same(&st, "the DVM kept all");
        st.tick(61_000).unwrap();
        same(&st, "expired");
        st.attach("dvm@1", WireVersion::V61, 62_000);
        same(&st, "another DVM");
        assert_eq!(st.ledger().dvm.as_deref(), Some("dvm@1"));
    }
}
