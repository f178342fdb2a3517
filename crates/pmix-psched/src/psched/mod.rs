//! psched: a PMIx scheduler for a PRRTE DVM (its `ras/pmix` component).
//!
//! The second front end of the pure [`crate::sched`] scheduler (pdvm is the
//! first): psched attaches to the DVM as a tool flagged
//! `PMIX_SERVER_SCHEDULER`, receives the allocation requests the DVM
//! forwards, answers them from its node pool, warns before a time limit and
//! ends expired allocations with session control. Its grants live in a
//! ledger file that survives a restart.
//!
//! Two pieces: the sans-I/O core ([`core`], [`requests`], [`dvm`]: the
//! DVM's requests, grants, timers and the conversation with PRRTE) and the
//! node sources behind [`source::NodeSource`] ([`state`]: the pool;
//! [`slurm`]); [`serve`] connects, reads and writes.

/// A line in psched's log ([`diag::line`]): `say!("psched: …")`.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::psched::diag::line(format_args!($($arg)*))
    };
}

pub mod admin;
pub mod backends;
pub mod check;
pub mod contact;
pub mod core;
pub mod diag;
pub mod drive;
pub mod dvm;
pub mod files;
pub mod ledger;
pub mod ledger_change;
pub mod lost;
pub mod out;
pub mod requests;
pub mod serve;
pub mod slurm;
pub mod source;
pub mod state;
pub mod status;
pub mod status_server;
pub mod stop;
pub mod stuck;
pub mod wait;
pub mod waiters;
pub mod watchdog;
pub mod wire;

use std::path::PathBuf;
use std::time::Duration;

use crate::conn::ConnectOptions;

pub use backends::BackendKind;
pub use serve::run;

/// A partition (queue): its name and time limits.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Partition {
    /// Its name (`PMIX_ALLOC_QUEUE` picks it; the first is the default).
    pub name: String,
    /// Time limit given to a request that names none, in seconds.
    pub default_secs: Option<u32>,
    /// Longest time limit granted, in seconds.
    pub max_secs: Option<u32>,
}

/// A partition of the node source (psched on Slurm: what `sinfo` says),
/// for `pwatch --status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourcePartition {
    /// Its name.
    pub name: String,
    /// Its state (Slurm's availability: `up`, `down`, `drain`, `inact`).
    pub state: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// Those of them idle now.
    pub idle: Vec<String>,
}

/// Everything psched runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// How to find the DVM (the tools' connection flags).
    pub connect: ConnectOptions,
    /// The pool's node names.
    pub nodes: Vec<String>,
    /// Slots per node (said to PRRTE as it first hears of each node).
    pub slots: u32,
    /// The partitions, default first.
    pub partitions: Vec<Partition>,
    /// The ledger file.
    pub ledger: PathBuf,
    /// Pause between attempts to (re)attach to the DVM.
    pub retry: Duration,
    /// Stop after the DVM went away instead of waiting for a new one.
    pub once: bool,
    /// Where the nodes come from.
    pub backend: BackendKind,
    /// How much faster than real time psched's clock runs (1: real time).
    pub time_scale: f64,
    /// Where to write the URI of psched's status socket (none: no socket).
    pub status_uri: Option<PathBuf>,
    /// Answer every local user on the status socket (else psched's user
    /// and root only).
    pub status_public: bool,
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
