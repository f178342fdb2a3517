//! pmix-conn: the connection layer of pmix-tools ([`conn`]): rendezvous
//! discovery and trust, the handshake, framing, the event-driven client and
//! palloc's holder. It names only pmix-wire.

#![warn(unreachable_pub)]
// A dependency in Cargo.toml that the code never names is an error too (clippy -D warnings).
#![warn(unused_crate_dependencies)]

// The layer below, under the module names the code has always used.
use pmix_wire::{codec, error, proto};

pub mod conn;
