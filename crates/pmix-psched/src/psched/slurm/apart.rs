//! psched's grants never share a node with each other. On shared nodes (no
//! `--exclusive`) Slurm would put two of psched's one-CPU jobs on one node,
//! but PRRTE master gives a node to one session at a time (a grant of a
//! node another session holds moves the node to the new session, whose
//! jobs alone may then map there) and counts its slots per node, not per
//! session: the first grant's jobs could no longer run at all. So each
//! `salloc` excludes the nodes psched's other allocations hold (those the
//! request names itself aside), and a job Slurm grants on one of them
//! anyway (two `salloc`s under way at once) is withdrawn and asked for
//! again without them. Other users' jobs still share psched's nodes: PRRTE
//! does not see them. Only when Slurm has enough nodes besides (its
//! partitions as `sinfo` said): a request that could be met only on a node
//! psched's other grants hold is asked as before, so that it queues in
//! Slurm behind them (excluded, Slurm would refuse it: "Requested node
//! configuration is not available"), and may share that node.

use super::ctl;
use super::job::Job;
use super::{SlurmBackend, Waiting};

impl SlurmBackend {
    /// The nodes psched's allocations other than `id` hold (granted, or
    /// retained by the DVM).
    fn held_by_others(&self, id: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .allocs
            .iter()
            .filter(|(other, _)| other.as_str() != id)
            .flat_map(|(_, a)| a.nodes.iter().cloned())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// `w`'s request kept off the nodes of psched's other allocations
    /// (but those it names), when Slurm has enough nodes besides.
    pub(super) fn apart(&self, w: &Waiting) -> ctl::Ask {
        let mut ask = w.ask.clone();
        let others: Vec<String> = self
            .held_by_others(&w.key.alloc)
            .into_iter()
            .filter(|n| !ask.list.contains(n) && !ask.exclude.contains(n))
            .collect();
        if others.is_empty() {
            return ask;
        }
        let mut pool: Vec<&String> = self
            .partitions
            .iter()
            .filter(|p| ask.partition.as_ref().is_none_or(|want| *want == p.name))
            .flat_map(|p| p.nodes.iter())
            .filter(|n| !ask.exclude.contains(n))
            .collect();
        pool.sort();
        pool.dedup();
        let besides = pool.iter().filter(|n| !others.contains(n)).count();
        let need = usize::try_from(ask.count.unwrap_or(0))
            .unwrap_or(usize::MAX)
            .max(ask.list.len());
        if pool.is_empty() || need > besides {
            return ask;
        }
        ask.exclude.extend(others);
        ask
    }

    /// Job `j`, granted for `id`, landed on a node another allocation of
    /// psched's holds (its request did not name it): the job is withdrawn
    /// and the request asked for again, apart. True when it was.
    pub(super) fn landed_on_another(&mut self, id: &str, j: &Job) -> bool {
        let others = self.held_by_others(id);
        let Some(mut w) = self.allocs.get(id).and_then(|a| a.waiting.clone()) else {
            return false;
        };
        // Asked as before (no nodes besides): granted as Slurm chose.
        if self.apart(&w).exclude.len() == w.ask.exclude.len() {
            return false;
        }
        let clash: Vec<&String> = j
            .nodes
            .iter()
            .filter(|n| others.contains(n) && !w.ask.list.contains(n))
            .collect();
        if clash.is_empty() {
            return false;
        }
        say!(
            "psched: Slurm granted job {} for {id} on {}, which another grant holds (PRRTE \
             gives a node to one session): withdrawn, asked again without it",
            j.id,
            clash
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        self.withdraw_job(j.id);
        w.key = self.key(id, w.key.extend);
        w.job = None;
        self.submit(&w);
        if let Some(a) = self.allocs.get_mut(id) {
            a.waiting = Some(w);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::worker::SubKey;
    use super::super::Alloc;
    use super::*;
    use crate::psched::ledger::Ledger;

    #[test]
    fn a_request_keeps_off_the_other_grants_nodes_but_those_it_names() {
        let mut b = SlurmBackend::new(&mut Ledger::default(), "aparttest".into()).unwrap();
        let held = |nodes: &[&str]| Alloc {
            jobs: vec![1],
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            ..Alloc::default()
        };
        b.allocs.insert("slurm.1".into(), held(&["n1", "n2"]));
        b.allocs.insert("slurm.2".into(), held(&["n3"]));
        b.partitions = vec![crate::psched::SourcePartition {
            name: "batch".into(),
            nodes: ["n1", "n2", "n3", "n4"].map(String::from).to_vec(),
            ..Default::default()
        }];
        let w = Waiting {
            key: SubKey {
                alloc: "slurm.2".into(),
                extend: true,
                seq: 1,
            },
            job: None,
            ask: ctl::Ask {
                list: vec!["n2".into()],
                exclude: vec!["n3".into()],
                ..ctl::Ask::default()
            },
            name: "x".into(),
            again_at: None,
            reason: None,
            said: None,
        };
        assert_eq!(b.apart(&w).exclude, ["n3", "n1"]);
        // Three nodes wanted, two (n3, n4) besides the other grants': as
        // asked, to queue in Slurm behind them.
        let two = Waiting {
            ask: ctl::Ask {
                count: Some(3),
                ..ctl::Ask::default()
            },
            ..w.clone()
        };
        assert!(b.apart(&two).exclude.is_empty());
        let one = Waiting {
            ask: ctl::Ask {
                count: Some(1),
                ..ctl::Ask::default()
            },
            ..w
        };
        assert_eq!(b.apart(&one).exclude, ["n1", "n2"]);
    }
}
