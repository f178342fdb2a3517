//! What the DVM asks of psched on Slurm: NEW, EXTEND, RELEASE and
//! REQ_CANCEL, each carried out with the Slurm commands of [`ctl`].

use crate::error::Result;
use crate::proto::status::Status;

use super::super::state::Out;
use super::super::wire::{self, AllocAsk};
use super::{ctl, Alloc, SlurmBackend};

impl SlurmBackend {
    pub(super) fn on_new(&mut self, tag: u32, ask: AllocAsk, now: u64) -> Result<Vec<Out>> {
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
        let id = self.next_id();
        let name = self.job_name(&id);
        let child = match ctl::submit(&want, &name) {
            Ok(child) => child,
            Err(e) => {
                eprintln!("psched: cannot ask Slurm: {}", e.context);
                return self.refuse(tag, e.status);
            }
        };
        let a = Alloc {
            owed: Some(tag),
            echo: ask.echo,
            req_id: ask.req_id,
            queue: ask.queue.unwrap_or_default(),
            warn_secs: ask.warn_secs,
            granted_at: now,
            inherit: ask.inherit,
            ..Alloc::default()
        };
        eprintln!("psched: asked Slurm for {id} (job {name})");
        self.allocs.insert(id.clone(), a);
        self.submitted.push(super::Submitted {
            name,
            alloc: id,
            ext_tag: None,
            child: Some(child),
        });
        self.poll(now)
    }

    pub(super) fn on_extend(&mut self, tag: u32, ask: AllocAsk, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(&ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        let a = self.allocs[&id].clone();
        if a.owed.is_some() || a.ext.is_some() || a.retained {
            // Not granted yet, or an extension already waits.
            return self.refuse(tag, Status::ERR_NOT_AVAILABLE);
        }
        if let Some(t) = ask.time_secs.filter(|t| *t > 0) {
            for j in a.jobs() {
                if let Err(e) = ctl::add_time(j, t) {
                    eprintln!("psched: Slurm refused the extension: {}", e.context);
                    return self.refuse(tag, e.status);
                }
            }
        }
        if let Some(x) = self.allocs.get_mut(&id) {
            x.echo = ask.echo.clone();
            if ask.warn_secs.is_some() {
                x.warn_secs = ask.warn_secs;
            }
        }
        if ask.num_nodes.is_some_and(|n| n > 0) || !ask.node_list.is_empty() {
            return self.extend_nodes(tag, &id, &ask, now);
        }
        let mut out = self.poll(now)?;
        let echo = self
            .allocs
            .get(&id)
            .map(|a| a.echo.clone())
            .unwrap_or_default();
        out.push(Out::Grant {
            tag,
            alloc_id: id,
            nodes: Vec::new(),
            echo,
            new: false,
        });
        Ok(out)
    }

    /// More nodes for `id`: a further job on other nodes, for the time the
    /// allocation has left; answered when Slurm runs it.
    fn extend_nodes(&mut self, tag: u32, id: &str, ask: &AllocAsk, now: u64) -> Result<Vec<Out>> {
        let a = &self.allocs[id];
        let left = a
            .end_ms
            .map(|e| (e.saturating_sub(now) / 1000).max(1) as u32);
        let mut exclude = a.nodes.clone();
        exclude.extend(ask.exclude.iter().cloned());
        let want = ctl::Ask {
            count: ask.num_nodes.filter(|n| *n > 0),
            list: ask.node_list.clone(),
            exclude,
            time_secs: left,
            partition: (!a.queue.is_empty()).then(|| a.queue.clone()),
        };
        let name = format!("{}.{}", self.job_name(id), a.more.len() + 1);
        let child = match ctl::submit(&want, &name) {
            Ok(child) => child,
            Err(e) => {
                eprintln!("psched: cannot ask Slurm: {}", e.context);
                return self.refuse(tag, e.status);
            }
        };
        eprintln!("psched: asked Slurm for more nodes for {id} (job {name})");
        if let Some(x) = self.allocs.get_mut(id) {
            x.ext = Some((tag, 0));
        }
        self.submitted.push(super::Submitted {
            name,
            alloc: id.to_string(),
            ext_tag: Some(tag),
            child: Some(child),
        });
        self.poll(now)
    }

    pub(super) fn on_release(&mut self, tag: u32, ask: &AllocAsk, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        let a = self.allocs[&id].clone();
        let keep: Vec<&String> = a
            .nodes
            .iter()
            .filter(|n| !ask.node_list.contains(n))
            .collect();
        let whole = ask.node_list.is_empty() || keep.is_empty();
        let nodes = if whole {
            a.nodes.clone()
        } else {
            ask.node_list.clone()
        };
        let done = if whole {
            self.allocs.remove(&id);
            eprintln!("psched: {id} released: its Slurm jobs cancelled");
            cancel_all(&a)
        } else {
            self.shrink(&id, &ask.node_list)
        };
        if let Err(e) = done {
            eprintln!("psched: Slurm refused the release: {}", e.context);
            return self.refuse(tag, e.status);
        }
        let mut out = vec![Out::Release {
            tag,
            alloc_id: id,
            nodes,
            whole,
        }];
        out.extend(self.poll(now)?);
        Ok(out)
    }

    /// Give `gone` back: each job holding some of them shrinks to the rest,
    /// or is cancelled when none of its nodes stay.
    fn shrink(&mut self, id: &str, gone: &[String]) -> Result<()> {
        let a = self.allocs[id].clone();
        for (job, nodes) in &a.job_nodes {
            let keep: Vec<String> = nodes
                .iter()
                .filter(|n| !gone.contains(n))
                .cloned()
                .collect();
            if keep.len() == nodes.len() {
                continue;
            }
            if keep.is_empty() {
                eprintln!("psched: Slurm job {job} cancelled: its nodes of {id} released");
                ctl::cancel(*job)?;
            } else {
                eprintln!("psched: Slurm job {job} shrunk to {}", keep.join(","));
                ctl::shrink(*job, &keep)?;
            }
        }
        if let Some(x) = self.allocs.get_mut(id) {
            x.nodes.retain(|n| !gone.contains(n));
        }
        Ok(())
    }

    pub(super) fn on_cancel(&mut self, tag: u32, ask: &AllocAsk) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        };
        let by = ask.requestor.as_deref();
        let a = self.allocs[&id].clone();
        // The cancel's own answer first (see the pool backend's on_cancel).
        let mut out = vec![self.answer(tag, Status(0), Some(&id), None)?];
        if let Some(owed) = a.owed {
            self.allocs.remove(&id);
            self.withdraw(&id, a.job, None);
            out.push(Out::Answer(owed, wire::cancelled(self.wire, &a.echo, by)?));
        } else if let Some((t, job)) = a.ext {
            if let Some(x) = self.allocs.get_mut(&id) {
                x.ext = None;
            }
            self.withdraw(&id, job, Some(t));
            out.push(Out::Answer(t, wire::cancelled(self.wire, &a.echo, by)?));
        } else {
            // Granted already: nothing is queued to cancel.
            return self.refuse(tag, Status::ERR_NOT_FOUND);
        }
        Ok(out)
    }
}

impl SlurmBackend {
    /// Withdraw the request for `id` (an EXTEND's when `ext_tag`): its job
    /// by id when `squeue` showed it, else by name.
    fn withdraw(&mut self, id: &str, job: u64, ext_tag: Option<u32>) {
        let pos = self
            .submitted
            .iter()
            .position(|x| x.alloc == id && x.ext_tag == ext_tag);
        let sub = pos.map(|i| self.submitted.remove(i));
        let done = match (job, &sub) {
            (0, Some(x)) => ctl::cancel_name(&x.name),
            (j, _) => ctl::cancel(j),
        };
        if let Some(mut c) = sub.and_then(|x| x.child) {
            let _ = c.kill();
            self.children.push(c);
        }
        if let Err(e) = done {
            eprintln!("psched: Slurm refused the cancel: {}", e.context);
        }
    }
}

/// Cancel every job of `a` (and its waiting extension).
pub(super) fn cancel_all(a: &Alloc) -> Result<()> {
    let mut first = Ok(());
    for j in a.jobs().chain(a.ext.map(|(_, j)| j)).filter(|j| *j != 0) {
        if let Err(e) = ctl::cancel(j) {
            eprintln!("psched: cannot cancel Slurm job {j}: {}", e.context);
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}
