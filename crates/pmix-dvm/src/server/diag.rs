//! pdvm's one way to say something on stderr, which is its log (what a
//! terminal shows, or a file a script sends it to): one line at a time,
//! never a panic when stderr is closed or full (`eprintln!` panics when the
//! write fails), and the time in front when `PDVM_LOG_TIMES` is set
//! (seconds since the epoch with milliseconds), as psched's log does under
//! `PSCHED_LOG_TIMES`. The server and the `pdvm` binary both write here.

use std::io::Write;
use std::sync::OnceLock;

/// The environment variable that puts the time in front of each line.
pub const LOG_TIMES_ENV: &str = "PDVM_LOG_TIMES";

/// Write `args` as one line on stderr, with the time when asked.
pub fn line(args: std::fmt::Arguments<'_>) {
    static TIMES: OnceLock<bool> = OnceLock::new();
    let times = *TIMES.get_or_init(|| std::env::var_os(LOG_TIMES_ENV).is_some());
    let text = if times {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        format!("{now:.3} {args}\n")
    } else {
        format!("{args}\n")
    };
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes()).and_then(|()| e.flush());
}
