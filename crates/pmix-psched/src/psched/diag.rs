//! psched's one way to say something on stderr, which is its log (the
//! journal under systemd, a file under `psched --daemon`): one line at a
//! time, never a panic when stderr is closed or full (`eprintln!` panics
//! when the write fails), and the time in front when `PSCHED_LOG_TIMES`
//! is set (seconds since the epoch with milliseconds), to read a burst's
//! log.

use std::sync::OnceLock;

/// The environment variable that puts the time in front of each line.
pub const LOG_TIMES_ENV: &str = "PSCHED_LOG_TIMES";

/// Write `args` as one line on stderr, with the time when asked
/// ([`crate::conn::diag`]).
pub fn line(args: std::fmt::Arguments<'_>) {
    static TIMES: OnceLock<bool> = OnceLock::new();
    let times = crate::conn::diag::times_asked(&TIMES, LOG_TIMES_ENV);
    crate::conn::diag::line(times, args);
}
