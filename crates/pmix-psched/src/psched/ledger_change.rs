//! The ledger changes as small messages: the node source and the core say
//! what changed ([`LedgerChange`]) and the one [`Ledger`] takes each
//! ([`Ledger::apply`]), instead of a whole ledger rebuilt after every
//! message and compared with the one on disk. The file stays as it was.

use std::collections::BTreeMap;

use crate::proto::Inheritance;
use crate::sched::SchedPendingView;

use super::ledger::{DvmBook, Grant, Ledger};
use super::SourcePartition;

/// One change of the ledger.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerChange {
    /// A grant as the node source holds it now (its nodes, end, partition,
    /// Slurm jobs): a new one, or the new terms of one (its request id,
    /// rule and session stay).
    Grant(Grant),
    /// The grant `alloc_id` is no longer held.
    Gone(String),
    /// What the requester asked of `alloc_id`'s grant: its request id and
    /// inheritance rule.
    Labels {
        /// The allocation.
        alloc_id: String,
        /// The request id.
        req_id: Option<String>,
        /// The rule.
        inherit: Option<Inheritance>,
    },
    /// The number of the next allocation id.
    NextId(u64),
    /// The nodes the DVM keeps after their reservation ended.
    Retained(Vec<String>),
    /// `--backend slurm`: the jobs holding the retained nodes, with their
    /// nodes.
    RetainedJobs(BTreeMap<u64, Vec<String>>),
    /// `--backend slurm`: the jobs a restarted psched withdraws.
    Withdraw(Vec<u64>),
    /// The requests waiting (status only).
    Pending(Vec<SchedPendingView>),
    /// The node source's partitions (status only).
    SourcePartitions(Vec<SourcePartition>),
    /// When psched last read the DVM's allocation ids (status only).
    Reconciled(u64),
    /// psched serves the DVM of this namespace: another one than before
    /// starts with empty books.
    Dvm(String),
    /// psched's books about the DVM and its session count.
    DvmSide(DvmBook, u32),
}

/// A node source's part of the ledger as it last said it: `v` when it
/// differs from `said` (which becomes `v`), as the change `change` makes.
pub fn when_changed<T: PartialEq + Clone>(
    said: &mut T,
    v: T,
    change: impl FnOnce(T) -> LedgerChange,
) -> Option<LedgerChange> {
    if *said == v {
        return None;
    }
    *said = v.clone();
    Some(change(v))
}

/// Set `*slot` to `v`; true when that changed it.
fn set<T: PartialEq>(slot: &mut T, v: T) -> bool {
    if *slot == v {
        return false;
    }
    *slot = v;
    true
}

impl Ledger {
    /// Take change `c`; true when the ledger changed (it is to be stored).
    pub fn apply(&mut self, c: LedgerChange) -> bool {
        match c {
            LedgerChange::Grant(g) => self.put_grant(g),
            LedgerChange::Gone(id) => {
                let before = self.grants.len();
                self.grants.retain(|g| g.alloc_id != id);
                self.grants.len() != before
            }
            LedgerChange::Labels {
                alloc_id,
                req_id,
                inherit,
            } => match self.grants.iter_mut().find(|g| g.alloc_id == alloc_id) {
                Some(g) => set(&mut g.req_id, req_id) | set(&mut g.inherit, inherit),
                None => false,
            },
            LedgerChange::NextId(n) => set(&mut self.next_id, n),
            LedgerChange::Retained(v) => set(&mut self.retained, v),
            LedgerChange::RetainedJobs(m) => {
                let jobs: Vec<u64> = m.keys().copied().collect();
                set(&mut self.retained_jobs, jobs) | set(&mut self.retained_job_nodes, m)
            }
            LedgerChange::Withdraw(v) => set(&mut self.slurm_withdraw, v),
            LedgerChange::Pending(v) => set(&mut self.pending, v),
            LedgerChange::SourcePartitions(v) => set(&mut self.source_partitions, v),
            LedgerChange::Reconciled(t) => set(&mut self.reconciled_at_ms, Some(t)),
            LedgerChange::Dvm(name) => {
                if self.dvm.as_deref() == Some(name.as_str()) {
                    return false;
                }
                self.dvm = Some(name);
                self.sessions = 0;
                self.dvm_side = DvmBook::default();
                self.sync_sessions();
                true
            }
            LedgerChange::DvmSide(book, sessions) => {
                let changed = set(&mut self.sessions, sessions) | set(&mut self.dvm_side, book);
                changed | self.sync_sessions()
            }
        }
    }

    /// A grant's new terms, or a new grant (kept sorted by id).
    fn put_grant(&mut self, mut g: Grant) -> bool {
        match self
            .grants
            .binary_search_by(|x| x.alloc_id.as_str().cmp(&g.alloc_id))
        {
            Ok(i) => {
                let old = &self.grants[i];
                g.req_id = old.req_id.clone();
                g.inherit = old.inherit;
                g.session = old.session;
                set(&mut self.grants[i], g)
            }
            Err(i) => {
                g.session = self.session_of(&g.alloc_id);
                self.grants.insert(i, g);
                true
            }
        }
    }

    /// The DVM's session of `alloc_id`, as its owner's book says.
    fn session_of(&self, alloc_id: &str) -> Option<u32> {
        self.dvm_side
            .owners
            .iter()
            .find(|o| o.alloc_id == alloc_id)
            .and_then(|o| o.session)
    }

    /// Each grant's session as the owners' book says; true when one
    /// changed.
    fn sync_sessions(&mut self) -> bool {
        let mut changed = false;
        for i in 0..self.grants.len() {
            let s = self.session_of(&self.grants[i].alloc_id);
            changed |= set(&mut self.grants[i].session, s);
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psched::ledger::Owner;

    fn grant(id: &str, nodes: &[&str]) -> Grant {
        Grant::bare(id, nodes)
    }

    #[test]
    fn changes_keep_labels_and_sessions_and_say_whether_anything_changed() {
        let mut l = Ledger::default();
        assert!(l.apply(LedgerChange::Dvm("dvm@0".into())));
        assert!(l.apply(LedgerChange::Grant(grant("psched.2", &["n1"]))));
        assert!(l.apply(LedgerChange::Grant(grant("psched.1", &["n2"]))));
        assert_eq!(l.grants[0].alloc_id, "psched.1", "sorted by id");
        assert!(l.apply(LedgerChange::Labels {
            alloc_id: "psched.2".into(),
            req_id: Some("r".into()),
            inherit: Some(Inheritance::Child),
        }));
        let owner = Owner {
            alloc_id: "psched.2".into(),
            nspace: "job".into(),
            requester: "job".into(),
            rank: 0,
            session: Some(4),
            req_id: None,
        };
        let book = DvmBook {
            owners: vec![owner],
            ..DvmBook::default()
        };
        assert!(l.apply(LedgerChange::DvmSide(book.clone(), 4)));
        assert!(!l.apply(LedgerChange::DvmSide(book, 4)), "the same again");
        assert!(l.apply(LedgerChange::Grant(grant("psched.2", &["n1", "n3"]))));
        let g = &l.grants[1];
        assert_eq!(
            (g.req_id.as_deref(), g.inherit, g.session, g.nodes.len()),
            (Some("r"), Some(Inheritance::Child), Some(4), 2)
        );
        assert!(!l.apply(LedgerChange::Grant(grant("psched.2", &["n1", "n3"]))));
        assert!(l.apply(LedgerChange::Gone("psched.2".into())));
        assert!(!l.apply(LedgerChange::Gone("psched.2".into())));
        assert!(l.apply(LedgerChange::Dvm("dvm@1".into())));
        assert_eq!((l.sessions, l.dvm_side.owners.len()), (0, 0));
    }
}
