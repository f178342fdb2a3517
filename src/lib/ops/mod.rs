//! Operations the tools perform over a [`session::Session`]: allocation
//! requests, spawn, queries, event registration and receipt, forwarded
//! output, and job control.

pub mod alloc;
pub mod control;
pub mod events;
pub mod get;
pub mod inbound;
pub mod iof;
pub mod job;
pub mod lost_launch;
pub mod query;
pub mod run;
pub mod session;
pub mod spawn;
pub mod spawn_tree;
pub mod status_query;
pub mod tool_launches;
pub mod trace;
pub mod wait;

pub use session::Session;
