//! TEMPORARY minimal error type; replaced by the codec work item's version at merge.
#![allow(missing_docs)]
use crate::status::Status;
#[derive(Debug, thiserror::Error)]
#[error("{}: {context}", status.name())]
pub struct Error {
    pub status: Status,
    pub context: String,
}
impl Error {
    pub fn new(status: Status, context: impl Into<String>) -> Self {
        Error {
            status,
            context: context.into(),
        }
    }
}
pub type Result<T> = std::result::Result<T, Error>;
