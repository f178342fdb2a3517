//! What the DVM asks of psched on Slurm: NEW, EXTEND, RELEASE and
//! REQ_CANCEL. Nothing here waits for Slurm: each hands its commands to the
//! worker ([`super::worker`]) and answers at once (RELEASE, REQ_CANCEL) or
//! when Slurm's answer comes back ([`super::watch`]).

use crate::error::Result;
use crate::proto::status::Status;
use crate::sched::SchedPendingView;

use super::super::out::Out;
use super::super::wire::{self, Forwarded};
use super::hostlist::bad_node_name;
use super::worker::Task;
use super::{ctl, Alloc, SlurmBackend, Waiting};

/// Why `ask` may not reach a Slurm command line: a node, partition,
/// account, QOS or reservation name, or a feature expression, Slurm would
/// misread.
fn bad_names(ask: &Forwarded) -> Option<String> {
    let names = ask
        .attrs
        .nodes_named()
        .iter()
        .chain(ask.attrs.nodes_excluded())
        .chain(&ask.attrs.queue);
    let bad = names
        .filter_map(|n| bad_node_name(n).map(|why| format!("{n:?}: {why}")))
        .next();
    let opts = ctl::Options::from(&ask.attrs);
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
    /// EXTEND's when `ext_tag`).
    fn start_salloc(
        &mut self,
        id: &str,
        ext_tag: Option<u32>,
        ask: ctl::Ask,
        name: String,
    ) -> Waiting {
        let w = Waiting {
            key: self.key(id, ext_tag),
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

    /// Refuse `tag` as `st`, saying why in psched's log and to the
    /// requester.
    fn refuse_why(&self, tag: u32, st: Status, why: &str) -> Result<Vec<Out>> {
        say!("psched: request refused ({}): {why}", st.name());
        self.refuse_saying(tag, st, &format!("psched: {why}"))
    }

    pub(super) fn on_new(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        if self.refuse_root {
            let why = "psched runs as root for several users (see its first log line)";
            return self.refuse_why(tag, Status::ERR_NO_PERMISSIONS, why);
        }
        if let Some(why) = bad_names(&ask) {
            return self.refuse_why(tag, Status::ERR_BAD_PARAM, &why);
        }
        let Some(time_secs) = self.time_for(ask.attrs.time_secs) else {
            let why = format!(
                "a time limit over psched's maximum ({} min)",
                self.max_secs / 60
            );
            return self.refuse_why(tag, Status::ERR_BAD_PARAM, &why);
        };
        let want = ctl::Ask {
            count: ask.attrs.num_nodes.filter(|n| *n > 0),
            list: ask.attrs.nodes_named().to_vec(),
            exclude: ask.attrs.nodes_excluded().to_vec(),
            time_secs,
            partition: ask.attrs.queue.clone(),
            opts: ctl::Options::from(&ask.attrs).with_slots(self.slots),
        };
        if want.count.is_none() && want.list.is_empty() {
            return self.refuse_why(tag, Status::ERR_BAD_PARAM, "no node count or list");
        }
        let id = self.next_id();
        let name = self.job_name(&id);
        let want_opts = want.opts.clone();
        let w = self.start_salloc(&id, None, want, name.clone());
        let inherit = ask.attrs.inheritance();
        let a = Alloc {
            owed: Some(tag),
            waiting: Some(w),
            echo: ask.echo,
            req_id: ask.attrs.req_id,
            queue: ask.attrs.queue.unwrap_or_default(),
            warn_secs: ask.attrs.warn_timeout,
            granted_at: now,
            inherit,
            opts: want_opts,
            ..Alloc::default()
        };
        say!("psched: asked Slurm for {id} (job {name})");
        self.allocs.insert(id, a);
        Ok(Vec::new())
    }

    pub(super) fn on_extend(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(&ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        if let Some(why) = bad_names(&ask) {
            return self.refuse_why(tag, Status::ERR_BAD_PARAM, &why);
        }
        let a = &self.allocs[&id];
        if a.owed.is_some() || a.waiting.is_some() || a.ext_time.is_some() || a.retained {
            // Not granted yet, or an extension already waits.
            return self.refuse(tag, Status::ERR_NOT_AVAILABLE);
        }
        let more_nodes =
            ask.attrs.num_nodes.is_some_and(|n| n > 0) || !ask.attrs.nodes_named().is_empty();
        let secs = ask.attrs.time_secs.filter(|t| *t > 0);
        if let Some(t) = secs {
            let held = a
                .end_ms
                .map_or(0, |e| e.saturating_sub(a.granted_at) / 1000);
            if held + u64::from(t) > u64::from(self.max_secs) {
                let why = format!(
                    "{id} would exceed psched's maximum ({} min)",
                    self.max_secs / 60
                );
                return self.refuse_why(tag, Status::ERR_BAD_PARAM, &why);
            }
            self.worker.send(Task::Extend {
                alloc: id.clone(),
                tag: (!more_nodes).then_some(tag),
                jobs: a.jobs.clone(),
                secs: t,
            });
        }
        if let Some(x) = self.allocs.get_mut(&id) {
            x.echo = ask.echo.clone();
            if ask.attrs.warn_timeout.is_some() {
                x.warn_secs = ask.attrs.warn_timeout;
            }
            if secs.is_some() && !more_nodes {
                x.ext_time = Some(tag);
            }
        }
        if more_nodes {
            return self.extend_nodes(tag, &id, &ask, now);
        }
        if secs.is_none() {
            return Ok(vec![self.renewed(tag, &id)]);
        }
        Ok(Vec::new())
    }

    /// More nodes for `id`: a further job on other nodes, for the time the
    /// allocation has left; answered when Slurm grants it.
    fn extend_nodes(&mut self, tag: u32, id: &str, ask: &Forwarded, now: u64) -> Result<Vec<Out>> {
        let a = &self.allocs[id];
        let left = a.end_ms.map_or(self.default_secs, |e| {
            (e.saturating_sub(now) / 1000).max(1) as u32
        });
        let mut exclude = a.nodes.clone();
        exclude.extend(ask.attrs.nodes_excluded().iter().cloned());
        let want = ctl::Ask {
            count: ask.attrs.num_nodes.filter(|n| *n > 0),
            list: ask.attrs.nodes_named().to_vec(),
            exclude,
            time_secs: left,
            partition: (!a.queue.is_empty()).then(|| a.queue.clone()),
            opts: a.opts.clone(),
        };
        let name = format!("{}.{}", self.job_name(id), a.jobs.len() + 1);
        let w = self.start_salloc(id, Some(tag), want, name.clone());
        say!("psched: asked Slurm for more nodes for {id} (job {name})");
        if let Some(x) = self.allocs.get_mut(id) {
            x.waiting = Some(w);
        }
        Ok(Vec::new())
    }

    pub(super) fn on_release(&mut self, tag: u32, ask: &Forwarded) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        if let Some(why) = bad_names(ask) {
            return self.refuse_why(tag, Status::ERR_BAD_PARAM, &why);
        }
        let a = &self.allocs[&id];
        let keep = a
            .nodes
            .iter()
            .filter(|n| !ask.attrs.nodes_named().contains(n))
            .count();
        let whole = ask.attrs.nodes_named().is_empty() || keep == 0;
        let nodes = if whole {
            a.nodes.clone()
        } else {
            ask.attrs.nodes_named().to_vec()
        };
        if whole {
            say!("psched: {id} released: its Slurm jobs cancelled");
            self.drop_alloc(&id);
        } else {
            self.shrink(&id, ask.attrs.nodes_named());
        }
        Ok(vec![Out::Release {
            tag,
            alloc_id: id,
            nodes,
            whole,
        }])
    }

    /// Give `gone` back: each job holding some of them shrinks to the rest,
    /// or is cancelled when none of its nodes stay.
    pub(super) fn shrink(&mut self, id: &str, gone: &[String]) {
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

    pub(super) fn on_cancel(&mut self, tag: u32, ask: &Forwarded) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        let by = ask.requestor.as_deref();
        let a = self.allocs[&id].clone();
        let Some(w) = a.waiting.clone() else {
            // Granted already: nothing is queued to cancel.
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        // The cancel's own answer first (see the pool backend's on_cancel).
        let mut out = vec![self.answer(tag, Status(0), Some(&id), None)?];
        let owed = match (a.owed, w.key.ext_tag) {
            (Some(t), _) => {
                self.drop_alloc(&id);
                t
            }
            (None, Some(t)) => {
                self.withdraw_waiting(&w);
                if let Some(x) = self.allocs.get_mut(&id) {
                    x.waiting = None;
                }
                t
            }
            (None, None) => return self.refuse(tag, Status::ERR_NOT_FOUND),
        };
        say!("psched: the request for {id} withdrawn (REQ_CANCEL)");
        out.push(Out::Answer(owed, wire::cancelled(self.wire, &a.echo, by)?));
        Ok(out)
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
                    extend: w.key.ext_tag.is_some(),
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
    use crate::proto::{AllocAttrs, RmOptions};

    fn with(rm: RmOptions) -> Forwarded {
        Forwarded {
            attrs: AllocAttrs {
                rm,
                ..AllocAttrs::default()
            },
            ..Forwarded::default()
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
