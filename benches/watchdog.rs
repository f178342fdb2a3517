//! How every benchmark is wired: it runs only under `cargo bench` and never
//! longer than its own time limit.
//!
//! * `cargo bench` passes `--bench` to a `harness = false` benchmark;
//!   `cargo test --all-targets` builds it too but runs it without that
//!   argument, and then [`start`] returns `false`: the benchmark does
//!   nothing (benchmarks are not tests).
//! * [`start`] arms a watchdog thread: when the benchmark has not finished
//!   within its limit (or `$PMIX_TOOLS_BENCH_LIMIT_SECS`, when set) it
//!   says so, kills the processes the benchmark started (its children and
//!   their process groups) and exits 124, so a hung peer cannot hang CI.
//!
//! Included by each benchmark with `#[path = "watchdog.rs"] mod watchdog;`.

use std::time::Duration;

/// Exit code of a benchmark stopped by its watchdog (as timeout(1)).
pub const TIMED_OUT: i32 = 124;

/// Whether to run benchmark `name` (only under `cargo bench`); when it is
/// to run, arms its watchdog with `limit`.
pub fn start(name: &'static str, limit: Duration) -> bool {
    if !std::env::args().skip(1).any(|a| a == "--bench") {
        eprintln!("{name}: a benchmark; run it with `cargo bench --bench {name}`");
        return false;
    }
    let limit = std::env::var("PMIX_TOOLS_BENCH_LIMIT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(limit);
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!("{name}: time limit of {limit:?} exceeded; stopping the benchmark");
        kill_children();
        std::process::exit(TIMED_OUT);
    });
    true
}

/// SIGKILL every child of this process, and the process group of each that
/// leads one.
fn kill_children() {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in children
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let pid = nix::unistd::Pid::from_raw(pid);
            if nix::unistd::getpgid(Some(pid)) == Ok(pid) {
                let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
            }
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
}
