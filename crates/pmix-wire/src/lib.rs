//! pmix-wire: the bottom layer of pmix-tools, with no I/O and nothing of
//! pmix-tools below it.
//!
//! - [`proto`]: the PMIx vocabulary (keys, commands, codes, typed enums).
//! - [`error`]: the typed error every layer returns.
//! - [`codec`]: pure bytes ⇄ values (bfrops), per wire version.
//! - [`schema`]: the typed records the tools show and a status query carries.
//!
//! Every crate above names these modules by their old paths: each imports
//! them at its root (`use pmix_wire::proto;`), so `crate::proto::…` reads
//! as before the workspace.

#![warn(unreachable_pub)]

pub mod codec;
pub mod error;
pub mod proto;
pub mod schema;
