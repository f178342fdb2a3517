//! The tools' timed waits that are not on their connection (issue 44.5: no
//! polling loop). A tool waits on its connection's one poll(2) with a
//! deadline (`conn::Connection::wait`), on the signal self-pipe
//! (`app::signals::caught_by`), or here: on a channel with a deadline
//! ([`recv_until`]), or, for a retry whose cause sends no event, for a
//! deadline named by a [`Why`].

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

/// Why a tool waits for a deadline rather than an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The next try of a spawn the DVM refused with a generic `PMIX_ERROR`
    /// that may be transient (see [`super::spawn::transient_retries`]): the
    /// DVM says nothing when it would take the spawn.
    SpawnRetry,
    /// A tool that catches no signal (no self-pipe) waits for its deadline
    /// alone (`app::signals::caught_by`).
    NoSignalPipe,
}

/// Wait until `deadline` (at once when it has passed), for `why`. Not a
/// poll: nothing is looked at before the deadline, the caller looks once
/// after it.
pub fn until(deadline: Instant, why: Why) {
    let _ = why;
    let left = deadline.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
}

/// The next message on `rx`, waiting for it at most until `deadline`: an
/// event wait with a deadline (std's `recv_timeout`, its errors as they
/// are: `Timeout` at the deadline, `Disconnected` when every sender has
/// gone).
pub fn recv_until<T>(rx: &Receiver<T>, deadline: Instant) -> Result<T, RecvTimeoutError> {
    rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
}
