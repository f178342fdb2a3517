//! A spawn PRRTE master never answers (issue 40): in a burst, a launch that
//! crosses a grow of the DVM (every grant of a scheduler's nodes starts
//! one) is now and then lost. The job is listed, its processes placed on
//! their node with no pid (`PMIX_PROC_STATE_LAUNCH_UNDERWAY`) for ever,
//! and the spawn request is never answered: the tool waited out its
//! 30 s request time-out and reported the outcome unknown. [`LostLaunch`]
//! finds that job while the spawn waits, so that the job can be stopped
//! and the spawn sent again ([`super::spawn::spawn`]).
//!
//! Never a job twice: only a job none of whose processes was ever started
//! (no pid, not ended) at two looks [`LOOK_EVERY`] apart counts, it must
//! be the only such job of the spawn's command line and size, numbered
//! after every job this session knew of, and, for a spawn into
//! allocations, placed on their nodes only.

use std::time::Duration;

use crate::codec::{App, DataArray, Info, Value};
use crate::proto::{keys, proc_state};

use super::job::numbered;
use super::Session;

/// How long a spawn waits for its answer between two looks for its lost
/// launch.
pub const LOOK_EVERY: Duration = Duration::from_secs(2);
/// How many times one spawn is sent again after its launch was lost.
pub const RESENDS: u32 = 2;

/// The search for the lost launch of one spawn: see the module
/// documentation.
#[derive(Debug)]
pub struct LostLaunch {
    base: String,
    floor: u64,
    cmdline: String,
    nprocs: Option<u32>,
    targets: Vec<String>,
    nodes: Option<Vec<String>>,
    unstarted: Vec<String>,
    stopped: Vec<String>,
}

impl LostLaunch {
    /// The search for a spawn of `apps` with `job_info` on `s`; `None`
    /// when the DVM does not number its namespaces `BASE@N` (nothing then
    /// tells this spawn's job from older ones).
    pub fn new(s: &Session, job_info: &[Info], apps: &[App]) -> Option<LostLaunch> {
        let (me, _) = s.me();
        let (base, n) = numbered(&me)?;
        let first = apps.first()?;
        let nprocs = apps.iter().try_fold(0u32, |sum, a| {
            u32::try_from(a.maxprocs)
                .ok()
                .filter(|n| *n > 0)
                .map(|n| sum + n)
        });
        Some(LostLaunch {
            base: base.to_string(),
            floor: n.max(s.last_launched()),
            cmdline: first.argv.join(" "),
            nprocs,
            targets: targets(job_info),
            nodes: None,
            unstarted: Vec::new(),
            stopped: Vec::new(),
        })
    }

    /// One look, after [`LOOK_EVERY`] without an answer: the namespace of
    /// this spawn's job the DVM lost, once it is sure (see the module
    /// documentation). The job is not looked at again.
    pub fn look(&mut self, s: &Session) -> Option<String> {
        let jobs = super::status_query::jobs(s).ok()?;
        if self.nodes.is_none() && !self.targets.is_empty() {
            self.nodes = Some(target_nodes(s, &self.targets)?);
        }
        let mut now = Vec::new();
        for j in jobs {
            let later = numbered(&j.nspace).is_some_and(|(b, n)| b == self.base && n > self.floor);
            let same = j.cmdline.as_deref() == Some(self.cmdline.as_str())
                && (self.nprocs.is_none() || j.nprocs == self.nprocs);
            let placed = match &self.nodes {
                Some(nodes) => !j.nodes.is_empty() && j.nodes.iter().all(|h| nodes.contains(h)),
                None => true,
            };
            if !later || !same || !placed || self.stopped.contains(&j.nspace) {
                continue;
            }
            let procs = super::query::proc_table(s, &j.nspace).ok()?;
            let never_started = !procs.is_empty()
                && procs
                    .iter()
                    .all(|p| p.pid == 0 && p.state < proc_state::UNTERMINATED);
            if never_started {
                now.push(j.nspace);
            }
        }
        let before = std::mem::replace(&mut self.unstarted, now);
        match self.unstarted.as_slice() {
            [one] if before.contains(one) => {
                let ns = one.clone();
                self.unstarted.clear();
                self.stopped.push(ns.clone());
                Some(ns)
            }
            _ => None,
        }
    }
}

/// The allocations a spawn targets (`PMIX_SPAWN_TARGET`; the empty entry,
/// the default pool, left out).
fn targets(job_info: &[Info]) -> Vec<String> {
    let Some(t) = job_info.iter().find(|i| i.key == keys::SPAWN_TARGET) else {
        return Vec::new();
    };
    let all: Vec<String> = match &t.value {
        Value::String(s) => vec![s.clone()],
        Value::DataArray(DataArray::Strings(v)) => v.clone(),
        _ => Vec::new(),
    };
    all.into_iter().filter(|s| !s.is_empty()).collect()
}

/// Every node of the allocations `ids`, as the DVM lists them; `None`
/// when one is not listed (no node then tells this spawn's job apart).
fn target_nodes(s: &Session, ids: &[String]) -> Option<Vec<String>> {
    let mut nodes = Vec::new();
    for id in ids {
        let list = super::status_query::reservations(s, Some(id)).ok()?;
        let r = list.into_iter().find(|r| &r.alloc_id == id)?;
        nodes.extend(r.nodes);
    }
    Some(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pool_is_no_target() {
        let one = [Info::new(keys::SPAWN_TARGET, "alloc.3")];
        assert_eq!(targets(&one), ["alloc.3"]);
        let many = [Info::new(
            keys::SPAWN_TARGET,
            Value::DataArray(DataArray::strings(["a", ""])),
        )];
        assert_eq!(targets(&many), ["a"]);
        assert!(targets(&[]).is_empty());
    }
}
