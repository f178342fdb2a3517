//! pmix-tools: a native (no libpmix, no FFI) implementation of the PMIx wire
//! protocol and the operations the `palloc`, `pspawn`, `prelease`, `pwatch`,
//! `pdvm` and `psched` binaries need.
//!
//! The layers are crates of one workspace (ARCHITECTURE.md), bottom up:
//! - pmix-wire: [`proto`], [`error`] and [`codec`] (pure bytes ⇄ values,
//!   no I/O).
//! - pmix-schema: [`schema`], the typed records.
//! - pmix-conn: [`conn`]: rendezvous discovery, handshake and framing.
//! - pmix-sched: [`sched`], the pure scheduler.
//! - pmix-dvm: [`dvm`] and [`server`], pdvm's model and PMIx server side.
//! - pmix-psched: [`psched`], the PMIx scheduler.
//! - this crate: [`ops`] (allocate, spawn, release, query, events, I/O
//!   forwarding), [`render`] (tables and JSON), [`cli`] (the clap
//!   definitions, man pages and completions) and [`app`] (each tool's run).
//!
//! The lower crates are re-exported under their module names, so
//! `pmix_tools::proto::…` and the like name what they always named.

#![warn(unreachable_pub)]

pub mod app;
pub mod cli;
pub mod ops;
pub mod render;

/// The connection layer (crate pmix-conn).
pub use pmix_conn::conn;
/// pdvm's model and server (crate pmix-dvm).
pub use pmix_dvm::{dvm, server};
/// psched (crate pmix-psched).
pub use pmix_psched::psched;
/// The pure scheduler (crate pmix-sched).
pub use pmix_sched::sched;
/// The typed records (crate pmix-schema).
pub use pmix_schema::schema;
/// The vocabulary, errors and codec (crate pmix-wire).
pub use pmix_wire::{codec, error, proto};
