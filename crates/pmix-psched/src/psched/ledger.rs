//! psched's ledger: every grant it holds, on disk, so a restart (even after
//! `kill -9`) neither loses a grant nor hands a held node out again.
//!
//! The file is JSON, replaced atomically: written beside itself, synced,
//! renamed over the old one, and the directory synced.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::proto::status::Status;

/// One grant in the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The allocation id psched gave out.
    pub alloc_id: String,
    /// The requester's request id, when it gave one.
    pub req_id: Option<String>,
    /// The nodes held.
    pub nodes: Vec<String>,
    /// Expiry, milliseconds since the Unix epoch (none: unbounded).
    pub expires_at_ms: Option<u64>,
    /// Warning threshold in seconds.
    pub warn_secs: Option<u32>,
    /// The DVM's session number for it, as psched counted it.
    pub session: Option<u32>,
    /// The partition it was granted from.
    pub queue: String,
    /// The requester's inheritance rule (none given: DEFAULT, spec 001
    /// §8.2.1.9.2): decides whether nodes the DVM ended the reservation of
    /// come back to the pool (NONE, CHILD) or stay in the DVM.
    #[serde(default)]
    pub inherit: Option<crate::proto::Inheritance>,
    /// `--backend slurm`: the allocation's Slurm jobs (the first, then
    /// those EXTENDs in nodes added); empty for the pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slurm_jobs: Vec<u64>,
}

#[cfg(test)]
impl Grant {
    /// A grant of `nodes` as `alloc_id`, with no other terms (tests).
    pub(crate) fn bare(alloc_id: &str, nodes: &[&str]) -> Grant {
        Grant {
            alloc_id: alloc_id.into(),
            req_id: None,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            expires_at_ms: None,
            warn_secs: None,
            session: None,
            queue: String::new(),
            inherit: None,
            slurm_jobs: Vec::new(),
        }
    }
}

/// The whole ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// The number of the next allocation id (ids are never reused).
    pub next_id: u64,
    /// The grants held, sorted by id.
    pub grants: Vec<Grant>,
    /// The DVM psched last served (its namespace), to which `sessions` belongs.
    #[serde(default)]
    pub dvm: Option<String>,
    /// How many sessions psched has seen that DVM create for its grants
    /// (PRRTE numbers its reservations 1, 2, … in creation order).
    #[serde(default)]
    pub sessions: u32,
    /// Nodes the DVM kept after their reservation ended under DEFAULT or
    /// CHILD_DEFAULT: not free until that DVM is gone.
    #[serde(default)]
    pub retained: Vec<String>,
    /// `--backend slurm`: the Slurm jobs holding the retained nodes (kept
    /// until that DVM is gone, also across a restart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained_jobs: Vec<u64>,
    /// `--backend slurm`: the nodes of each retained job, so that a
    /// restarted psched stops the work there when Slurm ended the job
    /// meanwhile.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub retained_job_nodes: std::collections::BTreeMap<u64, Vec<String>>,
    /// `--backend slurm`: Slurm jobs psched submitted that no grant holds
    /// (still waiting for Slurm, or to be cancelled while Slurm could not
    /// be reached): a restarted psched withdraws them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slurm_withdraw: Vec<u64>,
    /// For status only (not read back): the pool.
    #[serde(default)]
    pub pool: Vec<String>,
    /// For status only: the partitions (queues) with their limits.
    #[serde(default)]
    pub partitions: Vec<super::Partition>,
    /// For status only: when psched last read the DVM's allocation ids
    /// (ms since the epoch).
    #[serde(default)]
    pub reconciled_at_ms: Option<u64>,
    /// For status only: the node source's partitions (`--backend slurm`:
    /// Slurm's, as `sinfo` said last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_partitions: Vec<super::SourcePartition>,
    /// For status only: the requests waiting in the queue.
    #[serde(default)]
    pub pending: Vec<crate::sched::SchedPendingView>,
    /// What psched knows of the DVM it serves (`dvm`), beside the node source's
    /// books: kept across a restart of psched.
    #[serde(default)]
    pub dvm_side: DvmBook,
}

/// psched's books about the DVM itself (see `psched::dvm`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DvmBook {
    /// Nodes whose daemon the DVM started (they stay in the DVM between
    /// grants, in psched's reservation of idle nodes).
    #[serde(default)]
    pub in_dvm: Vec<String>,
    /// Nodes whose daemon did not come up when granted: never granted
    /// again until the DVM restarts.
    #[serde(default)]
    pub broken: Vec<String>,
    /// Who owns each allocation (spec 001 §8.2.1.7).
    #[serde(default)]
    pub owners: Vec<Owner>,
    /// The requesters of the NEW requests queued now: a restarted psched
    /// tells each that its request was lost (see `psched::waiters`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<super::waiters::Waiter>,
}

/// The owner of one allocation, as the DVM told psched at its request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// The allocation.
    pub alloc_id: String,
    /// The owning namespace (the target of a tool's request, else the
    /// requester's).
    pub nspace: String,
    /// The process that asked (it hears the warning and the end).
    pub requester: String,
    /// Its rank.
    pub rank: u32,
    /// The DVM's session number of the reservation (for ending it).
    pub session: Option<u32>,
    /// The requester's request id, echoed in what it is told.
    #[serde(default)]
    pub req_id: Option<String>,
}

impl Ledger {
    /// Read the ledger at `path` (never through a link); an absent file is
    /// an empty ledger.
    pub fn load(path: &Path) -> Result<Ledger> {
        match super::files::read(path, MAX_LEDGER) {
            Ok((b, _)) => serde_json::from_slice(&b).map_err(|e| {
                Error::new(
                    Status::ERR_BAD_PARAM,
                    format!("the ledger {} is not readable JSON: {e}", path.display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Ledger::default()),
            Err(e) => Err(Error::new(
                Status::ERR_NOT_AVAILABLE,
                format!("cannot read the ledger {}: {e}", path.display()),
            )),
        }
    }

    /// Replace the ledger at `path` atomically (a new 0600 file renamed
    /// over it, see [`super::files::replace`]).
    pub fn store(&self, path: &Path) -> Result<()> {
        let body = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::new(Status::ERR_BAD_PARAM, format!("ledger not encodable: {e}")))?;
        super::files::replace(path, &body, 0o600).map_err(|e| {
            Error::new(
                Status::ERR_NOT_AVAILABLE,
                format!("cannot write the ledger {}: {e}", path.display()),
            )
        })
    }
}

/// Largest ledger read (a ledger of 10,000 grants is about 3 MiB).
const MAX_LEDGER: u64 = 64 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn store_then_load_round_trips() {
        let dir = std::env::temp_dir().join(format!("psched-ledger-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("ledger.json");
        assert_eq!(Ledger::load(&p).unwrap(), Ledger::default());
        let l = Ledger {
            next_id: 7,
            grants: vec![Grant {
                alloc_id: "psched.6".into(),
                req_id: Some("r".into()),
                nodes: vec!["node03".into()],
                expires_at_ms: Some(5),
                warn_secs: None,
                session: Some(2),
                queue: "batch".into(),
                inherit: Some(crate::proto::Inheritance::Child),
                slurm_jobs: Vec::new(),
            }],
            dvm: Some("prte-node01-1@0".into()),
            sessions: 3,
            retained: vec!["node04".into()],
            ..Ledger::default()
        };
        l.store(&p).unwrap();
        assert_eq!(Ledger::load(&p).unwrap(), l);
        fs::remove_dir_all(&dir).unwrap();
    }
}
