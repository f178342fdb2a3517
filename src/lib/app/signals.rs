//! SIGINT, SIGTERM and SIGHUP as a flag, plus a self-pipe whose read end
//! ([`fd`]) a tool's wait loop polls with its connection, so an interrupted
//! tool wakes at once and can cancel what it asked for (a queued request, a
//! running job) before exiting.

use std::os::fd::{BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

static CAUGHT: AtomicI32 = AtomicI32::new(0);
static LATEST: AtomicI32 = AtomicI32::new(0);

/// The self-pipe's write end (-1 before [`install`]).
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
/// The self-pipe's read end.
static PIPE_R: OnceLock<OwnedFd> = OnceLock::new();

extern "C" fn on_signal(sig: nix::libc::c_int) {
    CAUGHT.store(sig, Ordering::SeqCst);
    LATEST.store(sig, Ordering::SeqCst);
    let w = PIPE_W.load(Ordering::SeqCst);
    if w >= 0 {
        // SAFETY: write(2) is async-signal-safe; a full pipe (already
        // readable) just drops the byte.
        unsafe {
            nix::libc::write(w, [1u8].as_ptr().cast(), 1);
        }
    }
}

/// The read end of the signal self-pipe: readable once a signal was caught
/// since the last [`drain`]. `None` before [`install`].
pub(crate) fn fd() -> Option<BorrowedFd<'static>> {
    use std::os::fd::AsFd;
    PIPE_R.get().map(|f| f.as_fd())
}

/// Empty the self-pipe (after its readiness was seen).
pub(crate) fn drain() {
    use std::os::fd::AsRawFd;
    if let Some(r) = PIPE_R.get() {
        let mut buf = [0u8; 64];
        while matches!(nix::unistd::read(r.as_raw_fd(), &mut buf), Ok(n) if n > 0) {}
    }
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on (instead of dying at once).
/// Each tool's `main` calls it before [`super::palloc::run`] and the others;
/// calling it again is harmless.
pub fn install() -> crate::error::Result<()> {
    use crate::error::{Error, ErrorKind};
    use crate::proto::Status;
    let failed = |what: &str, e: nix::Error| {
        Error::io(
            ErrorKind::Local,
            Status::ERROR,
            what,
            std::io::Error::from(e),
        )
    };
    if PIPE_R.get().is_none() {
        let (r, w) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC)
                .map_err(|e| failed("creating the signal pipe", e))?;
        // SAFETY: `r` is a fresh descriptor we own.
        let r = unsafe { OwnedFd::from_raw_fd(r.into_raw_fd()) };
        if PIPE_R.set(r).is_ok() {
            PIPE_W.store(w.into_raw_fd(), Ordering::SeqCst);
        }
    }
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores into an atomic, which is
        // async-signal-safe.
        unsafe { sigaction(sig, &act) }.map_err(|e| failed(sig.as_str(), e))?;
    }
    Ok(())
}

/// The signal caught so far, if any.
pub(crate) fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The signal caught since the last call to `take_new`, if any (the sticky
/// [`caught`] flag is left as it is).
pub(crate) fn take_new() -> Option<i32> {
    match LATEST.swap(0, Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The name of a caught signal number, for messages.
pub(crate) fn name(sig: i32) -> &'static str {
    Signal::try_from(sig)
        .map(|s| s.as_str())
        .unwrap_or("signal")
}

/// Sleep until `deadline`, waking early for a caught signal; returns the
/// signal caught so far, if any.
pub(crate) fn sleep_until(deadline: std::time::Instant) -> Option<i32> {
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
            None => std::thread::sleep(left),
        }
    }
}
