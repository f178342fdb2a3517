//! `psched --backend slurm`: the DVM's allocation requests carried out by
//! the site's Slurm ([`ctl`]) instead of psched's simulated pool.
//!
//! Each allocation (`slurm.N`) is a Slurm job holding its nodes
//! exclusively (`salloc --no-shell`, waiting in the background), named
//! `psched.TAG.slurm.N` (TAG: this psched's ledger), so psched finds its
//! jobs again after a restart and withdraws the ones it no longer knows.
//! NEW is answered when Slurm runs the job (a pending job waits, as
//! `salloc` does, unless Slurm's pending reason says it never will:
//! [`reason`]); EXTEND in time is `scontrol update TimeLimit=+MIN`, in
//! nodes a further job under the same id; a partial RELEASE shrinks the
//! jobs holding the nodes (`scontrol update NodeList=`), a full one
//! cancels them; REQ_CANCEL cancels a pending job. psched watches
//! `squeue --json` about once a second: the warning before expiry follows
//! Slurm's own end time (an extension made in Slurm moves it), and an
//! allocation Slurm runs no job of any more (time limit, `scancel`, node
//! failure) has its DVM session ended.

pub mod ctl;
pub mod reason;
mod requests;
mod watch;

use std::collections::HashMap;

use crate::codec::{Info, WireVersion};
use crate::error::Result;
use crate::proto::status::Status;
use crate::proto::{Directive, Inheritance, Received};

use super::ledger::{Grant, Ledger};
use super::out::{EndWhy, Out};
use super::wire::{self, AllocAsk};

/// How often psched asks Slurm about its jobs (ms).
const POLL_MS: u64 = 1000;
/// How often while a request waits for Slurm to run its job (ms): the
/// grant is answered within this of Slurm starting it.
const PENDING_POLL_MS: u64 = 25;
/// The prefix of an allocation id.
const ID_PREFIX: &str = "slurm.";

/// A `salloc` psched started and has not found the job of in `squeue` yet.
struct Submitted {
    /// The job's name.
    name: String,
    /// The allocation it is for.
    alloc: String,
    /// For an EXTEND in nodes: the DVM's tag to answer (else a NEW).
    ext_tag: Option<u32>,
    /// The `salloc` waiting for the grant.
    child: Option<std::process::Child>,
}

/// One allocation: its Slurm job and what the DVM needs of it.
#[derive(Debug, Clone, Default)]
struct Alloc {
    /// Its first Slurm job (0 until `squeue` shows it).
    job: u64,
    /// Further jobs that EXTENDs in nodes added.
    more: Vec<u64>,
    /// An EXTEND in nodes waiting for its job: (the DVM's tag, the job).
    ext: Option<(u32, u64)>,
    /// Each running job's nodes.
    job_nodes: HashMap<u64, Vec<String>>,
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
    /// This psched's part of its jobs' names (`psched.TAG.`).
    tag: String,
    submitted: Vec<Submitted>,
    /// `salloc`s whose job psched found, until they exit (reaped).
    children: Vec<std::process::Child>,
}

impl Alloc {
    /// Its Slurm jobs: the first, then those EXTENDs added.
    fn jobs(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::once(self.job).chain(self.more.iter().copied())
    }
}

/// A short tag for the ledger at `path` (FNV-1a of its path): two pscheds
/// with different ledgers on one Slurm never take each other's jobs.
pub fn ledger_tag(path: &std::path::Path) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in path.to_string_lossy().bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

impl SlurmBackend {
    /// A backend that takes back the grants of `ledger` (checked against
    /// Slurm at the first poll).
    pub fn new(ledger: Ledger, tag: String) -> SlurmBackend {
        let retained = ledger.retained_jobs.iter().map(|&job| {
            let a = Alloc {
                job,
                retained: true,
                ..Alloc::default()
            };
            (format!("retained.{job}"), a)
        });
        let allocs = ledger
            .grants
            .iter()
            .filter_map(|g| {
                let (&job, more) = g.slurm_jobs.split_first()?;
                let a = Alloc {
                    job,
                    more: more.to_vec(),
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
            .chain(retained)
            .collect();
        SlurmBackend {
            allocs,
            ledger,
            wire: WireVersion::V41,
            last_poll: 0,
            tag,
            submitted: Vec::new(),
            children: Vec::new(),
        }
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
                slurm_jobs: a.jobs().collect(),
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
        l.retained_jobs = self
            .allocs
            .values()
            .filter(|a| a.retained)
            .flat_map(|a| a.jobs().collect::<Vec<_>>())
            .collect();
        l.retained_jobs.sort();
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
        let Some(a) = self.allocs.remove(alloc_id) else {
            return Ok(Vec::new());
        };
        eprintln!("psched: the DVM ended {alloc_id}: its Slurm jobs cancelled");
        let _ = requests::cancel_all(&a);
        Ok(vec![Out::Returned {
            alloc_id: alloc_id.to_string(),
            nodes: a.nodes,
        }])
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
        let mut out = Vec::new();
        for id in gone {
            let inherit = self.allocs[&id].inherit.unwrap_or(Inheritance::Default);
            if inherit.returns_to_scheduler() {
                out.extend(self.on_session_done(&id, now)?);
            } else if let Some(a) = self.allocs.get_mut(&id) {
                eprintln!("psched: {id} ended under {inherit:?}: job {} kept while the DVM holds its nodes", a.job);
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
        let a = self.allocs.remove(alloc_id).unwrap_or_default();
        eprintln!("psched: {alloc_id} released by the administrator: its Slurm jobs cancelled");
        let _ = requests::cancel_all(&a);
        Ok(Some(vec![Out::End {
            alloc_id: alloc_id.to_string(),
            nodes: a.nodes,
            why: EndWhy::Admin,
        }]))
    }
}
