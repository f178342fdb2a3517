//! Inputs and outputs of the DVM model: requesters, attributes, effects.

use serde::Serialize;

/// What kind of process issues a request (§8.2.1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum RequesterClass {
    /// A PMIx tool: its namespace was registered when it connected.
    Tool,
    /// A process of a running job.
    Application,
    /// The scheduler: an implicit owner of every session (§8.2.1.7).
    Scheduler,
}

/// The process issuing a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Requester {
    /// Its namespace.
    pub nspace: String,
    /// Its rank within the namespace.
    pub rank: u32,
    /// Tool, application or scheduler.
    pub class: RequesterClass,
}

impl Requester {
    /// A tool requester (rank 0).
    pub fn tool(nspace: &str) -> Self {
        Requester {
            nspace: nspace.to_string(),
            rank: 0,
            class: RequesterClass::Tool,
        }
    }

    /// An application requester.
    pub fn app(nspace: &str, rank: u32) -> Self {
        Requester {
            nspace: nspace.to_string(),
            rank,
            class: RequesterClass::Application,
        }
    }

    /// The scheduler as requester.
    pub fn scheduler(nspace: &str) -> Self {
        Requester {
            nspace: nspace.to_string(),
            rank: 0,
            class: RequesterClass::Scheduler,
        }
    }
}

use crate::proto::Inheritance;

/// The attributes of an allocation request (one type for every end).
pub use crate::proto::AllocAttrs;

/// How an allocation request was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum AllocStatus {
    /// Granted now; these nodes were added.
    Granted {
        /// Names of the nodes added by this request.
        nodes: Vec<String>,
    },
    /// Waiting in the scheduler's queue; an [`Effect::Granted`] follows later.
    Queued,
    /// Nodes were released.
    Released {
        /// Names of the nodes released.
        nodes: Vec<String>,
    },
    /// Queued requests were cancelled.
    Cancelled {
        /// How many queued requests were removed.
        count: usize,
    },
}

/// The answer to an allocation request (§8.2.1.5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AllocOutcome {
    /// `PMIX_ALLOC_ID` of the destination allocation.
    pub alloc_id: String,
    /// The request's `PMIX_ALLOC_REQ_ID`, echoed.
    pub req_id: Option<String>,
    /// What happened.
    pub status: AllocStatus,
    /// Everything else the server must do.
    pub effects: Vec<Effect>,
}

impl AllocOutcome {
    /// The outcome of a REQ_CANCEL sent by `by`: every request it dropped
    /// tells its requester who withdrew it.
    pub(crate) fn cancelled_by(mut self, by: &Requester) -> Self {
        for f in &mut self.effects {
            if let Effect::RequestDropped { cancelled_by, .. } = f {
                *cancelled_by = Some((by.nspace.clone(), by.rank));
            }
        }
        self
    }
}

/// How a reservation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EndHow {
    /// Nodes returned to the scheduler (scheduler nodes leave the DVM, carved
    /// startup nodes revert to the default session).
    Released,
    /// Nodes stay in the DVM and join the default session.
    Unreserved,
    /// The allocation was still queued: it is simply dropped.
    Cancelled,
}

/// Why a reservation ended (§8.2.1.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EndWhy {
    /// Trigger 1: an owner issued PMIX_ALLOC_RELEASE.
    OwnerRelease,
    /// The scheduler released it (an implicit owner of every reservation,
    /// §8.2.1.7: `pdvm --release`).
    SchedulerRelease,
    /// Trigger 2: the DVM tears down.
    Teardown,
    /// Trigger 3: the scheduler's time limit expired.
    Expired,
    /// The namespace-termination disposition fired.
    Disposition(Inheritance),
    /// A queued request was cancelled with PMIX_ALLOC_REQ_CANCEL.
    RequestCancelled,
}

/// Something the server must carry out or report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Effect {
    /// Terminate this job: nodes it runs on are leaving the DVM.
    KillJob {
        /// The job.
        nspace: String,
        /// Human-readable reason.
        reason: String,
    },
    /// A reservation (or shared allocation) ended.
    ReservationEnded {
        /// Its id.
        alloc_id: String,
        /// Released, unreserved or cancelled.
        how: EndHow,
        /// The trigger.
        why: EndWhy,
    },
    /// Nodes joined the DVM (scheduler nodes granted).
    NodesJoined {
        /// The allocation they joined for.
        alloc_id: String,
        /// Node names.
        nodes: Vec<String>,
    },
    /// Nodes left the DVM (returned to the scheduler).
    NodesLeft {
        /// Node names.
        nodes: Vec<String>,
    },
    /// Nodes of an ended reservation that stay in the DVM and join the
    /// default session (a `*_DEFAULT` disposition, or carved startup nodes
    /// given back).
    NodesUnreserved {
        /// The allocation they belonged to.
        alloc_id: String,
        /// Node names.
        nodes: Vec<String>,
    },
    /// Directed `PMIX_ALLOC_TIMEOUT_WARNING` to the requester only.
    Warn {
        /// Recipient process (nspace, rank).
        to: (String, u32),
        /// `PMIX_ALLOC_ID`.
        alloc_id: String,
        /// `PMIX_ALLOC_REQ_ID` of the original request, when supplied.
        req_id: Option<String>,
        /// `PMIX_TIME_REMAINING`.
        remaining_secs: u32,
    },
    /// A queued request has been granted: reply to the waiting requester.
    Granted {
        /// Recipient process (nspace, rank).
        to: (String, u32),
        /// `PMIX_ALLOC_ID`.
        alloc_id: String,
        /// The request's `PMIX_ALLOC_REQ_ID`, echoed.
        req_id: Option<String>,
        /// Nodes added.
        nodes: Vec<String>,
    },
    /// A queued request will never be granted: reply with `PMIX_ERR_...`
    /// (`PMIX_ERR_NOT_FOUND` once its allocation is gone,
    /// `PMIX_ERR_JOB_CANCELED` when a REQ_CANCEL withdrew it) to the
    /// requester.
    RequestDropped {
        /// Recipient process (nspace, rank).
        to: (String, u32),
        /// `PMIX_ALLOC_ID`.
        alloc_id: String,
        /// The request's `PMIX_ALLOC_REQ_ID`, echoed.
        req_id: Option<String>,
        /// Who withdrew it with `PMIX_ALLOC_REQ_CANCEL` (nspace, rank), sent
        /// back as `PMIX_REQUESTOR`; `None` when it was dropped otherwise.
        cancelled_by: Option<(String, u32)>,
    },
}
