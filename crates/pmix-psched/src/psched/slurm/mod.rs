//! `psched --backend slurm`: the DVM's allocation requests carried out by
//! the site's Slurm instead of psched's simulated pool.
//!
//! Each allocation (`slurm.N`) is a Slurm job (`salloc --no-shell`),
//! submitted as psched's user: on shared nodes, at least psched's `--slots`
//! CPUs on each (or the CPUs asked for), or whole nodes when the request
//! says so (palloc `--exclusive`: `salloc --exclusive`). psched
//! knows its jobs by the id salloc says (`Granted job allocation N`), checks
//! that Slurm runs each as its own user, and never takes a job for its own
//! by its name (the name, `psched.TAG.slurm.N`, is for the administrator's
//! eyes). NEW is answered when salloc says the job was granted (a pending
//! job waits, as `salloc` does, unless Slurm's pending reason says it never
//! will: [`reason`]); EXTEND in time is `scontrol update TimeLimit=+MIN`, in
//! nodes a further job under the same id; a partial RELEASE shrinks the
//! jobs holding the nodes (`scontrol update NodeList=`), a full one cancels
//! them; REQ_CANCEL cancels a pending job.
//!
//! psched asks Slurm only about its own jobs, all of them in one `squeue
//! --user=UID` (one RPC whatever the queue and however many jobs psched
//! holds), every [`POLL_MS`], on a worker thread
//! ([`worker`]): the warning before expiry follows Slurm's own end time (an
//! extension made in Slurm moves it), and an allocation Slurm runs no job
//! of any more (time limit, `scancel`, node failure, preemption) has its
//! DVM session ended. An unreachable controller changes nothing: psched
//! says so in its log and to every tool, pings it every second, and at its
//! first answer asks again; requests wait ([`outage`]).

mod apart;
pub mod ctl;
pub mod hostlist;
pub mod job;
mod outage;
pub mod reason;
mod requests;
pub mod waker;
mod watch;
pub mod worker;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::error::{Error, ErrorKind, Result};
use crate::proto::status::Status;
use crate::sched::SchedPendingView;

use super::ledger::{Grant, Ledger};
use super::ledger_change::{when_changed, LedgerChange};
use super::source::{Ask, Decision, Give, Heard, NodeSource, Refusal, Released, SourceEvent};
use reason::Reason;
use worker::{SubKey, Task, Worker};

/// How often psched asks Slurm about its jobs (ms).
const POLL_MS: u64 = 2000;
/// How often psched asks Slurm for its partitions while it holds or waits
/// for something, for `pwatch --status` (ms).
const PARTITIONS_MS: u64 = 30_000;
/// Shortest time between two `sinfo` after psched's jobs took or gave back
/// nodes (ms): a loop of grants and releases lists them once a second, not
/// twice a round beside the next grant's Slurm commands.
const PARTITIONS_SOON_MS: u64 = 1_000;
/// The prefix of an allocation id.
const ID_PREFIX: &str = "slurm.";
/// A request's time limit when it names none (`PSCHED_SLURM_DEFAULT_TIME`,
/// minutes): never an unlimited job by default.
const DEFAULT_MINUTES: u32 = 60;
/// The longest time limit psched asks Slurm for
/// (`PSCHED_SLURM_MAX_TIME`, minutes).
const MAX_MINUTES: u32 = 24 * 60;

/// A `salloc` psched started that Slurm has not granted yet.
#[derive(Debug, Clone)]
struct Waiting {
    key: SubKey,
    /// Its job id, once salloc said it.
    job: Option<u64>,
    /// What it asks (kept to ask again after an outage).
    ask: ctl::Ask,
    name: String,
    /// When to ask again (Slurm was unreachable), ms.
    again_at: Option<u64>,
    /// Slurm's reason while it waits.
    reason: Option<Reason>,
    /// That reason in Slurm's words (with its detail).
    said: Option<String>,
}

/// One allocation: its Slurm jobs and what the DVM needs of it.
#[derive(Debug, Clone, Default)]
struct Alloc {
    /// Its granted jobs: the NEW's, then those EXTENDs in nodes added.
    jobs: Vec<u64>,
    /// Each granted job's nodes.
    job_nodes: HashMap<u64, Vec<String>>,
    /// The NEW is not granted yet.
    new: bool,
    /// A NEW's or EXTEND's salloc not granted yet.
    waiting: Option<Waiting>,
    /// An EXTEND in time waits for Slurm.
    ext_time: bool,
    queue: String,
    nodes: Vec<String>,
    /// Slurm's end time (ms since the epoch).
    end_ms: Option<u64>,
    warn_secs: Option<u32>,
    /// The end time the warning was sent for (a later end re-arms it).
    warned_for: Option<u64>,
    granted_at: u64,
    /// The DVM ended the reservation but keeps its nodes (DEFAULT or
    /// CHILD_DEFAULT): the Slurm job stays until that DVM is gone.
    retained: bool,
    /// The NEW's CPUs, memory and Slurm options (an EXTEND's job gets
    /// the same).
    opts: ctl::Options,
}

/// psched's state over Slurm: see the module documentation.
pub struct SlurmBackend {
    allocs: HashMap<String, Alloc>,
    /// The number of the last allocation id given.
    next_id: u64,
    /// What happened since [`NodeSource::what_happened`] last took it.
    news: Vec<SourceEvent>,
    /// Allocations whose grant changed since then.
    touched: BTreeSet<String>,
    /// What the ledger was last told of the rest.
    said: Said,
    /// This psched's part of its jobs' names (`psched.TAG.`).
    tag: String,
    worker: Worker,
    /// psched's uid: Slurm must run its jobs as this user.
    uid: u32,
    /// Jobs whose user psched has checked.
    verified: HashSet<u64>,
    /// Jobs to cancel (checked first; kept while Slurm is unreachable).
    to_cancel: Vec<u64>,
    /// Jobs psched has asked Slurm to cancel (said once in the log).
    cancel_sent: HashSet<u64>,
    /// salloc keys withdrawn before they said their job id.
    withdrawn: Vec<SubKey>,
    /// When to ask Slurm about the jobs next (ms); 0: at once.
    next_show: u64,
    /// A query is under way.
    showing: bool,
    /// Jobs granted while a query was under way: that query's answer
    /// predates their grant, so its "pending" for them is old news, not
    /// a job put back in the queue.
    granted_while_showing: HashSet<u64>,
    /// Slurm's partitions as `sinfo` said last (for `pwatch --status`).
    partitions: Vec<crate::psched::SourcePartition>,
    /// When to ask for them next (ms); 0: not asked yet.
    next_partitions: u64,
    /// When the last `sinfo` was asked (ms).
    partitions_asked: u64,
    /// An `sinfo` is under way.
    listing: bool,
    /// Whether Slurm's controller answers, and what the tools hear of it.
    outage: outage::Outage,
    /// Numbers salloc submissions.
    seq: u64,
    default_secs: u32,
    max_secs: u32,
    /// Running as root without [`ROOT_ONLY`]: every NEW is refused.
    refuse_root: bool,
    /// Slots each node is said to have to PRRTE (`--slots`): what a
    /// request on shared nodes asks Slurm for at least.
    slots: u32,
}

/// The ledger's parts beside the grants, as last said.
#[derive(Debug, Default)]
struct Said {
    next_id: u64,
    retained: Vec<String>,
    jobs: BTreeMap<u64, Vec<String>>,
    withdraw: Vec<u64>,
    pending: Vec<SchedPendingView>,
    partitions: Vec<crate::psched::SourcePartition>,
}

/// Set (to `1`) when psched runs as root for root alone: otherwise a root
/// psched refuses every request (see [`SlurmBackend::new`]).
pub const ROOT_ONLY: &str = "PSCHED_SLURM_ROOT_ONLY";

/// A short tag for the ledger at `path` (FNV-1a of its path): an
/// administrator tells two pscheds' jobs apart by it in `squeue`.
pub fn ledger_tag(path: &std::path::Path) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in path.to_string_lossy().bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// Minutes from the environment variable `var`, else `default`.
fn minutes_from_env(var: &str, default: u32) -> u32 {
    match std::env::var(var).ok().map(|v| v.trim().parse::<u32>()) {
        Some(Ok(m)) if m > 0 => m,
        Some(_) => {
            say!("psched: {var} is not a number of minutes: using {default}");
            default
        }
        None => default,
    }
}

impl SlurmBackend {
    /// A backend that takes back the grants of `ledger` (checked against
    /// Slurm at the first poll); `ledger` is left as it keeps it (a grant
    /// of no Slurm job is dropped).
    ///
    /// As root it refuses every request unless [`ROOT_ONLY`] is `1`: the
    /// requests PRRTE forwards name the requesting process, not its uid,
    /// and `salloc` cannot submit as another user, so every job would be
    /// root's (no fairshare, no limits, one user in the accounting).
    /// Fails when its worker threads cannot get a waker (no eventfd).
    pub fn new(ledger: &mut Ledger, tag: String) -> Result<SlurmBackend> {
        let worker = Worker::start().map_err(|e| {
            Error::io(
                ErrorKind::Local,
                Status::ERR_OUT_OF_RESOURCE,
                "cannot make the waker of psched's Slurm threads (eventfd)",
                e,
            )
        })?;
        let retained = ledger.retained_jobs.iter().map(|&job| {
            let nodes = ledger
                .retained_job_nodes
                .get(&job)
                .cloned()
                .unwrap_or_default();
            // An older ledger names no nodes: Slurm's next answer does.
            let job_nodes = if nodes.is_empty() {
                HashMap::new()
            } else {
                HashMap::from([(job, nodes.clone())])
            };
            let a = Alloc {
                jobs: vec![job],
                job_nodes,
                nodes,
                retained: true,
                ..Alloc::default()
            };
            (format!("retained.{job}"), a)
        });
        ledger.grants.retain(|g| !g.slurm_jobs.is_empty());
        let allocs = ledger
            .grants
            .iter()
            .map(|g| {
                let a = Alloc {
                    jobs: g.slurm_jobs.clone(),
                    queue: g.queue.clone(),
                    nodes: g.nodes.clone(),
                    end_ms: g.expires_at_ms,
                    warn_secs: g.warn_secs,
                    ..Alloc::default()
                };
                (g.alloc_id.clone(), a)
            })
            .chain(retained)
            .collect();
        let default_secs = minutes_from_env("PSCHED_SLURM_DEFAULT_TIME", DEFAULT_MINUTES) * 60;
        let max_secs = minutes_from_env("PSCHED_SLURM_MAX_TIME", MAX_MINUTES) * 60;
        let uid = nix::unistd::geteuid().as_raw();
        let refuse_root = uid == 0 && std::env::var(ROOT_ONLY).ok().as_deref() != Some("1");
        if refuse_root {
            say!(
                "psched: runs as root: every Slurm job would be root's, whoever asked (the DVM \
                 forwards no requester uid, and salloc cannot submit as another user); \
                 refusing every request. Run psched as the user whose jobs these are, or set \
                 {ROOT_ONLY}=1 when root alone uses this DVM"
            );
        }
        let mut b = SlurmBackend {
            allocs,
            next_id: ledger.next_id,
            news: Vec::new(),
            touched: BTreeSet::new(),
            said: Said::default(),
            to_cancel: ledger.slurm_withdraw.clone(),
            tag,
            worker,
            uid,
            refuse_root,
            verified: HashSet::new(),
            withdrawn: Vec::new(),
            cancel_sent: HashSet::new(),
            next_show: 0,
            partitions: Vec::new(),
            next_partitions: 0,
            partitions_asked: 0,
            listing: false,
            showing: false,
            granted_while_showing: HashSet::new(),
            outage: outage::Outage::default(),
            seq: 0,
            default_secs,
            max_secs: max_secs.max(default_secs),
            slots: 1,
        };
        // The ledger as this backend keeps it: its parts said at once.
        b.book();
        for e in std::mem::take(&mut b.news) {
            if let SourceEvent::Book(c) = e {
                ledger.apply(c);
            }
        }
        Ok(b)
    }

    /// Each node is said to have `slots` slots to PRRTE (`--slots`).
    pub fn set_slots(&mut self, slots: u32) {
        self.slots = slots.max(1);
    }

    /// The descriptor that turns readable when Slurm answered.
    pub fn wake_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.worker.wake_fd()
    }

    /// The Slurm job name of allocation `id`'s jobs.
    fn job_name(&self, id: &str) -> String {
        format!("psched.{}.{id}", self.tag)
    }

    /// A fresh allocation id.
    fn next_id(&mut self) -> String {
        self.next_id += 1;
        format!("{ID_PREFIX}{}", self.next_id)
    }

    /// A fresh submission key for `alloc`.
    fn key(&mut self, alloc: &str, extend: bool) -> SubKey {
        self.seq += 1;
        SubKey {
            alloc: alloc.to_string(),
            extend,
            seq: self.seq,
        }
    }

    /// Cancel `job` (after checking it is psched's), also across an outage.
    fn withdraw_job(&mut self, job: u64) {
        if !self.to_cancel.contains(&job) {
            self.to_cancel.push(job);
        }
        self.next_show = 0;
        self.partitions_changed();
    }

    /// Start (or start again) the salloc of `w`, apart from psched's other
    /// grants ([`apart`]).
    fn submit(&mut self, w: &Waiting) {
        self.worker.send(Task::Submit {
            key: w.key.clone(),
            ask: Box::new(self.apart(w)),
            name: w.name.clone(),
        });
    }

    /// Allocation `id`'s grant as the ledger keeps it, if it is one.
    fn grant_of(&self, id: &str) -> Option<Grant> {
        let a = self.allocs.get(id)?;
        if a.new || a.retained || a.jobs.is_empty() {
            return None;
        }
        Some(Grant {
            alloc_id: id.to_string(),
            req_id: None,
            nodes: a.nodes.clone(),
            expires_at_ms: a.end_ms,
            warn_secs: a.warn_secs,
            session: None,
            queue: a.queue.clone(),
            inherit: None,
            slurm_jobs: a.jobs.clone(),
        })
    }

    /// The ledger's changes since the last call: each touched grant, then
    /// the rest of the backend's part where it changed.
    fn book(&mut self) {
        for id in std::mem::take(&mut self.touched) {
            let c = match self.grant_of(&id) {
                Some(g) => LedgerChange::Grant(g),
                None => LedgerChange::Gone(id),
            };
            self.news.push(SourceEvent::Book(c));
        }
        let kept = || self.allocs.values().filter(|a| a.retained);
        let mut retained: Vec<String> = kept().flat_map(|a| a.nodes.iter().cloned()).collect();
        retained.sort();
        let mut jobs: BTreeMap<u64, Vec<String>> = kept()
            .flat_map(|a| a.jobs.iter().map(|j| (*j, Vec::new())))
            .collect();
        for (j, n) in kept().flat_map(|a| a.job_nodes.iter()) {
            jobs.insert(*j, n.clone());
        }
        let mut withdraw: Vec<u64> = self
            .allocs
            .values()
            .filter_map(|a| a.waiting.as_ref()?.job)
            .chain(self.to_cancel.iter().copied())
            .collect();
        withdraw.sort();
        withdraw.dedup();
        let pending = self.pending_view();
        let said = &mut self.said;
        let changes = [
            when_changed(&mut said.next_id, self.next_id, LedgerChange::NextId),
            when_changed(&mut said.retained, retained, LedgerChange::Retained),
            when_changed(&mut said.jobs, jobs, LedgerChange::RetainedJobs),
            when_changed(&mut said.withdraw, withdraw, LedgerChange::Withdraw),
            when_changed(&mut said.pending, pending, LedgerChange::Pending),
            when_changed(
                &mut said.partitions,
                self.partitions.clone(),
                LedgerChange::SourcePartitions,
            ),
        ];
        let changes = changes.into_iter().flatten().map(SourceEvent::Book);
        self.news.extend(changes);
    }
}

impl NodeSource for SlurmBackend {
    fn grant(&mut self, ask: &Ask, now: u64) -> Decision {
        match &ask.extend {
            None => self.on_new(&ask.attrs, now),
            Some(id) => self.on_extend(id, &ask.attrs, now),
        }
    }

    fn release(
        &mut self,
        alloc_id: &str,
        what: Give<'_>,
        _now: u64,
    ) -> std::result::Result<Released, Refusal> {
        self.release_nodes(alloc_id, what)
    }

    fn cancel(&mut self, alloc_id: &str, _now: u64) -> std::result::Result<(), Refusal> {
        self.on_cancel(alloc_id)
    }

    fn what_happened(&mut self, now: u64) -> Vec<SourceEvent> {
        self.step(now);
        self.book();
        std::mem::take(&mut self.news)
    }

    fn wake_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        Some(SlurmBackend::wake_fd(self))
    }

    /// Slurm's answers wake the loop ([`SlurmBackend::wake_fd`]): only
    /// psched's own timers are deadlines.
    fn next_deadline(&self, now: u64) -> Option<u64> {
        let mut next = self.next_warning();
        let mut at = |t: u64| next = Some(next.map_or(t, |n: u64| n.min(t)));
        if self.wants_show() {
            at(self.next_show.max(now));
        }
        if let Some(t) = self.next_resubmit() {
            at(t);
        }
        if let Some(t) = self.next_partitions_at() {
            at(t.max(now));
        }
        if let Some(t) = self.next_ping() {
            at(t.max(now));
        }
        next
    }

    fn hear(&mut self, news: Heard<'_>) {
        // Slurm chooses the nodes: a broken one is Slurm's to see.
        let Heard::Attached { new_dvm } = news else {
            return;
        };
        if new_dvm {
            // Nodes retained by the DVM that is gone go back to Slurm.
            let kept: Vec<String> = self
                .allocs
                .iter()
                .filter(|(_, a)| a.retained)
                .map(|(id, _)| id.clone())
                .collect();
            for id in kept {
                say!("psched: the DVM ended {id}: its Slurm jobs cancelled");
                self.drop_alloc(&id);
            }
        }
        for a in self.allocs.values_mut() {
            a.ext_time = false;
        }
    }
}
