//! pmix-dvm: pdvm, the embedded reference DVM: its session / reservation
//! model ([`dvm`], pure) and its PMIx server ([`server`]: sockets,
//! processes, notifications). It names pmix-wire, pmix-conn (the framing and
//! peer credentials) and pmix-sched.

#![warn(unreachable_pub)]
// A dependency in Cargo.toml that the code never names is an error too (clippy -D warnings).
#![warn(unused_crate_dependencies)]

// The layers below, under the module names the code has always used.
use pmix_conn::conn;
use pmix_sched::sched;
use pmix_schema::schema;
use pmix_wire::{codec, error, proto};

/// A line on pdvm's stderr through its one place, [`server::diag`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::server::diag::line(format_args!($($arg)*))
    };
}

pub mod dvm;
pub mod server;
