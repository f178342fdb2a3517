//! Exit codes shared by all five binaries, and the sentences that explain a
//! refusal by naming the rule of spec 001 that produced it.
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | success |
//! | 1 | any other error (I/O, internal, unexpected reply) |
//! | 2 | usage error: bad flag or value, refused before connecting (clap's code) |
//! | 3 | cannot connect to the DVM (no rendezvous file, unreachable, lost) |
//! | 4 | refused by the DVM (any error status not listed below, e.g. `PMIX_ERR_BAD_PARAM`) |
//! | 5 | not found (`PMIX_ERR_NOT_FOUND`) |
//! | 6 | no permission (`PMIX_ERR_NO_PERMISSIONS`) |
//! | 7 | not supported by this DVM (`PMIX_ERR_NOT_SUPPORTED`, `PMIX_ERR_PARAM_VALUE_NOT_SUPPORTED`) |
//! | 8 | timed out (`--timeout`, `PMIX_ERR_TIMEOUT`, a job stopped at its allocation's time limit) |
//! | 9 | outcome unknown: a request that changes something (allocate, extend, release, cancel, spawn) was sent but not answered in time; the DVM may still carry it out (check with `pwatch --status`); or a job whose end the DVM never announced, with no process seen failing (its exit status is unknown) |
//! | 10 | cancelled: a queued allocation request was withdrawn (`prelease --cancel`, `PMIX_ERR_JOB_CANCELED`) before it was granted; the message names who cancelled it when the DVM says; or a held allocation whose Slurm job was cancelled or preempted (psched) |
//! | 130 | interrupted (Ctrl-C, SIGINT; a pending allocation request was cancelled) |
//! | 143 | ended by SIGTERM (128+15; SIGHUP gives 129) |
//!
//! Once `palloc -- CMD` or `pspawn` has launched a command, the tool exits
//! with the command's own status instead; a command killed by signal N gives
//! 128+N, like a shell.

/// The tool's own outcomes, as an enum; [`Exit::code`] gives the number.
use crate::proto::Status;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    /// 0.
    Success,
    /// 1.
    Other,
    /// 2.
    Usage,
    /// 3.
    CannotConnect,
    /// 4.
    Refused,
    /// 5.
    NotFound,
    /// 6.
    NoPermission,
    /// 7.
    NotSupported,
    /// 8.
    TimedOut,
    /// 9.
    OutcomeUnknown,
    /// 10.
    Cancelled,
    /// 130.
    Interrupted,
    /// A launched command exited with this status.
    Command(i32),
    /// A launched command was killed by this signal number (exit 128+N).
    Signaled(i32),
}

impl Exit {
    /// The process exit code: the one place each number is written.
    pub const fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::Other => 1,
            Exit::Usage => 2,
            Exit::CannotConnect => 3,
            Exit::Refused => 4,
            Exit::NotFound => 5,
            Exit::NoPermission => 6,
            Exit::NotSupported => 7,
            Exit::TimedOut => 8,
            Exit::OutcomeUnknown => 9,
            Exit::Cancelled => 10,
            Exit::Interrupted => 130,
            Exit::Command(c) => clamp(c, 0, 255),
            Exit::Signaled(n) => 128 + clamp(n, 0, 127),
        }
    }

    /// The exit class of a status the DVM answered: the one map from PMIx
    /// statuses to exit codes. Any other error status is "refused" (4).
    pub fn for_status(st: Status) -> Exit {
        match st {
            Status::SUCCESS | Status::OPERATION_SUCCEEDED => Exit::Success,
            Status::ERR_NOT_FOUND => Exit::NotFound,
            Status::ERR_NO_PERMISSIONS => Exit::NoPermission,
            Status::ERR_NOT_SUPPORTED | Status::ERR_PARAM_VALUE_NOT_SUPPORTED => Exit::NotSupported,
            Status::ERR_TIMEOUT => Exit::TimedOut,
            Status::ERR_JOB_CANCELED => Exit::Cancelled,
            Status::ERR_UNREACH
            | Status::ERR_LOST_CONNECTION
            | Status::ERR_COMM_FAILURE
            | Status::ERR_INIT => Exit::CannotConnect,
            _ => Exit::Refused,
        }
    }
}

/// `i32::clamp` for a `const fn`.
const fn clamp(v: i32, lo: i32, hi: i32) -> i32 {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// Ended by SIGTERM (128 + 15).
const TERMINATED: Exit = Exit::Signaled(15);

/// The rows of the EXIT STATUS section of every man page: (code, meaning).
pub(crate) const EXIT_TABLE: &[(i32, &str)] = &[
    (Exit::Success.code(), "success"),
    (
        Exit::Other.code(),
        "any other error (I/O, internal, an unexpected reply)",
    ),
    (
        Exit::Usage.code(),
        "usage error: a bad flag or value, refused before connecting",
    ),
    (Exit::CannotConnect.code(), "cannot connect to the DVM"),
    (
        Exit::Refused.code(),
        "refused by the DVM; the message names the PMIx status and the spec rule",
    ),
    (Exit::NotFound.code(), "not found (PMIX_ERR_NOT_FOUND)"),
    (
        Exit::NoPermission.code(),
        "no permission (PMIX_ERR_NO_PERMISSIONS)",
    ),
    (
        Exit::NotSupported.code(),
        "not supported by this DVM (PMIX_ERR_NOT_SUPPORTED)",
    ),
    (
        Exit::TimedOut.code(),
        "timed out (--timeout, PMIX_ERR_TIMEOUT), or a job stopped because its allocation \
reached its time limit (also Slurm's TIMEOUT of the job behind it, under psched)",
    ),
    (
        Exit::OutcomeUnknown.code(),
        "outcome unknown: a request that changes something (allocate, extend, release, cancel, \
spawn) was sent, but the DVM did not answer within PMIX_TOOLS_TIMEOUT; it may still be carried \
out: `pwatch --status` shows whether it was. Never reported as failed. Also a job whose \
end the DVM never announced, with no process seen failing: its exit status is unknown",
    ),
    (
        Exit::Cancelled.code(),
        "cancelled: the queued allocation request was withdrawn before it was granted \
(`prelease --cancel` from another shell, PMIX_ERR_JOB_CANCELED, as salloc's \"Job has been \
cancelled\"); the message names who cancelled it when the DVM says. Also a held allocation \
whose Slurm job was cancelled (`scancel`) or preempted under psched: the message gives \
Slurm's word (a node failure gives 1)",
    ),
    (
        Exit::Interrupted.code(),
        "interrupted (Ctrl-C, SIGINT); a queued allocation request is cancelled first",
    ),
    (
        TERMINATED.code(),
        "ended by SIGTERM (128+15); a queued request is cancelled, a running job stopped first",
    ),
];

/// The request a refusal answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `PMIX_ALLOC_NEW`.
    AllocNew,
    /// `PMIX_ALLOC_EXTEND`.
    AllocExtend,
    /// `PMIX_ALLOC_RELEASE`.
    Release,
    /// `PMIX_ALLOC_REAQUIRE`.
    Reacquire,
    /// `PMIX_ALLOC_REQ_CANCEL`.
    Cancel,
    /// `PMIx_Spawn`.
    Spawn,
}

/// Which attributes the refused request carried, and who sent it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AttrsPresent {
    /// The request carried `PMIX_ALLOC_TARGET`.
    pub target: bool,
    /// The requester connected as a process of a job (an application), not a tool.
    pub from_application: bool,
    /// The request carried `PMIX_ALLOC_ID`.
    pub alloc_id: bool,
    /// The request carried `PMIX_ALLOC_REQ_ID`.
    pub req_id: bool,
    /// The request carried a non-default `PMIX_ALLOC_INHERITANCE`.
    pub non_default_inheritance: bool,
    /// The spawn carried `PMIX_SPAWN_TARGET`.
    pub spawn_target: bool,
}

/// The rule of spec 001 that explains why a request was refused with
/// `status`, as `"§8.2.1.8: <condition>"`, or `None` when no rule of the
/// specification covers this combination.
pub(crate) fn spec_rule(
    op: Operation,
    status: Status,
    attrs: &AttrsPresent,
) -> Option<&'static str> {
    use Operation::*;
    let alloc = matches!(op, AllocNew | AllocExtend);
    match (op, status) {
        (AllocNew | AllocExtend, Status::ERR_NO_PERMISSIONS) if attrs.target && attrs.from_application => {
            Some("§8.2.1.8: an application request carries PMIX_ALLOC_TARGET (only a tool may name the namespace it reserves for, §8.2.1.4)")
        }
        (AllocExtend, Status::ERR_NO_PERMISSIONS) => {
            Some("§8.2.1.8: PMIX_ALLOC_EXTEND names an allocation the requester does not own")
        }
        (AllocExtend, Status::ERR_NOT_FOUND) if attrs.alloc_id || attrs.req_id => {
            Some("§8.2.1.8: PMIX_ALLOC_EXTEND names an allocation that does not exist")
        }
        (AllocExtend, Status::ERR_BAD_PARAM) if !attrs.alloc_id && !attrs.req_id => {
            Some("§8.2.1.8: PMIX_ALLOC_EXTEND carries neither PMIX_ALLOC_ID nor PMIX_ALLOC_REQ_ID to name its target")
        }
        (Spawn, Status::ERR_NOT_FOUND) if attrs.spawn_target => {
            Some("§8.2.1.8: PMIX_SPAWN_TARGET names an allocation that resolves to no session")
        }
        (Spawn, Status::ERR_NO_PERMISSIONS) if attrs.spawn_target => {
            Some("§8.2.1.8: PMIX_SPAWN_TARGET names a session the requester does not own")
        }
        (_, Status::ERR_NOT_SUPPORTED) if alloc && attrs.non_default_inheritance => {
            Some("§8.2.1.8: PMIX_ALLOC_INHERITANCE carries a non-default value the host does not support (§8.2.1.10)")
        }
        (Release, Status::ERR_NO_PERMISSIONS) => {
            Some("§8.2.1.9.1: only a namespace in the reservation's owner set (or the scheduler) may release it")
        }
        _ => None,
    }
}

/// A suggestion of what to do next after a refusal, if one is useful.
pub(crate) fn hint(op: Operation, status: Status, attrs: &AttrsPresent) -> Option<&'static str> {
    use Operation::*;
    match (op, status) {
        (AllocNew | AllocExtend, Status::ERR_NO_PERMISSIONS) if attrs.target && attrs.from_application => {
            Some("drop --target (inside a job you reserve for your own job), or run with --as-tool")
        }
        (AllocExtend | Release, Status::ERR_NO_PERMISSIONS) => Some(
            "only the owning namespace and jobs spawned into the reservation may do this; run from that job, or see `pwatch --status --what reservations`",
        ),
        (Spawn, Status::ERR_NOT_FOUND) if !attrs.spawn_target => {
            Some("check the program's name and that it is installed on the DVM's nodes (give a path, or fix PATH)")
        }
        (_, Status::ERR_NOT_FOUND) => Some("list existing reservations with `pwatch --status --what reservations`"),
        (Spawn, Status::ERR_NO_PERMISSIONS) => Some("target only reservations your job owns or was spawned into"),
        (_, Status::ERR_NOT_SUPPORTED) if attrs.non_default_inheritance => {
            Some("this DVM supports only the default disposition: drop --inherit")
        }
        (Reacquire, Status::ERR_NOT_SUPPORTED) => Some(
            "this DVM does not reacquire a released allocation (PMIX_ALLOC_REAQUIRE is optional; \
pdvm does not implement it); ask for the same nodes again with `palloc -w NODES`",
        ),
        (AllocNew | AllocExtend | Release | Cancel, Status::ERR_NOT_SUPPORTED) => {
            Some("this DVM does not implement node reservations (PRRTE before the spec 001 work answers so); use pdvm or a DVM that does")
        }
        _ => None,
    }
}

/// The one-line message for a refusal: what was refused, the status name,
/// the spec rule when one applies, and a hint.
pub(crate) fn refusal_message(op: Operation, status: Status, attrs: &AttrsPresent) -> String {
    let mut m = format!("{} refused by the DVM: {}", op.noun(), status.name());
    if let Some(rule) = spec_rule(op, status, attrs) {
        m.push_str(" — ");
        m.push_str(rule);
    }
    if let Some(h) = hint(op, status, attrs) {
        m.push_str(". Hint: ");
        m.push_str(h);
    }
    m
}

/// The sentence for a refusal the DVM explained in its own words (`said`,
/// e.g. Slurm's reason relayed by psched): those words first, the status
/// after, then what to do; the spec rule (in the `--json` record) is left
/// out of the sentence.
pub(crate) fn explained_refusal(
    op: Operation,
    status: Status,
    attrs: &AttrsPresent,
    said: &str,
) -> String {
    let mut m = format!("{} refused: {said} ({})", op.noun(), status.name());
    if let Some(h) = hint(op, status, attrs) {
        m.push_str(". Hint: ");
        m.push_str(h);
    }
    m
}

impl Operation {
    /// What was asked, as a sentence names it.
    fn noun(self) -> &'static str {
        match self {
            Operation::AllocNew => "allocation request",
            Operation::AllocExtend => "extend request",
            Operation::Release => "release",
            Operation::Reacquire => "reacquire request",
            Operation::Cancel => "cancel request",
            Operation::Spawn => "spawn",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_distinct() {
        let mut seen: Vec<i32> = EXIT_TABLE.iter().map(|(c, _)| *c).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), EXIT_TABLE.len());
        assert_eq!(Exit::Signaled(9).code(), 137);
        assert_eq!(Exit::Command(3).code(), 3);
    }

    #[test]
    fn status_mapping() {
        let code = |c| Exit::for_status(Status(c)).code();
        assert_eq!(
            Exit::for_status(Status::ERR_NO_PERMISSIONS),
            Exit::NoPermission
        );
        assert_eq!(code(-46), 5);
        assert_eq!(code(-47), 7);
        assert_eq!(code(-27), 4);
        assert_eq!(code(-25), 3);
        assert_eq!(code(-9999), 4);
        assert_eq!(code(0), 0);
    }

    #[test]
    fn error_table_rows() {
        let id = AttrsPresent {
            alloc_id: true,
            ..Default::default()
        };
        assert_eq!(
            spec_rule(Operation::AllocExtend, Status::ERR_NO_PERMISSIONS, &id),
            Some("§8.2.1.8: PMIX_ALLOC_EXTEND names an allocation the requester does not own")
        );
        let none = AttrsPresent::default();
        let app_target = AttrsPresent {
            target: true,
            from_application: true,
            ..none
        };
        let st = AttrsPresent {
            spawn_target: true,
            ..none
        };
        let inh = AttrsPresent {
            non_default_inheritance: true,
            ..none
        };
        for (op, status, attrs, says) in [
            (
                Operation::AllocExtend,
                Status::ERR_NOT_FOUND,
                id,
                "does not exist",
            ),
            (
                Operation::AllocExtend,
                Status::ERR_BAD_PARAM,
                none,
                "neither PMIX_ALLOC_ID nor PMIX_ALLOC_REQ_ID",
            ),
            (
                Operation::AllocNew,
                Status::ERR_NO_PERMISSIONS,
                app_target,
                "application",
            ),
            (Operation::Spawn, Status::ERR_NOT_FOUND, st, "no session"),
            (
                Operation::Spawn,
                Status::ERR_NO_PERMISSIONS,
                st,
                "does not own",
            ),
            (
                Operation::AllocNew,
                Status::ERR_NOT_SUPPORTED,
                inh,
                "INHERITANCE",
            ),
        ] {
            let rule = spec_rule(op, status, &attrs);
            assert!(
                rule.is_some_and(|r| r.contains(says)),
                "{op:?} {status}: {rule:?}"
            );
        }
        // No rule: a plain NEW refused as unsupported (a DVM without reservations).
        assert_eq!(
            spec_rule(
                Operation::AllocNew,
                Status::ERR_NOT_SUPPORTED,
                &AttrsPresent::default()
            ),
            None
        );
        let m = refusal_message(
            Operation::AllocNew,
            Status::ERR_NOT_SUPPORTED,
            &AttrsPresent::default(),
        );
        assert!(
            m.contains(Status::ERR_NOT_SUPPORTED.name()) && m.contains("does not implement"),
            "{m}"
        );
    }
}
