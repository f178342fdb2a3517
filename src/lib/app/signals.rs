//! SIGINT, SIGTERM and SIGHUP as a flag the tools poll, so an interrupted tool can
//! cancel what it asked for (a queued request, a running job) before exiting.

use std::sync::atomic::{AtomicI32, Ordering};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

static CAUGHT: AtomicI32 = AtomicI32::new(0);
static LATEST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: nix::libc::c_int) {
    CAUGHT.store(sig, Ordering::SeqCst);
    LATEST.store(sig, Ordering::SeqCst);
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on (instead of dying at once).
pub fn install() {
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores into an atomic, which is
        // async-signal-safe.
        let _ = unsafe { sigaction(sig, &act) };
    }
}

/// The signal caught so far, if any.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The signal caught since the last call to `take_new`, if any (the sticky
/// [`caught`] flag is left as it is).
pub fn take_new() -> Option<i32> {
    match LATEST.swap(0, Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The name of a caught signal number, for messages.
pub fn name(sig: i32) -> &'static str {
    Signal::try_from(sig)
        .map(|s| s.as_str())
        .unwrap_or("signal")
}
