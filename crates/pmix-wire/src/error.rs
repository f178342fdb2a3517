//! The library's typed error: what kind of failure, the PMIx status that
//! describes it, a sentence of context, and the underlying cause if any.
//!
//! Callers decide by [`ErrorKind`] (and the status), never by the text: the
//! tools map kinds to exit codes in `app::failure`.

use std::sync::Arc;

use crate::proto::status::Status;

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The peer refused the request with this status (its answer carried
    /// nothing more to say than the status).
    Refused,
    /// The peer answered with a failure status and we add what was asked.
    Failed,
    /// No server was found; the context already says how to start or name
    /// one.
    NoServer,
    /// The connection could not be made, or was lost.
    Connection,
    /// Nothing came before the deadline; the context names what was awaited.
    TimedOut,
    /// The peer's bytes did not follow the protocol (bad frame, value or
    /// length).
    Malformed,
    /// A local resource failed (file, process, memory budget).
    Local,
}

impl ErrorKind {
    /// The kind a bare status implies, when the code that fails does not
    /// say more.
    pub fn of_status(st: Status) -> ErrorKind {
        match st {
            Status::ERR_TIMEOUT => ErrorKind::TimedOut,
            Status::ERR_UNREACH
            | Status::ERR_LOST_CONNECTION
            | Status::ERR_COMM_FAILURE
            | Status::ERR_INIT => ErrorKind::Connection,
            Status::ERR_UNPACK_FAILURE
            | Status::ERR_UNPACK_READ_PAST_END_OF_BUFFER
            | Status::ERR_UNKNOWN_DATA_TYPE
            | Status::ERR_PACK_FAILURE => ErrorKind::Malformed,
            _ => ErrorKind::Failed,
        }
    }
}

/// A failed operation.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {context}", status.name())]
pub struct Error {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The PMIx status code.
    pub status: Status,
    /// Human-readable context: what was being done, with which value.
    pub context: String,
    /// The system error underneath, when there is one.
    #[source]
    pub source: Option<Arc<std::io::Error>>,
    /// What the peer said of a refusal in its own words
    /// (`PMIX_EVENT_TEXT_MESSAGE` in its answer): shown, never decided on.
    pub said: Option<String>,
}

/// Errors compare by kind, status and context (the cause is detail).
impl PartialEq for Error {
    fn eq(&self, o: &Self) -> bool {
        self.kind == o.kind && self.status == o.status && self.context == o.context
    }
}

impl Eq for Error {}

impl Error {
    /// An error from a status and context; the kind follows from the status
    /// ([`ErrorKind::of_status`]).
    pub fn new(status: Status, context: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::of_status(status),
            status,
            context: context.into(),
            source: None,
            said: None,
        }
    }

    /// An error of an explicit kind.
    pub fn of_kind(kind: ErrorKind, status: Status, context: impl Into<String>) -> Self {
        Error {
            kind,
            ..Error::new(status, context)
        }
    }

    /// The peer refused with `status`; `what` names the request
    /// (`"PMIX_ALLOC_NEW"`, `"spawn"`).
    pub fn refused(status: Status, what: impl Into<String>) -> Self {
        Error::of_kind(ErrorKind::Refused, status, what)
    }

    /// A system error while doing `context`, kept as the source.
    pub fn io(
        kind: ErrorKind,
        status: Status,
        context: impl Into<String>,
        e: std::io::Error,
    ) -> Self {
        Error {
            source: Some(Arc::new(e)),
            ..Error::of_kind(kind, status, context)
        }
    }
}

/// Result alias used throughout the library.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_status_unless_given() {
        assert_eq!(
            Error::new(Status::ERR_TIMEOUT, "x").kind,
            ErrorKind::TimedOut
        );
        assert_eq!(
            Error::new(Status::ERR_LOST_CONNECTION, "x").kind,
            ErrorKind::Connection
        );
        assert_eq!(
            Error::new(Status::ERR_BAD_PARAM, "x").kind,
            ErrorKind::Failed
        );
        let r = Error::refused(Status::ERR_NO_PERMISSIONS, "PMIX_ALLOC_RELEASE");
        assert_eq!(r.kind, ErrorKind::Refused);
        assert_eq!(r.to_string(), "PMIX_ERR_NO_PERMISSIONS: PMIX_ALLOC_RELEASE");
        let e = Error::io(
            ErrorKind::Local,
            Status::ERROR,
            "reading f",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(e.clone(), e);
    }
}
