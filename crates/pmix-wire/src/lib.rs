//! pmix-wire: the bottom layer of pmix-tools, with no I/O and nothing of
//! pmix-tools below it.
//!
//! - [`proto`]: the PMIx vocabulary (keys, commands, codes, typed enums).
//! - [`error`]: the typed error every layer returns.
//! - [`codec`]: pure bytes ⇄ values (bfrops), per wire version.
//!
//! They share one crate because the codec's impls extend the vocabulary's
//! types (`AllocAttrs::to_infos`, …): an inherent impl lives in its type's
//! crate.
//!
//! Every crate above names these modules by their old paths: each imports
//! them at its root (`use pmix_wire::proto;`), so `crate::proto::…` reads
//! as before the workspace.

#![warn(unreachable_pub)]
// A dependency in Cargo.toml that the code never names is an error too (clippy -D warnings).
#![warn(unused_crate_dependencies)]

pub mod codec;
pub mod error;
pub mod proto;
