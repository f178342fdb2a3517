//! What psched asks of Slurm for the DVM's requests: a new allocation, an
//! extension, a release, a withdrawn request. Nothing here waits for Slurm:
//! each hands its commands to the worker ([`super::worker`]) and decides at
//! once (a release, a withdrawal) or when Slurm's answer comes back
//! ([`super::watch`]).

use crate::proto::status::Status;
use crate::proto::AllocAttrs;
use crate::sched::SchedPendingView;

use super::super::source::{By, Decision, Give, Refusal, Released};
use super::hostlist::bad_node_name;
use super::worker::Task;
use super::{ctl, Alloc, SlurmBackend, Waiting};

/// Why `names` may not reach a Slurm command line: a node name Slurm would
/// misread.
fn bad_nodes<'a>(names: impl IntoIterator<Item = &'a String>) -> Option<String> {
    names
        .into_iter()
        .filter_map(|n| bad_node_name(n).map(|why| format!("{n:?}: {why}")))
        .next()
}

/// Why `ask` may not reach a Slurm command line: a node, partition,
/// account, QOS or reservation name, or a feature expression, Slurm would
/// misread.
fn bad_names(ask: &AllocAttrs) -> Option<String> {
    let bad = bad_nodes(
        ask.nodes_named()
            .iter()
            .chain(ask.nodes_excluded())
            .chain(&ask.queue),
    );
    let opts = ctl::Options::from(ask);
    let named = opts.names().find_map(|(flag, n)| {
        let why = bad_node_name(n)?.replace("a node name", "a name");
        Some(format!("{flag} {n:?}: {why}"))
    });
    let features = opts
        .constraint
        .as_deref()
        .and_then(|c| bad_constraint(c).map(|why| format!("--constraint {c:?}: {why}")));
    bad.or(named).or(features)
}

/// Why a feature expression may not reach salloc: it would be read as a
/// flag or a file, or split.
fn bad_constraint(c: &str) -> Option<&'static str> {
    if c.is_empty() || c.starts_with('-') {
        return Some("empty, or starting with '-'");
    }
    if c.contains('/') || c.chars().any(|x| x.is_whitespace() || x.is_control()) {
        return Some("it may not contain '/', whitespace or control characters");
    }
    None
}

impl SlurmBackend {
    /// The time limit to ask Slurm for: the request's, else the default;
    /// `None` (refused) beyond the maximum.
    fn time_for(&self, asked: Option<u32>) -> Option<u32> {
        match asked.filter(|t| *t > 0) {
            None => Some(self.default_secs),
            Some(t) if t <= self.max_secs => Some(t),
            Some(_) => None,
        }
    }

    /// Start a salloc for `ask` (job `name`) for allocation `id` (an
    /// EXTEND's when `extend`).
    fn start_salloc(&mut self, id: &str, extend: bool, ask: ctl::Ask, name: String) -> Waiting {
        let w = Waiting {
            key: self.key(id, extend),
            job: None,
            ask,
            name,
            again_at: None,
            reason: None,
            said: None,
        };
        self.submit(&w);
        w
    }

    /// Refuse as `st`, saying why in psched's log and to the requester.
    fn refuse_why(&self, st: Status, why: &str) -> Refusal {
        say!("psched: request refused ({}): {why}", st.name());
        Refusal::saying(st, format!("psched: {why}"))
    }

    pub(super) fn on_new(&mut self, ask: &AllocAttrs, now: u64) -> Decision {
        if self.refuse_root {
            let why = "psched runs as root for several users (see its first log line)";
            return Decision::Refused(self.refuse_why(Status::ERR_NO_PERMISSIONS, why));
        }
        if let Some(why) = bad_names(ask) {
            return Decision::Refused(self.refuse_why(Status::ERR_BAD_PARAM, &why));
        }
        let Some(time_secs) = self.time_for(ask.time_secs) else {
            let why = format!(
                "a time limit over psched's maximum ({} min)",
                self.max_secs / 60
            );
            return Decision::Refused(self.refuse_why(Status::ERR_BAD_PARAM, &why));
        };
        let want = ctl::Ask {
            count: ask.num_nodes.filter(|n| *n > 0),
            list: ask.nodes_named().to_vec(),
            exclude: ask.nodes_excluded().to_vec(),
            time_secs,
            partition: ask.queue.clone(),
            opts: ctl::Options::from(ask).with_slots(self.slots),
        };
        if want.count.is_none() && want.list.is_empty() {
            let why = "no node count or list";
            return Decision::Refused(self.refuse_why(Status::ERR_BAD_PARAM, why));
        }
        let id = self.next_id();
        let name = self.job_name(&id);
        let want_opts = want.opts.clone();
        let w = self.start_salloc(&id, false, want, name.clone());
        let a = Alloc {
            new: true,
            waiting: Some(w),
            queue: ask.queue.clone().unwrap_or_default(),
            warn_secs: ask.warn_timeout,
            granted_at: now,
            opts: want_opts,
            ..Alloc::default()
        };
        say!("psched: asked Slurm for {id} (job {name})");
        self.allocs.insert(id.clone(), a);
        Decision::Waits { alloc_id: id }
    }

    pub(super) fn on_extend(&mut self, id: &str, ask: &AllocAttrs, now: u64) -> Decision {
        let Some(a) = self.allocs.get(id) else {
            return Decision::Refused(Refusal::bare(Status::ERR_NOT_FOUND));
        };
        if let Some(why) = bad_names(ask) {
            return Decision::Refused(self.refuse_why(Status::ERR_BAD_PARAM, &why));
        }
        if a.new || a.waiting.is_some() || a.ext_time || a.retained {
            // Not granted yet, or an extension already waits.
            return Decision::Refused(Refusal::bare(Status::ERR_NOT_AVAILABLE));
        }
        let more_nodes = ask.num_nodes.is_some_and(|n| n > 0) || !ask.nodes_named().is_empty();
        let secs = ask.time_secs.filter(|t| *t > 0);
        if let Some(t) = secs {
            let held = a
                .end_ms
                .map_or(0, |e| e.saturating_sub(a.granted_at) / 1000);
            if held + u64::from(t) > u64::from(self.max_secs) {
                let why = format!(
                    "{id} would exceed psched's maximum ({} min)",
                    self.max_secs / 60
                );
                return Decision::Refused(self.refuse_why(Status::ERR_BAD_PARAM, &why));
            }
            self.worker.send(Task::Extend {
                alloc: id.to_string(),
                answer: !more_nodes,
                jobs: a.jobs.clone(),
                secs: t,
            });
        }
        if let Some(x) = self.allocs.get_mut(id) {
            if ask.warn_timeout.is_some() {
                x.warn_secs = ask.warn_timeout;
                self.touched.insert(id.to_string());
            }
            if secs.is_some() && !more_nodes {
                x.ext_time = true;
            }
        }
        if more_nodes {
            self.extend_nodes(id, ask, now);
        } else if secs.is_none() {
            return Decision::Granted {
                alloc_id: id.to_string(),
                nodes: Vec::new(),
            };
        }
        Decision::Waits {
            alloc_id: id.to_string(),
        }
    }

    /// More nodes for `id`: a further job on other nodes, for the time the
    /// allocation has left; granted when Slurm grants it.
    fn extend_nodes(&mut self, id: &str, ask: &AllocAttrs, now: u64) {
        let a = &self.allocs[id];
        let left = a.end_ms.map_or(self.default_secs, |e| {
            (e.saturating_sub(now) / 1000).max(1) as u32
        });
        let mut exclude = a.nodes.clone();
        exclude.extend(ask.nodes_excluded().iter().cloned());
        let want = ctl::Ask {
            count: ask.num_nodes.filter(|n| *n > 0),
            list: ask.nodes_named().to_vec(),
            exclude,
            time_secs: left,
            partition: (!a.queue.is_empty()).then(|| a.queue.clone()),
            opts: a.opts.clone(),
        };
        let name = format!("{}.{}", self.job_name(id), a.jobs.len() + 1);
        let w = self.start_salloc(id, true, want, name.clone());
        say!("psched: asked Slurm for more nodes for {id} (job {name})");
        if let Some(x) = self.allocs.get_mut(id) {
            x.waiting = Some(w);
        }
    }

    /// Give back `what` of `id`: a partial release shrinks the jobs
    /// holding the nodes, a whole one cancels them; the DVM keeping the
    /// nodes keeps the jobs until that DVM is gone.
    pub(super) fn release_nodes(&mut self, id: &str, what: Give<'_>) -> Result<Released, Refusal> {
        let Some(a) = self.allocs.get(id) else {
            return Err(Refusal::bare(Status::ERR_NOT_FOUND));
        };
        let named: &[String] = match what {
            Give::Nodes(n) => n,
            _ => &[],
        };
        if let Some(why) = bad_nodes(named) {
            return Err(self.refuse_why(Status::ERR_BAD_PARAM, &why));
        }
        if what == Give::KeptByDvm {
            let nodes = a.nodes.clone();
            if let Some(j) = a.jobs.first() {
                say!("psched: {id} ended, kept by the DVM: job {j} kept while the DVM holds its nodes");
            }
            if let Some(a) = self.allocs.get_mut(id) {
                a.retained = true;
            }
            self.touched.insert(id.to_string());
            return Ok(Released { nodes, whole: true });
        }
        let keep = a.nodes.iter().filter(|n| !named.contains(n)).count();
        let whole = named.is_empty() || keep == 0;
        let nodes = if whole {
            a.nodes.clone()
        } else {
            named.to_vec()
        };
        if whole {
            match what {
                Give::All(By::Dvm) => {
                    say!("psched: the DVM ended {id}: its Slurm jobs cancelled")
                }
                Give::All(By::Admin) => {
                    say!("psched: {id} released by the administrator: its Slurm jobs cancelled")
                }
                _ => say!("psched: {id} released: its Slurm jobs cancelled"),
            }
            self.drop_alloc(id);
        } else {
            self.shrink(id, named);
        }
        Ok(Released { nodes, whole })
    }

    /// Give `gone` back: each job holding some of them shrinks to the rest,
    /// or is cancelled when none of its nodes stay.
    pub(super) fn shrink(&mut self, id: &str, gone: &[String]) {
        self.touched.insert(id.to_string());
        let Some(a) = self.allocs.get_mut(id) else {
            return;
        };
        let mut tasks = Vec::new();
        let mut dropped = Vec::new();
        for (job, nodes) in &mut a.job_nodes {
            let before = nodes.len();
            nodes.retain(|n| !gone.contains(n));
            if nodes.len() == before {
                continue;
            }
            if nodes.is_empty() {
                say!("psched: Slurm job {job} cancelled: its nodes of {id} released");
                dropped.push(*job);
            } else {
                say!("psched: Slurm job {job} shrunk to {}", nodes.join(","));
                tasks.push(Task::Shrink {
                    job: *job,
                    keep: nodes.clone(),
                });
            }
        }
        a.nodes.retain(|n| !gone.contains(n));
        a.jobs.retain(|j| !dropped.contains(j));
        for j in &dropped {
            a.job_nodes.remove(j);
        }
        for t in tasks {
            self.worker.send(t);
        }
        for j in dropped {
            self.withdraw_job(j);
        }
    }

    /// Withdraw the waiting request of `id`: a NEW's allocation with it.
    pub(super) fn on_cancel(&mut self, id: &str) -> Result<(), Refusal> {
        let Some(a) = self.allocs.get(id) else {
            return Err(Refusal::bare(Status::ERR_NOT_FOUND));
        };
        let Some(w) = a.waiting.clone() else {
            // Granted already: nothing is queued to cancel.
            return Err(Refusal::bare(Status::ERR_NOT_FOUND));
        };
        if a.new {
            self.drop_alloc(id);
        } else {
            self.withdraw_waiting(&w);
            if let Some(x) = self.allocs.get_mut(id) {
                x.waiting = None;
            }
        }
        say!("psched: the request for {id} withdrawn (REQ_CANCEL)");
        Ok(())
    }

    /// Withdraw the salloc of `w`: its job when salloc named it, else the
    /// job it will name.
    pub(super) fn withdraw_waiting(&mut self, w: &Waiting) {
        match w.job {
            Some(j) => self.withdraw_job(j),
            None => self.withdrawn.push(w.key.clone()),
        }
    }

    /// Forget allocation `id` and give all its jobs back to Slurm.
    pub(super) fn drop_alloc(&mut self, id: &str) {
        let Some(a) = self.allocs.remove(id) else {
            return;
        };
        self.touched.insert(id.to_string());
        if let Some(w) = &a.waiting {
            self.withdraw_waiting(w);
        }
        for j in a.jobs {
            self.withdraw_job(j);
        }
    }

    /// The requests waiting for Slurm, for `pwatch --status`.
    pub(super) fn pending_view(&self) -> Vec<SchedPendingView> {
        let mut v: Vec<SchedPendingView> = self
            .allocs
            .iter()
            .filter_map(|(id, a)| {
                let w = a.waiting.as_ref()?;
                Some(SchedPendingView {
                    alloc_id: id.clone(),
                    nodes: w.ask.count.unwrap_or(w.ask.list.len() as u32),
                    time_secs: Some(w.ask.time_secs),
                    extend: w.key.extend,
                    reason: w
                        .said
                        .clone()
                        .filter(|_| w.reason != Some(super::reason::Reason::None)),
                })
            })
            .collect();
        v.sort_by(|x, y| x.alloc_id.cmp(&y.alloc_id));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::RmOptions;

    fn with(rm: RmOptions) -> AllocAttrs {
        AllocAttrs {
            rm,
            ..AllocAttrs::default()
        }
    }

    #[test]
    fn slurm_names_are_checked_before_any_command() {
        let acct = with(RmOptions {
            account: Some("/etc/passwd".into()),
            ..RmOptions::default()
        });
        let why = bad_names(&acct).expect("refused");
        assert!(why.starts_with("--account \"/etc/passwd\""), "{why}");
        let resv = with(RmOptions {
            reservation: Some("-x".into()),
            ..RmOptions::default()
        });
        assert!(bad_names(&resv).is_some_and(|w| w.starts_with("--reservation")));
        let feat = with(RmOptions {
            constraint: Some("gpu ib".into()),
            ..RmOptions::default()
        });
        assert!(bad_names(&feat).is_some_and(|w| w.starts_with("--constraint")));
        let fine = with(RmOptions {
            account: Some("phys".into()),
            qos: Some("low".into()),
            constraint: Some("[gpu*2&ib]|big".into()),
            ..RmOptions::default()
        });
        assert_eq!(bad_names(&fine), None);
    }
}
