//! pmix-sched: the pure scheduler ([`sched`]) of pdvm and psched: queue,
//! nodes, time limits; no socket, clock or process. It names only pmix-wire's
//! vocabulary.

#![warn(unreachable_pub)]
// A dependency in Cargo.toml that the code never names is an error too (clippy -D warnings).
#![warn(unused_crate_dependencies)]

// The layer below, under the module name the code has always used.
use pmix_wire::proto;

pub mod sched;
