//! Slurm's job states and pending reasons (the identifiers Slurm gives in
//! `job_state` / `JobState=` and `state_reason` / `Reason=`, its own
//! enumerations) and what they mean for a PMIx request.
//!
//! Since Slurm 23.11 (JSON data parser v0.0.40) a state is an array: one
//! base state (`RUNNING`) and any flags (`COMPLETING`, `CONFIGURING`,
//! `REQUEUED`…); before, one word that names a flag instead of the base
//! state when a flag is set (`COMPLETING`). Both read through
//! [`JobState::from_words`]. A word psched does not know makes
//! [`JobState::Unknown`], which is never taken for an end.

use crate::proto::status::Status;
use crate::proto::SessionEndCause;

/// A Slurm job's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for resources (`PENDING`), or for its nodes to boot
    /// (`CONFIGURING`).
    Pending,
    /// Holding its nodes (`RUNNING`, also while `RESIZING`).
    Running,
    /// Stopped by an administrator, still holding its nodes (`SUSPENDED`).
    Suspended,
    /// Ended, or ending (`COMPLETING`, `COMPLETED`, `CANCELLED`, `TIMEOUT`,
    /// `FAILED`, `NODE_FAIL`, `PREEMPTED`, `BOOT_FAIL`, `DEADLINE`,
    /// `OUT_OF_MEMORY`).
    Ended(EndCause),
    /// Words psched does not know: nothing is concluded from them.
    Unknown(String),
}

/// Why a Slurm job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum EndCause {
    /// Its time limit passed (`TIMEOUT`, `DEADLINE`).
    TimeLimit,
    /// Cancelled (`CANCELLED`: `scancel`, by its owner or an administrator).
    Cancelled,
    /// A node failed (`NODE_FAIL`, `BOOT_FAIL`).
    NodeFailure,
    /// Preempted by another job (`PREEMPTED`), or put back in the queue
    /// (requeued) after it ran.
    Preempted,
    /// Slurm no longer knows the job (its record was purged, `MinJobAge`).
    Gone,
    /// Anything else that ends a job (`COMPLETED`, `FAILED`,
    /// `OUT_OF_MEMORY`, `COMPLETING` before 23.11).
    Other,
}

impl EndCause {
    /// Slurm's word for it, as `squeue` shows it.
    pub fn word(self) -> &'static str {
        match self {
            EndCause::TimeLimit => "TIMEOUT",
            EndCause::Cancelled => "CANCELLED",
            EndCause::NodeFailure => "NODE_FAIL",
            EndCause::Preempted => "PREEMPTED",
            EndCause::Gone => "no longer listed",
            EndCause::Other => "ended",
        }
    }

    /// The cause the requester's tools hear.
    pub fn session_cause(self) -> SessionEndCause {
        match self {
            EndCause::TimeLimit => SessionEndCause::TimeLimit,
            EndCause::Cancelled => SessionEndCause::Cancelled,
            EndCause::NodeFailure => SessionEndCause::NodeFailure,
            EndCause::Preempted => SessionEndCause::Preempted,
            EndCause::Gone | EndCause::Other => SessionEndCause::Other,
        }
    }
}

/// The base state a word names, if it names one.
fn base(word: &str) -> Option<JobState> {
    Some(match word {
        "PENDING" => JobState::Pending,
        "RUNNING" => JobState::Running,
        "SUSPENDED" => JobState::Suspended,
        "TIMEOUT" | "DEADLINE" => JobState::Ended(EndCause::TimeLimit),
        "CANCELLED" => JobState::Ended(EndCause::Cancelled),
        "NODE_FAIL" | "BOOT_FAIL" => JobState::Ended(EndCause::NodeFailure),
        "PREEMPTED" => JobState::Ended(EndCause::Preempted),
        "COMPLETED" | "FAILED" | "OUT_OF_MEMORY" => JobState::Ended(EndCause::Other),
        _ => return None,
    })
}

impl JobState {
    /// A job Slurm shows only as ending (`COMPLETING`: before 23.11 the flag
    /// hides its base state) whose reason tells why it ends: that cause
    /// (`TimeLimit`, `DeadLine`: its time limit; `NodeDown`: a node failed).
    /// Seen under load, when `COMPLETING` lasts: psched said "ended" for a
    /// job Slurm ended at its time limit.
    pub fn with_reason(self, reason: &str) -> JobState {
        let id = reason.split(',').next().unwrap_or_default().trim();
        match (self, id) {
            (JobState::Ended(EndCause::Other), "TimeLimit" | "DeadLine") => {
                JobState::Ended(EndCause::TimeLimit)
            }
            (JobState::Ended(EndCause::Other), "NodeDown") => {
                JobState::Ended(EndCause::NodeFailure)
            }
            (s, _) => s,
        }
    }

    /// The state Slurm names `words`: one word (Slurm 22.05) or a base
    /// state and its flags (23.11 and later).
    pub fn from_words<S: AsRef<str>>(words: &[S]) -> JobState {
        let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
        let has = |w: &str| words.contains(&w);
        let found = words.iter().find_map(|w| base(w));
        match found {
            // Booting nodes: not usable yet.
            Some(JobState::Running) if has("CONFIGURING") => JobState::Pending,
            // Ending: its nodes are being given back.
            Some(JobState::Running) if has("COMPLETING") => JobState::Ended(EndCause::Other),
            Some(s) => s,
            // Before 23.11 a set flag hides the base state.
            None if has("COMPLETING") => JobState::Ended(EndCause::Other),
            None if has("CONFIGURING") || has("REQUEUED") || has("REQUEUE_HOLD") => {
                JobState::Pending
            }
            None if has("RESIZING") => JobState::Running,
            None => JobState::Unknown(words.join(",")),
        }
    }
}

/// Slurm's reason for a job's state (`state_reason`), the identifiers of
/// its `job_state_reason` enumeration that matter to psched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// No reason (`None`).
    None,
    /// Waiting for nodes (`Resources`, `Priority`, `ReqNodeNotAvail`,
    /// `Reservation`, `BeginTime`, `Dependency`, `JobHeld*`, limits…): the
    /// identifier as Slurm gives it.
    Waiting(String),
    /// A limit of the partition the request exceeds (`PartitionTimeLimit`,
    /// `PartitionConfig`, `BadConstraints`).
    BeyondPartition(String),
    /// More nodes than the partition has (`PartitionNodeLimit`).
    TooManyNodes,
    /// The partition does not run jobs (`PartitionDown`, `PartitionInactive`).
    PartitionUnavailable(String),
    /// The account or QOS is not allowed (`InvalidAccount`, `InvalidQOS`,
    /// `AccountNotAllowed`, `QOSNotAllowed`).
    NotAllowed(String),
}

impl Reason {
    /// The reason Slurm names `s` (22.05's text output appends details
    /// after a comma: `ReqNodeNotAvail,_UnavailableNodes:…`).
    pub fn from_slurm(s: &str) -> Reason {
        let id = s.split(',').next().unwrap_or_default().trim();
        let own = id.to_string();
        match id {
            "" | "None" => Reason::None,
            "PartitionTimeLimit" | "BadConstraints" | "PartitionConfig" => {
                Reason::BeyondPartition(own)
            }
            "PartitionNodeLimit" => Reason::TooManyNodes,
            "PartitionDown" | "PartitionInactive" => Reason::PartitionUnavailable(own),
            "InvalidAccount" | "InvalidQOS" | "AccountNotAllowed" | "QOSNotAllowed" => {
                Reason::NotAllowed(own)
            }
            _ => Reason::Waiting(own),
        }
    }

    /// Slurm's identifier, for logs and status.
    pub fn word(&self) -> &str {
        match self {
            Reason::None => "None",
            Reason::TooManyNodes => "PartitionNodeLimit",
            Reason::Waiting(s)
            | Reason::BeyondPartition(s)
            | Reason::PartitionUnavailable(s)
            | Reason::NotAllowed(s) => s,
        }
    }

    /// Slurm's identifier followed by what it means in plain words, as
    /// squeue's manual explains its reason codes: `Resources (waiting for
    /// nodes to become free)`; the identifier alone when psched does not
    /// know it.
    pub fn said(&self) -> String {
        self.said_with(None)
    }

    /// [`Reason::said`] with Slurm's detail after the identifier
    /// (`ReqNodeNotAvail, Reserved for maintenance (…)`).
    pub fn said_with(&self, detail: Option<&str>) -> String {
        let mut s = self.word().to_string();
        if let Some(d) = detail {
            s.push_str(", ");
            s.push_str(d);
        }
        if let Some(m) = meaning(self.word()) {
            s.push_str(&format!(" ({m})"));
        }
        s
    }

    /// What the reason means for the request waiting on it.
    pub fn pending(&self) -> Pending {
        match self {
            Reason::None | Reason::Waiting(_) => Pending::Wait,
            Reason::BeyondPartition(_) => Pending::Refuse(Status::ERR_BAD_PARAM),
            Reason::TooManyNodes => Pending::Refuse(Status::ERR_OUT_OF_RESOURCE),
            Reason::PartitionUnavailable(_) => Pending::Refuse(Status::ERR_NOT_AVAILABLE),
            Reason::NotAllowed(_) => Pending::Refuse(Status::ERR_NO_PERMISSIONS),
        }
    }
}

/// Slurm's reason identifier `id` in plain words (the facts of squeue's
/// JOB REASON CODES, in our sentences).
fn meaning(id: &str) -> Option<&'static str> {
    Some(match id {
        "Resources" => "waiting for nodes to become free",
        "Priority" => "jobs of higher priority are ahead of it",
        "ReqNodeNotAvail" => "a node it needs is down, drained or reserved",
        "NodeDown" => "a node it needs is down",
        "Reservation" => "waiting for its reservation to start",
        "BeginTime" => "its earliest start time has not come yet",
        "Dependency" => "waiting for a job it depends on",
        "DependencyNeverSatisfied" => "a job it depends on can never satisfy it",
        "JobHeldUser" => "held by its user (scontrol release)",
        "JobHeldAdmin" => "held by an administrator",
        "Licenses" => "waiting for a license",
        "Prolog" => "its prolog is still running",
        "Cleaning" => "its nodes are still being cleaned after an earlier run",
        "PartitionConfig" => "the partition cannot run a job of this shape",
        "PartitionTimeLimit" => "its time limit exceeds the partition's",
        "PartitionNodeLimit" => "it asks more nodes than the partition allows",
        "PartitionDown" => "the partition is down",
        "PartitionInactive" => "the partition is inactive",
        "BadConstraints" => "no node meets its constraints",
        "InvalidAccount" => "the account is not valid",
        "InvalidQOS" => "the QOS is not valid",
        "AccountNotAllowed" => "the account may not use this partition",
        "QOSNotAllowed" => "the QOS may not use this partition",
        s if s.starts_with("QOS") => "a limit of its QOS is reached",
        s if s.starts_with("Assoc") => "a limit of its account is reached",
        _ => return None,
    })
}

/// What a pending reason means for the request waiting on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// It may still be granted: keep waiting.
    Wait,
    /// Slurm will never grant it as asked: refuse with this status.
    Refuse(Status),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word_states_of_22_05() {
        assert_eq!(JobState::from_words(&["RUNNING"]), JobState::Running);
        assert_eq!(
            JobState::from_words(&["TIMEOUT"]),
            JobState::Ended(EndCause::TimeLimit)
        );
        assert_eq!(
            JobState::from_words(&["COMPLETING"]),
            JobState::Ended(EndCause::Other)
        );
        assert_eq!(JobState::from_words(&["CONFIGURING"]), JobState::Pending);
    }

    #[test]
    fn flag_arrays_of_23_11_and_later() {
        assert_eq!(
            JobState::from_words(&["RUNNING", "CONFIGURING"]),
            JobState::Pending
        );
        assert_eq!(
            JobState::from_words(&["CANCELLED", "COMPLETING"]),
            JobState::Ended(EndCause::Cancelled)
        );
        assert_eq!(
            JobState::from_words(&["PENDING", "REQUEUED"]),
            JobState::Pending
        );
        assert_eq!(
            JobState::from_words(&["RUNNING", "RESIZING"]),
            JobState::Running
        );
    }

    #[test]
    fn an_unknown_state_is_never_an_end() {
        for w in [&["LAUNCHING_ON_MARS"][..], &[][..], &["POWER_UP_NODE"][..]] {
            let s = JobState::from_words(w);
            assert!(matches!(s, JobState::Unknown(_)), "{w:?}: {s:?}");
        }
    }

    #[test]
    fn reasons_are_said_in_plain_words() {
        assert_eq!(
            Reason::from_slurm("PartitionConfig").said(),
            "PartitionConfig (the partition cannot run a job of this shape)"
        );
        assert_eq!(
            Reason::from_slurm("QOSMaxJobsPerUserLimit").said(),
            "QOSMaxJobsPerUserLimit (a limit of its QOS is reached)"
        );
        assert_eq!(Reason::from_slurm("SomethingNew").said(), "SomethingNew");
    }

    #[test]
    fn reasons_map() {
        assert_eq!(Reason::from_slurm("Resources").pending(), Pending::Wait);
        assert_eq!(
            Reason::from_slurm("PartitionTimeLimit").pending(),
            Pending::Refuse(Status::ERR_BAD_PARAM)
        );
        let r = Reason::from_slurm("ReqNodeNotAvail,_UnavailableNodes:node02");
        assert_eq!(r, Reason::Waiting("ReqNodeNotAvail".into()));
        assert_eq!(Reason::from_slurm("None"), Reason::None);
        assert_eq!(
            Reason::from_slurm("InvalidQOS").pending(),
            Pending::Refuse(Status::ERR_NO_PERMISSIONS)
        );
    }

    #[test]
    fn an_ending_job_takes_its_cause_from_its_reason() {
        let completing = JobState::from_words(&["COMPLETING"]);
        assert_eq!(completing, JobState::Ended(EndCause::Other));
        assert_eq!(
            completing.clone().with_reason("TimeLimit"),
            JobState::Ended(EndCause::TimeLimit)
        );
        assert_eq!(
            completing.clone().with_reason("NodeDown"),
            JobState::Ended(EndCause::NodeFailure)
        );
        assert_eq!(
            completing.with_reason("None"),
            JobState::Ended(EndCause::Other)
        );
        assert_eq!(
            JobState::Pending.with_reason("NodeDown"),
            JobState::Pending,
            "a waiting job's reason is no end cause"
        );
    }
}
