//! Who waits for an answer of psched's (issue 46.2): the requesters of the
//! NEW requests queued now, kept in the ledger so that a psched that comes
//! back after a crash can tell them. PRRTE master keeps a request whose
//! scheduler went away for ever: PMIx binds the reply to the connection
//! the request went out on, and a DVM server completes nothing when a
//! tool's connection drops, so neither the old request's answer nor a
//! "lost" reaches its requester (docs/conformance.md P17). The restarted
//! psched sends each of them [`crate::proto::status::REQUEST_LOST`];
//! palloc then sends its request again.

use serde::{Deserialize, Serialize};

use crate::codec::{Info, Proc, WireVersion};
use crate::error::Result;
use crate::proto::keys;

/// A requester whose NEW psched had queued.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Waiter {
    /// The requesting process's namespace (a tool's own, for palloc).
    pub requester: String,
    /// Its rank.
    pub rank: u32,
    /// The request id it gave (`PMIX_ALLOC_REQ_ID`), when it gave one.
    #[serde(default)]
    pub req_id: Option<String>,
}

impl Waiter {
    /// The process to tell.
    pub fn proc(&self) -> Proc {
        Proc {
            nspace: self.requester.clone(),
            rank: self.rank,
        }
    }

    /// The sentence the requester shows.
    pub fn text(&self) -> String {
        let which = self.req_id.as_deref().map_or_else(
            || "the queued request".to_string(),
            |r| format!("queued request {r}"),
        );
        format!(
            "the scheduler restarted and lost {which} (PRRTE keeps no request for a scheduler \
that returns); send it again"
        )
    }

    /// The [`crate::proto::status::REQUEST_LOST`] event to this requester
    /// alone.
    pub fn notice(&self, wire: WireVersion) -> Result<Vec<u8>> {
        let text = self.text();
        let mut infos = vec![Info::new(keys::EVENT_TEXT_MESSAGE, text.as_str())];
        infos.extend(
            self.req_id
                .as_deref()
                .map(|r| Info::new(keys::ALLOC_REQ_ID, r)),
        );
        super::wire::notify_one(
            wire,
            crate::proto::status::REQUEST_LOST,
            &self.proc(),
            &infos,
        )
    }
}

/// The waiters to keep, in one order (the ledger is rewritten only when
/// it changes).
pub fn sorted(mut w: Vec<Waiter>) -> Vec<Waiter> {
    w.sort();
    w.dedup();
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_round_trips_and_its_notice_names_the_request() {
        let w = Waiter {
            requester: "palloc-1".into(),
            rank: 0,
            req_id: Some("r7".into()),
        };
        let j = serde_json::to_string(&w).unwrap();
        assert_eq!(serde_json::from_str::<Waiter>(&j).unwrap(), w);
        assert!(w.text().contains("queued request r7"), "{}", w.text());
        let b = w.notice(WireVersion::V51).unwrap();
        assert!(!b.is_empty());
    }
}
