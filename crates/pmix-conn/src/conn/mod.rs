//! The connection layer: rendezvous discovery, handshake, framing, and a
//! live connection that routes replies and unsolicited messages.
//!
//! # Which identity is used
//! - Inside a job (the server that launched us set `PMIX_NAMESPACE`,
//!   `PMIX_RANK` and `PMIX_SERVER_URI*`), and with no flag naming a server,
//!   we connect as a **client of that job**: our requests are the job's
//!   ("application") requests, so reservations made are the job's.
//! - Otherwise, or with `--as-tool` ([`ConnectOptions::force_tool`]), or when
//!   a server is named with `--uri`/`--pid`/`--namespace`/system flags, we
//!   connect as a **tool**; the server gives us a fresh namespace unless a
//!   tool identity is supplied ([`ConnectOptions::tool_id`]).

pub mod client;
pub mod creds;
pub mod diag;
pub mod discover;
pub mod frame;
pub mod handshake;
pub mod holder;
pub(crate) mod holder_client;
pub(crate) mod holder_route;
pub(crate) mod local_trust;
pub mod pidfd;
pub mod registry;
pub(crate) mod replays;
pub(crate) mod route;
pub mod sched_contact;
pub(crate) mod stream;
pub(crate) mod uri;
pub(crate) mod wait;

pub use client::{Connection, Direction, Event, TraceHook, Traced, Unsolicited};
pub use discover::{ConnectOptions, Target};
pub use handshake::Identity;
pub use holder::HOLDER_ENV;
pub use uri::{Rendezvous, ServerUri};
