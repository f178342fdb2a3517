//! The command-line layer shared by the five binaries: clap definitions,
//! value parsers, cross-flag validation, exit codes, and the generators for
//! man pages and shell completions. Nothing here talks to a server.
//!
//! A binary does, in order: [`validate::parse_validated`] (clap parsing plus
//! cross-flag `validate()`; both print and exit [`exit::USAGE`] on error), build the request
//! (`request()` / `requests()`), connect with
//! [`common::ConnectArgs::to_options`], and map outcomes to [`exit`] codes.

pub mod array_spec;
pub mod common;
pub mod docs;
pub(crate) mod exit;
pub(crate) mod manual;
pub mod mpmd;
pub mod output_pattern;
pub(crate) mod palloc;
pub mod palloc_usage;
pub mod parse;
pub mod pdvm;
pub(crate) mod prelease;
pub mod psched;
pub mod pspawn;
pub mod pspawn_export;
pub mod pspawn_mapby;
pub mod pspawn_usage;
pub(crate) mod pwatch;
pub mod request;
pub mod script_directives;
pub(crate) mod validate;

pub use common::{ConnectArgs, ConnectOptions, OutputArgs, PidSpec, UriSpec};
pub use palloc::{PallocArgs, PallocMode};
pub use pdvm::PdvmArgs;
pub use prelease::PreleaseArgs;
pub use psched::PschedArgs;
pub use pspawn::PspawnArgs;
pub use pwatch::{CompleteWhat, PwatchArgs};
pub use request::{
    AllocAsk, AppSpec, EventKind, EventWatch, ReleaseRequest, SpawnRequest, StatusState,
    StatusWatch, StatusWhat, StdinTarget, WatchRequest,
};
pub use validate::{
    parse_validated, parse_validated_from, try_parse_validated, try_parse_validated_with, Validate,
};
