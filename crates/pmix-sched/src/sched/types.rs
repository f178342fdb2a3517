//! Values exchanged between the DVM model and the simulated scheduler.

use serde::Serialize;

crate::proto::enums::pmix_enum! {
    /// Where a node managed by the scheduler comes from.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum NodeOrigin {
        /// One of the DVM's startup nodes, handed to the scheduler as carvable.
        /// It never leaves the DVM: when released it reverts to the default session.
        Startup => ["startup"],
        /// One of the scheduler's own nodes (`s001`…): it joins the DVM when
        /// granted and leaves it when returned.
        Scheduler => ["scheduler"],
    }
    strings {
        /// The word in records and JSON (`startup`, `scheduler`).
        word,
    }
}

/// What a request asks for in terms of nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeAsk {
    /// No nodes (an EXTEND that only lengthens time or renews a warning).
    Nothing,
    /// This many of the scheduler's own nodes, chosen by the scheduler.
    Count(u32),
    /// Exactly these nodes (scheduler nodes or carvable startup nodes).
    List(Vec<String>),
}

/// A request forwarded by the DVM to the scheduler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedRequest {
    /// The nodes wanted.
    pub ask: NodeAsk,
    /// Node names the scheduler must not choose for a count request.
    pub exclude: Vec<String>,
    /// Lifetime in seconds from grant (NEW) or extra lifetime (EXTEND).
    pub time_secs: Option<u32>,
    /// Seconds before expiry at which a warning is wanted.
    pub warn_secs: Option<u32>,
}

/// The immediate answer to a submitted request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submit {
    /// Granted now with these nodes (possibly none for a time-only EXTEND).
    Granted(Vec<String>),
    /// Not enough nodes are free: the request waits in the FIFO queue.
    Queued,
}

/// Something that happened inside the scheduler and that the DVM must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedEvent {
    /// The warning threshold of an allocation has been reached.
    WarnDue {
        /// The allocation concerned.
        alloc_id: String,
        /// Whole seconds left before expiry.
        remaining_secs: u32,
    },
    /// The allocation expired and the scheduler reclaimed these nodes.
    Expired {
        /// The allocation concerned.
        alloc_id: String,
        /// The nodes taken back.
        nodes: Vec<String>,
    },
    /// A queued request has now been granted.
    QueuedGranted {
        /// The allocation the request belongs to.
        alloc_id: String,
        /// The nodes granted.
        nodes: Vec<String>,
        /// True when the request was an EXTEND of an active allocation.
        extend: bool,
    },
}

/// Why the scheduler refused a request outright (never charged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedError {
    /// A listed node is not managed by the scheduler.
    UnknownNode,
    /// A node is listed twice, or listed and excluded.
    DuplicateNode,
    /// More nodes asked for than the scheduler could ever grant.
    TooMany,
    /// No allocation with this id is known.
    NoSuchAllocation,
    /// A time limit of zero seconds was asked for.
    ZeroTime,
    /// The allocation is still waiting in the queue.
    StillQueued,
    /// Nothing matching is waiting in the queue.
    NothingQueued,
    /// A partial release names nodes the allocation does not hold.
    NotInAllocation,
}

/// A read-only view of one scheduler allocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchedAllocView {
    /// The allocation id.
    pub alloc_id: String,
    /// Nodes currently granted.
    pub nodes: Vec<String>,
    /// Absolute expiry time in milliseconds, if bounded.
    pub expires_at_ms: Option<u64>,
    /// Warning threshold in seconds, if one was asked for.
    pub warn_secs: Option<u32>,
    /// True while the allocation waits for its first grant.
    pub queued: bool,
}

/// A read-only view of one request waiting in the queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SchedPendingView {
    /// The allocation it is for (a NEW's fresh id, or the id it extends).
    pub alloc_id: String,
    /// How many nodes it waits for.
    pub nodes: u32,
    /// The time limit asked for, in seconds.
    pub time_secs: Option<u32>,
    /// True for an EXTEND of a granted allocation.
    pub extend: bool,
    /// Why it waits, in the node source's words (psched on Slurm: Slurm's
    /// pending reason), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
