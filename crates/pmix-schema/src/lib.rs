//! pmix-schema: the typed records ([`schema`]): one per thing the tools
//! show, with its documented JSON fields, and the status query's entries
//! with their wire form. It names only pmix-wire; the connection (pmix-conn)
//! does not name it, as it never interprets a payload beyond the handshake.

#![warn(unreachable_pub)]
// A dependency in Cargo.toml that the code never names is an error too (clippy -D warnings).
#![warn(unused_crate_dependencies)]

// The layer below, under the module names the code has always used.
use pmix_wire::{codec, error, proto};

pub mod schema;
