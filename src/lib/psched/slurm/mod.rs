//! `psched --backend slurm`: the DVM's allocation requests carried out by
//! the site's Slurm ([`ctl`]) instead of psched's simulated pool.
//!
//! Each allocation is one Slurm job named `psched` holding its nodes
//! exclusively (`sbatch --wrap 'exec sleep infinity'`); its id is
//! `slurm.<JOBID>`, so the ledger and Slurm name the same thing after a
//! restart. NEW is a submission, answered when Slurm runs the job (a
//! pending job waits, as `salloc` does); EXTEND in time is `scontrol
//! update TimeLimit=+MIN`; a partial RELEASE shrinks the job (`scontrol
//! update NodeList=`), a full one cancels it; REQ_CANCEL cancels a pending
//! job. psched watches `squeue --json` about once a second: the warning
//! before expiry follows Slurm's own end time (an extension made in Slurm
//! moves it), and a job Slurm ended (time limit, `scancel`, node failure)
//! ends the DVM's session. Not served yet: EXTEND adding nodes
//! (`PMIX_ERR_NOT_SUPPORTED`).

pub mod ctl;

use std::collections::HashMap;

use crate::codec::{Info, WireVersion};
use crate::error::Result;
use crate::proto::status::Status;
use crate::proto::{Directive, Inheritance, Received};

use super::ledger::{Grant, Ledger};
use super::state::Out;
use super::wire::{self, AllocAsk};
use ctl::{Job, JobState};

/// How often psched asks Slurm about its jobs (ms).
const POLL_MS: u64 = 1000;
/// How often while a request waits for Slurm to run its job (ms): the
/// grant is answered within this of Slurm starting it.
const PENDING_POLL_MS: u64 = 25;
/// The prefix of an allocation id: the rest is the Slurm job id.
const ID_PREFIX: &str = "slurm.";

/// One allocation: its Slurm job and what the DVM needs of it.
#[derive(Debug, Clone, Default)]
struct Alloc {
    job: u64,
    /// The DVM's request still waiting for its answer (a pending job).
    owed: Option<u32>,
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
}

/// psched's state over Slurm: see the module documentation.
pub struct SlurmBackend {
    allocs: HashMap<String, Alloc>,
    ledger: Ledger,
    wire: WireVersion,
    last_poll: u64,
}

fn job_of(alloc_id: &str) -> Option<u64> {
    alloc_id.strip_prefix(ID_PREFIX)?.parse().ok()
}

impl SlurmBackend {
    /// A backend that takes back the grants of `ledger` (checked against
    /// Slurm at the first poll).
    pub fn new(ledger: Ledger) -> SlurmBackend {
        let allocs = ledger
            .grants
            .iter()
            .filter_map(|g| {
                let job = job_of(&g.alloc_id)?;
                let a = Alloc {
                    job,
                    req_id: g.req_id.clone(),
                    queue: g.queue.clone(),
                    session: g.session,
                    nodes: g.nodes.clone(),
                    end_ms: g.expires_at_ms,
                    warn_secs: g.warn_secs,
                    inherit: g.inherit,
                    ..Alloc::default()
                };
                Some((g.alloc_id.clone(), a))
            })
            .collect();
        SlurmBackend {
            allocs,
            ledger,
            wire: WireVersion::V41,
            last_poll: 0,
        }
    }

    fn answer(&self, tag: u32, st: Status, id: Option<&str>, a: Option<&Alloc>) -> Result<Out> {
        let (nodes, echo) = a.map_or((&[][..], &[][..]), |a| (&a.nodes[..], &a.echo[..]));
        Ok(Out::Answer(
            tag,
            wire::answer(self.wire, st, id, nodes, echo)?,
        ))
    }

    fn refuse(&self, tag: u32, st: Status) -> Result<Vec<Out>> {
        Ok(vec![self.answer(tag, st, None, None)?])
    }

    fn find_id(&self, ask: &AllocAsk) -> Option<String> {
        if let Some(id) = &ask.alloc_id {
            return self.allocs.contains_key(id).then(|| id.clone());
        }
        let rid = ask.req_id.as_ref()?;
        self.allocs
            .iter()
            .find(|(_, a)| a.req_id.as_ref() == Some(rid))
            .map(|(id, _)| id.clone())
    }

    fn on_new(&mut self, tag: u32, ask: AllocAsk, now: u64) -> Result<Vec<Out>> {
        let want = ctl::Ask {
            count: ask.num_nodes.filter(|n| *n > 0),
            list: ask.node_list.clone(),
            exclude: ask.exclude.clone(),
            time_secs: ask.time_secs,
            partition: ask.queue.clone(),
        };
        if want.count.is_none() && want.list.is_empty() {
            return self.refuse(tag, Status::ERR_BAD_PARAM);
        }
        let job = match ctl::submit(&want) {
            Ok(j) => j,
            Err(e) => {
                eprintln!("psched: Slurm refused the request: {}", e.context);
                return self.refuse(tag, e.status);
            }
        };
        let a = Alloc {
            job,
            owed: Some(tag),
            echo: ask.echo,
            req_id: ask.req_id,
            queue: ask.queue.unwrap_or_default(),
            warn_secs: ask.warn_secs,
            granted_at: now,
            inherit: ask.inherit,
            ..Alloc::default()
        };
        eprintln!("psched: Slurm job {job} submitted for allocation {ID_PREFIX}{job}");
        self.allocs.insert(format!("{ID_PREFIX}{job}"), a);
        self.poll(now)
    }

    fn on_extend(&mut self, tag: u32, ask: AllocAsk, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(&ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        if ask.num_nodes.is_some_and(|n| n > 0) || !ask.node_list.is_empty() {
            return self.refuse(tag, Status::ERR_NOT_SUPPORTED);
        }
        let job = self.allocs[&id].job;
        if let Some(t) = ask.time_secs.filter(|t| *t > 0) {
            if let Err(e) = ctl::add_time(job, t) {
                eprintln!("psched: Slurm refused the extension: {}", e.context);
                return self.refuse(tag, e.status);
            }
        }
        if let Some(a) = self.allocs.get_mut(&id) {
            a.echo = ask.echo;
            if ask.warn_secs.is_some() {
                a.warn_secs = ask.warn_secs;
            }
        }
        let mut out = self.poll(now)?;
        out.push(self.answer(tag, Status(0), Some(&id), self.allocs.get(&id))?);
        Ok(out)
    }

    fn on_release(&mut self, tag: u32, ask: &AllocAsk, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        let a = self.allocs[&id].clone();
        let keep: Vec<String> = a
            .nodes
            .iter()
            .filter(|n| !ask.node_list.contains(n))
            .cloned()
            .collect();
        let done = if ask.node_list.is_empty() || keep.is_empty() {
            self.allocs.remove(&id);
            eprintln!("psched: Slurm job {} cancelled: {id} released", a.job);
            ctl::cancel(a.job)
        } else {
            if let Some(x) = self.allocs.get_mut(&id) {
                x.nodes = keep.clone();
            }
            eprintln!("psched: Slurm job {} shrunk to {}", a.job, keep.join(","));
            ctl::shrink(a.job, &keep)
        };
        if let Err(e) = done {
            eprintln!("psched: Slurm refused the release: {}", e.context);
            return self.refuse(tag, e.status);
        }
        let mut out = vec![self.answer(tag, Status(0), Some(&id), None)?];
        out.extend(self.poll(now)?);
        Ok(out)
    }

    fn on_cancel(&mut self, tag: u32, ask: &AllocAsk) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        let Some(owed) = self.allocs[&id].owed else {
            // Granted already: nothing is queued to cancel.
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        let a = self.allocs.remove(&id).unwrap_or_default();
        if let Err(e) = ctl::cancel(a.job) {
            eprintln!("psched: Slurm refused the cancel: {}", e.context);
        }
        // The cancel's answer first (see the pool backend's on_cancel).
        Ok(vec![
            self.answer(tag, Status(0), Some(&id), None)?,
            Out::Answer(
                owed,
                wire::cancelled(self.wire, &a.echo, ask.requestor.as_deref())?,
            ),
        ])
    }

    /// The polling period: short while a request waits for its job.
    fn poll_every(&self) -> u64 {
        if self.allocs.values().any(|a| a.owed.is_some()) {
            PENDING_POLL_MS
        } else {
            POLL_MS
        }
    }

    /// Ask Slurm about every job and act on what changed.
    fn poll(&mut self, now: u64) -> Result<Vec<Out>> {
        self.last_poll = now;
        if self.allocs.is_empty() {
            return Ok(Vec::new());
        }
        let jobs = match ctl::jobs() {
            Ok(j) => j,
            Err(e) => {
                eprintln!("psched: cannot ask Slurm: {}", e.context);
                return Ok(Vec::new());
            }
        };
        let ids: Vec<String> = self.allocs.keys().cloned().collect();
        let mut out = Vec::new();
        for id in ids {
            let job = jobs.iter().find(|j| j.id == self.allocs[&id].job);
            out.extend(self.follow(&id, job, now)?);
        }
        Ok(out)
    }

    /// Act on what Slurm says of allocation `id`'s job.
    fn follow(&mut self, id: &str, job: Option<&Job>, now: u64) -> Result<Vec<Out>> {
        match job {
            Some(j) if j.state == JobState::Pending => Ok(Vec::new()),
            Some(j) if j.state == JobState::Running => self.running(id, j, now),
            _ => self.ended(id),
        }
    }

    fn running(&mut self, id: &str, j: &Job, now: u64) -> Result<Vec<Out>> {
        let nodes = ctl::hostnames(&j.nodes)?;
        let end_ms = (j.end_time > 0).then_some(j.end_time * 1000);
        let mut sessions = self.ledger.sessions;
        let Some(a) = self.allocs.get_mut(id) else {
            return Ok(Vec::new());
        };
        a.nodes = nodes;
        a.end_ms = end_ms;
        let mut out = Vec::new();
        if let Some(tag) = a.owed.take() {
            a.granted_at = now;
            if a.session.is_none() {
                sessions += 1;
                a.session = Some(sessions);
            }
            let body = wire::answer(self.wire, Status(0), Some(id), &a.nodes, &a.echo)?;
            out.push(Out::Answer(tag, body));
        }
        if let (Some(w), Some(end)) = (a.warn_secs, a.end_ms) {
            if now + u64::from(w) * 1000 >= end && a.warned_for != Some(end) && now < end {
                a.warned_for = Some(end);
                let left = ((end - now) / 1000) as u32;
                out.push(Out::Own(wire::warning(self.wire, id, left)?));
            }
        }
        self.ledger.sessions = sessions;
        Ok(out)
    }

    /// Slurm no longer runs the job of `id`: a request still owed is
    /// refused, a granted allocation's session is ended.
    fn ended(&mut self, id: &str) -> Result<Vec<Out>> {
        let Some(a) = self.allocs.remove(id) else {
            return Ok(Vec::new());
        };
        eprintln!(
            "psched: Slurm ended job {} ({id}): ending its session",
            a.job
        );
        if let Some(tag) = a.owed {
            return Ok(vec![self.answer(
                tag,
                Status::ERR_JOB_CANCELED,
                None,
                None,
            )?]);
        }
        match a.session {
            Some(s) => Ok(vec![Out::Own(wire::terminate(self.wire, s, id)?)]),
            None => Ok(Vec::new()),
        }
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
        for a in self.allocs.values_mut() {
            a.owed = None;
        }
    }

    fn ledger(&self) -> Ledger {
        let mut l = self.ledger.clone();
        l.grants = self
            .allocs
            .iter()
            .filter(|(_, a)| a.owed.is_none() && !a.retained)
            .map(|(id, a)| Grant {
                alloc_id: id.clone(),
                req_id: a.req_id.clone(),
                nodes: a.nodes.clone(),
                expires_at_ms: a.end_ms,
                warn_secs: a.warn_secs,
                session: a.session,
                queue: a.queue.clone(),
                inherit: a.inherit,
            })
            .collect();
        l.grants.sort_by(|x, y| x.alloc_id.cmp(&y.alloc_id));
        l.retained = self
            .allocs
            .values()
            .filter(|a| a.retained)
            .flat_map(|a| a.nodes.iter().cloned())
            .collect();
        l.retained.sort();
        l
    }

    fn free_nodes(&self) -> Vec<String> {
        Vec::new()
    }

    fn next_deadline(&self) -> Option<u64> {
        (!self.allocs.is_empty()).then_some(self.last_poll + self.poll_every())
    }

    fn tick(&mut self, now: u64) -> Result<Vec<Out>> {
        if now < self.last_poll + self.poll_every() {
            return Ok(Vec::new());
        }
        self.poll(now)
    }

    fn on_alloc(&mut self, tag: u32, ask: AllocAsk, now: u64) -> Result<Vec<Out>> {
        match ask.directive {
            Received::Known(Directive::New) => self.on_new(tag, ask, now),
            Received::Known(Directive::Extend) => self.on_extend(tag, ask, now),
            Received::Known(Directive::Release) => self.on_release(tag, &ask, now),
            Received::Known(Directive::ReqCancel) => self.on_cancel(tag, &ask),
            _ => self.refuse(tag, Status::ERR_NOT_SUPPORTED),
        }
    }

    fn on_session_done(&mut self, alloc_id: &str, _now: u64) -> Result<Vec<Out>> {
        if let Some(a) = self.allocs.remove(alloc_id) {
            eprintln!(
                "psched: Slurm job {} cancelled: the DVM ended {alloc_id}",
                a.job
            );
            if let Err(e) = ctl::cancel(a.job) {
                eprintln!("psched: cannot cancel job {}: {}", a.job, e.context);
            }
        }
        Ok(Vec::new())
    }

    fn reconcile(&mut self, live: &[String], now: u64, settle_ms: u64) -> Result<Vec<Out>> {
        self.ledger.reconciled_at_ms = Some(now);
        let gone: Vec<String> = self
            .allocs
            .iter()
            .filter(|(id, a)| a.owed.is_none() && !a.retained && !live.contains(id))
            .filter(|(_, a)| now.saturating_sub(a.granted_at) >= settle_ms)
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            let inherit = self.allocs[&id].inherit.unwrap_or(Inheritance::Default);
            if inherit.returns_to_scheduler() {
                self.on_session_done(&id, now)?;
            } else if let Some(a) = self.allocs.get_mut(&id) {
                eprintln!("psched: {id} ended under {inherit:?}: job {} kept while the DVM holds its nodes", a.job);
                a.retained = true;
            }
        }
        Ok(Vec::new())
    }

    fn admin_release(&mut self, alloc_id: &str, _now: u64) -> Result<Option<Vec<Out>>> {
        let Some(a) = self.allocs.get(alloc_id) else {
            return Ok(None);
        };
        if a.owed.is_some() || a.retained {
            return Ok(None);
        }
        let a = self.allocs.remove(alloc_id).unwrap_or_default();
        if let Err(e) = ctl::cancel(a.job) {
            eprintln!("psched: cannot cancel job {}: {}", a.job, e.context);
        }
        let mut out = Vec::new();
        if let Some(s) = a.session {
            out.push(Out::Own(wire::terminate(self.wire, s, alloc_id)?));
        }
        Ok(Some(out))
    }
}
