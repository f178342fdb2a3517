//! psched's timed waits that are not on its serving loop's descriptors
//! (issue 44.5: no polling loop). The loop itself waits on the DVM's
//! socket, the release requests' directory and the Slurm workers' waker
//! (`serve`); a Slurm command's end is heard on a channel
//! ([`recv_until`]); what is left waits for a deadline, named by a
//! [`Why`], here and nowhere else.

use std::sync::mpsc::Receiver;
use std::time::Instant;

/// Why psched waits for a deadline rather than an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The watchdog's next look at an allocation whose psched is gone: the
    /// DVM tells a plain tool nothing when an allocation ends, so it is
    /// asked again each [`super::watchdog::PERIOD`].
    WatchdogLook,
    /// `psched --release` without inotify: one look at the deadline
    /// whether psched acted on the request.
    NoInotify,
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
/// event wait with a deadline. `None` at the deadline, or when every
/// sender has gone.
pub fn recv_until<T>(rx: &Receiver<T>, deadline: Instant) -> Option<T> {
    rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .ok()
}
