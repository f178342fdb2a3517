//! What psched decides, as types: the DVM side ([`super::dvm`]) turns
//! these into messages, one DVM change at a time. A node source never
//! builds an answer itself ([`super::requests`] does), so the pool and
//! Slurm share one conversation with PRRTE.

use crate::codec::Info;
use crate::proto::SessionEndCause;

/// Why an allocation ended without its owner asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaskedEnd {
    /// Its time limit was reached.
    Expired,
    /// The administrator released it (`psched --release`).
    Admin,
    /// The node source ended it (a Slurm job ended), for this cause.
    Source(SessionEndCause),
}

impl UnaskedEnd {
    /// The change word the tools read (`pdvm.ev.change`): pdvm's words.
    pub fn change(self) -> &'static str {
        match self {
            UnaskedEnd::Expired | UnaskedEnd::Source(SessionEndCause::TimeLimit) => "expired",
            UnaskedEnd::Admin | UnaskedEnd::Source(_) => "released",
        }
    }

    /// The cause the requester's tools read (`psched.end.cause`), for an
    /// end the node source decided.
    pub fn cause(self) -> Option<SessionEndCause> {
        match self {
            UnaskedEnd::Source(c) => Some(c),
            UnaskedEnd::Expired | UnaskedEnd::Admin => None,
        }
    }

    /// The sentence the requester's tools show.
    pub fn text(self) -> &'static str {
        match self {
            UnaskedEnd::Expired => "the time limit was reached: the scheduler reclaimed it",
            UnaskedEnd::Admin => "the scheduler's administrator released it",
            UnaskedEnd::Source(c) => match c {
                SessionEndCause::TimeLimit => {
                    "Slurm ended its job: TIMEOUT, its time limit was reached"
                }
                SessionEndCause::Cancelled => "Slurm ended its job: CANCELLED (scancel)",
                SessionEndCause::NodeFailure => "Slurm ended its job: NODE_FAIL, a node failed",
                SessionEndCause::Preempted => "Slurm ended its job: PREEMPTED by another job",
                SessionEndCause::Other => "Slurm ended its job",
            },
        }
    }
}

/// Nodes for allocation `alloc_id` in answer to the DVM's request on `tag`
/// (a NEW, an EXTEND adding nodes, or a time-only EXTEND when `nodes` is
/// empty); `echo` is what PRRTE must read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Granted {
    /// The DVM's request.
    pub tag: u32,
    /// The allocation.
    pub alloc_id: String,
    /// The nodes added (all of them for a NEW).
    pub nodes: Vec<String>,
    /// The requester's infos to echo (request id, target, share,
    /// inheritance).
    pub echo: Vec<Info>,
    /// True for a NEW (a new reservation, a new session in PRRTE).
    pub new: bool,
}

/// An allocation ended without its owner asking (its time limit, the
/// administrator, the node source).
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// The allocation.
    pub alloc_id: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// Why.
    pub why: UnaskedEnd,
}

/// A decision that the DVM must hear of.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A plain answer to the DVM's request on `tag` (a refusal, an EXTEND
    /// in time only, a cancel): already encoded, changes no node.
    Answer(u32, Vec<u8>),
    /// A grant (see [`Granted`]).
    Grant(Granted),
    /// The owner released `nodes` of `alloc_id` (all of it when `whole`),
    /// answering the request on `tag`.
    Release {
        /// The DVM's request.
        tag: u32,
        /// The allocation.
        alloc_id: String,
        /// The nodes that leave it.
        nodes: Vec<String>,
        /// True when the allocation ends.
        whole: bool,
    },
    /// An allocation ended without its owner asking: its jobs stop, its
    /// nodes come back, its requester hears why.
    End(Ending),
    /// The node source took `nodes` away from `alloc_id` on its own (a
    /// node Slurm marked DOWN left a job on several nodes; Slurm ended the
    /// job of nodes the DVM retained): the work on those nodes is stopped
    /// and they are held idle; the allocation, if it runs, keeps the rest.
    Lost {
        /// The allocation.
        alloc_id: String,
        /// The nodes taken away.
        nodes: Vec<String>,
    },
    /// The DVM ended `alloc_id` by itself (its owner's NONE or CHILD
    /// disposition) and these nodes came back to the node source.
    Returned {
        /// The allocation.
        alloc_id: String,
        /// The nodes.
        nodes: Vec<String>,
        /// Its rule was NONE or CHILD: the jobs still running on these
        /// nodes are stopped before they are granted again (spec 001
        /// §8.2.1.9.2: nodes leaving the DVM; PRRTE master, told DEFAULT or
        /// CHILD_DEFAULT so that it keeps their daemons, leaves them
        /// running).
        stop: bool,
    },
    /// The NEW on `tag` still waits, for a reason its requester hears
    /// (only when the reason changes).
    Queued {
        /// The DVM's request.
        tag: u32,
        /// The node source's reason, its identifier (Slurm's `Resources`).
        reason: String,
        /// The sentence the requester's palloc shows.
        text: String,
    },
    /// The node source stopped answering (`up` false) or answers again
    /// (`up` true): every tool hears it, or, with `tag`, the requester of
    /// the request waiting on that tag alone; `text` is the sentence
    /// palloc shows.
    Source {
        /// Whether it answers again.
        up: bool,
        /// The sentence.
        text: String,
        /// The waiting request whose requester alone hears it.
        tag: Option<u32>,
    },
    /// The warning before `alloc_id` expires, `secs` seconds left.
    Warn {
        /// The allocation.
        alloc_id: String,
        /// Seconds left, in the requester's time.
        secs: u32,
    },
}
