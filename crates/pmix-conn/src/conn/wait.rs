//! The connection layer's one timed wait that is not on a descriptor
//! (issue 44.5: no polling loop). Every other wait of `conn` is on an event
//! with a deadline: poll(2) on the socket and the caller's descriptors
//! ([`super::client`]), a pidfd ([`super::pidfd`]). What is left is a
//! retry whose cause sends no event to wait on; each is named by a
//! [`Retry`], and waits here, to its deadline, not in a loop of naps.

use std::sync::{Condvar, MutexGuard};
use std::time::{Duration, Instant};

/// Why a caller waits for a deadline rather than an event: the retries of
/// the connection layer, each bounded (a number of tries or a deadline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// A registry name's lock is held, perhaps by a sweep removing a dead
    /// holder's name for a moment (flock(2) has no timed wait).
    NameLock,
    /// The next connection attempt, as `--retries` and `--wait-to-connect`
    /// ask (PMIx's `PMIX_CONNECT_MAX_RETRIES`, `PMIX_CONNECT_RETRY_DELAY`):
    /// a server not up yet announces nothing to wait on.
    Connect,
    /// A connection with nothing to watch (its queue full, no descriptor
    /// of the caller's): only the caller's deadline can end the wait.
    NothingToWatch,
}

/// Wait until `deadline` (at once when it has passed), for the retry
/// `why`. This is not a poll: nothing is looked at before the deadline,
/// and the caller looks once after it.
pub(crate) fn until(deadline: Instant, why: Retry) {
    let _ = why;
    let left = deadline.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
}

/// Wait on `turn` for another thread's word (a notify), at most `left`:
/// an event wait with a deadline. The guard comes back, the lock held
/// (taken from a poisoned lock too: the state it guards is plain data).
pub(crate) fn for_turn<'a, T>(
    turn: &Condvar,
    guard: MutexGuard<'a, T>,
    left: Duration,
) -> MutexGuard<'a, T> {
    turn.wait_timeout(guard, left)
        .map(|(g, _)| g)
        .unwrap_or_else(|p| p.into_inner().0)
}
