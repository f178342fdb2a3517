//! Slurm's job states and pending reasons (the names `squeue --json` gives
//! in `job_state` and `state_reason`, Slurm's own enumerations) and what
//! they mean for a PMIx request.

use crate::proto::status::Status;

/// A Slurm job's state (`job_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for resources (`PENDING`).
    Pending,
    /// Holding its nodes (`RUNNING`).
    Running,
    /// Stopped by an administrator, still holding its nodes (`SUSPENDED`).
    Suspended,
    /// Ended, or ending (`COMPLETING`, `COMPLETED`, `CANCELLED`, `TIMEOUT`,
    /// `FAILED`, `NODE_FAIL`, `PREEMPTED`, `BOOT_FAIL`, `DEADLINE`,
    /// `OUT_OF_MEMORY`, or a state this version does not know).
    Ended(EndCause),
}

/// Why a Slurm job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndCause {
    /// Its time limit passed (`TIMEOUT`, `DEADLINE`).
    TimeLimit,
    /// Cancelled (`CANCELLED`: `scancel`, by its owner or an administrator).
    Cancelled,
    /// A node failed (`NODE_FAIL`, `BOOT_FAIL`).
    NodeFailure,
    /// Preempted by another job (`PREEMPTED`).
    Preempted,
    /// Anything else (`COMPLETED`, `COMPLETING`, `FAILED`, …).
    Other,
}

impl JobState {
    /// The state `squeue --json` names `s`.
    pub fn from_slurm(s: &str) -> JobState {
        match s {
            "PENDING" | "CONFIGURING" | "REQUEUED" | "RESIZING" => JobState::Pending,
            "RUNNING" => JobState::Running,
            "SUSPENDED" => JobState::Suspended,
            "TIMEOUT" | "DEADLINE" => JobState::Ended(EndCause::TimeLimit),
            "CANCELLED" => JobState::Ended(EndCause::Cancelled),
            "NODE_FAIL" | "BOOT_FAIL" => JobState::Ended(EndCause::NodeFailure),
            "PREEMPTED" => JobState::Ended(EndCause::Preempted),
            _ => JobState::Ended(EndCause::Other),
        }
    }
}

/// What a pending reason means for the request waiting on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// It may still be granted: keep waiting.
    Wait,
    /// Slurm will never grant it as asked: refuse with this status.
    Refuse(Status),
}

/// The meaning of Slurm's pending reason `reason` (`state_reason`).
pub fn pending(reason: &str) -> Pending {
    match reason {
        // Asks beyond what the partition allows.
        "PartitionTimeLimit" | "BadConstraints" | "PartitionConfig" => {
            Pending::Refuse(Status::ERR_BAD_PARAM)
        }
        "PartitionNodeLimit" => Pending::Refuse(Status::ERR_OUT_OF_RESOURCE),
        "PartitionDown" | "PartitionInactive" => Pending::Refuse(Status::ERR_NOT_AVAILABLE),
        "InvalidAccount" | "InvalidQOS" | "AccountNotAllowed" | "QOSNotAllowed" => {
            Pending::Refuse(Status::ERR_NO_PERMISSIONS)
        }
        // Resources, Priority, Dependency, BeginTime, JobHeld*, limits of an
        // association, ReqNodeNotAvail (a node down may come back), …
        _ => Pending::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_reasons_map() {
        assert_eq!(JobState::from_slurm("RUNNING"), JobState::Running);
        assert_eq!(
            JobState::from_slurm("TIMEOUT"),
            JobState::Ended(EndCause::TimeLimit)
        );
        assert_eq!(pending("Resources"), Pending::Wait);
        assert_eq!(
            pending("PartitionTimeLimit"),
            Pending::Refuse(Status::ERR_BAD_PARAM)
        );
    }
}
