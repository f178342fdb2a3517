//! Operations the tools perform over a [`session::Session`]: allocation
//! requests, spawn, queries, event registration and receipt, forwarded
//! output, and job control.

pub mod alloc;
pub use crate::proto::cmd;
pub mod control;
pub mod events;
pub mod iof;
pub mod job;
pub use crate::proto::keys;
pub mod query;
pub mod session;
pub mod spawn;
pub mod status_query;

pub use session::Session;
