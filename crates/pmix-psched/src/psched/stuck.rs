//! Nodes a launch PRRTE master lost keeps busy (docs/conformance.md P14):
//! the job stays listed, its processes placed with no pid for ever, and
//! their slots are never freed while that DVM runs (neither a terminate
//! nor a kill frees them). A node with such a job is useless to the next
//! grant: every job sent there is refused `PMIX_ERR_JOB_FAILED_TO_MAP`
//! (its pspawn says why and exits 4). So when nodes come back from an
//! allocation, psched looks at the jobs still placed there; a job none of
//! whose processes ever had a pid, seen so at two looks at least
//! [`STUCK_AFTER_MS`] apart, makes its nodes broken: never granted again
//! until the DVM restarts (as a node whose daemon never came up).

use std::collections::HashMap;

use crate::codec::ProcInfo;

/// How long a job must stay with no started process before its nodes
/// count as lost: longer than pspawn's own judgement
/// (`app::pspawn::lost_slots`), since a node wrongly held back is lost to
/// every later grant.
pub const STUCK_AFTER_MS: u64 = 30_000;

/// The looks psched owes and the jobs it saw unstarted.
#[derive(Debug, Default)]
pub struct StuckWatch {
    /// Nodes to look at, and from when (ms; 0: at once).
    due: Vec<(u64, Vec<String>)>,
    /// Jobs seen with no started process: when first, and their nodes.
    seen: HashMap<String, (u64, Vec<String>)>,
}

impl StuckWatch {
    /// `nodes` came back from an allocation: look at them at once.
    pub fn returned(&mut self, nodes: &[String]) {
        if !nodes.is_empty() {
            self.due.push((0, nodes.to_vec()));
        }
    }

    /// The looks due by `now`, taken out.
    pub fn take_due(&mut self, now: u64) -> Vec<Vec<String>> {
        let (now_due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.due)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.due = later;
        now_due.into_iter().map(|(_, n)| n).collect()
    }

    /// When the next look is due.
    pub fn next_due(&self) -> Option<u64> {
        self.due.iter().map(|(at, _)| *at).min()
    }

    /// The process table of job `nspace` (`procs`) as seen at `now`: the
    /// nodes to hold back once it has stayed unstarted long enough; else
    /// nothing (and a look again later while it stays unstarted).
    pub fn judged(&mut self, nspace: &str, procs: &[ProcInfo], now: u64) -> Vec<String> {
        if procs.is_empty() || procs.iter().any(|p| p.pid != 0) {
            self.seen.remove(nspace);
            return Vec::new();
        }
        let mut hosts: Vec<String> = procs.iter().filter_map(|p| p.hostname.clone()).collect();
        hosts.sort();
        hosts.dedup();
        let (first, _) = *self
            .seen
            .entry(nspace.to_string())
            .or_insert((now, hosts.clone()));
        if now >= first + STUCK_AFTER_MS {
            self.seen.remove(nspace);
            return hosts;
        }
        self.due.push((first + STUCK_AFTER_MS, hosts));
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Proc;

    fn procs(pid: u32) -> Vec<ProcInfo> {
        vec![ProcInfo {
            proc: Proc {
                nspace: "p@98".into(),
                rank: 0,
            },
            hostname: Some("node05".into()),
            executable_name: Some("true".into()),
            pid,
            state: 3,
        }]
    }

    #[test]
    fn a_job_that_never_started_at_two_looks_far_apart_holds_its_nodes_back() {
        let mut w = StuckWatch::default();
        w.returned(&["node05".into()]);
        assert_eq!(w.take_due(0), [vec!["node05".to_string()]]);
        assert!(w.judged("p@98", &procs(0), 1_000).is_empty());
        assert_eq!(
            w.next_due(),
            Some(1_000 + STUCK_AFTER_MS),
            "looked at again"
        );
        assert!(w.take_due(1_000 + STUCK_AFTER_MS - 1).is_empty());
        assert_eq!(w.take_due(1_000 + STUCK_AFTER_MS).len(), 1);
        assert_eq!(
            w.judged("p@98", &procs(0), 1_000 + STUCK_AFTER_MS),
            ["node05"]
        );
    }

    #[test]
    fn a_job_that_started_is_left_alone() {
        let mut w = StuckWatch::default();
        assert!(w.judged("p@98", &procs(0), 0).is_empty());
        assert!(w.judged("p@98", &procs(4242), STUCK_AFTER_MS).is_empty());
        assert!(
            w.judged("p@98", &procs(0), STUCK_AFTER_MS).is_empty(),
            "its clock starts again"
        );
    }
}
