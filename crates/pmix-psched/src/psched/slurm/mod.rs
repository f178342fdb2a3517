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

use std::collections::{HashMap, HashSet};

use crate::codec::{Info, WireVersion};
use crate::error::{Error, ErrorKind, Result};
use crate::proto::status::Status;
use crate::proto::{Directive, Inheritance, Received};

use super::ledger::{Grant, Ledger};
use super::out::{Granted, Out, UnaskedEnd};
use super::wire::{self, Forwarded};
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
    /// The NEW still waiting for its answer.
    owed: Option<u32>,
    /// A NEW's or EXTEND's salloc not granted yet.
    waiting: Option<Waiting>,
    /// An EXTEND in time waiting for Slurm: the DVM's tag.
    ext_time: Option<u32>,
    echo: Vec<Info>,
    req_id: Option<String>,
    queue: String,
    session: Option<u32>,
    nodes: Vec<String>,
    /// Slurm's end time (ms since the epoch).
    end_ms: Option<u64>,
    warn_secs: Option<u32>,
    /// The end time the warning was sent for (a later end re-arms it).
    warned_for: Option<u64>,
    granted_at: u64,
    /// The disposition asked for (`None`: no rule, taken as DEFAULT).
    inherit: Option<Inheritance>,
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
    ledger: Ledger,
    wire: WireVersion,
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
    /// Slurm at the first poll).
    ///
    /// As root it refuses every request unless [`ROOT_ONLY`] is `1`: the
    /// requests PRRTE forwards name the requesting process, not its uid,
    /// and `salloc` cannot submit as another user, so every job would be
    /// root's (no fairshare, no limits, one user in the accounting).
    /// Fails when its worker threads cannot get a waker (no eventfd).
    pub fn new(ledger: Ledger, tag: String) -> Result<SlurmBackend> {
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
        let allocs = ledger
            .grants
            .iter()
            .filter(|g| !g.slurm_jobs.is_empty())
            .map(|g| {
                let a = Alloc {
                    jobs: g.slurm_jobs.clone(),
                    req_id: g.req_id.clone(),
                    queue: g.queue.clone(),
                    session: g.session,
                    nodes: g.nodes.clone(),
                    end_ms: g.expires_at_ms,
                    warn_secs: g.warn_secs,
                    inherit: g.inherit,
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
        Ok(SlurmBackend {
            allocs,
            to_cancel: ledger.slurm_withdraw.clone(),
            ledger,
            wire: WireVersion::V41,
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
            outage: outage::Outage::default(),
            seq: 0,
            default_secs,
            max_secs: max_secs.max(default_secs),
            slots: 1,
        })
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
        self.ledger.next_id += 1;
        format!("{ID_PREFIX}{}", self.ledger.next_id)
    }

    /// A fresh submission key for `alloc`.
    fn key(&mut self, alloc: &str, ext_tag: Option<u32>) -> SubKey {
        self.seq += 1;
        SubKey {
            alloc: alloc.to_string(),
            ext_tag,
            seq: self.seq,
        }
    }

    fn answer(&self, tag: u32, st: Status, id: Option<&str>, a: Option<&Alloc>) -> Result<Out> {
        let (nodes, echo) = a.map_or((&[][..], &[][..]), |a| (&a.nodes[..], &a.echo[..]));
        Ok(Out::Answer(
            tag,
            wire::answer(self.wire, st, id, nodes, echo)?,
        ))
    }

    /// The answer to an EXTEND in time (or asking nothing): the DVM hears
    /// of no new node, and the echo it keeps.
    fn renewed(&self, tag: u32, id: &str) -> Out {
        Out::Grant(Granted {
            tag,
            alloc_id: id.to_string(),
            nodes: Vec::new(),
            echo: self
                .allocs
                .get(id)
                .map(|a| a.echo.clone())
                .unwrap_or_default(),
            new: false,
        })
    }

    fn refuse(&self, tag: u32, st: Status) -> Result<Vec<Out>> {
        Ok(vec![self.answer(tag, st, None, None)?])
    }

    /// Refuse `tag` as `st`, telling the requester `why`.
    fn refuse_saying(&self, tag: u32, st: Status, why: &str) -> Result<Vec<Out>> {
        Ok(vec![Out::Answer(tag, wire::refusal(self.wire, st, why)?)])
    }

    fn find_id(&self, ask: &Forwarded) -> Option<String> {
        if let Some(id) = &ask.attrs.alloc_id {
            return self.allocs.contains_key(id).then(|| id.clone());
        }
        let rid = ask.attrs.req_id.as_ref()?;
        self.allocs
            .iter()
            .find(|(_, a)| a.req_id.as_ref() == Some(rid))
            .map(|(id, _)| id.clone())
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

    fn grants(&self) -> Vec<Grant> {
        let mut v: Vec<Grant> = self
            .allocs
            .iter()
            .filter(|(_, a)| a.owed.is_none() && !a.retained && !a.jobs.is_empty())
            .map(|(id, a)| Grant {
                alloc_id: id.clone(),
                req_id: a.req_id.clone(),
                nodes: a.nodes.clone(),
                expires_at_ms: a.end_ms,
                warn_secs: a.warn_secs,
                session: a.session,
                queue: a.queue.clone(),
                inherit: a.inherit,
                slurm_jobs: a.jobs.clone(),
            })
            .collect();
        v.sort_by(|x, y| x.alloc_id.cmp(&y.alloc_id));
        v
    }
}

impl super::backend::Backend for SlurmBackend {
    fn attach(&mut self, dvm: &str, wire: WireVersion) {
        self.wire = wire;
        if self.ledger.dvm.as_deref() != Some(dvm) {
            self.ledger.dvm = Some(dvm.to_string());
            self.ledger.sessions = 0;
            // Nodes retained by the DVM that is gone go back to Slurm.
            let kept: Vec<String> = self
                .allocs
                .iter()
                .filter(|(_, a)| a.retained)
                .map(|(id, _)| id.clone())
                .collect();
            for id in kept {
                let _ = self.on_session_done(&id, 0);
            }
        }
        // Requests of a DVM that is gone are answered to no one: withdrawn.
        let owed: Vec<String> = self
            .allocs
            .iter()
            .filter(|(_, a)| a.owed.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        for id in owed {
            self.drop_alloc(&id);
        }
        for a in self.allocs.values_mut() {
            if let Some(w) = a.waiting.take() {
                if let Some(j) = w.job {
                    self.to_cancel.push(j);
                }
            }
            a.ext_time = None;
        }
    }

    fn ledger(&self) -> Ledger {
        let mut l = self.ledger.clone();
        l.grants = self.grants();
        l.retained = self
            .allocs
            .values()
            .filter(|a| a.retained)
            .flat_map(|a| a.nodes.iter().cloned())
            .collect();
        l.retained.sort();
        l.retained_jobs = self
            .allocs
            .values()
            .filter(|a| a.retained)
            .flat_map(|a| a.jobs.iter().copied())
            .collect();
        l.retained_jobs.sort();
        l.retained_job_nodes = self
            .allocs
            .values()
            .filter(|a| a.retained)
            .flat_map(|a| a.job_nodes.iter().map(|(j, n)| (*j, n.clone())))
            .collect();
        l.slurm_withdraw = self
            .allocs
            .values()
            .filter_map(|a| a.waiting.as_ref()?.job)
            .chain(self.to_cancel.iter().copied())
            .collect();
        l.slurm_withdraw.sort();
        l.slurm_withdraw.dedup();
        l.pending = self.pending_view();
        l.source_partitions = self.partitions.clone();
        l
    }

    fn free_nodes(&self) -> Vec<String> {
        Vec::new()
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

    fn tick(&mut self, now: u64) -> Result<Vec<Out>> {
        self.step(now)
    }

    fn on_alloc(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        match ask.directive {
            Received::Known(Directive::New) => self.on_new(tag, ask, now),
            Received::Known(Directive::Extend) => self.on_extend(tag, ask, now),
            Received::Known(Directive::Release) => self.on_release(tag, &ask),
            Received::Known(Directive::ReqCancel) => self.on_cancel(tag, &ask),
            _ => self.refuse(tag, Status::ERR_NOT_SUPPORTED),
        }
    }

    fn on_session_done(&mut self, alloc_id: &str, _now: u64) -> Result<Vec<Out>> {
        let Some((nodes, inherit)) = self
            .allocs
            .get(alloc_id)
            .map(|a| (a.nodes.clone(), a.inherit))
        else {
            return Ok(Vec::new());
        };
        say!("psched: the DVM ended {alloc_id}: its Slurm jobs cancelled");
        self.drop_alloc(alloc_id);
        Ok(vec![Out::Returned {
            alloc_id: alloc_id.to_string(),
            nodes,
            stop: inherit.is_some_and(Inheritance::returns_to_scheduler),
        }])
    }

    fn reconcile(&mut self, live: &[String], now: u64, settle_ms: u64) -> Result<Vec<Out>> {
        self.ledger.reconciled_at_ms = Some(now);
        let gone: Vec<String> = self
            .allocs
            .iter()
            .filter(|(id, a)| a.owed.is_none() && !a.retained && !live.contains(id))
            .filter(|(_, a)| !a.jobs.is_empty())
            .filter(|(_, a)| now.saturating_sub(a.granted_at) >= settle_ms)
            .map(|(id, _)| id.clone())
            .collect();
        let mut out = Vec::new();
        for id in gone {
            let inherit = self.allocs[&id].inherit.unwrap_or(Inheritance::Default);
            if inherit.returns_to_scheduler() {
                out.extend(self.on_session_done(&id, now)?);
            } else if let Some(a) = self.allocs.get_mut(&id) {
                say!(
                    "psched: {id} ended under {inherit:?}: job {} kept while the DVM holds its nodes",
                    a.jobs[0]
                );
                a.retained = true;
            }
        }
        Ok(out)
    }

    fn admin_release(&mut self, alloc_id: &str, _now: u64) -> Result<Option<Vec<Out>>> {
        let Some(a) = self.allocs.get(alloc_id) else {
            return Ok(None);
        };
        if a.owed.is_some() || a.retained {
            return Ok(None);
        }
        let nodes = a.nodes.clone();
        say!("psched: {alloc_id} released by the administrator: its Slurm jobs cancelled");
        self.drop_alloc(alloc_id);
        Ok(Some(vec![Out::End {
            alloc_id: alloc_id.to_string(),
            nodes,
            why: UnaskedEnd::Admin,
        }]))
    }
}
