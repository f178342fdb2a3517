//! Waiting in tests, in one place: a test waits for something it can see
//! (a file, a line, a process's end, a DVM's answer), polled here in short
//! steps up to a deadline, never for a fixed time that hopes a state has
//! come. This module holds the harness's only pause between polls.
//!
//! * [`eventually`]: until a condition holds, or panic naming it;
//! * [`within`]: the same, answering whether it held;
//! * [`value_within`]: until a probe gives a value;
//! * [`within_every`], [`value_within_every`]: the same with a longer
//!   step, for a probe that runs a tool or launches a job;
//! * [`holds_for`]: that a condition stays true for a whole period (for
//!   "nothing happens": a server that must not die, a job that must not
//!   end), checked at every step rather than once at the end.

use std::time::{Duration, Instant};

/// The step between two polls.
pub const STEP: Duration = Duration::from_millis(10);

/// How long [`eventually`] waits unless told otherwise: long enough for a
/// loaded 2-core machine, short enough that a hung test fails in time.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// Poll `probe` every [`STEP`] until it gives a value or `limit` has
/// passed; the value, or `None` at the deadline. The probe runs at least
/// once, and once more at the deadline.
pub fn value_within<T>(limit: Duration, probe: impl FnMut() -> Option<T>) -> Option<T> {
    value_within_every(limit, STEP, probe)
}

/// [`value_within`] pausing `step` between polls: for a probe that costs
/// something (runs a tool, launches a job, asks a daemon), which polled
/// every [`STEP`] would load the machine and the peer the test waits on.
pub fn value_within_every<T>(
    limit: Duration,
    step: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(step.min(deadline - now));
    }
}

/// Poll `cond` every [`STEP`] until it holds or `limit` has passed;
/// whether it held.
pub fn within(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    value_within(limit, || cond().then_some(())).is_some()
}

/// [`within`] pausing `step` between polls (a costly `cond`, as for
/// [`value_within_every`]).
pub fn within_every(limit: Duration, step: Duration, mut cond: impl FnMut() -> bool) -> bool {
    value_within_every(limit, step, || cond().then_some(())).is_some()
}

/// Poll `cond` until it holds; panics "timed out waiting until {what}"
/// after `limit`.
#[track_caller]
pub fn eventually_within(what: &str, limit: Duration, cond: impl FnMut() -> bool) {
    if !within(limit, cond) {
        panic!("timed out after {limit:?} waiting until {what}");
    }
}

/// Poll `cond` until it holds; panics naming `what` after [`DEADLINE`].
#[track_caller]
pub fn eventually(what: &str, cond: impl FnMut() -> bool) {
    eventually_within(what, DEADLINE, cond)
}

/// Whether `cond` holds at every step for the whole of `period` (it is
/// checked at the start, every [`STEP`], and at the end): false at the
/// first step where it does not.
pub fn holds_for(period: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + period;
    !within(period, || !cond()) && Instant::now() >= end && cond()
}
