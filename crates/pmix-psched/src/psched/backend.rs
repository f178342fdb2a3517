//! Where psched's nodes come from: its own simulated pool ([`State`], over
//! the pure scheduler) or the site's Slurm (`SlurmBackend`). The serving
//! loop speaks to either through [`Backend`].

use crate::codec::WireVersion;
use crate::error::Result;

use super::ledger::Ledger;
use super::state::{Out, State};
use super::wire::Forwarded;

/// What the serving loop asks of a backend; times are ms since the epoch.
pub trait Backend {
    /// Start serving the DVM `dvm` on wire `wire`.
    fn attach(&mut self, dvm: &str, wire: WireVersion);
    /// The ledger as it should be on disk now.
    fn ledger(&self) -> Ledger;
    /// Nodes free to grant (none known for Slurm: Slurm decides).
    fn free_nodes(&self) -> Vec<String>;
    /// A descriptor that turns readable when the backend has news for
    /// [`Backend::tick`] (answers from threads of its own); none by default.
    fn wake_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }
    /// When the backend next wants [`Backend::tick`], asked at `now` (the
    /// core's clock: a backend never reads one of its own).
    fn next_deadline(&self, now: u64) -> Option<u64>;
    /// Fire what fell due by `now`.
    fn tick(&mut self, now: u64) -> Result<Vec<Out>>;
    /// Serve one allocation request the DVM sent on `tag`.
    fn on_alloc(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>>;
    /// The DVM says reservation `alloc_id` ended by itself.
    fn on_session_done(&mut self, alloc_id: &str, now: u64) -> Result<Vec<Out>>;
    /// The DVM lists `live` as its allocations: give back what it dropped.
    fn reconcile(&mut self, live: &[String], now: u64, settle_ms: u64) -> Result<Vec<Out>>;
    /// The administrator's release of `alloc_id` (`psched --release`);
    /// `None` when there is no such grant.
    fn admin_release(&mut self, alloc_id: &str, now: u64) -> Result<Option<Vec<Out>>>;
    /// Never grant `nodes` again (their daemon did not come up in this
    /// DVM); a node source that does not choose nodes ignores it.
    fn hold_back(&mut self, nodes: &[String]) {
        let _ = nodes;
    }
    /// The nodes whose daemons psched starts as soon as it attaches (its
    /// own idle nodes; none for a node source that lends them per grant).
    fn warm(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Which backend psched runs with (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendKind {
    /// psched's own pool (`--nodes`).
    #[default]
    Pool,
    /// The Slurm that `SLURM_CONF` (or Slurm's default) names.
    Slurm,
}

impl Backend for State {
    fn attach(&mut self, dvm: &str, wire: WireVersion) {
        State::attach(self, dvm, wire)
    }
    fn ledger(&self) -> Ledger {
        State::ledger(self)
    }
    fn free_nodes(&self) -> Vec<String> {
        State::free_nodes(self)
    }
    fn next_deadline(&self, _now: u64) -> Option<u64> {
        State::next_deadline(self)
    }
    fn tick(&mut self, now: u64) -> Result<Vec<Out>> {
        State::tick(self, now)
    }
    fn on_alloc(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        State::on_alloc(self, tag, ask, now)
    }
    fn on_session_done(&mut self, alloc_id: &str, now: u64) -> Result<Vec<Out>> {
        State::on_session_done(self, alloc_id, now)
    }
    fn reconcile(&mut self, live: &[String], now: u64, settle_ms: u64) -> Result<Vec<Out>> {
        State::reconcile(self, live, now, settle_ms)
    }
    fn admin_release(&mut self, alloc_id: &str, now: u64) -> Result<Option<Vec<Out>>> {
        State::admin_release(self, alloc_id, now)
    }
    fn hold_back(&mut self, nodes: &[String]) {
        State::hold_back(self, nodes)
    }
    fn warm(&self) -> Vec<String> {
        State::free_nodes(self)
    }
}
