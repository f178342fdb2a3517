//! pmix-sched: the pure scheduler ([`sched`]) of pdvm and psched: queue,
//! nodes, time limits; no socket, clock or process. It names only pmix-wire's
//! vocabulary.

#![warn(unreachable_pub)]

// The layer below, under the module name the code has always used.
use pmix_wire::proto;

pub mod sched;
