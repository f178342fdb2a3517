//! The same grant, side by side in one run on this machine (issue 20):
//! `palloc -N 1 -- true` through PRRTE master with `psched --backend slurm`
//! on the private three-node Slurm, against Slurm's own `salloc -N 1 true`
//! (grant, run `true`, give back: the same work) and `salloc -N 1
//! --no-shell` (the grant alone; its `scancel` after is not timed).
//! `cargo bench --bench psched_slurm`; `BENCH_RUNS` pairs (default 10),
//! on Slurm 22.05 then 26.05.3 (`BENCH_SLURM=22.05` or `26.05.3` for one).
//! Prints medians and the ratio psched/Slurm.
//!
//! With `BENCH_QUEUE=N` (e.g. 10000) it then measures what psched costs
//! Slurm and itself on a busy queue: N held jobs of another user (`nobody`)
//! in the queue, psched holding one grant and one request pending, for
//! `BENCH_QUEUE_SECS` (default 60): slurmctld's RPCs per minute (`sdiag`,
//! reset at the start) and psched's CPU (its own, and its reaped children's:
//! the Slurm commands it ran). `CARGO_BIN_EXE_psched=PATH` measures another
//! psched build (an earlier commit's, for a before/after).

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
    if !watchdog::start("psched_slurm", Duration::from_secs(2400)) {
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
    if runs > 0 {
        grant_times(&c, &s, runs);
    }
    let queue: usize = std::env::var("BENCH_QUEUE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if queue > 0 {
        queue_load(&c, &s, queue);
    }
}

/// psched's (utime + stime, cutime + cstime) in seconds, from /proc.
fn cpu_of(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("psched's stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // Fields 14-17 of stat(5), counted from field 3 here.
    let tick = 100.0;
    ((f[11] + f[12]) / tick, (f[13] + f[14]) / tick)
}

/// The RPC counts `sdiag` lists by message type, summed.
fn rpcs(s: &support::slurm::Slurm) -> (u64, Vec<String>) {
    let out = s.run("sdiag", &[]);
    let mut total = 0;
    let mut lines = Vec::new();
    let mut in_types = false;
    for l in out.lines() {
        if l.starts_with("Remote Procedure Call statistics by message type") {
            in_types = true;
            continue;
        }
        if l.starts_with("Remote Procedure Call statistics by user") {
            break;
        }
        if in_types {
            if let Some(n) = l
                .split("count:")
                .nth(1)
                .and_then(|x| x.split_whitespace().next())
            {
                let n: u64 = n.parse().unwrap_or(0);
                total += n;
                lines.push(format!("{} {n}", l.split_whitespace().next().unwrap_or("")));
            }
        }
    }
    (total, lines)
}

/// See the module documentation (`BENCH_QUEUE`).
fn queue_load(c: &support::cluster::Cluster, s: &support::slurm::Slurm, n: usize) {
    let t = Instant::now();
    let mut sub = s.command("sh");
    sub.arg("-c")
        .arg(
            "seq \"$1\" | xargs -P 4 -n 250 sh -c 'for i; do sbatch --uid=65534 --gid=65534 \
             --hold --chdir=/tmp -o /dev/null -J filler --wrap true >/dev/null || exit 1; done' sh",
        )
        .arg("sh")
        .arg(n.to_string());
    let o = support::run_with_timeout(sub.stdin(Stdio::null()), 1200);
    assert!(o.status.success(), "{}", support::show(&o));
    println!(
        "queue: {n} held jobs of nobody submitted in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    let palloc = |args: &[&str]| {
        let mut cmd = c.command(support::cargo_bin("palloc"));
        cmd.env("PATH", support::user_path())
            .args(["--hold", "--json"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        cmd.spawn().expect("palloc")
    };
    let t = Instant::now();
    let mut held = palloc(&["-N", "1", "-t", "30m"]);
    let lines = support::LineReader::new(held.stdout.take().expect("stdout"));
    lines
        .next_line(Duration::from_secs(300))
        .expect("the grant");
    println!(
        "grant with {n} jobs queued: {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let mut pending = palloc(&["-N", "3", "-t", "30m"]);
    std::thread::sleep(Duration::from_secs(5));
    let secs: u64 = std::env::var("BENCH_QUEUE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let pid = c.psched_pid().expect("psched runs");
    s.run("sdiag", &["--reset"]);
    let (own0, kids0) = cpu_of(pid);
    std::thread::sleep(Duration::from_secs(secs));
    let (own1, kids1) = cpu_of(pid);
    let (total, by_type) = rpcs(s);
    let per_min = total as f64 * 60.0 / secs as f64;
    println!("over {secs} s, 1 grant held + 1 request pending, {n} other jobs queued:");
    println!(
        "  slurmctld RPCs: {total} ({per_min:.0}/min): {}",
        by_type.join(", ")
    );
    println!(
        "  psched CPU: {:.2} s own, {:.2} s its Slurm commands ({:.1}% of one core in all)",
        own1 - own0,
        kids1 - kids0,
        (own1 - own0 + kids1 - kids0) * 100.0 / secs as f64
    );
    for h in [&mut held, &mut pending] {
        let _ = h.kill();
        let _ = h.wait();
    }
}

fn grant_times(c: &support::cluster::Cluster, s: &support::slurm::Slurm, runs: usize) {
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
