//! Tool-independent request descriptions built from parsed flags.
//!
//! These are plain structs with public fields; the binaries map them onto
//! PMIx attributes (`PMIX_ALLOC_*`, `PMIX_SPAWN_TARGET`, …) for the wire.

use super::parse::EnvSpec;
pub use crate::proto::RmOptions;
use crate::proto::{AllocAttrs, Directive};

/// An allocation request (palloc): NEW, or EXTEND of an existing
/// reservation, with what it asks in the one typed form every end shares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllocAsk {
    /// [`Directive::New`] or [`Directive::Extend`].
    pub directive: Directive,
    /// The `PMIX_ALLOC_*` attributes to send.
    pub attrs: AllocAttrs,
}

/// One application context of a (possibly MPMD) spawn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppSpec {
    /// Number of processes (`maxprocs`).
    pub np: u32,
    /// The program.
    pub program: String,
    /// Its arguments (without the program).
    pub args: Vec<String>,
    /// Environment settings, global ones first then per-app ones.
    pub env: Vec<EnvSpec>,
    /// Working directory.
    pub wdir: Option<String>,
    /// Hosts (expanded), empty when not restricted.
    pub hosts: Vec<String>,
    /// `--export=NONE`: the processes get only `env`, not the DVM's own
    /// environment (`pdvm.env.none`).
    pub env_only: bool,
}

/// A spawn request (pspawn).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The application contexts, in command-line order.
    pub apps: Vec<AppSpec>,
    /// `PMIX_SPAWN_TARGET` allocation ids (one id → a string, several → an array).
    pub targets: Vec<String>,
    /// Add the invalid namespace to `PMIX_SPAWN_TARGET` (default pool too, §8.2.1.6).
    pub default_pool: bool,
    /// `PMIX_MAPBY`.
    pub map_by: Option<String>,
    /// Prefix forwarded output lines with the rank.
    pub tag_output: bool,
    /// Give up (and exit 8) after this many seconds.
    pub timeout_secs: Option<u64>,
    /// Print the namespace and return without waiting.
    pub detach: bool,
    /// Which rank receives the launcher's stdin.
    pub stdin: StdinTarget,
    /// A name for the job (`pdvm.job.name`, shown by pwatch on pdvm).
    pub job_name: Option<String>,
    /// CPUs (slots) per process (`PMIX_CPUS_PER_PROC`).
    pub cpus_per_proc: Option<u32>,
    /// `--immediate`: refuse at once when the allocation's slots are busy,
    /// instead of waiting for them.
    pub immediate: bool,
    /// `-o/-e`: the files the processes' output goes to.
    pub output_files: Option<super::output_pattern::OutputFiles>,
}

/// Where a job's stdin comes from (`pspawn --stdin`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StdinTarget {
    /// No process gets input (`PMIX_STDIN_TGT` = `none`).
    #[default]
    None,
    /// This rank gets the launcher's stdin (`PMIX_STDIN_TGT` = the rank).
    Rank(u32),
    /// Every rank gets a copy (`PMIX_STDIN_TGT` = `all`, prun's `--stdin all`).
    All,
}

/// One release-family request (prelease): RELEASE, REQ_CANCEL or REAQUIRE.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReleaseRequest {
    /// [`Directive::Release`], [`Directive::ReqCancel`] or [`Directive::Reaquire`].
    pub directive: Directive,
    /// `PMIX_ALLOC_ID`.
    pub alloc_id: Option<String>,
    /// `PMIX_ALLOC_REQ_ID`.
    pub request_id: Option<String>,
    /// `PMIX_ALLOC_NUM_NODES` for a partial release.
    pub nodes: Option<u64>,
    /// `PMIX_ALLOC_NODE_LIST` for a partial release.
    pub nodelist: Vec<String>,
}

crate::proto::enums::pmix_enum! {
    /// Event kinds pwatch can select with `--event`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
    pub enum EventKind {
        /// `PMIX_ALLOC_TIMEOUT_WARNING` (-194).
        TimeoutWarning => ["timeout-warning"],
        /// `PMIX_EVENT_JOB_END` (-145).
        JobEnd => ["job-end"],
        /// Allocation changes (granted, extended, released, reclaimed).
        Alloc => ["alloc"],
        /// Node changes (joined, left, unreserved).
        Node => ["node"],
        /// Everything.
        Any => ["any"],
    }
    strings {
        /// The name used on the command line, in JSON (`"event"`) and in `PWATCH_EVENT`.
        name,
    }
}

/// What `pwatch --status` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum StatusWhat {
    /// Reservations: id, owning namespace, owner set, inheritance, share, nodes, expiry.
    Reservations,
    /// Namespaces (jobs).
    Namespaces,
    /// Nodes.
    Nodes,
    /// Scheduler queues: nodes, free nodes, pending requests (like `sinfo`).
    Scheduler,
    /// All four.
    All,
}

crate::proto::enums::pmix_enum! {
    /// A state `pwatch --status --state` keeps (each names rows of one table).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
    pub enum StatusState {
        /// Reservations waiting in the scheduler's queue.
        Queued => ["queued"],
        /// Reservations granted, owner alive.
        Active => ["active"],
        /// Reservations whose owner ended, kept for its running descendants.
        Draining => ["draining"],
        /// Namespaces (jobs) running.
        Running => ["running"],
        /// Namespaces being killed.
        Killing => ["killing"],
        /// Namespaces that ended (implies --all).
        Ended => ["terminated"],
        /// Nodes with no slot in use.
        Idle => ["idle"],
        /// Nodes with slots in use.
        Busy => ["busy"],
    }
    strings {
        /// The word as the DVM reports it.
        word,
    }
}

impl StatusState {
    /// The table whose rows this state names.
    pub fn table(self) -> StatusWhat {
        match self {
            StatusState::Queued | StatusState::Active | StatusState::Draining => {
                StatusWhat::Reservations
            }
            StatusState::Running | StatusState::Killing | StatusState::Ended => {
                StatusWhat::Namespaces
            }
            StatusState::Idle | StatusState::Busy => StatusWhat::Nodes,
        }
    }
}

/// What pwatch should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchRequest {
    /// Stream events.
    Events(EventWatch),
    /// Show status tables.
    Status(StatusWatch),
}

/// Event-stream mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventWatch {
    /// Kinds to show; empty never happens (defaults to `Any`).
    pub events: Vec<EventKind>,
    /// Only events about these allocation ids (empty: all).
    pub alloc_ids: Vec<String>,
    /// Only events about these request ids (empty: all).
    pub request_ids: Vec<String>,
    /// Only events about these namespaces (empty: all).
    pub nspaces: Vec<String>,
    /// Stop after this many events.
    pub count: Option<u64>,
    /// Stop after this many seconds (exit 8 if no event matched).
    pub timeout_secs: Option<u64>,
    /// Run through `sh -c` once per event, with the event's fields in
    /// `PWATCH_*` environment variables.
    pub exec: Option<String>,
    /// Answer each timeout warning with an EXTEND by this many seconds.
    pub extend_by_secs: Option<u64>,
    /// `PMIX_ALLOC_WARN_TIMEOUT`: arm the warning at start for each of
    /// `alloc_ids` (an EXTEND carrying only this attribute, which makes the
    /// watcher the requester) and re-arm it on each `extend_by_secs` EXTEND.
    pub warn_timeout: Option<u32>,
}

/// Status mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusWatch {
    /// Tables to show, expanded (never contains `All`).
    pub what: Vec<StatusWhat>,
    /// Refresh every so many seconds; `None` prints once.
    pub interval_secs: Option<u64>,
    /// Keep only rows in these states (empty: no filter); tables none of
    /// whose states is named are left out.
    pub states: Vec<StatusState>,
    /// Only what is mine (see `pwatch --mine`).
    pub mine: bool,
    /// Also namespaces that ended.
    pub all: bool,
}
