//! `pspawn --array` tests: each task stamps its start and end in a
//! directory, and the stamps say how many ran at once.

use std::path::Path;

/// A task body (for `sh -c`) that writes `DIR/ID.start` and `DIR/ID.end`
/// (nanoseconds of the one system clock), its pid in `DIR/ID.pid`, and
/// sleeps `secs` in between. `DIR` is the first argument after the body.
/// The pid file appears whole ([`PID_FILE`]).
pub fn stamping_task(secs: &str) -> String {
    format!(
        "d=$1; {PID_FILE}; date +%s%N > $d/$PMIX_ARRAY_TASK_ID.start; \
sleep {secs}; date +%s%N > $d/$PMIX_ARRAY_TASK_ID.end"
    )
}

/// The `(start, end)` stamps of every task that ended, by index.
pub fn intervals(dir: &Path) -> Vec<(u32, u128, u128)> {
    let read = |p: std::path::PathBuf| -> Option<u128> {
        std::fs::read_to_string(p).ok()?.trim().parse().ok()
    };
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read stamp dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".start").and_then(|i| i.parse().ok()) else {
            continue;
        };
        if let (Some(s), Some(t)) = (
            read(dir.join(format!("{id}.start"))),
            read(dir.join(format!("{id}.end"))),
        ) {
            out.push((id, s, t));
        }
    }
    out.sort_unstable();
    out
}

/// The most tasks whose stamped intervals overlap at one instant.
pub fn most_at_once(spans: &[(u32, u128, u128)]) -> usize {
    let mut edges: Vec<(u128, i32)> = spans
        .iter()
        .flat_map(|(_, s, e)| [(*s, 1), (*e, -1)])
        .collect();
    // At a tie an end comes first: touching intervals do not overlap.
    edges.sort_unstable();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// The indices whose task started (wrote its `.start`).
pub fn started(dir: &Path) -> Vec<u32> {
    let mut ids: Vec<u32> = std::fs::read_dir(dir)
        .expect("read stamp dir")
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_suffix(".pid").and_then(|i| i.parse().ok())
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// A task body (for `sh -c`) that writes its pid in `DIR/ID.pid` and
/// runs until `DIR/gate` exists. `DIR` is the first argument after it.
pub fn gated_task() -> String {
    format!("d=$1; {PID_FILE}; while [ ! -e $d/gate ]; do sleep 0.1; done")
}

/// The shell that writes a task's pid in `$d/ID.pid`: written aside and
/// renamed, so a test that sees the file (as [`started`] does) reads the
/// whole pid, never the empty file a redirection creates before `echo`
/// writes (a test once read `""` there and took `/proc/` for the task).
pub const PID_FILE: &str =
    "echo $$ > $d/$PMIX_ARRAY_TASK_ID.pid.part && mv $d/$PMIX_ARRAY_TASK_ID.pid.part $d/$PMIX_ARRAY_TASK_ID.pid";
