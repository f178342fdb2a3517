//! A job that lost processes because the scheduler's node source took
//! their node away (psched on Slurm: a node marked DOWN left the
//! allocation). psched announces it to every tool just before it kills
//! them ([`crate::proto::status::JOB_NODES_LOST`]); PRRTE master then
//! announces status 0 for the killed processes. pspawn reports the job's
//! end as the node failure instead: exit 1, as for an allocation Slurm
//! ended for a failed node (`NODE_FAIL`), naming the node.

use crate::cli::exit::Exit;
use crate::ops::events::Event;
use crate::proto::keys;
use crate::proto::status::JOB_NODES_LOST;

use crate::app::launch::Followed;
use crate::app::Failure;

/// What a [`JOB_NODES_LOST`] notice about job `ns` says, if `ev` is one.
pub(crate) fn notice(ev: &Event, ns: &str) -> Option<String> {
    let said = |k: &str| ev.get(k).and_then(|v| v.as_str());
    if ev.status != JOB_NODES_LOST || said(keys::NSPACE) != Some(ns) {
        return None;
    }
    let text = said(keys::EVENT_TEXT_MESSAGE).map(String::from);
    Some(text.unwrap_or_else(|| {
        format!(
            "{} taken away by the scheduler's node source (NODE_FAIL)",
            said(keys::NODE_LIST).unwrap_or("a node")
        )
    }))
}

/// The failure of a job that ended after losing processes to a node the
/// node source took (`lost`: the notice's sentence): exit 1, whatever its
/// status (the processes left may end well, or fail for the missing
/// peers; the job did not run as asked).
pub(crate) fn failure(followed: &Followed, lost: Option<&str>) -> Option<Failure> {
    let (Followed::Ended(job), Some(lost)) = (followed, lost) else {
        return None;
    };
    Some(Failure::with(
        Exit::Other,
        None,
        format!(
            "job {} was stopped (status {}): {lost}",
            job.nspace, job.exit_status
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Info, Proc};

    #[test]
    fn a_notice_counts_for_its_job_alone() {
        let ev = Event {
            status: JOB_NODES_LOST,
            source: Proc {
                nspace: "prte-1@0".into(),
                rank: 0,
            },
            info: vec![
                Info::new(keys::NSPACE, "prte-1@3"),
                Info::new(keys::NODE_LIST, "node03"),
            ],
        };
        assert_eq!(
            notice(&ev, "prte-1@3").as_deref(),
            Some("node03 taken away by the scheduler's node source (NODE_FAIL)")
        );
        assert_eq!(notice(&ev, "prte-1@4"), None);
    }
}
