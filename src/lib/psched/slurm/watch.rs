//! What Slurm says of psched's jobs (`squeue --json`, about once a second,
//! every 25 ms while a request waits) and what psched does about it: answer
//! a request whose job now runs, warn before Slurm's end time, end the
//! session of an allocation Slurm no longer runs any job of.

use crate::error::Result;
use crate::proto::status::Status;

use super::super::out::{EndWhy, Out};
use super::ctl::{self, Job, JobState};
use super::reason::{self, EndCause, Pending};
use super::{SlurmBackend, PENDING_POLL_MS, POLL_MS};

/// A job Slurm still lists as waiting or running.
fn alive(jobs: &[Job], id: u64) -> Option<&Job> {
    jobs.iter()
        .find(|j| j.id == id && !matches!(j.state, JobState::Ended(_)))
}

impl SlurmBackend {
    /// The polling period: short while a request waits for its job.
    pub(super) fn poll_every(&self) -> u64 {
        let waiting = self
            .allocs
            .values()
            .any(|a| a.owed.is_some() || a.ext.is_some());
        if waiting {
            PENDING_POLL_MS
        } else {
            POLL_MS
        }
    }

    /// Ask Slurm about every job and act on what changed.
    pub(super) fn poll(&mut self, now: u64) -> Result<Vec<Out>> {
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
        self.reap();
        let mut out = self.resolve(&jobs)?;
        self.withdraw_strays(&jobs);
        let ids: Vec<String> = self.allocs.keys().cloned().collect();
        for id in ids {
            out.extend(self.follow_extension(&id, &jobs)?);
            out.extend(self.follow(&id, &jobs, now)?);
        }
        Ok(out)
    }

    /// An EXTEND in nodes whose job Slurm now runs joins the allocation
    /// (and is answered); one Slurm dropped is refused.
    fn follow_extension(&mut self, id: &str, jobs: &[Job]) -> Result<Vec<Out>> {
        let Some((tag, job)) = self.allocs[id].ext.filter(|(_, j)| *j != 0) else {
            return Ok(Vec::new());
        };
        let st = match alive(jobs, job) {
            Some(j) if j.state == JobState::Pending => match reason::pending(&j.reason) {
                Pending::Wait => return Ok(Vec::new()),
                Pending::Refuse(st) => {
                    let _ = ctl::cancel(job);
                    st
                }
            },
            Some(_) => Status(0),
            None => Status::ERR_NOT_AVAILABLE,
        };
        if let Some(a) = self.allocs.get_mut(id) {
            a.ext = None;
            if st.is_success() {
                a.more.push(job);
            }
        }
        if !st.is_success() {
            eprintln!("psched: Slurm dropped job {job}, the extension of {id}");
            return self.refuse(tag, st);
        }
        // Its nodes: read now, so the answer names them.
        let more = jobs.iter().find(|j| j.id == job).map(|j| j.nodes.clone());
        let nodes = ctl::hostnames(&more.unwrap_or_default())?;
        let Some(a) = self.allocs.get_mut(id) else {
            return Ok(Vec::new());
        };
        a.job_nodes.insert(job, nodes.clone());
        a.nodes.extend(nodes.clone());
        Ok(vec![Out::Grant {
            tag,
            alloc_id: id.to_string(),
            nodes,
            echo: a.echo.clone(),
            new: false,
        }])
    }

    /// Act on what Slurm says of the jobs of allocation `id`.
    fn follow(&mut self, id: &str, jobs: &[Job], now: u64) -> Result<Vec<Out>> {
        if self.allocs.get(id).is_none_or(|a| a.job == 0) {
            // Not yet seen in squeue (or just refused).
            return Ok(Vec::new());
        }
        let held: Vec<Job> = self.allocs[id]
            .jobs()
            .filter_map(|j| alive(jobs, j).cloned())
            .collect();
        if held.is_empty() {
            let main = self.allocs[id].job;
            let cause = jobs.iter().find_map(|j| match j.state {
                JobState::Ended(c) if j.id == main => Some(c),
                _ => None,
            });
            return self.ended(id, cause);
        }
        let running: Vec<&Job> = held
            .iter()
            .filter(|j| matches!(j.state, JobState::Running | JobState::Suspended))
            .collect();
        if running.is_empty() {
            return self.still_pending(id, &held);
        }
        let mut per_job = Vec::new();
        for j in &running {
            per_job.push((j.id, ctl::hostnames(&j.nodes)?));
        }
        let end = running
            .iter()
            .filter(|j| j.end_time > 0)
            .map(|j| j.end_time * 1000)
            .min();
        self.running(id, per_job, end, now)
    }

    /// A NEW whose job still waits: refused (and withdrawn) when Slurm's
    /// pending reason says it will never run as asked.
    fn still_pending(&mut self, id: &str, held: &[Job]) -> Result<Vec<Out>> {
        let Some(tag) = self.allocs[id].owed else {
            return Ok(Vec::new());
        };
        let main = held.iter().find(|j| j.id == self.allocs[id].job);
        let Some(Pending::Refuse(st)) = main.map(|j| reason::pending(&j.reason)) else {
            return Ok(Vec::new());
        };
        let a = self.allocs.remove(id).unwrap_or_default();
        eprintln!(
            "psched: Slurm will not run {id} as asked ({}): refused",
            main.map_or("", |j| &j.reason)
        );
        let _ = ctl::cancel(a.job);
        self.refuse(tag, st)
    }

    fn running(
        &mut self,
        id: &str,
        per_job: Vec<(u64, Vec<String>)>,
        end_ms: Option<u64>,
        now: u64,
    ) -> Result<Vec<Out>> {
        let mut sessions = self.ledger.sessions;
        let Some(a) = self.allocs.get_mut(id) else {
            return Ok(Vec::new());
        };
        a.nodes = per_job
            .iter()
            .flat_map(|(_, n)| n.iter().cloned())
            .collect();
        a.job_nodes = per_job.into_iter().collect();
        a.end_ms = end_ms;
        let mut out = Vec::new();
        if let Some(tag) = a.owed.take() {
            a.granted_at = now;
            let new = a.session.is_none();
            if new {
                sessions += 1;
                a.session = Some(sessions);
            }
            out.push(Out::Grant {
                tag,
                alloc_id: id.to_string(),
                nodes: a.nodes.clone(),
                echo: a.echo.clone(),
                new,
            });
        }
        if let (Some(w), Some(end)) = (a.warn_secs, a.end_ms) {
            if now + u64::from(w) * 1000 >= end && a.warned_for != Some(end) && now < end {
                a.warned_for = Some(end);
                let left = ((end - now) / 1000) as u32;
                out.push(Out::Warn {
                    alloc_id: id.to_string(),
                    secs: left,
                });
            }
        }
        self.ledger.sessions = sessions;
        Ok(out)
    }

    /// Reap the `salloc`s that exited.
    fn reap(&mut self) {
        self.children
            .retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_)) | Err(_)));
    }

    /// Find the jobs of the `salloc`s psched started, by name; one whose
    /// `salloc` failed before its job appeared was refused by Slurm.
    fn resolve(&mut self, jobs: &[Job]) -> Result<Vec<Out>> {
        let mut out = Vec::new();
        for mut sub in std::mem::take(&mut self.submitted) {
            if let Some(j) = jobs.iter().find(|j| j.name == sub.name) {
                self.found(&sub, j.id);
                self.children.extend(sub.child.take());
                continue;
            }
            let failed = match sub.child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(st))) => !st.success(),
                _ => false,
            };
            if failed {
                out.extend(self.refused(&sub)?);
            } else {
                self.submitted.push(sub);
            }
        }
        Ok(out)
    }

    fn found(&mut self, sub: &super::Submitted, job: u64) {
        let Some(a) = self.allocs.get_mut(&sub.alloc) else {
            return;
        };
        match sub.ext_tag {
            None => a.job = job,
            Some(t) => a.ext = Some((t, job)),
        }
        eprintln!("psched: Slurm job {job} is {} ({})", sub.alloc, sub.name);
    }

    /// Slurm refused the `salloc` of `sub` at submission (it asked for
    /// more than Slurm has, or what it cannot give).
    fn refused(&mut self, sub: &super::Submitted) -> Result<Vec<Out>> {
        eprintln!("psched: Slurm refused {} ({})", sub.alloc, sub.name);
        match sub.ext_tag {
            Some(t) => {
                if let Some(a) = self.allocs.get_mut(&sub.alloc) {
                    a.ext = None;
                }
                self.refuse(t, Status::ERR_BAD_PARAM)
            }
            None => match self.allocs.remove(&sub.alloc).and_then(|a| a.owed) {
                Some(t) => self.refuse(t, Status::ERR_BAD_PARAM),
                None => Ok(Vec::new()),
            },
        }
    }

    /// Cancel this psched's jobs (by their name's tag) that it no longer
    /// knows: left by a psched killed while they waited or after.
    fn withdraw_strays(&mut self, jobs: &[Job]) {
        let mine = format!("psched.{}.", self.tag);
        let known: Vec<u64> = self
            .allocs
            .values()
            .flat_map(|a| a.jobs().chain(a.ext.map(|(_, j)| j)).collect::<Vec<_>>())
            .collect();
        for j in jobs.iter().filter(|j| j.name.starts_with(&mine)) {
            let waiting = self.submitted.iter().any(|x| x.name == j.name);
            if known.contains(&j.id) || waiting || matches!(j.state, JobState::Ended(_)) {
                continue;
            }
            eprintln!(
                "psched: Slurm job {} ({}) is no grant of this psched: cancelled",
                j.id, j.name
            );
            let _ = ctl::cancel(j.id);
        }
    }

    /// Slurm runs no job of `id` any more: a request still owed is
    /// refused, a granted allocation's session is ended.
    /// `cause`: why Slurm ended its first job, when Slurm still lists it.
    fn ended(&mut self, id: &str, cause: Option<EndCause>) -> Result<Vec<Out>> {
        let Some(a) = self.allocs.remove(id) else {
            return Ok(Vec::new());
        };
        if let Some((_, j)) = a.ext.filter(|(_, j)| *j != 0) {
            let _ = ctl::cancel(j);
        }
        if a.retained {
            eprintln!("psched: Slurm ended {id} (retained by the DVM)");
            return Ok(Vec::new());
        }
        let why = cause.map_or("no longer listed".to_string(), |c| format!("{c:?}"));
        eprintln!(
            "psched: Slurm ended job {} ({id}, {why}): ending its session",
            a.job
        );
        let mut out = Vec::new();
        if let Some((t, _)) = a.ext {
            out.push(self.answer(t, Status::ERR_NOT_AVAILABLE, None, None)?);
        }
        if let Some(tag) = a.owed {
            out.push(self.answer(tag, Status::ERR_JOB_CANCELED, None, None)?);
        } else {
            out.push(Out::End {
                alloc_id: id.to_string(),
                nodes: a.nodes.clone(),
                why: EndWhy::Source,
            });
        }
        Ok(out)
    }
}
