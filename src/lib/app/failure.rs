//! A tool's failure: the exit code, the PMIx status name and spec rule when
//! the DVM refused something, and the sentence a person reads.

use crate::cli::exit::{
    explained_refusal, refusal_message, spec_rule, AttrsPresent, Exit, Operation,
};
use crate::error::{Error, ErrorKind};
use crate::proto::Status;
use crate::render::ErrorRecord;

/// What went wrong, ready to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The exit code class.
    pub exit: Exit,
    /// The PMIx status, when one explains it.
    pub status: Option<Status>,
    /// The spec 001 rule that explains a refusal.
    pub rule: Option<String>,
    /// The sentence: what failed, why, what to do.
    pub message: String,
}

/// Whether the error means the DVM could not be reached or went away.
pub(crate) fn is_connection_error(e: &Error) -> bool {
    matches!(e.kind, ErrorKind::Connection | ErrorKind::NoServer)
}

impl Failure {
    /// Could not connect (exit 3), with the reason and what to do.
    pub fn connect(e: &Error) -> Failure {
        // A server that accepted the connection but did not answer in time
        // is not missing: starting another would not help.
        if e.kind == ErrorKind::TimedOut {
            return Failure {
                exit: Exit::TimedOut,
                status: Some(e.status),
                rule: None,
                message: format!("cannot connect to the DVM: {}", e.context),
            };
        }
        // The connection layer often says what to do already.
        let advice = if e.kind == ErrorKind::NoServer {
            ""
        } else {
            ". Start one (`prte`, or `pdvm`), or point at it with --uri URI|file:PATH, --pid PID, \
--namespace NS or --tmpdir DIR"
        };
        Failure {
            exit: Exit::CannotConnect,
            status: Some(e.status),
            rule: None,
            message: format!("cannot connect to the DVM: {}{advice}", e.context),
        }
    }

    /// The DVM refused `op` (or the connection failed while asking): the
    /// status name, the spec rule and a hint, with the status's exit code.
    pub fn refused(op: Operation, attrs: &AttrsPresent, e: &Error) -> Failure {
        if is_connection_error(e) {
            return Failure::lost(e);
        }
        if e.kind == ErrorKind::TimedOut {
            // Our deadline passed after the request was sent: the DVM may
            // still carry it out, so it is not reported as failed.
            return Failure::outcome_unknown(op, &e.context);
        }
        if e.status == Status::ERR_JOB_CANCELED {
            // The request was withdrawn, not refused: the context says which
            // and by whom (ops::alloc).
            return Failure {
                exit: Exit::Cancelled,
                status: Some(e.status),
                rule: None,
                message: format!("{}: nothing was reserved", e.context),
            };
        }
        let mut message = match &e.said {
            Some(said) => explained_refusal(op, e.status, attrs, said),
            None => refusal_message(op, e.status, attrs),
        };
        if e.kind != ErrorKind::Refused && !e.context.is_empty() {
            message.push_str(&format!(" ({})", e.context));
        }
        Failure {
            exit: Exit::for_status(e.status),
            status: Some(e.status),
            rule: spec_rule(op, e.status, attrs).map(String::from),
            message,
        }
    }

    /// The connection to the DVM was lost mid-way (exit 3).
    pub fn lost(e: &Error) -> Failure {
        Failure {
            exit: Exit::CannotConnect,
            status: Some(e.status),
            rule: None,
            message: format!("lost the DVM: {}", e.context),
        }
    }

    /// Any other error from the library, mapped by its status.
    pub fn from_error(what: &str, e: &Error) -> Failure {
        if is_connection_error(e) {
            return Failure::lost(e);
        }
        if e.kind == ErrorKind::TimedOut {
            return Failure::timed_out(&format!("{what}: {}", e.context));
        }
        Failure {
            exit: Exit::for_status(e.status),
            status: Some(e.status),
            rule: None,
            message: format!("{what}: {e}"),
        }
    }

    /// A request that changes something was sent and not answered in time
    /// (exit 9): the DVM may still carry it out; the sentence says how to
    /// check.
    pub fn outcome_unknown(op: Operation, why: &str) -> Failure {
        let check = match op {
            Operation::AllocNew | Operation::Reacquire => {
                "`pwatch --status --mine` shows whether the allocation was made \
(`prelease --cancel REQUEST-ID` withdraws a queued one)"
            }
            Operation::AllocExtend => "`pwatch --status` shows the allocation's nodes and time",
            Operation::Release | Operation::Cancel => {
                "`pwatch --status` shows whether the allocation or request is still there"
            }
            Operation::Spawn => "`pwatch --status` lists the job if it was launched",
        };
        Failure {
            exit: Exit::OutcomeUnknown,
            status: Some(Status::ERR_TIMEOUT),
            rule: None,
            message: format!(
                "outcome unknown: {why}; the request was sent and the DVM may still carry it out: {check}"
            ),
        }
    }

    /// Timed out (exit 8).
    pub fn timed_out(msg: &str) -> Failure {
        Failure {
            exit: Exit::TimedOut,
            status: None,
            rule: None,
            message: msg.to_string(),
        }
    }

    /// Interrupted by a signal: exit 130 for SIGINT (or none recorded),
    /// 128+N for another caught signal N (143 for SIGTERM).
    pub fn interrupted(msg: &str) -> Failure {
        let exit = match super::signals::caught() {
            Some(sig) if sig != nix::sys::signal::Signal::SIGINT as i32 => Exit::Signaled(sig),
            _ => Exit::Interrupted,
        };
        Failure {
            exit,
            status: None,
            rule: None,
            message: msg.to_string(),
        }
    }

    /// A plain failure with exit 1.
    pub fn other(msg: impl Into<String>) -> Failure {
        Failure {
            exit: Exit::Other,
            status: None,
            rule: None,
            message: msg.into(),
        }
    }

    /// A failure with an explicit exit class and status.
    pub fn with(exit: Exit, status: Option<Status>, msg: impl Into<String>) -> Failure {
        Failure {
            exit,
            status,
            rule: None,
            message: msg.into(),
        }
    }

    /// The `--json` error object.
    pub fn record(&self) -> ErrorRecord {
        ErrorRecord {
            status: self.status.map(|s| s.name().to_string()),
            rule: self.rule.clone(),
            message: self.message.clone(),
            exit_code: self.exit.code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_map_to_their_codes() {
        let a = AttrsPresent::default();
        let f = Failure::refused(
            Operation::AllocNew,
            &a,
            &Error::refused(Status::ERR_NOT_SUPPORTED, "PMIX_ALLOC_NEW"),
        );
        assert_eq!(f.exit.code(), 7);
        assert_eq!(f.status, Some(Status::ERR_NOT_SUPPORTED));
        assert!(f.message.contains("does not implement"), "{}", f.message);
        let f = Failure::refused(
            Operation::Release,
            &a,
            &Error::new(Status::ERR_NO_PERMISSIONS, "x"),
        );
        assert_eq!(f.exit.code(), 6);
        assert!(f.rule.unwrap().contains("§8.2.1.9.1"));
        let f = Failure::refused(
            Operation::Release,
            &a,
            &Error::new(Status::ERR_LOST_CONNECTION, "gone"),
        );
        assert_eq!(f.exit.code(), 3);
        assert_eq!(
            Failure::from_error("q", &Error::new(Status::ERR_TIMEOUT, "slow"))
                .exit
                .code(),
            8
        );
    }
}
