//! SIGINT, SIGTERM and SIGHUP as a flag, plus a self-pipe whose read end
//! ([`fd`]) a tool's wait loop polls with its connection, so an interrupted
//! tool wakes at once and can cancel what it asked for (a queued request, a
//! running job) before exiting.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use nix::sys::signal::Signal;

/// The signal caught so far (0: none); sticky.
static CAUGHT: AtomicUsize = AtomicUsize::new(0);
/// The signal caught since [`take_new`] last looked (0: none).
static LATEST: AtomicUsize = AtomicUsize::new(0);

/// The self-pipe's read end, once [`install`] has run.
static PIPE_R: OnceLock<OwnedFd> = OnceLock::new();

/// The signals a tool catches.
const CAUGHT_SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// The read end of the signal self-pipe: readable once a signal was caught
/// since the last [`drain`]. `None` before [`install`].
pub(crate) fn fd() -> Option<BorrowedFd<'static>> {
    use std::os::fd::AsFd;
    PIPE_R.get().map(|f| f.as_fd())
}

/// Empty the self-pipe (after its readiness was seen).
pub(crate) fn drain() {
    if let Some(r) = PIPE_R.get() {
        let mut buf = [0u8; 64];
        while matches!(nix::unistd::read(r.as_raw_fd(), &mut buf), Ok(n) if n > 0) {}
    }
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on (instead of dying at once).
/// Each tool's `main` calls it before [`super::palloc::run`] and the others;
/// calling it again is harmless. The handlers are `signal-hook`'s: each
/// stores the signal's number in two atomics and writes a byte to the
/// self-pipe, all async-signal-safe, with no `unsafe` of ours.
pub fn install() -> crate::error::Result<()> {
    use crate::error::{Error, ErrorKind};
    use crate::proto::Status;
    let failed =
        |what: &str, e: std::io::Error| Error::io(ErrorKind::Local, Status::ERROR, what, e);
    if PIPE_R.get().is_some() {
        return Ok(());
    }
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| failed("creating the signal pipe", e.into()))?;
    if PIPE_R.set(r).is_err() {
        return Ok(());
    }
    for sig in CAUGHT_SIGNALS {
        let n = sig as i32;
        let code = n as usize;
        signal_hook::flag::register_usize(n, &CAUGHT, code).map_err(|e| failed(sig.as_str(), e))?;
        signal_hook::flag::register_usize(n, &LATEST, code).map_err(|e| failed(sig.as_str(), e))?;
        let pipe = w
            .try_clone()
            .map_err(|e| failed("copying the signal pipe", e))?;
        signal_hook::low_level::pipe::register(n, pipe).map_err(|e| failed(sig.as_str(), e))?;
    }
    Ok(())
}

/// The signal caught so far, if any.
pub(crate) fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s as i32),
    }
}

/// The signal caught since the last call to `take_new`, if any (the sticky
/// [`caught`] flag is left as it is).
pub(crate) fn take_new() -> Option<i32> {
    match LATEST.swap(0, Ordering::SeqCst) {
        0 => None,
        s => Some(s as i32),
    }
}

/// The name of a caught signal number, for messages.
pub(crate) fn name(sig: i32) -> &'static str {
    Signal::try_from(sig)
        .map(|s| s.as_str())
        .unwrap_or("signal")
}

/// The signal caught by `deadline`, if any: a wait on the self-pipe
/// ([`fd`]) with `deadline`, which a caught signal wakes at once (no nap,
/// no look again and again). Before [`install`] no signal is caught and
/// the wait is for the deadline alone.
pub(crate) fn caught_by(deadline: std::time::Instant) -> Option<i32> {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    loop {
        if let Some(sig) = caught() {
            return Some(sig);
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return None;
        }
        let ms = i32::try_from(left.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX);
        let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
        match fd() {
            Some(f) => {
                let mut p = [PollFd::new(f, PollFlags::POLLIN)];
                let _ = nix::poll::poll(&mut p, timeout);
                drain();
            }
            None => crate::ops::wait::until(deadline, crate::ops::wait::Why::NoSignalPipe),
        }
    }
}
