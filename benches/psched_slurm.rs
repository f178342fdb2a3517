//! The same grant, side by side in one run on this machine (issue 20):
//! `palloc -N 1 -- true` through PRRTE master with `psched --backend slurm`
//! on the private three-node Slurm, against Slurm's own `salloc -N 1 true`
//! (grant, run `true`, give back: the same work) and `salloc -N 1
//! --no-shell` (the grant alone; its `scancel` after is not timed).
//! `cargo bench --bench psched_slurm`; `BENCH_RUNS` pairs (default 10),
//! on Slurm 22.05 then 26.05.3 (`BENCH_SLURM=22.05` or `26.05.3` for one).
//! Prints medians and the ratio psched/Slurm.

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Wall time of `cmd` run to its end (bounded); panics if it fails.
fn timed(mut cmd: Command) -> Duration {
    let t = Instant::now();
    let o = support::run_with_timeout(cmd.stdin(Stdio::null()), 120);
    assert!(o.status.success(), "{}", support::show(&o));
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    if !watchdog::start("psched_slurm", Duration::from_secs(900)) {
        return;
    }
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    use support::slurm::Version;
    let only = std::env::var("BENCH_SLURM").ok();
    for v in [Version::Debian22, Version::Current26] {
        if only.as_deref().is_none_or(|o| o == v.name()) {
            bench_on(v, runs);
        }
    }
}

fn bench_on(v: support::slurm::Version, runs: usize) {
    println!("Slurm {}:", v.name());
    let (c, s) = support::slurm::cluster_on_slurm(v, &[]);
    let palloc = || {
        let mut cmd = c.command(support::cargo_bin("palloc"));
        cmd.env("PATH", support::user_path())
            .args(["-N", "1", "-t", "5m", "--", "true"]);
        cmd
    };
    let salloc = || {
        let mut cmd = s.command("salloc");
        cmd.args(["-N", "1", "-t", "5", "true"]);
        cmd
    };
    let no_shell = || {
        let t = Instant::now();
        let o = support::run_with_timeout(
            s.command("salloc")
                .args(["-N", "1", "-t", "5", "--no-shell", "-J", "bench"])
                .stdin(Stdio::null()),
            120,
        );
        let e = t.elapsed();
        assert!(o.status.success(), "{}", support::show(&o));
        s.run("scancel", &["--name", "bench"]);
        e
    };
    let (mut a, mut b, mut n) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        a.push(timed(palloc()));
        b.push(timed(salloc()));
        n.push(no_shell());
    }
    let (ma, mb, mn) = (median(a), median(b), median(n));
    println!("| command | median of {runs} | ratio to palloc via psched |");
    println!("| --- | --- | --- |");
    println!("| palloc -N 1 -- true (PRRTE master + psched on Slurm) | {ma:.1} ms | 1 |");
    println!(
        "| salloc -N 1 true (Slurm alone) | {mb:.1} ms | {:.2} |",
        mb / ma
    );
    println!(
        "| salloc -N 1 --no-shell (grant only) | {mn:.1} ms | {:.2} |",
        mn / ma
    );
    println!(
        "psched overhead over Slurm's own grant and release: {:.2}x",
        ma / mb
    );
}
