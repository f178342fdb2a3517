//! The library's typed error: a PMIx status plus a human context string.

use crate::status::Status;

/// A failed operation: the PMIx status that describes it and a sentence of
/// context (what was being done, with which type / version / key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {context}", status.name())]
pub struct Error {
    /// The PMIx status code.
    pub status: Status,
    /// Human-readable context.
    pub context: String,
}

impl Error {
    /// Builds an error from a status and context.
    pub fn new(status: Status, context: impl Into<String>) -> Self {
        Error {
            status,
            context: context.into(),
        }
    }
}

/// Result alias used throughout the library.
pub type Result<T> = std::result::Result<T, Error>;
