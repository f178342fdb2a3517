//! An allocation that ended without its holder asking, as the DVM
//! announced it (`PMIX_EVENT_SESSION_END`): expired on pdvm, or ended by
//! psched's node source with a cause (`psched.end.cause`: Slurm's
//! `scancel`, `TIMEOUT`, `NODE_FAIL`, preemption). The exit code and the
//! sentence the tools give for it.

use crate::cli::exit::Exit;
use crate::ops::events::Event;
use crate::proto::{keys, SessionEndCause, Status};

use super::events::EventFields;
use super::failure::Failure;

/// How an allocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocEnd {
    /// The DVM says it expired (`pdvm.ev.change` `expired`).
    pub expired: bool,
    /// The node source's cause, when it gave one.
    pub cause: Option<SessionEndCause>,
    /// The DVM's sentence (`PMIX_EVENT_TEXT_MESSAGE`).
    pub why: String,
}

impl AllocEnd {
    /// Released by an owner (through this palloc's holder).
    pub fn released() -> AllocEnd {
        AllocEnd {
            expired: false,
            cause: None,
            why: "released".into(),
        }
    }

    /// The end of `alloc_id` that `ev` announces, if it is one.
    pub fn of_event(ev: &Event, alloc_id: &str, now: f64) -> Option<AllocEnd> {
        if ev.status != Status::EVENT_SESSION_END
            || ev.get(keys::ALLOC_ID).and_then(|v| v.as_str()) != Some(alloc_id)
        {
            return None;
        }
        let f = EventFields::from_event(ev, now);
        let why = ev
            .get(keys::EVENT_TEXT_MESSAGE)
            .and_then(|v| v.as_str())
            .unwrap_or("the DVM ended it")
            .to_string();
        let cause = ev
            .get(keys::END_CAUSE)
            .and_then(|v| v.as_str())
            .and_then(SessionEndCause::from_word);
        Some(AllocEnd {
            expired: f.change.as_deref() == Some("expired"),
            cause,
            why,
        })
    }

    /// The exit code: 8 at a time limit, 10 cancelled or preempted, 1 for
    /// a node failure or another end of the node source's; 0 released.
    pub fn exit(&self) -> Exit {
        match (self.cause, self.expired) {
            (Some(SessionEndCause::TimeLimit), _) | (None, true) => Exit::TimedOut,
            (Some(SessionEndCause::Cancelled | SessionEndCause::Preempted), _) => Exit::Cancelled,
            (Some(SessionEndCause::NodeFailure | SessionEndCause::Other), _) => Exit::Other,
            (None, false) => Exit::Success,
        }
    }

    /// The failure to report for allocation `alloc_id`, when its node
    /// source ended it (pdvm's expiry and a release keep their exit
    /// without an error line).
    pub fn failure(&self, alloc_id: &str) -> Option<Failure> {
        let cause = self.cause?;
        Some(Failure::with(
            self.exit(),
            None,
            format!(
                "allocation {alloc_id} was ended by the scheduler's node source ({}): {}",
                cause.slurm_word(),
                self.why
            ),
        ))
    }
}

/// The failure of job `ns`, stopped because its allocation `alloc_id`
/// ended while it ran (exit 8, as at a time limit), with why; the node
/// source's cause and exit when it gave one (see [`AllocEnd::failure`]).
/// The one sentence for every engine: pdvm stops the job with SIGTERM,
/// PRRTE master announces status 0 for the processes its session's end
/// killed, so the job's own status does not tell.
pub fn stopped_job(end: Option<&AllocEnd>, ns: &str, alloc_id: &str, status: i32) -> Failure {
    if let Some(mut f) = end.and_then(|e| e.failure(alloc_id)) {
        f.message = format!("job {ns} was stopped (status {status}): {}", f.message);
        return f;
    }
    let why = end.map_or("its time limit was reached, or it was released", |e| {
        e.why.as_str()
    });
    let hint = if end.is_none_or(|e| e.expired) {
        "; extend it with `palloc --extend ID -t DURATION` next time"
    } else {
        ""
    };
    Failure::with(
        Exit::TimedOut,
        None,
        format!(
            "job {ns} was stopped by the DVM: allocation {alloc_id} ended while it ran ({why}){hint}"
        ),
    )
}

/// The sentence of a [`crate::proto::status::NODES_LOST`] event for
/// `alloc_id` (psched: Slurm took some of its nodes; it goes on), if `ev`
/// is one.
pub fn nodes_lost(ev: &Event, alloc_id: &str) -> Option<String> {
    if ev.status != crate::proto::status::NODES_LOST
        || ev.get(keys::ALLOC_ID).and_then(|v| v.as_str()) != Some(alloc_id)
    {
        return None;
    }
    let said = |k: &str| ev.get(k).and_then(|v| v.as_str()).map(String::from);
    said(keys::EVENT_TEXT_MESSAGE)
        .or_else(|| said(keys::NODE_LIST).map(|n| format!("{n} taken away by the scheduler")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(cause: Option<SessionEndCause>, expired: bool) -> AllocEnd {
        AllocEnd {
            expired,
            cause,
            why: "w".into(),
        }
    }

    #[test]
    fn a_lost_node_is_said_for_its_allocation_only() {
        let ev = Event {
            status: crate::proto::status::NODES_LOST,
            source: crate::codec::Proc {
                nspace: "dvm@0".into(),
                rank: 0,
            },
            info: vec![
                crate::codec::Info::new(keys::ALLOC_ID, "slurm.1"),
                crate::codec::Info::new(keys::NODE_LIST, "n2"),
            ],
        };
        assert_eq!(
            nodes_lost(&ev, "slurm.1").as_deref(),
            Some("n2 taken away by the scheduler")
        );
        assert_eq!(nodes_lost(&ev, "slurm.2"), None);
        assert_eq!(AllocEnd::of_event(&ev, "slurm.1", 0.0), None);
    }

    #[test]
    fn each_cause_has_its_exit_code() {
        let code = |c, e| end(c, e).exit().code();
        assert_eq!(code(Some(SessionEndCause::TimeLimit), true), 8);
        assert_eq!(code(None, true), 8);
        assert_eq!(code(Some(SessionEndCause::Cancelled), false), 10);
        assert_eq!(code(Some(SessionEndCause::Preempted), false), 10);
        assert_eq!(code(Some(SessionEndCause::NodeFailure), false), 1);
        assert_eq!(code(None, false), 0);
        assert!(end(None, true).failure("a").is_none());
        let f = end(Some(SessionEndCause::Cancelled), false)
            .failure("a")
            .unwrap();
        assert!(f.message.contains("CANCELLED"), "{}", f.message);
    }
}
