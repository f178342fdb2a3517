//! pmix-tools: a native (no libpmix, no FFI) implementation of the PMIx wire
//! protocol and the operations the `palloc`, `pspawn`, `prelease`, `pwatch`
//! and `pdvm` binaries need.
//!
//! Layers, bottom up:
//! - [`codec`]: pure bytes ⇄ values (bfrops), per wire version; no I/O.
//! - [`conn`]: rendezvous discovery, handshake and framing (client side).
//! - [`ops`]: allocate, spawn, release, query, events, I/O forwarding.
//! - [`render`]: tables and JSON for the tools.
//! - [`cli`]: the clap definitions shared by the binaries and the
//!   completion / man page generators.
//! - [`server`], [`dvm`], [`sched`]: pdvm's PMIx server side, its
//!   session / reservation model, and the simulated scheduler.

#![warn(unreachable_pub)]

pub mod app;
pub mod cli;
pub mod codec;
pub mod conn;
pub mod dvm;
pub mod error;
pub mod ops;
pub mod proto;
pub mod psched;
pub mod render;
pub mod sched;
pub mod schema;
pub mod server;
