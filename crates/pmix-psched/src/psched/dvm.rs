//! psched's side of the conversation with PRRTE master, without I/O: what
//! the decisions ([`Out`]) become on the wire, and the work
//! around PRRTE master's gaps, so that the pool and Slurm share
//! one DVM protocol.
//!
//! - **One change at a time.** A grant is answered only when PRRTE has
//!   carried out the one before: the grant's allocation is listed, the
//!   daemons of its new nodes are up, and the grow it started had
//!   [`SETTLE_MS`] to finish (two grows at once killed PRRTE;
//!   [`SETTLE_QUIET_MS`] before the grant's own next node when it started
//!   no daemon), unless it
//!   started no daemon and nobody holds an allocation of psched's any more
//!   (nothing can be launching into a grown reservation then: a user's
//!   `palloc` loop, grant, job, release, grant, is not slowed to one
//!   round per settle). Grants wait in FIFO order, behind the nodes being
//!   taken back; a node a waiting grant names is not parked on its way
//!   (one grow and settle per allocation of a burst, not two).
//! - **Every node reusable.** PRRTE master ends a NONE or CHILD reservation,
//!   or an explicit release, by ordering the nodes' daemons away without
//!   resetting the nodes: a node granted again then never gets a daemon.
//!   So psched tells PRRTE DEFAULT (CHILD_DEFAULT) instead, answers a
//!   release `PMIX_OPERATION_SUCCEEDED` (PRRTE then changes nothing) and
//!   ends the reservation itself with `PMIX_SESSION_TERMINATE`; a node
//!   whose daemon is up stays in the DVM, held in psched's own reservation
//!   of idle nodes (so no default-pool job lands there), and is handed on
//!   from there.
//! - **Owners checked first.** An EXTEND, RELEASE or cancel from a process
//!   that does not own the allocation is refused `PMIX_ERR_NO_PERMISSIONS`
//!   before the node source hears of it (PRRTE forwards every request before it
//!   checks ownership).
//! - **Ends reach the requester.** The warning, an expiry and a release go
//!   to the process that asked for the allocation (`PMIX_RANGE_CUSTOM`),
//!   whoever extended it since.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::codec::{Info, Proc, Value, WireVersion};
use crate::error::Result;
use crate::proto::status::Status;
use crate::proto::{keys, Directive, Received};

use super::ledger::{DvmBook, Owner};
use super::out::{Ending, Granted, Out, UnaskedEnd};
use super::wire::{self, Forwarded};

/// Tags of psched's own messages: far above any tag the DVM's library uses,
/// so their answers are never mistaken for requests.
pub const OWN_TAG_BASE: u32 = 0xF000_0000;
/// The request id psched gives its reservation of idle nodes.
pub const IDLE_REQ_ID: &str = crate::proto::alloc::PSCHED_IDLE_REQ_ID;
/// How long the daemons of newly granted nodes may take to come up.
pub const START_LIMIT_MS: u64 = 60_000;
/// The first pause between two looks at the daemons (doubled up to
/// [`POLL_MAX_MS`]).
const POLL_FIRST_MS: u64 = 10;
/// The longest pause between two looks at the daemons.
const POLL_MAX_MS: u64 = 500;
/// How long a change that started daemons is given to finish in PRRTE
/// (their wire-up, the new map sent to every daemon) before the next one.
pub const SETTLE_MS: u64 = 150;
/// How long a change that started no daemon is given when the next change
/// adds one more of the same grant's nodes: PRRTE's grow then launches
/// nothing and only sends its node map again, and nobody can be launching
/// into a reservation not yet whole (issue 40.5: a two-node grant of nodes
/// whose daemons are up paid [`SETTLE_MS`] between its two nodes, most of
/// `palloc -N 2`'s time beyond Slurm's). Other changes (another grant, in
/// a burst) wait [`SETTLE_MS`]: with 20 ms there, a 30-burst left more of
/// its launches unanswered.
pub const SETTLE_QUIET_MS: u64 = 20;
/// How long psched waits for the DVM's answer to a question of its own
/// about the change under way (its allocation ids, a node's daemon, a park
/// or an added node) before going on without it: a DVM that never answers
/// one must not stop every later grant (a burst's pallocs waited for ever
/// behind one unanswered question).
pub const ANSWER_LIMIT_MS: u64 = 10_000;
/// Most requests waiting for an owner check at once (more are refused
/// `PMIX_ERR_OUT_OF_RESOURCE`).
pub const MAX_CHECKS: usize = 1024;

/// A message for the DVM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Send {
    /// The answer to the DVM's request on this tag.
    Answer(u32, Vec<u8>),
    /// A message of psched's own; its answer comes back on this tag.
    Own(u32, Vec<u8>),
}

/// What to do with a request the DVM forwarded.
#[derive(Debug)]
pub enum Verdict {
    /// Serve it ([`super::requests`]).
    Pass(Box<Forwarded>),
    /// Answered or waiting here (an owner check, psched's own request).
    Held,
}

/// A change of the DVM's membership waiting for its turn.
#[derive(Debug, Clone)]
enum Change {
    /// Answer a grant.
    Grant(Granted),
    /// Move these nodes (daemons up) into psched's reservation of idle
    /// nodes.
    Park(Vec<String>),
    /// Add `node` to allocation `alloc_id` (psched's own EXTEND, as the
    /// scheduler: every owner's): the nodes of a grant after its first.
    Add { alloc_id: String, node: String },
}

/// The change PRRTE is carrying out.
#[derive(Debug, Clone)]
enum Flight {
    /// A grant was answered; the DVM's allocation ids are asked (`asked`),
    /// their answer awaited until `until`.
    Confirming {
        asked: u32,
        alloc_id: String,
        new: bool,
        share: bool,
        fresh: Vec<String>,
        until: u64,
    },
    /// Waiting for the daemons of `fresh`: the next look at `next` (or the
    /// look `asked` under way, whose answer is awaited until `next`), given
    /// up at `until`.
    Starting {
        fresh: Vec<String>,
        all: Vec<String>,
        asked: Option<u32>,
        next: u64,
        pause: u64,
        until: u64,
    },
    /// psched's own request (`asked`) for its idle reservation (`park`)
    /// or adding a node to an allocation, its answer awaited until `until`.
    Parking {
        asked: u32,
        nodes: Vec<String>,
        park: bool,
        /// The allocation a node is added to (none: a park).
        alloc: Option<String>,
        until: u64,
    },
    /// PRRTE has taken the change; the grow it started (every node list
    /// starts one, even of nodes it has) is given until `until` to finish:
    /// two grows at once, or a grow beside a launch, are where PRRTE
    /// master loses jobs or dies. A settle that may `end_when_unheld`
    /// (its change started no daemon, and was a park or a grant whose
    /// holder is known) ends as soon as no allocation has an owner:
    /// [`Dvm::tick`]. One that started no daemon for allocation A
    /// (`quiet`: the time and A) ends at that time when the next change is
    /// one more of A's own nodes.
    Settling {
        until: u64,
        end_when_unheld: bool,
        quiet: Option<(u64, String)>,
    },
}

/// What the answer to one of psched's own messages is for.
#[derive(Debug, Clone)]
enum Await {
    /// The flight's question.
    Flight,
    /// The namespace information for the owner check of this request.
    Check(u32),
    /// The namespace information telling which processes run on these
    /// nodes, the node source took them away: those are killed (and, when
    /// an allocation lost them, their jobs told: [`super::lost`]).
    Stop(Vec<String>, Option<String>),
    /// The namespace information telling which jobs are still placed on
    /// these nodes, back from an allocation ([`super::stuck`]).
    StuckLook(Vec<String>),
    /// The process table of a job still placed on such nodes.
    StuckProcs(String),
}

/// A request waiting for its owner check.
#[derive(Debug)]
struct Check {
    ask: Forwarded,
    alloc_id: String,
    nspace: String,
}

/// psched's side of the DVM: see the module documentation.
pub struct Dvm {
    wire: WireVersion,
    /// psched's own namespace on this connection.
    me: String,
    /// The DVM's own (daemons') namespace.
    daemons: String,
    book: DvmBook,
    sessions: u32,
    parked: BTreeSet<String>,
    idle_id: Option<String>,
    queue: VecDeque<Change>,
    flight: Option<Flight>,
    next_tag: u32,
    awaiting: HashMap<u32, Await>,
    checks: HashMap<u32, Check>,
    /// Who asked, per DVM tag, until the grant names the allocation: the
    /// owner, the requester and its request id.
    askers: HashMap<u32, (String, Proc, Option<String>)>,
    /// Requesters whose queued request a psched before this one lost:
    /// told at the first tick ([`super::waiters`]).
    lost: Vec<super::waiters::Waiter>,
    /// Allocations PRRTE did not make (a NEW it refused after the grant).
    refused: Vec<String>,
    log: Vec<String>,
    /// Slots of each node, said to PRRTE as it first hears of the node.
    slots: u32,
    /// Nodes back from an allocation, looked at for launches the DVM lost.
    stuck: super::stuck::StuckWatch,
    /// The books changed since [`Dvm::take_book`] last took them.
    book_changed: bool,
}

impl Dvm {
    /// psched attached to the DVM whose daemons are `daemons`, as `me`,
    /// speaking `wire`; `book` and `sessions` are what the ledger kept of
    /// that DVM (empty for another DVM). Own tags start at `first_tag`.
    pub fn new(
        wire: WireVersion,
        me: &str,
        daemons: &str,
        book: DvmBook,
        sessions: u32,
        first_tag: u32,
    ) -> Dvm {
        let mut d = Dvm {
            wire,
            me: me.to_string(),
            daemons: daemons.to_string(),
            book,
            sessions,
            parked: BTreeSet::new(),
            idle_id: None,
            queue: VecDeque::new(),
            flight: None,
            next_tag: first_tag,
            awaiting: HashMap::new(),
            checks: HashMap::new(),
            askers: HashMap::new(),
            lost: Vec::new(),
            refused: Vec::new(),
            log: Vec::new(),
            slots: 1,
            stuck: Default::default(),
            book_changed: true,
        };
        // The requests a psched before queued died with its connection.
        d.lost = std::mem::take(&mut d.book.waiting);
        // The idle reservation of a psched before ended with its
        // connection: its nodes went to the default pool; hold them again
        // (the caller takes out those in an allocation: [`Dvm::not_idle`]).
        if !d.book.in_dvm.is_empty() {
            d.queue.push_back(Change::Park(d.book.in_dvm.clone()));
        }
        d
    }

    /// Each node has `slots` slots (`--slots`): said to PRRTE in the node
    /// list that first names the node (`node02:2`, the form of PRRTE's
    /// `--host`), which PRRTE master reads with its `--host` parser; without
    /// it PRRTE gives a node a scheduler grants one slot.
    pub fn set_slots(&mut self, slots: u32) {
        self.slots = slots.max(1);
    }

    /// `node` as a node list names it: with its slots when the DVM has not
    /// heard of it yet, else bare.
    fn first_name(&self, node: &str) -> String {
        if self.book.in_dvm.iter().any(|n| n == node) {
            node.to_string()
        } else {
            self.with_slots(node)
        }
    }

    /// `node` as the node list names it the first time: with its slots.
    fn with_slots(&self, node: &str) -> String {
        if self.slots > 1 {
            format!("{node}:{}", self.slots)
        } else {
            node.to_string()
        }
    }

    /// Start the daemons of `nodes` now, holding them idle in psched's
    /// reservation (the pool backend's nodes: once every node has its
    /// daemon, no grant ever grows the DVM, and PRRTE master cannot be
    /// grown safely while it is busy).
    pub fn warm(&mut self, nodes: &[String]) {
        let fresh: Vec<String> = nodes
            .iter()
            .filter(|n| !self.book.in_dvm.contains(n) && !self.book.broken.contains(n))
            .cloned()
            .collect();
        // One node a grow: PRRTE master crashed on the first grant after a
        // grow that started several daemons at once.
        for n in fresh {
            self.queue.push_back(Change::Park(vec![n]));
        }
    }

    /// Nodes that are in some allocation of the backend must not be parked
    /// at attach: take them out of the first park.
    pub fn not_idle(&mut self, granted: &[String]) {
        for c in &mut self.queue {
            if let Change::Park(nodes) = c {
                nodes.retain(|n| !granted.contains(n));
            }
        }
        self.queue
            .retain(|c| !matches!(c, Change::Park(n) if n.is_empty()));
    }

    /// The books to keep in the ledger, and PRRTE's session count.
    pub fn book(&self) -> (DvmBook, u32) {
        let mut book = self.book.clone();
        let waiting = self
            .askers
            .values()
            .map(|(_, who, req_id)| super::waiters::Waiter {
                requester: who.nspace.clone(),
                rank: who.rank,
                req_id: req_id.clone(),
            });
        // Those not told yet stay, should this psched stop before it can.
        book.waiting = super::waiters::sorted(waiting.chain(self.lost.iter().cloned()).collect());
        (book, self.sessions)
    }

    /// Lines for psched's log since the last call.
    pub fn take_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// The books to keep in the ledger when they changed since the last
    /// call ([`Dvm::book`]); none when they did not.
    pub fn take_book(&mut self) -> Option<(DvmBook, u32)> {
        std::mem::take(&mut self.book_changed).then(|| self.book())
    }

    /// Allocations whose NEW PRRTE refused after psched granted it: the
    /// node source takes their nodes back.
    pub fn take_refused(&mut self) -> Vec<String> {
        std::mem::take(&mut self.refused)
    }

    /// Nodes never to grant again (their daemon did not come up).
    pub fn broken(&self) -> &[String] {
        &self.book.broken
    }

    /// Whether the DVM is still carrying out a change, or changes wait.
    pub fn busy(&self) -> bool {
        self.flight.is_some() || !self.queue.is_empty()
    }

    fn own_tag(&mut self, what: Await) -> u32 {
        let t = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1).max(OWN_TAG_BASE);
        self.awaiting.insert(t, what);
        t
    }

    fn owner_of(&self, alloc_id: &str) -> Option<&Owner> {
        self.book.owners.iter().find(|o| o.alloc_id == alloc_id)
    }

    fn forget(&mut self, alloc_id: &str) -> Option<Owner> {
        let i = self
            .book
            .owners
            .iter()
            .position(|o| o.alloc_id == alloc_id)?;
        self.book_changed = true;
        Some(self.book.owners.remove(i))
    }

    /// A request the DVM forwarded on `tag`. psched's own requests are
    /// answered here; an EXTEND, RELEASE or cancel from a process outside
    /// the allocation's owners waits for an owner check (its answer, or a
    /// refusal, comes later); the rest is served. `find` names
    /// the allocation a request id stands for.
    pub fn on_request(
        &mut self,
        tag: u32,
        ask: Forwarded,
        find: &dyn Fn(&str) -> Option<String>,
        out: &mut Vec<Send>,
    ) -> Result<Verdict> {
        let Some(who) = ask.requester() else {
            return Ok(Verdict::Pass(Box::new(ask)));
        };
        if who.nspace == self.me {
            out.push(Send::Answer(tag, self.answer_own(&ask)?));
            return Ok(Verdict::Held);
        }
        let owner = ask
            .attrs
            .target
            .clone()
            .unwrap_or_else(|| who.nspace.clone());
        match ask.directive {
            Received::Known(Directive::New) => {
                let req_id = ask.attrs.req_id.clone();
                self.askers.insert(tag, (owner, who, req_id));
                self.book_changed = true;
                Ok(Verdict::Pass(Box::new(ask)))
            }
            Received::Known(Directive::Extend | Directive::Release | Directive::ReqCancel) => {
                let id = ask
                    .attrs
                    .alloc_id
                    .clone()
                    .or_else(|| ask.attrs.req_id.as_deref().and_then(find));
                let Some(id) = id else {
                    return Ok(Verdict::Pass(Box::new(ask)));
                };
                match self.owner_of(&id) {
                    Some(o) if o.nspace != who.nspace => {
                        if self.checks.len() >= MAX_CHECKS {
                            out.push(Send::Answer(
                                tag,
                                wire::status_only(self.wire, Status::ERR_OUT_OF_RESOURCE)?,
                            ));
                            return Ok(Verdict::Held);
                        }
                        let q = wire::query(self.wire, keys::QUERY_NAMESPACE_INFO, Vec::new())?;
                        let t = self.own_tag(Await::Check(tag));
                        out.push(Send::Own(t, q));
                        self.checks.insert(
                            tag,
                            Check {
                                ask,
                                alloc_id: id,
                                nspace: who.nspace,
                            },
                        );
                        Ok(Verdict::Held)
                    }
                    _ => Ok(Verdict::Pass(Box::new(ask))),
                }
            }
            _ => Ok(Verdict::Pass(Box::new(ask))),
        }
    }

    /// The answer to psched's own request for its idle reservation, which
    /// PRRTE forwards back to its scheduler.
    fn answer_own(&mut self, ask: &Forwarded) -> Result<Vec<u8>> {
        let idle = format!("{IDLE_REQ_ID}.{}", self.me);
        let id = ask.attrs.alloc_id.clone().unwrap_or_else(|| idle.clone());
        if id != idle {
            // A node added to a user's allocation: no rule, no request id
            // (PRRTE would take them as the allocation's new ones).
            return wire::answer(
                self.wire,
                Status(0),
                Some(&id),
                ask.attrs.nodes_named(),
                &[],
            );
        }
        let echo = [
            Info::new(keys::ALLOC_REQ_ID, IDLE_REQ_ID),
            Info::new(
                keys::ALLOC_INHERITANCE,
                Value::AllocInherit(crate::proto::Inheritance::Default.into()),
            ),
        ];
        wire::answer(
            self.wire,
            Status(0),
            Some(&id),
            ask.attrs.nodes_named(),
            &echo,
        )
    }

    /// The answer to psched's own message `tag` arrived (`payload`); `nodes_of`
    /// gives an allocation's nodes. Returns requests that passed their
    /// owner check, to be served.
    pub fn on_own_answer(
        &mut self,
        tag: u32,
        payload: &[u8],
        now: u64,
        nodes_of: &dyn Fn(&str) -> Vec<String>,
        out: &mut Vec<Send>,
    ) -> Result<Vec<(u32, Forwarded)>> {
        match self.awaiting.remove(&tag) {
            Some(Await::Flight) => {
                self.flight_answer(tag, payload, now);
                Ok(Vec::new())
            }
            Some(Await::Check(req)) => self.checked(req, payload, nodes_of, out),
            Some(Await::Stop(nodes, lost_by)) => {
                self.kill_on(&nodes, lost_by.as_deref(), payload, out)?;
                Ok(Vec::new())
            }
            Some(Await::StuckLook(nodes)) => {
                self.ask_proc_tables(&nodes, payload, out)?;
                Ok(Vec::new())
            }
            Some(Await::StuckProcs(nspace)) => {
                self.judge_stuck(&nspace, payload, now);
                Ok(Vec::new())
            }
            None => Ok(Vec::new()),
        }
    }

    /// The owner check of request `req`: a tool (no process) may act on
    /// the allocation, as PRRTE lets a tool of the owner's user (psched
    /// cannot see users); a job may if it runs on the allocation's nodes
    /// (it was spawned into it: spec 001 §8.2.1.7); any other process is
    /// refused.
    fn checked(
        &mut self,
        req: u32,
        payload: &[u8],
        nodes_of: &dyn Fn(&str) -> Vec<String>,
        out: &mut Vec<Send>,
    ) -> Result<Vec<(u32, Forwarded)>> {
        let Some(c) = self.checks.remove(&req) else {
            return Ok(Vec::new());
        };
        let infos = self.answered_infos(payload);
        let allowed = match wire::namespace_hosts(&infos, &c.nspace) {
            None => true,
            Some(hosts) if hosts.is_empty() => true,
            Some(hosts) => {
                let mine = nodes_of(&c.alloc_id);
                hosts.iter().all(|h| mine.contains(h))
            }
        };
        if allowed {
            return Ok(vec![(req, c.ask)]);
        }
        self.log.push(format!(
            "refused a {} of {} from {}: not an owner (spec 001 §8.2.1.7)",
            c.ask.directive.known().map_or("request", |d| d.pmix_name()),
            c.alloc_id,
            c.nspace
        ));
        out.push(Send::Answer(
            req,
            wire::status_only(self.wire, Status::ERR_NO_PERMISSIONS)?,
        ));
        Ok(Vec::new())
    }

    /// Take psched's decisions.
    pub fn push(&mut self, outs: Vec<Out>, out: &mut Vec<Send>) -> Result<()> {
        for o in outs {
            match o {
                Out::Answer(tag, body) => {
                    self.askers.remove(&tag);
                    self.book_changed = true;
                    out.push(Send::Answer(tag, body))
                }
                Out::Grant(g) => self.queue.push_back(Change::Grant(g)),
                Out::Release {
                    tag,
                    alloc_id,
                    nodes,
                    whole,
                } => {
                    out.push(Send::Answer(
                        tag,
                        wire::status_only(self.wire, Status::OPERATION_SUCCEEDED)?,
                    ));
                    if whole {
                        self.end(&alloc_id, None, out)?;
                    }
                    self.stuck.returned(&nodes);
                    self.park(nodes);
                }
                Out::End(Ending {
                    alloc_id,
                    nodes,
                    why,
                }) => {
                    self.end(&alloc_id, Some(why), out)?;
                    self.stuck.returned(&nodes);
                    self.park(nodes);
                }
                Out::Returned {
                    alloc_id,
                    nodes,
                    stop,
                } => {
                    self.forget(&alloc_id);
                    if stop {
                        self.log.push(format!(
                            "{alloc_id} ended under rule none or child: the jobs still on {} are stopped",
                            nodes.join(",")
                        ));
                        self.stop_work_on(&nodes, None, out)?;
                    }
                    self.stuck.returned(&nodes);
                    self.park(nodes);
                }
                Out::Lost { alloc_id, nodes } => {
                    self.log.push(format!(
                        "{alloc_id}: {} taken away by the node source: the work there is stopped",
                        nodes.join(",")
                    ));
                    self.stop_work_on(&nodes, Some(&alloc_id), out)?;
                    self.tell_lost(&alloc_id, &nodes, out)?;
                    self.park(nodes);
                }
                Out::Warn { alloc_id, secs } => self.warn(&alloc_id, secs, out)?,
                Out::Queued { tag, reason, text } => self.queued(tag, &reason, &text, out)?,
                Out::Source { up, text, tag } => self.source(up, &text, tag, out)?,
            }
        }
        Ok(())
    }

    /// End the DVM's reservation `alloc_id` (its jobs stop) and announce
    /// why (its holder, `pwatch` and other listeners hear it, as on pdvm):
    /// the backend's reason, or none when an owner released it.
    fn end(&mut self, alloc_id: &str, why: Option<UnaskedEnd>, out: &mut Vec<Send>) -> Result<()> {
        let Some(o) = self.forget(alloc_id) else {
            return Ok(());
        };
        let (change, text, cause) = match why {
            None => ("released", "released by an owner", None),
            Some(w) => (w.change(), w.text(), w.cause()),
        };
        if let Some(s) = o.session {
            let t = self.plain_tag();
            out.push(Send::Own(t, wire::terminate(self.wire, s, alloc_id)?));
        }
        let mut infos = vec![
            Info::new(keys::ALLOC_ID, alloc_id),
            Info::new(keys::CHANGE, change),
            Info::new(keys::EVENT_TEXT_MESSAGE, text),
            Info::new(keys::NSPACE, o.nspace.as_str()),
        ];
        infos.extend(
            o.req_id
                .as_deref()
                .map(|r| Info::new(keys::ALLOC_REQ_ID, r)),
        );
        infos.extend(cause.map(|c| Info::new(keys::END_CAUSE, c.word())));
        let t = self.plain_tag();
        out.push(Send::Own(
            t,
            wire::notify_all(self.wire, Status::EVENT_SESSION_END, &infos)?,
        ));
        Ok(())
    }

    /// Stop every process on `nodes`: ask the DVM what runs where, then
    /// kill what runs there ([`Dvm::kill_on`], on the answer). Asked before
    /// the nodes are parked, so it is answered before any grant of them.
    /// `lost_by`: the allocation the node source took them from.
    fn stop_work_on(
        &mut self,
        nodes: &[String],
        lost_by: Option<&str>,
        out: &mut Vec<Send>,
    ) -> Result<()> {
        let q = wire::query(self.wire, keys::QUERY_NAMESPACE_INFO, Vec::new())?;
        let t = self.own_tag(Await::Stop(nodes.to_vec(), lost_by.map(String::from)));
        out.push(Send::Own(t, q));
        Ok(())
    }

    /// Kill the processes the namespace information (`payload`) shows on
    /// `nodes` ([`super::stop`]); when allocation `lost_by` lost them,
    /// each job is told first ([`super::lost`]), so that its tools report
    /// the node failure and not the status PRRTE gives killed processes.
    fn kill_on(
        &mut self,
        nodes: &[String],
        lost_by: Option<&str>,
        payload: &[u8],
        out: &mut Vec<Send>,
    ) -> Result<()> {
        let procs = self.procs_answered(payload, nodes);
        if procs.is_empty() {
            return Ok(());
        }
        let who: Vec<String> = procs
            .iter()
            .map(|p| format!("{}.{}", p.nspace, p.rank))
            .collect();
        self.log.push(format!(
            "killed {} on {} (PMIX_JOB_CTRL_KILL)",
            who.join(","),
            nodes.join(",")
        ));
        if let Some(alloc_id) = lost_by {
            for notice in super::lost::notices(self.wire, alloc_id, nodes, &procs)? {
                let t = self.plain_tag();
                out.push(Send::Own(t, notice));
            }
        }
        let t = self.plain_tag();
        out.push(Send::Own(t, super::stop::kill(self.wire, &procs)?));
        Ok(())
    }

    /// The infos of the answer to a query of psched's (`payload`); none
    /// when it is not one.
    fn answered_infos(&self, payload: &[u8]) -> Vec<Info> {
        wire::query_answer(self.wire, payload)
            .map(|(_, i)| i)
            .unwrap_or_default()
    }

    /// The processes that the namespace information (`payload`) places
    /// on `nodes`.
    fn procs_answered(&self, payload: &[u8], nodes: &[String]) -> Vec<Proc> {
        let infos = self.answered_infos(payload);
        super::stop::procs_on(&infos, nodes, &self.daemons)
    }

    /// Ask where the jobs run, to look for launches the DVM lost on
    /// `nodes` ([`super::stuck`]).
    fn look_for_stuck(&mut self, nodes: Vec<String>, out: &mut Vec<Send>) -> Result<()> {
        let q = wire::query(self.wire, keys::QUERY_NAMESPACE_INFO, Vec::new())?;
        let t = self.own_tag(Await::StuckLook(nodes));
        out.push(Send::Own(t, q));
        Ok(())
    }

    /// The jobs the namespace information (`payload`) places on `nodes`:
    /// ask each one's process table.
    fn ask_proc_tables(
        &mut self,
        nodes: &[String],
        payload: &[u8],
        out: &mut Vec<Send>,
    ) -> Result<()> {
        let mut jobs: Vec<String> = self
            .procs_answered(payload, nodes)
            .into_iter()
            .map(|p| p.nspace)
            .collect();
        jobs.sort();
        jobs.dedup();
        for nspace in jobs {
            let q = wire::query(
                self.wire,
                keys::QUERY_PROC_TABLE,
                vec![Info::new(keys::NSPACE, nspace.as_str())],
            )?;
            let t = self.own_tag(Await::StuckProcs(nspace));
            out.push(Send::Own(t, q));
        }
        Ok(())
    }

    /// Job `nspace`'s process table (`payload`) at `now`: its nodes are
    /// broken once it has stayed unstarted long enough.
    fn judge_stuck(&mut self, nspace: &str, payload: &[u8], now: u64) {
        let infos = self.answered_infos(payload);
        let procs = crate::schema::status::proc_table(&infos);
        let hosts: Vec<String> = self
            .stuck
            .judged(nspace, &procs, now)
            .into_iter()
            .filter(|h| !self.book.broken.contains(h))
            .collect();
        if hosts.is_empty() {
            return;
        }
        self.log.push(format!(
            "the DVM lost the launch of {nspace} on {} (no process of it ever started) and keeps \
its slots there: never granted again until the DVM restarts",
            hosts.join(",")
        ));
        self.book.broken.extend(hosts);
        self.book_changed = true;
    }

    /// A tag for a message whose answer nobody waits for.
    pub fn plain_tag(&mut self) -> u32 {
        let t = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1).max(OWN_TAG_BASE);
        t
    }

    /// Why the NEW on `tag` still waits, to its requester alone (nothing
    /// when the DVM did not say who asked).
    fn queued(&mut self, tag: u32, reason: &str, text: &str, out: &mut Vec<Send>) -> Result<()> {
        let Some((_, who, _)) = self.askers.get(&tag).cloned() else {
            return Ok(());
        };
        let infos = [
            Info::new(keys::PENDING_REASON, reason),
            Info::new(keys::EVENT_TEXT_MESSAGE, text),
        ];
        let t = self.plain_tag();
        let body = wire::notify_one(
            self.wire,
            crate::proto::status::PENDING_REASON,
            &who,
            &infos,
        )?;
        out.push(Send::Own(t, body));
        Ok(())
    }

    /// Whether the node source answers (`up`), said in `text`: to every
    /// tool, or to the requester of the request waiting on `tag` alone
    /// (nobody when the DVM did not say who asked).
    fn source(
        &mut self,
        up: bool,
        text: &str,
        tag: Option<u32>,
        out: &mut Vec<Send>,
    ) -> Result<()> {
        let code = if up {
            crate::proto::status::SOURCE_BACK
        } else {
            crate::proto::status::SOURCE_UNREACHABLE
        };
        let infos = [Info::new(keys::EVENT_TEXT_MESSAGE, text)];
        let body = match tag {
            None => wire::notify_all(self.wire, code, &infos)?,
            Some(tag) => {
                let Some((_, who, _)) = self.askers.get(&tag).cloned() else {
                    return Ok(());
                };
                wire::notify_one(self.wire, code, &who, &infos)?
            }
        };
        let t = self.plain_tag();
        out.push(Send::Own(t, body));
        Ok(())
    }

    /// Tell `alloc_id`'s requester alone that `nodes` left it
    /// ([`crate::proto::status::NODES_LOST`]); nobody when psched does not
    /// know the requester (a retained allocation's has gone).
    fn tell_lost(&mut self, alloc_id: &str, nodes: &[String], out: &mut Vec<Send>) -> Result<()> {
        let Some(o) = self.owner_of(alloc_id) else {
            return Ok(());
        };
        let to = Proc {
            nspace: o.requester.clone(),
            rank: o.rank,
        };
        let list = nodes.join(",");
        let text = format!(
            "{list} taken away by the scheduler's node source (the work there was stopped); \
             it goes on with the rest"
        );
        let infos = [
            Info::new(keys::ALLOC_ID, alloc_id),
            Info::new(keys::NODE_LIST, list.as_str()),
            Info::new(keys::EVENT_TEXT_MESSAGE, text.as_str()),
        ];
        let t = self.plain_tag();
        let body = wire::notify_one(self.wire, crate::proto::status::NODES_LOST, &to, &infos)?;
        out.push(Send::Own(t, body));
        Ok(())
    }

    /// The warning before `alloc_id` expires, to its requester alone.
    fn warn(&mut self, alloc_id: &str, secs: u32, out: &mut Vec<Send>) -> Result<()> {
        let t = self.plain_tag();
        let Some(o) = self.owner_of(alloc_id) else {
            out.push(Send::Own(t, wire::warning(self.wire, alloc_id, secs)?));
            return Ok(());
        };
        let to = Proc {
            nspace: o.requester.clone(),
            rank: o.rank,
        };
        let mut infos = vec![
            Info::new(keys::ALLOC_ID, alloc_id),
            Info::new(keys::TIME_REMAINING, Value::Uint32(secs)),
        ];
        infos.extend(
            o.req_id
                .as_deref()
                .map(|r| Info::new(keys::ALLOC_REQ_ID, r)),
        );
        out.push(Send::Own(
            t,
            wire::notify_one(self.wire, Status::ALLOC_TIMEOUT_WARNING, &to, &infos)?,
        ));
        Ok(())
    }

    /// Nodes back from an allocation: those whose daemon is up are held in
    /// psched's idle reservation.
    fn park(&mut self, nodes: Vec<String>) {
        let up: Vec<String> = nodes
            .into_iter()
            .filter(|n| self.book.in_dvm.contains(n))
            .collect();
        if !up.is_empty() {
            self.queue.push_back(Change::Park(up));
        }
    }

    /// Whether a grant waiting in the queue names `node`.
    fn wanted(&self, node: &str) -> bool {
        self.queue.iter().any(|c| match c {
            Change::Grant(g) => g.nodes.iter().any(|n| n == node),
            Change::Add { node: n, .. } => n == node,
            Change::Park(_) => false,
        })
    }

    /// When [`Dvm::tick`] is next due (ms since the epoch).
    pub fn next_deadline(&self) -> Option<u64> {
        let flight = self.flight_deadline();
        match (flight, self.stuck.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the change under way next needs [`Dvm::tick`].
    fn flight_deadline(&self) -> Option<u64> {
        match &self.flight {
            Some(Flight::Starting { next, .. }) => Some(*next),
            Some(Flight::Confirming { until, .. } | Flight::Parking { until, .. }) => Some(*until),
            Some(Flight::Settling { until, quiet, .. }) => Some(
                self.quiet_end(quiet.as_ref())
                    .map_or(*until, |q| q.min(*until)),
            ),
            _ => None,
        }
    }

    /// Give PRRTE's grow [`SETTLE_MS`] to finish, [`SETTLE_QUIET_MS`] when
    /// it started no daemon for the `quiet` allocation and its own next
    /// node follows, or less when `end_when_unheld` and nobody holds an
    /// allocation. Nothing PRRTE
    /// reports says when a grow is over (`prte` prints `DVM ready`); a probe
    /// job sent to learn it made new daemons fail to unpack their first
    /// launch.
    fn settling(
        &mut self,
        now: u64,
        end_when_unheld: bool,
        quiet: Option<String>,
    ) -> Option<Flight> {
        Some(Flight::Settling {
            until: now + SETTLE_MS,
            end_when_unheld,
            quiet: quiet.map(|a| (now + SETTLE_QUIET_MS, a)),
        })
    }

    /// When a settle that started no daemon for `alloc` may end: the next
    /// change is one more of `alloc`'s own nodes.
    fn quiet_end(&self, quiet: Option<&(u64, String)>) -> Option<u64> {
        let (at, alloc) = quiet?;
        matches!(self.queue.front(), Some(Change::Add { alloc_id, .. }) if alloc_id == alloc)
            .then_some(*at)
    }

    /// The flight after PRRTE took a change: wait for the daemons of
    /// `fresh`, or only let the change settle (early when nobody holds an
    /// allocation, if `may_end_early`).
    fn starting(
        &mut self,
        fresh: Vec<String>,
        now: u64,
        may_end_early: bool,
        alloc: Option<String>,
    ) -> Option<Flight> {
        if fresh.is_empty() {
            return self.settling(now, may_end_early, alloc);
        }
        self.log
            .push(format!("starting the daemons of {}", fresh.join(",")));
        Some(Flight::Starting {
            all: fresh.clone(),
            fresh,
            asked: None,
            next: now,
            pause: POLL_FIRST_MS,
            until: now + START_LIMIT_MS,
        })
    }

    /// Start the next change if none is under way; look at the daemons
    /// again when due.
    pub fn tick(&mut self, now: u64, out: &mut Vec<Send>) -> Result<()> {
        self.tell_lost_requests(out)?;
        for nodes in self.stuck.take_due(now) {
            self.look_for_stuck(nodes, out)?;
        }
        if let Some(Flight::Settling {
            until,
            end_when_unheld,
            quiet,
        }) = &self.flight
        {
            // Nobody holds an allocation: no job can be launching into a
            // reservation this grow touched.
            let quiet_over = self.quiet_end(quiet.as_ref()).is_some_and(|t| t <= now);
            if *until <= now || quiet_over || (*end_when_unheld && self.book.owners.is_empty()) {
                self.flight = None;
            }
        }
        self.unanswered(now);
        if let Some(Flight::Starting {
            asked: None, next, ..
        }) = &self.flight
        {
            if *next <= now {
                self.look_at_daemons(now, out)?;
            }
        }
        while self.flight.is_none() {
            let Some(c) = self.queue.pop_front() else {
                break;
            };
            self.start(c, now, out)?;
        }
        Ok(())
    }

    /// Tell each requester whose queued request a psched before this one
    /// lost ([`crate::proto::status::REQUEST_LOST`]): it sends it again.
    fn tell_lost_requests(&mut self, out: &mut Vec<Send>) -> Result<()> {
        for w in std::mem::take(&mut self.lost) {
            self.book_changed = true;
            self.log.push(format!(
                "told {}.{} that its queued request{} was lost when psched stopped",
                w.requester,
                w.rank,
                w.req_id
                    .as_deref()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default()
            ));
            let t = self.plain_tag();
            out.push(Send::Own(t, w.notice(self.wire)?));
        }
        Ok(())
    }

    /// Ask whether the daemon of the first node still starting has
    /// reported in: PRRTE answers the node's `PMIX_SERVER_URI` only once
    /// its daemon called back (the daemons' process table shows a daemon
    /// running as soon as its launch is recorded, and a job launched before
    /// it called back makes `prte` exit: no `PMIX_PROC_URI` for it).
    fn look_at_daemons(&mut self, now: u64, out: &mut Vec<Send>) -> Result<()> {
        let Some(Flight::Starting { fresh, .. }) = &self.flight else {
            return Ok(());
        };
        let Some(node) = fresh.first() else {
            return Ok(());
        };
        let q = wire::query(
            self.wire,
            keys::SERVER_URI,
            vec![Info::new(keys::HOSTNAME, node.as_str())],
        )?;
        let t = self.own_tag(Await::Flight);
        if let Some(Flight::Starting { asked, next, .. }) = &mut self.flight {
            *asked = Some(t);
            *next = now + ANSWER_LIMIT_MS;
        }
        out.push(Send::Own(t, q));
        Ok(())
    }

    /// Answer grant `g`: its first node now (the others follow as psched's
    /// own EXTENDs, changes of their own), its owner booked. The allocation,
    /// whether it is NEW and shared, and its nodes without a daemon yet.
    fn answer_grant(
        &mut self,
        g: Granted,
        out: &mut Vec<Send>,
    ) -> Result<(String, bool, bool, Vec<String>)> {
        let Granted {
            tag,
            alloc_id,
            mut nodes,
            echo,
            new,
        } = g;
        // One node a grow: PRRTE master died at a grant of several
        // nodes whose daemons were up (P9); the others follow as
        // psched's own EXTENDs, each a change of its own.
        let rest = if nodes.len() > 1 {
            nodes.split_off(1)
        } else {
            Vec::new()
        };
        for node in rest.into_iter().rev() {
            self.queue.push_front(Change::Add {
                alloc_id: alloc_id.clone(),
                node,
            });
        }
        let share = echo
            .iter()
            .any(|i| i.key == keys::ALLOC_SHARE && crate::codec::helpers::info_true(i));
        // A node new to the DVM is named with its slots (the Slurm
        // backend's nodes first reach the DVM here).
        let named: Vec<String> = nodes.iter().map(|n| self.first_name(n)).collect();
        let body = wire::answer(
            self.wire,
            Status(0),
            Some(&alloc_id),
            &named,
            &wire::echo_for_dvm(&echo),
        )?;
        out.push(Send::Answer(tag, body));
        if !nodes.is_empty() {
            self.log
                .push(format!("granted {alloc_id}: {}", nodes.join(",")));
        }
        for n in &nodes {
            self.parked.remove(n);
        }
        if let Some((nspace, who, _)) = self.askers.remove(&tag) {
            self.book_changed = true;
            if new && !share {
                let req_id = echo
                    .iter()
                    .find(|i| i.key == keys::ALLOC_REQ_ID)
                    .and_then(|i| i.value.as_str().map(String::from));
                self.book.owners.push(Owner {
                    alloc_id: alloc_id.clone(),
                    nspace,
                    requester: who.nspace,
                    rank: who.rank,
                    session: None,
                    req_id,
                });
            }
        }
        let fresh: Vec<String> = nodes
            .into_iter()
            .filter(|n| !self.book.in_dvm.contains(n))
            .collect();
        Ok((alloc_id, new, share, fresh))
    }

    fn start(&mut self, c: Change, now: u64, out: &mut Vec<Send>) -> Result<()> {
        match c {
            Change::Grant(g) => {
                let (alloc_id, new, share, fresh) = self.answer_grant(g, out)?;
                let q = wire::query(self.wire, keys::QUERY_ALLOC_IDS, Vec::new())?;
                let asked = self.own_tag(Await::Flight);
                out.push(Send::Own(asked, q));
                self.flight = Some(Flight::Confirming {
                    asked,
                    alloc_id,
                    new,
                    share,
                    fresh,
                    until: now + ANSWER_LIMIT_MS,
                });
            }
            Change::Add { alloc_id, node } => {
                let body = wire::own_request(
                    self.wire,
                    Directive::Extend,
                    &[
                        Info::new(keys::ALLOC_NODE_LIST, self.first_name(&node).as_str()),
                        Info::new(keys::ALLOC_ID, alloc_id.as_str()),
                    ],
                )?;
                self.parked.remove(&node);
                let asked = self.own_tag(Await::Flight);
                out.push(Send::Own(asked, body));
                self.flight = Some(Flight::Parking {
                    asked,
                    nodes: vec![node],
                    park: false,
                    alloc: Some(alloc_id),
                    until: now + ANSWER_LIMIT_MS,
                });
            }
            Change::Park(nodes) => {
                // A node a waiting grant names goes straight to that grant:
                // parking it first would be one more grow of the DVM (a
                // settle each) for every allocation of a burst.
                let mut nodes: Vec<String> = nodes
                    .into_iter()
                    .filter(|n| {
                        !self.parked.contains(n) && !self.book.broken.contains(n) && !self.wanted(n)
                    })
                    .collect();
                if nodes.is_empty() {
                    return Ok(());
                }
                if nodes.len() > 1 {
                    let rest = nodes.split_off(1);
                    self.queue.push_front(Change::Park(rest));
                }
                let named: Vec<String> = nodes.iter().map(|n| self.with_slots(n)).collect();
                let list = Info::new(keys::ALLOC_NODE_LIST, named.join(",").as_str());
                let body = match &self.idle_id {
                    None => wire::own_request(
                        self.wire,
                        Directive::New,
                        &[list, Info::new(keys::ALLOC_REQ_ID, IDLE_REQ_ID)],
                    )?,
                    Some(id) => wire::own_request(
                        self.wire,
                        Directive::Extend,
                        &[list, Info::new(keys::ALLOC_ID, id.as_str())],
                    )?,
                };
                let asked = self.own_tag(Await::Flight);
                out.push(Send::Own(asked, body));
                self.flight = Some(Flight::Parking {
                    asked,
                    nodes,
                    park: true,
                    alloc: None,
                    until: now + ANSWER_LIMIT_MS,
                });
            }
        }
        Ok(())
    }

    /// Whether the DVM made grant `alloc_id`'s reservation (listed in
    /// `ids`) when it is one of its own (`reserved`: a NEW not shared): if
    /// not, its nodes go back (`None`); if so, its session is counted, and
    /// whether psched knows its holder (only then can its release end the
    /// settle).
    fn confirm(&mut self, alloc_id: &str, reserved: bool, ids: &[String]) -> Option<bool> {
        if reserved && !ids.iter().any(|i| i == alloc_id) {
            self.log.push(format!(
                "the DVM did not make reservation {alloc_id} after its grant: taking its nodes back"
            ));
            self.forget(alloc_id);
            self.refused.push(alloc_id.to_string());
            return None;
        }
        if reserved {
            self.sessions += 1;
            self.book_changed = true;
            let s = self.sessions;
            if let Some(o) = self.book.owners.iter_mut().find(|o| o.alloc_id == alloc_id) {
                o.session = Some(s);
            }
        }
        Some(self.owner_of(alloc_id).is_some())
    }

    /// The DVM's answer (`ok`) to psched's own request for `nodes`: held
    /// in its idle reservation (`park`) or added to allocation `alloc`.
    fn parking_answer(
        &mut self,
        ok: bool,
        nodes: Vec<String>,
        park: bool,
        alloc: Option<String>,
        now: u64,
    ) {
        if ok && !park {
            let fresh: Vec<String> = nodes
                .into_iter()
                .filter(|n| !self.book.in_dvm.contains(n))
                .collect();
            self.flight = self.starting(fresh, now, false, alloc);
        } else if ok {
            if self.idle_id.is_none() {
                self.idle_id = Some(format!("{IDLE_REQ_ID}.{}", self.me));
                self.sessions += 1;
                self.book_changed = true;
            }
            let fresh: Vec<String> = nodes
                .iter()
                .filter(|n| !self.book.in_dvm.contains(n))
                .cloned()
                .collect();
            self.parked.extend(nodes);
            self.flight = self.starting(fresh, now, true, None);
        } else if park {
            self.log.push(format!(
                "the DVM refused to hold {} in psched's idle reservation: they stay in its default pool",
                nodes.join(",")
            ));
        } else {
            self.log.push(format!(
                "the DVM refused to add {} to an allocation (it ended?)",
                nodes.join(",")
            ));
        }
    }

    /// Go on without the answer to the flight's question once its time is
    /// up ([`ANSWER_LIMIT_MS`]): a grant counts as made (its answer went
    /// out), a daemon is asked again, a park or an added node counts as
    /// refused. A late answer is then ignored.
    fn unanswered(&mut self, now: u64) {
        let asked = match &mut self.flight {
            Some(
                Flight::Confirming { asked, until, .. } | Flight::Parking { asked, until, .. },
            ) if *until <= now => *asked,
            Some(Flight::Starting {
                asked: a @ Some(_),
                next,
                ..
            }) if *next <= now => {
                let asked = a.take().unwrap_or_default();
                self.awaiting.remove(&asked);
                self.log.push(format!(
                    "the DVM did not answer psched's look at a daemon within {} s: asking again",
                    ANSWER_LIMIT_MS / 1000
                ));
                return;
            }
            _ => return,
        };
        self.awaiting.remove(&asked);
        match self.flight.take() {
            Some(Flight::Confirming {
                alloc_id,
                new,
                share,
                fresh,
                ..
            }) => {
                self.log.push(format!(
                    "the DVM did not say within {} s whether it made {alloc_id}: going on as if it did",
                    ANSWER_LIMIT_MS / 1000
                ));
                let ids = [alloc_id.clone()];
                if let Some(known) = self.confirm(&alloc_id, new && !share, &ids) {
                    self.flight = self.starting(fresh, now, known, Some(alloc_id));
                }
            }
            Some(Flight::Parking {
                nodes, park, alloc, ..
            }) => {
                self.log.push(format!(
                    "the DVM did not answer psched's own request within {} s",
                    ANSWER_LIMIT_MS / 1000
                ));
                self.parking_answer(false, nodes, park, alloc, now);
            }
            other => self.flight = other,
        }
    }

    /// The answer to the flight's question.
    fn flight_answer(&mut self, tag: u32, payload: &[u8], now: u64) {
        let Some(f) = self.flight.take() else {
            return;
        };
        match f {
            Flight::Confirming {
                asked,
                alloc_id,
                new,
                share,
                fresh,
                ..
            } if asked == tag => {
                let ids = wire::alloc_ids_answer(self.wire, payload).unwrap_or_default();
                if let Some(known) = self.confirm(&alloc_id, new && !share, &ids) {
                    self.flight = self.starting(fresh, now, known, Some(alloc_id));
                }
            }
            Flight::Starting {
                fresh,
                all,
                asked: Some(a),
                pause,
                until,
                ..
            } if a == tag => {
                let reported = wire::query_answer(self.wire, payload).is_some_and(|(st, infos)| {
                    st.is_success() && crate::codec::helpers::names_server_uri(&infos)
                });
                let mut missing = fresh;
                if reported && !missing.is_empty() {
                    let node = missing.remove(0);
                    self.book.in_dvm.push(node);
                    self.book_changed = true;
                }
                if missing.is_empty() || now >= until {
                    let up: Vec<String> = all
                        .iter()
                        .filter(|n| !missing.contains(n))
                        .cloned()
                        .collect();
                    self.log.push(format!("daemons up on {}", up.join(",")));
                    if !missing.is_empty() {
                        self.log.push(format!(
                            "no daemon came up on {} within {} s: never granted again until the DVM restarts",
                            missing.join(","),
                            START_LIMIT_MS / 1000
                        ));
                        self.book.broken.extend(missing);
                        self.book_changed = true;
                    }
                    self.flight = self.settling(now, false, None);
                    return;
                }
                // The next node is asked at once; the same one again later.
                let (next, pause) = if reported {
                    (now, POLL_FIRST_MS)
                } else {
                    (now + pause, (pause * 2).min(POLL_MAX_MS))
                };
                self.flight = Some(Flight::Starting {
                    fresh: missing,
                    all,
                    asked: None,
                    next,
                    pause,
                    until,
                });
            }
            Flight::Parking {
                asked,
                nodes,
                park,
                alloc,
                ..
            } if asked == tag => {
                let ok = crate::codec::Decoder::new(payload, self.wire)
                    .unpack_one::<Status>()
                    .is_ok_and(|s| s.is_success());
                self.parking_answer(ok, nodes, park, alloc, now);
            }
            other => self.flight = Some(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{DataArray, Encoder};

    const BASE: u32 = super::OWN_TAG_BASE;

    fn dvm(in_dvm: &[&str]) -> Dvm {
        let book = DvmBook {
            in_dvm: in_dvm.iter().map(|s| s.to_string()).collect(),
            ..DvmBook::default()
        };
        let mut d = Dvm::new(WireVersion::V61, "psched@0", "dvm@0", book, 0, BASE);
        d.queue.clear();
        d
    }

    /// `alloc.1`, PRRTE's session `session`, owned and asked for by `tool@1`.
    fn owned_by_tool(d: &mut Dvm, session: u32) {
        d.book.owners.push(Owner {
            alloc_id: "alloc.1".into(),
            nspace: "tool@1".into(),
            requester: "tool@1".into(),
            rank: 0,
            session: Some(session),
            req_id: None,
        });
    }

    fn grant(tag: u32, id: &str, nodes: &[&str]) -> Out {
        Out::Grant(Granted {
            tag,
            alloc_id: id.into(),
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
            echo: vec![Info::new(
                keys::ALLOC_INHERITANCE,
                Value::AllocInherit(crate::proto::Inheritance::None.into()),
            )],
            new: true,
        })
    }

    fn answer(infos: &[Info]) -> Vec<u8> {
        let mut e = Encoder::new(WireVersion::V61);
        e.pack_one(&Status(0)).unwrap();
        crate::codec::attrs::write_infos(&mut e, infos).unwrap();
        e.into_bytes()
    }

    fn ids_answer(ids: &[&str]) -> Vec<u8> {
        let list = ids.iter().map(|i| Info::new(keys::ALLOC_ID, *i)).collect();
        answer(&[Info::new(
            keys::QUERY_ALLOC_IDS,
            Value::DataArray(DataArray::infos(list)),
        )])
    }

    fn answers(out: &[Send]) -> Vec<u32> {
        out.iter()
            .filter_map(|s| match s {
                Send::Answer(t, _) => Some(*t),
                Send::Own(..) => None,
            })
            .collect()
    }

    fn own_tags(out: &[Send]) -> Vec<u32> {
        out.iter()
            .filter_map(|s| match s {
                Send::Own(t, _) => Some(*t),
                Send::Answer(..) => None,
            })
            .collect()
    }

    #[test]
    fn a_second_grant_waits_until_the_first_is_confirmed_and_settled() {
        let mut d = dvm(&["n1", "n2"]);
        let mut out = Vec::new();
        d.push(
            vec![grant(10, "alloc.1", &["n1"]), grant(11, "alloc.2", &["n2"])],
            &mut out,
        )
        .unwrap();
        d.tick(0, &mut out).unwrap();
        assert_eq!(answers(&out), [10], "one change at a time");
        let q = own_tags(&out)[0];
        out.clear();
        let nodes = |_: &str| Vec::new();
        d.on_own_answer(q, &ids_answer(&["alloc.1"]), 5, &nodes, &mut out)
            .unwrap();
        d.tick(5, &mut out).unwrap();
        assert!(answers(&out).is_empty(), "settling: {out:?}");
        d.tick(5 + SETTLE_MS, &mut out).unwrap();
        assert_eq!(answers(&out), [11]);
        let (book, sessions) = d.book();
        assert_eq!(sessions, 1, "the first NEW made PRRTE session 1");
        assert!(book.owners.is_empty(), "no requester was named");
    }

    #[test]
    fn a_question_the_dvm_never_answers_holds_the_next_grant_only_until_its_limit() {
        let mut d = dvm(&["n1", "n2"]);
        let mut out = Vec::new();
        d.push(
            vec![grant(10, "alloc.1", &["n1"]), grant(11, "alloc.2", &["n2"])],
            &mut out,
        )
        .unwrap();
        d.tick(0, &mut out).unwrap();
        assert_eq!(answers(&out), [10]);
        let late = own_tags(&out)[0];
        assert_eq!(d.next_deadline(), Some(ANSWER_LIMIT_MS), "a wake-up is due");
        out.clear();
        d.tick(ANSWER_LIMIT_MS - 1, &mut out).unwrap();
        assert!(answers(&out).is_empty(), "still waiting: {out:?}");
        d.tick(ANSWER_LIMIT_MS, &mut out).unwrap();
        assert!(d.take_log().iter().any(|l| l.contains("alloc.1")));
        d.tick(ANSWER_LIMIT_MS + SETTLE_MS, &mut out).unwrap();
        assert_eq!(answers(&out), [11], "the next grant went on");
        let nodes = |_: &str| Vec::new();
        out.clear();
        d.on_own_answer(
            late,
            &ids_answer(&[]),
            ANSWER_LIMIT_MS + SETTLE_MS,
            &nodes,
            &mut out,
        )
        .unwrap();
        assert!(d.take_refused().is_empty(), "a late answer is ignored");
    }

    #[test]
    fn a_look_at_a_daemon_the_dvm_never_answers_is_asked_again() {
        let mut d = dvm(&[]);
        let mut out = Vec::new();
        d.push(vec![grant(10, "alloc.1", &["n1"])], &mut out)
            .unwrap();
        d.tick(0, &mut out).unwrap();
        let q = own_tags(&out)[0];
        out.clear();
        let nodes = |_: &str| Vec::new();
        d.on_own_answer(q, &ids_answer(&["alloc.1"]), 1, &nodes, &mut out)
            .unwrap();
        d.tick(1, &mut out).unwrap();
        assert_eq!(own_tags(&out).len(), 1, "the daemon of n1 is looked at");
        out.clear();
        d.tick(1 + ANSWER_LIMIT_MS - 1, &mut out).unwrap();
        assert!(out.is_empty(), "waiting for the answer: {out:?}");
        d.tick(1 + ANSWER_LIMIT_MS, &mut out).unwrap();
        assert_eq!(own_tags(&out).len(), 1, "asked again: {out:?}");
    }

    /// Grant alloc.1 of n1 (owned by tool 1), answered; alloc.2 of n2
    /// waits behind its settle.
    fn settling_grant_with_one_waiting(d: &mut Dvm, out: &mut Vec<Send>) {
        owned_by_tool(d, 1);
        d.push(vec![grant(10, "alloc.1", &["n1"])], out).unwrap();
        d.tick(0, out).unwrap();
        let q = own_tags(out)[0];
        out.clear();
        let nodes = |_: &str| Vec::new();
        d.on_own_answer(q, &ids_answer(&["alloc.1"]), 1, &nodes, out)
            .unwrap();
        d.push(vec![grant(11, "alloc.2", &["n2"])], out).unwrap();
        d.tick(2, out).unwrap();
        assert!(answers(out).is_empty(), "settling: {out:?}");
    }

    fn release(alloc_id: &str, whole: bool) -> Out {
        Out::Release {
            tag: 7,
            alloc_id: alloc_id.into(),
            nodes: vec!["n1".into()],
            whole,
        }
    }

    #[test]
    fn a_grants_settle_ends_when_nobody_holds_an_allocation() {
        let mut d = dvm(&["n1", "n2"]);
        let mut out = Vec::new();
        settling_grant_with_one_waiting(&mut d, &mut out);
        d.push(vec![release("alloc.1", false)], &mut out).unwrap();
        out.clear();
        d.tick(3, &mut out).unwrap();
        assert!(answers(&out).is_empty(), "a part released: {out:?}");
        d.push(vec![release("alloc.1", true)], &mut out).unwrap();
        out.clear();
        d.tick(4, &mut out).unwrap();
        assert_eq!(answers(&out), [11], "released whole, nobody holds one");
    }

    #[test]
    fn a_released_node_a_waiting_grant_names_is_not_parked_first() {
        let mut d = dvm(&["n1"]);
        owned_by_tool(&mut d, 1);
        let mut out = Vec::new();
        d.push(
            vec![release("alloc.1", true), grant(11, "alloc.2", &["n1"])],
            &mut out,
        )
        .unwrap();
        out.clear();
        d.tick(0, &mut out).unwrap();
        assert_eq!(answers(&out), [11], "granted at once, no park before");
        assert_eq!(
            own_tags(&out).len(),
            2,
            "the look at n1's jobs (super::stuck) and the grant's confirmation alone"
        );
    }

    #[test]
    fn a_grants_settle_stays_while_another_allocation_is_held() {
        let mut d = dvm(&["n1", "n2"]);
        d.book.owners.push(Owner {
            alloc_id: "alloc.0".into(),
            nspace: "tool.2".into(),
            requester: "tool.2".into(),
            rank: 0,
            session: Some(1),
            req_id: None,
        });
        let mut out = Vec::new();
        settling_grant_with_one_waiting(&mut d, &mut out);
        d.push(vec![release("alloc.1", true)], &mut out).unwrap();
        out.clear();
        d.tick(4, &mut out).unwrap();
        assert!(answers(&out).is_empty(), "alloc.0 is held: {out:?}");
        d.tick(1 + SETTLE_QUIET_MS, &mut out).unwrap();
        assert!(answers(&out).is_empty(), "another grant: {out:?}");
        d.tick(1 + SETTLE_MS, &mut out).unwrap();
        assert_eq!(answers(&out), [11], "after SETTLE_MS");
        assert_eq!(
            answers(&out),
            [11],
            "after SETTLE_QUIET_MS: no daemon started"
        );
    }

    #[test]
    fn a_grants_own_next_node_follows_a_quiet_settle_another_grant_the_whole() {
        // n1, n2 and n3 have their daemons up: no change starts one.
        let mut d = dvm(&["n1", "n2", "n3"]);
        let mut out = Vec::new();
        d.push(
            vec![
                grant(10, "alloc.1", &["n1", "n2"]),
                grant(11, "alloc.2", &["n3"]),
            ],
            &mut out,
        )
        .unwrap();
        d.tick(0, &mut out).unwrap();
        assert_eq!(answers(&out), [10]);
        let q = own_tags(&out)[0];
        out.clear();
        let nodes = |_: &str| Vec::new();
        d.on_own_answer(q, &ids_answer(&["alloc.1"]), 1, &nodes, &mut out)
            .unwrap();
        assert_eq!(d.next_deadline(), Some(1 + SETTLE_QUIET_MS));
        d.tick(1 + SETTLE_QUIET_MS, &mut out).unwrap();
        let add = own_tags(&out);
        assert_eq!(add.len(), 1, "n2 added to alloc.1 after the quiet settle");
        out.clear();
        let ok = {
            let mut e = Encoder::new(WireVersion::V61);
            e.pack_one(&Status(0)).unwrap();
            e.into_bytes()
        };
        d.on_own_answer(add[0], &ok, 30, &nodes, &mut out).unwrap();
        d.tick(30 + SETTLE_QUIET_MS, &mut out).unwrap();
        assert!(answers(&out).is_empty(), "another grant waits: {out:?}");
        d.tick(30 + SETTLE_MS, &mut out).unwrap();
        assert_eq!(answers(&out), [11], "after SETTLE_MS");
    }

    #[test]
    fn a_grant_the_dvm_did_not_make_is_taken_back() {
        let mut d = dvm(&["n1"]);
        let mut out = Vec::new();
        d.push(vec![grant(10, "alloc.1", &["n1"])], &mut out)
            .unwrap();
        d.tick(0, &mut out).unwrap();
        let q = own_tags(&out)[0];
        d.on_own_answer(q, &ids_answer(&[]), 1, &|_| Vec::new(), &mut out)
            .unwrap();
        assert_eq!(d.take_refused(), ["alloc.1"]);
        assert_eq!(d.book().1, 0, "no session counted");
    }

    #[test]
    fn a_release_is_answered_done_and_the_reservation_ended_by_psched() {
        let mut d = dvm(&["n1"]);
        owned_by_tool(&mut d, 3);
        let mut out = Vec::new();
        d.push(
            vec![Out::Release {
                tag: 7,
                alloc_id: "alloc.1".into(),
                nodes: vec!["n1".into()],
                whole: true,
            }],
            &mut out,
        )
        .unwrap();
        let Some(Send::Answer(7, body)) = out.first() else {
            panic!("{out:?}");
        };
        let st: Status = crate::codec::Decoder::new(body, WireVersion::V61)
            .unpack_one()
            .unwrap();
        assert_eq!(st, Status::OPERATION_SUCCEEDED);
        assert_eq!(
            own_tags(&out).len(),
            2,
            "terminate, then tell the requester"
        );
        assert!(d.book().0.owners.is_empty());
        out.clear();
        d.tick(0, &mut out).unwrap();
        assert_eq!(
            own_tags(&out).len(),
            2,
            "the look at n1's jobs (super::stuck), and the node goes to the idle reservation"
        );
        assert!(
            d.awaiting
                .values()
                .any(|a| matches!(a, Await::StuckLook(n) if n == &["n1".to_string()])),
            "n1's jobs are looked at"
        );
    }

    #[test]
    fn a_queued_requester_is_kept_and_told_by_the_next_psched_once() {
        let mut d = dvm(&["n1"]);
        let ask = Forwarded {
            directive: Directive::New.into(),
            attrs: crate::proto::AllocAttrs {
                req_id: Some("r1".into()),
                ..Default::default()
            },
            requestor: Some(Box::new(Info::new(
                keys::REQUESTOR,
                Value::Proc(Proc {
                    nspace: "palloc@0".into(),
                    rank: 0,
                }),
            ))),
            ..Forwarded::default()
        };
        let mut out = Vec::new();
        let v = d.on_request(20, ask, &|_| None, &mut out).unwrap();
        assert!(matches!(v, Verdict::Pass(_)));
        let (book, _) = d.book();
        assert_eq!(book.waiting.len(), 1, "{book:?}");
        assert_eq!(book.waiting[0].req_id.as_deref(), Some("r1"));
        // The next psched (same DVM) tells the requester at its first tick,
        // once, and keeps it no more.
        let mut next = Dvm::new(WireVersion::V61, "psched@1", "dvm@0", book, 0, BASE);
        next.queue.clear();
        next.tick(0, &mut out).unwrap();
        assert_eq!(own_tags(&out).len(), 1, "one notice");
        assert!(next.take_log()[0].contains("r1 was lost"));
        out.clear();
        next.tick(1, &mut out).unwrap();
        assert!(out.is_empty());
        assert!(next.book().0.waiting.is_empty());
        // An answer (a refusal, a grant) ends the wait.
        d.push(vec![Out::Answer(20, Vec::new())], &mut out).unwrap();
        assert!(d.book().0.waiting.is_empty());
    }

    #[test]
    fn a_job_outside_the_allocation_is_refused_before_the_backend_hears() {
        let mut d = dvm(&["n1"]);
        owned_by_tool(&mut d, 1);
        let ask = Forwarded {
            directive: Directive::Release.into(),
            attrs: crate::proto::AllocAttrs {
                alloc_id: Some("alloc.1".into()),
                ..Default::default()
            },
            requestor: Some(Box::new(Info::new(
                keys::REQUESTOR,
                Value::Proc(Proc {
                    nspace: "job@3".into(),
                    rank: 0,
                }),
            ))),
            ..Forwarded::default()
        };
        let mut out = Vec::new();
        let v = d.on_request(20, ask, &|_| None, &mut out).unwrap();
        assert!(matches!(v, Verdict::Held));
        let q = own_tags(&out)[0];
        out.clear();
        let proc = Info::new(
            keys::PROC_INFO_ARRAY,
            Value::DataArray(DataArray::infos(vec![Info::new(keys::HOSTNAME, "head")])),
        );
        let job = Info::new(
            "entry",
            Value::DataArray(DataArray::infos(vec![
                Info::new(keys::NSPACE, "job@3"),
                proc,
            ])),
        );
        let ns = answer(&[Info::new(
            keys::QUERY_NAMESPACE_INFO,
            Value::DataArray(DataArray::infos(vec![job])),
        )]);
        let passed = d
            .on_own_answer(q, &ns, 0, &|_| vec!["n1".to_string()], &mut out)
            .unwrap();
        assert!(passed.is_empty());
        let Some(Send::Answer(20, body)) = out.first() else {
            panic!("{out:?}");
        };
        let st: Status = crate::codec::Decoder::new(body, WireVersion::V61)
            .unpack_one()
            .unwrap();
        assert_eq!(st, Status::ERR_NO_PERMISSIONS);
    }

    #[test]
    fn prrte_is_told_the_default_rules() {
        use crate::proto::Inheritance as I;
        for (asked, told) in [
            (I::None, I::Default),
            (I::Child, I::ChildDefault),
            (I::Default, I::Default),
            (I::ChildDefault, I::ChildDefault),
        ] {
            let echo = [Info::new(
                keys::ALLOC_INHERITANCE,
                Value::AllocInherit(asked.into()),
            )];
            let got = wire::echo_for_dvm(&echo);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].value, Value::AllocInherit(told.into()), "{asked:?}");
        }
    }
}
