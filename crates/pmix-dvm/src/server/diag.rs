//! pdvm's one way to say something on stderr, which is its log (what a
//! terminal shows, or a file a script sends it to): one line at a time,
//! never a panic when stderr is closed or full (`eprintln!` panics when the
//! write fails), and the time in front when `PDVM_LOG_TIMES` is set
//! (seconds since the epoch with milliseconds), as psched's log does under
//! `PSCHED_LOG_TIMES`. The server and the `pdvm` binary both write here.

use std::sync::OnceLock;

/// The environment variable that puts the time in front of each line.
pub const LOG_TIMES_ENV: &str = "PDVM_LOG_TIMES";

/// Write `args` as one line on stderr, with the time when asked
/// ([`crate::conn::diag`]).
pub fn line(args: std::fmt::Arguments<'_>) {
    static TIMES: OnceLock<bool> = OnceLock::new();
    let times = crate::conn::diag::times_asked(&TIMES, LOG_TIMES_ENV);
    crate::conn::diag::line(times, args);
}
