//! A binary's one way to a line on stderr, which is its log: one line at a
//! time, never a panic when stderr is closed or full (`eprintln!` panics
//! when the write fails), and, when the binary's own variable asks
//! (`PSCHED_LOG_TIMES`, `PDVM_LOG_TIMES`), the time in front (seconds
//! since the epoch with milliseconds). psched's, pdvm's and the tools'
//! `diag` modules write through it.

use std::io::Write;
use std::sync::OnceLock;

/// Whether the variable `env` asks for the time in front, read once per
/// binary into `cell`.
pub fn times_asked(cell: &OnceLock<bool>, env: &str) -> bool {
    *cell.get_or_init(|| std::env::var_os(env).is_some())
}

/// Write `args` as one line on stderr, the time in front when `times`.
pub fn line(times: bool, args: std::fmt::Arguments<'_>) {
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
