//! Typed process identity on pdvm's side: a namespace plus a rank that is
//! either one process or the distinguished wildcard ("every rank").
//!
//! Peers, pending replies and event targets are named with [`ProcName`], so
//! "does this connection carry that process" is one method
//! ([`ProcName::covers`]) instead of tuple comparisons spread over the server.

use std::fmt;

use crate::codec::{Proc, RANK_WILDCARD};

/// A rank: one process, or every process of the namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rank {
    /// One process.
    Of(u32),
    /// Every process (`PMIX_RANK_WILDCARD` on the wire).
    Wildcard,
}

impl Rank {
    /// From the wire value (`PMIX_RANK_WILDCARD` maps to [`Rank::Wildcard`]).
    pub fn from_wire(r: u32) -> Rank {
        if r == RANK_WILDCARD {
            Rank::Wildcard
        } else {
            Rank::Of(r)
        }
    }

    /// The wire value.
    pub fn to_wire(self) -> u32 {
        match self {
            Rank::Of(r) => r,
            Rank::Wildcard => RANK_WILDCARD,
        }
    }
}

/// A process name: namespace and rank.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcName {
    nspace: String,
    rank: Rank,
}

/// Peers are named by their process name.
pub(crate) type PeerId = ProcName;

impl ProcName {
    /// Process `rank` of `nspace` (a wire rank; the wildcard is recognised).
    pub fn new(nspace: impl Into<String>, rank: u32) -> ProcName {
        ProcName {
            nspace: nspace.into(),
            rank: Rank::from_wire(rank),
        }
    }

    /// Every process of `nspace`.
    pub fn wildcard(nspace: impl Into<String>) -> ProcName {
        ProcName {
            nspace: nspace.into(),
            rank: Rank::Wildcard,
        }
    }

    /// The namespace.
    pub fn nspace(&self) -> &str {
        &self.nspace
    }

    /// The rank.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// The rank as sent on the wire.
    pub fn wire_rank(&self) -> u32 {
        self.rank.to_wire()
    }

    /// True when `self`, read as a target, covers process `p`: same
    /// namespace, and the same rank unless `self`'s is the wildcard.
    pub fn covers(&self, p: &ProcName) -> bool {
        self.nspace == p.nspace && (self.rank == Rank::Wildcard || self.rank == p.rank)
    }

    /// The codec's `pmix_proc_t`.
    pub fn to_proc(&self) -> Proc {
        Proc {
            nspace: self.nspace.clone(),
            rank: self.wire_rank(),
        }
    }
}

impl From<&Proc> for ProcName {
    fn from(p: &Proc) -> Self {
        ProcName::new(p.nspace.clone(), p.rank)
    }
}

impl From<(String, u32)> for ProcName {
    fn from((nspace, rank): (String, u32)) -> Self {
        ProcName::new(nspace, rank)
    }
}

impl From<&(String, u32)> for ProcName {
    fn from((nspace, rank): &(String, u32)) -> Self {
        ProcName::new(nspace.clone(), *rank)
    }
}

impl fmt::Display for ProcName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rank {
            Rank::Of(r) => write!(f, "{}:{r}", self.nspace),
            Rank::Wildcard => write!(f, "{}:*", self.nspace),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_covers_every_rank_of_its_namespace_only() {
        let all = ProcName::wildcard("a@1");
        assert!(all.covers(&ProcName::new("a@1", 0)));
        assert!(all.covers(&ProcName::new("a@1", 7)));
        assert!(!all.covers(&ProcName::new("a@2", 7)));
        let one = ProcName::new("a@1", 7);
        assert!(one.covers(&ProcName::new("a@1", 7)));
        assert!(!one.covers(&ProcName::new("a@1", 0)));
        assert_eq!(ProcName::new("a@1", RANK_WILDCARD), all);
        assert_eq!(all.wire_rank(), RANK_WILDCARD);
        assert_eq!(one.to_string(), "a@1:7");
        assert_eq!(all.to_string(), "a@1:*");
    }
}
