//! The simulated scheduler behind pdvm.
//!
//! It is kept apart from the DVM model (`dvm`) exactly as the
//! reservation specification keeps the scheduler apart from the runtime: the
//! scheduler owns node inventory, the FIFO queue, allocation lifetimes and
//! warning thresholds; the DVM only forwards requests and relays what the
//! scheduler reports ([`SchedEvent`]). Time is a plain `u64` millisecond value
//! supplied by the caller; nothing here reads a clock.
//!
//! Inventory: `M` own nodes (`s001`…) plus startup nodes the DVM hands over as
//! carvable ([`Scheduler::add_carvable`]). Count requests are served only from
//! own nodes (lowest index first); list requests may name own or carvable
//! nodes. Queueing is strict FIFO: a waiting request is granted as soon as it
//! fits and nothing older is still waiting.

mod scheduler;
mod types;

pub use scheduler::Scheduler;
pub use types::{
    NodeAsk, NodeOrigin, SchedAllocView, SchedError, SchedEvent, SchedPendingView, SchedRequest,
    Submit,
};

/// Builds a zero-padded node name: `prefix` + `index` padded to the width of
/// `last` (at least three digits).
pub fn node_name(prefix: char, index: usize, last: usize) -> String {
    let width = last.to_string().len().max(3);
    format!("{prefix}{index:0width$}")
}
