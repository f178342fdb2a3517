//! Job arrays against separate launches (issue 29), side by side in one
//! run on one pdvm (run: `cargo bench --bench pspawn_array`):
//!
//! 1. `pspawn --array 1-2000%32 sh -c 'echo t$PMIX_ARRAY_TASK_ID'`: one
//!    process, one connection; every id must come back;
//! 2. the bulk path: one `pspawn --stdin-tasks 32` fed 2000 JSON task
//!    lines (`sh -c 'echo t$ID'`), one JSON result per task;
//! 3. 2000 separate `pspawn -n 1 true`, 8 at a time (8 threads of 250).
//!
//! Each runs `ARRAY_ROUNDS` times (default 5), the three in turn; prints
//! every round's tasks/s, the medians and the ratios of the medians
//! (target: the array at least 3x). `ARRAY_TASKS` changes the count; `ARRAY_MASTER=1` also runs both on a
//! PRRTE master DVM (a tenth of the tasks: PRRTE launches slower).
//! Everything runs as from a user's shell, without the variables cargo
//! sets for a benchmark ([`drop_cargo_env`]); `ARRAY_CARGO_ENV=1` keeps
//! them.
//! Every run is bounded: a tool run past [`RUN_DEADLINE`] fails the bench,
//! and the watchdog stops the whole bench past its limit.

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::pdvm::Pdvm;
use support::{cargo_bin, text, Prte, ToolHost};

/// Longest one tool run may take.
const RUN_DEADLINE: u64 = 600;

/// Run `cmd` to its end (bounded); its stdout. Fails the bench unless it
/// exits 0.
fn run(cmd: &mut Command) -> String {
    let o = support::run_with_timeout(cmd.stdin(Stdio::null()), RUN_DEADLINE);
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    text(&o.stdout)
}

/// The array of `n` tasks, at most 32 at once: seconds taken.
fn array(mut pspawn: impl FnMut() -> Command, n: usize) -> f64 {
    let spec = format!("1-{n}%32");
    let t = Instant::now();
    let out = run(pspawn().args(["--array", &spec, "sh", "-c", "echo t$PMIX_ARRAY_TASK_ID"]));
    let secs = t.elapsed().as_secs_f64();
    let ids: BTreeSet<&str> = out.lines().collect();
    assert_eq!(ids.len(), n, "every id printed once");
    secs
}

/// `n` tasks through `pspawn --stdin-tasks 32`: seconds taken.
fn bulk(mut pspawn: impl FnMut() -> Command, n: usize) -> f64 {
    let dir = support::unique_tmpdir("bench-bulk");
    let input = dir.path().join("tasks");
    let lines: Vec<String> = (1..=n)
        .map(|i| format!(r#"{{"id":{i},"argv":["sh","-c","echo t$ID"],"env":{{"ID":"{i}"}}}}"#))
        .collect();
    std::fs::write(&input, lines.join("\n")).expect("write the tasks");
    let c = pspawn();
    let mut sh = Command::new("sh");
    // The bounded runner gives its command /dev/null: the file goes through sh.
    sh.args(["-c", "f=$1; shift; exec \"$@\" < \"$f\"", "sh"])
        .arg(&input)
        .arg(c.get_program())
        .args(c.get_args())
        .args(["--stdin-tasks", "32"]);
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            sh.env(k, v);
        }
    }
    let t = Instant::now();
    let out = run(&mut sh);
    let secs = t.elapsed().as_secs_f64();
    let results = out
        .lines()
        .filter(|l| l.contains("\"type\":\"array_task\""))
        .count();
    assert_eq!(results, n, "one result per task");
    secs
}

/// `n` separate `pspawn -n 1 true`, 8 at a time: seconds taken.
fn separate(mut pspawn: impl FnMut() -> Command, n: usize) -> f64 {
    // Built here: a pdvm handle does not cross threads, a command does.
    let mut lanes: Vec<Vec<Command>> = (0..8).map(|_| Vec::new()).collect();
    for i in 0..n {
        let mut c = pspawn();
        c.args(["-n", "1", "true"]);
        lanes[i % 8].push(c);
    }
    let t = Instant::now();
    std::thread::scope(|s| {
        for lane in lanes {
            s.spawn(move || {
                for mut c in lane {
                    // A blocking wait: the bounded runner's 10 ms exit
                    // polling would slow each of these short runs, and so
                    // flatter the array's ratio (the watchdog bounds the
                    // whole bench).
                    let o = c.stdin(Stdio::null()).output().expect("run pspawn");
                    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
                }
            });
        }
    });
    t.elapsed().as_secs_f64()
}

/// Median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The three, side by side, `rounds` times in turn (so load and warm-up
/// fall on each alike); printed as median tasks/s and the ratios of the
/// medians.
fn compare(label: &str, mut pspawn: impl FnMut() -> Command, n: usize, rounds: usize) {
    let (mut a, mut b, mut s) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(n as f64 / array(&mut pspawn, n));
        b.push(n as f64 / bulk(&mut pspawn, n));
        s.push(n as f64 / separate(&mut pspawn, n));
    }
    let show = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "{label}: {n} tasks, {rounds} rounds (tasks/s each: array [{}], bulk [{}], separate [{}])",
        show(&a),
        show(&b),
        show(&s)
    );
    let (ra, rb, rs) = (median(a), median(b), median(s));
    println!(
        "{label}: medians: --array %32 {ra:.0} tasks/s; --stdin-tasks 32 {rb:.0} tasks/s; \
separate pspawns x8 {rs:.0} tasks/s; ratios {:.1}x and {:.1}x (target >= 3x)",
        ra / rs,
        rb / rs
    );
}

/// Whether a variable is one cargo (or rustup) sets for the programs it
/// runs, not one a user's shell has.
fn set_by_cargo(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
        || name.starts_with("RUSTUP_TOOLCHAIN")
        || matches!(
            name,
            "CARGO"
                | "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "RUST_RECURSION_COUNT"
        )
}

/// Run everything as from a user's shell: the variables cargo sets for a
/// benchmark, and the build and toolchain directories it puts first on
/// `LD_LIBRARY_PATH`, are dropped from this process before any thread or
/// child starts, so pdvm, every tool and every task (the array's and the
/// separate pspawns' alike) see what a user's would. Each task inherits
/// pdvm's environment, and with cargo's `LD_LIBRARY_PATH` every task's
/// loader first looks for its libraries in four directories that do not
/// have them.
fn drop_cargo_env() {
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| set_by_cargo(k))
        .collect();
    for k in names {
        std::env::remove_var(k);
    }
    let Some(ld) = std::env::var_os("LD_LIBRARY_PATH") else {
        return;
    };
    let exe = std::env::current_exe().unwrap_or_default();
    let target = exe.ancestors().nth(3).map(std::path::Path::to_path_buf);
    let rustup = std::env::var_os("RUSTUP_HOME").map(std::path::PathBuf::from);
    let kept: Vec<_> = std::env::split_paths(&ld)
        .filter(|d| !target.as_ref().is_some_and(|t| d.starts_with(t)))
        .filter(|d| !rustup.as_ref().is_some_and(|r| d.starts_with(r)))
        .collect();
    if kept.is_empty() {
        std::env::remove_var("LD_LIBRARY_PATH");
    } else if let Ok(v) = std::env::join_paths(kept) {
        std::env::set_var("LD_LIBRARY_PATH", v);
    }
}

fn main() {
    if !std::env::var("ARRAY_CARGO_ENV").is_ok_and(|v| v == "1") {
        drop_cargo_env();
    }
    if !watchdog::start("pspawn_array", Duration::from_secs(1800)) {
        return;
    }
    let n: usize = std::env::var("ARRAY_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let rounds: usize = std::env::var("ARRAY_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "64"]);
    compare("pdvm", || pdvm.tool("pspawn"), n, rounds);
    if std::env::var("ARRAY_MASTER").is_ok_and(|v| v == "1") {
        let dvm = Prte::start_master();
        let tool = || {
            let mut c = dvm.tool_command(cargo_bin("pspawn"));
            c.env("PATH", support::user_path());
            c.args(["--map-by", ":OVERSUBSCRIBE"]);
            c
        };
        compare("PRRTE master", tool, (n / 10).max(1), rounds);
    }
}
