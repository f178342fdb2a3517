//! Where psched's nodes come from, behind one narrow interface
//! ([`NodeSource`]): its own simulated pool (`State`, over the pure
//! scheduler) or the site's Slurm (`SlurmBackend`). A source speaks
//! psched's terms, not the wire's: it is asked for nodes, given nodes back
//! and asked what happened; the DVM's requests, their tags and answers stay
//! in [`super::requests`]. Times are ms since the epoch, always the core's
//! clock: a source never reads one of its own.

use crate::proto::status::Status;
use crate::proto::AllocAttrs;

use super::ledger_change::LedgerChange;
pub use super::out::{Ending, UnaskedEnd};

/// A request for nodes: a new allocation, or more for one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ask {
    /// The allocation to extend (in time, nodes or both); none for a new
    /// one.
    pub extend: Option<String>,
    /// What is asked (nodes, time, partition, the node source's options).
    pub attrs: AllocAttrs,
}

/// Why a source will not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The status the requester hears.
    pub status: Status,
    /// The sentence it shows, when the source gives one.
    pub why: Option<String>,
}

impl Refusal {
    /// A refusal as `status` alone.
    pub fn bare(status: Status) -> Refusal {
        Refusal { status, why: None }
    }

    /// A refusal as `status`, saying `why`.
    pub fn saying(status: Status, why: impl Into<String>) -> Refusal {
        Refusal {
            status,
            why: Some(why.into()),
        }
    }
}

/// A source's answer to an [`Ask`].
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Granted now: `nodes` added to `alloc_id` (all of a new one's; none
    /// for an extension in time only).
    Granted {
        /// The allocation (the source names a new one).
        alloc_id: String,
        /// The nodes added.
        nodes: Vec<String>,
    },
    /// It waits: [`SourceEvent::Ready`] or [`SourceEvent::Refused`] says
    /// the end of it.
    Waits {
        /// The allocation (the source names a new one).
        alloc_id: String,
    },
    /// Refused.
    Refused(Refusal),
}

/// Who gives an allocation back whole (the source says so in its log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// Its owner (a RELEASE).
    Owner,
    /// The DVM (its session ended, or it refused the grant).
    Dvm,
    /// psched's administrator (`psched --release`).
    Admin,
}

/// What of an allocation goes back to the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Give<'a> {
    /// All of it: the allocation ends.
    All(By),
    /// These nodes of it.
    Nodes(&'a [String]),
    /// The allocation ends but the DVM keeps its nodes (its owner's
    /// DEFAULT or CHILD_DEFAULT): held until that DVM is gone.
    KeptByDvm,
}

/// What a release gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    /// The nodes that left the allocation.
    pub nodes: Vec<String>,
    /// True when the allocation ended.
    pub whole: bool,
}

/// What the DVM side tells a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard<'a> {
    /// psched (re)attached to a DVM, another one than before when
    /// `new_dvm`: what that DVM kept goes back.
    Attached {
        /// Another DVM than the one the ledger names.
        new_dvm: bool,
    },
    /// These nodes' daemons did not come up: never grant them again while
    /// this DVM lives.
    Broken(&'a [String]),
}

/// Something a source decided or learned, taken by
/// [`NodeSource::what_happened`].
#[derive(Debug, Clone, PartialEq)]
pub enum SourceEvent {
    /// The waiting ask of `alloc_id` was granted `nodes` (none: an
    /// extension in time only).
    Ready {
        /// The allocation.
        alloc_id: String,
        /// The nodes added.
        nodes: Vec<String>,
    },
    /// The waiting ask of `alloc_id` will never be granted (a new
    /// allocation is gone with it).
    Refused {
        /// The allocation.
        alloc_id: String,
        /// Why.
        refusal: Refusal,
    },
    /// The new allocation `alloc_id` still waits, for a reason that
    /// changed.
    Waiting {
        /// The allocation.
        alloc_id: String,
        /// The source's reason, its identifier (Slurm's `Resources`).
        reason: String,
        /// The sentence the requester shows.
        text: String,
    },
    /// The source ended an allocation on its own (expiry, a Slurm job
    /// ended).
    Ended(Ending),
    /// The source took `nodes` of `alloc_id` away on its own.
    Lost {
        /// The allocation.
        alloc_id: String,
        /// The nodes.
        nodes: Vec<String>,
    },
    /// `alloc_id` ends in `secs` seconds (the requester's time).
    Warn {
        /// The allocation.
        alloc_id: String,
        /// Seconds left.
        secs: u32,
    },
    /// The source stopped answering (`up` false) or answers again: every
    /// tool hears `text`, or only the requester of `alloc_id`'s waiting
    /// ask.
    Reach {
        /// Whether it answers again.
        up: bool,
        /// The sentence.
        text: String,
        /// The allocation whose waiting requester alone hears it.
        alloc_id: Option<String>,
    },
    /// A change of the ledger (the source's part of it).
    Book(LedgerChange),
}

/// A node source: see the module documentation.
pub trait NodeSource {
    /// Ask for nodes (a new allocation, or more for one).
    fn grant(&mut self, ask: &Ask, now: u64) -> Decision;
    /// Give back `what` of allocation `alloc_id`.
    fn release(&mut self, alloc_id: &str, what: Give<'_>, now: u64) -> Result<Released, Refusal>;
    /// Withdraw the ask of `alloc_id` that still waits (a new allocation
    /// is gone with it).
    fn cancel(&mut self, alloc_id: &str, now: u64) -> Result<(), Refusal>;
    /// Fire what fell due by `now` and take what the source decided or
    /// learned since the last call (grants that became ready, its own
    /// ends, lost nodes, warnings, its ledger changes), in order.
    fn what_happened(&mut self, now: u64) -> Vec<SourceEvent>;
    /// When the source next wants [`NodeSource::what_happened`], asked at
    /// `now`.
    fn next_deadline(&self, now: u64) -> Option<u64>;
    /// A descriptor that turns readable when the source has news for
    /// [`NodeSource::what_happened`] (answers from threads of its own);
    /// none by default.
    fn wake_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }
    /// What the DVM side learned ([`Heard`]).
    fn hear(&mut self, news: Heard<'_>);
    /// Its idle nodes: their daemons start as soon as psched attaches
    /// (none for a source that lends nodes per grant).
    fn idle(&self) -> Vec<String> {
        Vec::new()
    }
}
