//! The same work, side by side in one run on this machine (issues 20,
//! 40.5): PRRTE master with `psched --backend slurm` on a private
//! four-node Slurm, against Slurm's own commands doing the same:
//!
//! - (a) `palloc -N 1 -- true` vs `salloc -N 1 true` (grant, run `true`,
//!   give back), and `salloc -N 1 --no-shell` (the grant alone; its
//!   `scancel` after is not timed);
//! - (b) `palloc -N 2 -- pspawn -n 2 hostname` vs
//!   `salloc -N 2 srun -n 2 hostname`;
//! - (c) a burst: `BENCH_BURST` (default 30) simultaneous
//!   `palloc -N 1 -- pspawn hostname` vs as many `salloc -N 1 srun
//!   hostname` over the four nodes: the whole burst's wall time, and p50
//!   and p99 of each command's.
//!
//! `cargo bench --bench psched_slurm`; `BENCH_RUNS` runs of (a) and (b)
//! each (default 10), `BENCH_BURSTS` bursts (default 3, medians shown), on
//! Slurm 22.05 then 26.05.3 (`BENCH_SLURM=22.05` or `26.05.3` for one).
//! Prints medians and the ratios psched/Slurm. `BENCH_CASES` (e.g. `ab`)
//! runs only those cases; `BENCH_PALLOC='ARGS;ARGS'` also times each
//! `palloc ARGS` (exploring).
//!
//! With `BENCH_QUEUE=N` (e.g. 10000) it then measures what psched costs
//! Slurm and itself on a busy queue: N held jobs of another user (`nobody`)
//! in the queue, psched holding `BENCH_HELD` allocations (default 1; a
//! list, `1,20`, measures each count in turn; past four they wait in
//! Slurm's queue), for `BENCH_QUEUE_SECS` (default 60): slurmctld's RPCs
//! per minute (`sdiag`, reset at the start) and psched's CPU (its own, and
//! its reaped children's: the Slurm commands it ran). `BENCH_QUEUE=0` with
//! `BENCH_HELD` set measures the held grants on an empty queue.
//! `CARGO_BIN_EXE_psched=PATH` (and `_palloc`, `_pspawn`) measures another
//! build (an earlier commit's, for a before/after) when the bench binary
//! is run directly (`target/release/deps/psched_slurm-* --bench`): `cargo
//! bench` sets these variables to its own builds; `BENCH_PSCHED_LOG=1` prints psched's log
//! at the end.

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Wall time of `cmd` run to its end (bounded); panics if it fails.
fn timed(mut cmd: Command) -> Duration {
    let t = Instant::now();
    let o = support::run_with_timeout(cmd.stdin(Stdio::null()), 120);
    assert!(o.status.success(), "{}", support::show(&o));
    t.elapsed()
}

fn median_ms(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn env_num(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if !watchdog::start("psched_slurm", Duration::from_secs(3600)) {
        return;
    }
    use support::slurm::Version;
    let only = std::env::var("BENCH_SLURM").ok();
    for v in [Version::Debian22, Version::Current26] {
        if only.as_deref().is_none_or(|o| o == v.name()) {
            bench_on(v);
        }
    }
}

/// Whether case `c` (`a`, `b`, `c`) is to run.
fn case(c: char) -> bool {
    std::env::var("BENCH_CASES").map_or(true, |v| v.contains(c))
}

fn bench_on(v: support::slurm::Version) {
    println!("Slurm {}:", v.name());
    let (c, s) = support::slurm::cluster_on_slurm_nodes(v, 4, &[]);
    let runs = env_num("BENCH_RUNS", 10);
    let mut rows: Vec<(String, f64, f64)> = Vec::new();
    if runs > 0 && case('a') {
        rows.extend(grant_times(&c, &s, runs));
    }
    if runs > 0 && case('b') {
        rows.push(two_nodes(&c, &s, runs));
    }
    if let Ok(extra) = std::env::var("BENCH_PALLOC") {
        // Exploring: `BENCH_PALLOC='-N 2 -- true;-N 1 -- pspawn true'`.
        for args in extra.split(';') {
            let args: Vec<&str> = args.split_whitespace().collect();
            let mut v: Vec<f64> = (0..runs.max(1))
                .map(|_| ms(timed(palloc(&c, &args))))
                .collect();
            v.sort_by(f64::total_cmp);
            println!("palloc {}: median {:.0} ms", args.join(" "), median_ms(v));
        }
    }
    let bursts = env_num("BENCH_BURSTS", 3);
    if bursts > 0 && case('c') {
        rows.extend(bursts_of(&c, &s, env_num("BENCH_BURST", 30), bursts));
    }
    if !rows.is_empty() {
        println!(
            "| Slurm {} | palloc via psched | Slurm alone | ratio |",
            v.name()
        );
        println!("| --- | --- | --- | --- |");
        for (what, p, q) in &rows {
            println!("| {what} | {p:.0} ms | {q:.0} ms | {:.2} |", p / q);
        }
    }
    let queue = env_num("BENCH_QUEUE", 0);
    if queue > 0 || std::env::var("BENCH_HELD").is_ok() {
        queue_load(&c, &s, queue);
    }
    assert!(!c.prte_exited(), "prte died\n{}", c.logs());
    if std::env::var("BENCH_PSCHED_LOG").is_ok() {
        println!("psched's log:\n{}", c.psched_log());
    }
}

/// A `palloc ARGS` command on `c`.
fn palloc(c: &support::cluster::Cluster, args: &[&str]) -> Command {
    let mut cmd = c.command(support::cargo_bin("palloc"));
    cmd.env("PATH", support::user_path()).args(args);
    cmd
}

/// (b): two nodes, a step of two tasks.
fn two_nodes(
    c: &support::cluster::Cluster,
    s: &support::slurm::Slurm,
    runs: usize,
) -> (String, f64, f64) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let p = ["-N", "2", "-t", "5m", "--", "pspawn", "-n", "2", "hostname"];
        a.push(ms(timed(palloc(c, &p))));
        let mut cmd = s.command("salloc");
        cmd.args(["-N", "2", "-t", "5"]);
        if s.version == support::slurm::Version::Current26 {
            // 26.05.3's slurmd checks the launch credential with munge,
            // and all the slurmds here share one munged: the second node
            // of a step sees a replayed credential and refuses the launch.
            // Two one-node steps at once do the same work.
            cmd.args([
                "sh",
                "-c",
                "srun -N1 -n1 -r0 hostname & a=$!; srun -N1 -n1 -r1 hostname && wait $a",
            ]);
        } else {
            cmd.args(["srun", "-n", "2", "hostname"]);
        }
        let t = Instant::now();
        let o = support::run_with_timeout(cmd.stdin(Stdio::null()), 120);
        assert!(o.status.success(), "{}\n{}", support::show(&o), s.logs());
        b.push(ms(t.elapsed()));
    }
    (
        format!("(b) -N 2, 2 tasks of hostname, median of {runs}"),
        median_ms(a),
        median_ms(b),
    )
}

/// Run `n` commands made by `make` at once: the wall time of each that
/// succeeded, the whole burst's, and how many failed or were stopped after
/// 120 s (a command PRRTE lost).
fn burst(n: usize, make: &dyn Fn() -> Command) -> (Vec<f64>, f64, usize) {
    let t0 = Instant::now();
    let mut kids: Vec<(Child, Option<Option<f64>>)> = (0..n)
        .map(|_| {
            let c = make()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start a command of the burst");
            (c, None)
        })
        .collect();
    let limit = Duration::from_secs(120);
    while kids.iter().any(|(_, t)| t.is_none()) {
        for (k, took) in kids.iter_mut().filter(|(_, t)| t.is_none()) {
            if let Ok(Some(st)) = k.try_wait() {
                *took = Some(st.success().then(|| ms(t0.elapsed())));
            } else if t0.elapsed() > limit {
                let _ = k.kill();
                let _ = k.wait();
                *took = Some(None);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let all = ms(t0.elapsed());
    let mut times: Vec<f64> = kids.iter().filter_map(|(_, t)| t.flatten()).collect();
    let failed = n - times.len();
    times.sort_by(f64::total_cmp);
    (times, all, failed)
}

fn pct(v: &[f64], p: f64) -> f64 {
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// (c): `bursts` bursts of `n` each way; medians of whole, p50, p99.
fn bursts_of(
    c: &support::cluster::Cluster,
    s: &support::slurm::Slurm,
    n: usize,
    bursts: usize,
) -> Vec<(String, f64, f64)> {
    let mine = || {
        palloc(
            c,
            &["-q", "-N", "1", "-t", "5m", "--", "pspawn", "hostname"],
        )
    };
    let theirs = || {
        let mut cmd = s.command("salloc");
        cmd.args(["-Q", "-N", "1", "-t", "5", "srun", "hostname"]);
        cmd
    };
    let mut m: [Vec<f64>; 3] = Default::default();
    let mut t: [Vec<f64>; 3] = Default::default();
    for i in 0..bursts {
        for (who, make, into) in [
            ("psched", &mine as &dyn Fn() -> Command, &mut m),
            ("Slurm", &theirs as &dyn Fn() -> Command, &mut t),
        ] {
            let (times, all, failed) = burst(n, make);
            if failed > 0 {
                println!("  {who}: {failed} of {n} failed or were stopped after 120 s");
            }
            into[0].push(all);
            into[1].push(pct(&times, 0.5));
            into[2].push(pct(&times, 0.99));
        }
        println!(
            "burst {}: psched whole {:.0} ms, Slurm whole {:.0} ms",
            i + 1,
            m[0][i],
            t[0][i]
        );
    }
    let names = ["whole burst", "p50 per command", "p99 per command"];
    names
        .iter()
        .zip(m.into_iter().zip(t))
        .map(|(what, (a, b))| {
            (
                format!("(c) {n} at once over 4 nodes, {what}, median of {bursts}"),
                median_ms(a),
                median_ms(b),
            )
        })
        .collect()
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
        let mut cmd = palloc(c, &["--hold", "--json"]);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        cmd.spawn().expect("palloc")
    };
    // `BENCH_HELD=1,20`: measured with 1 allocation, then with 20. The
    // four nodes hold four grants (whole nodes): the allocations past those
    // wait in Slurm's queue, asked about as often as the granted. With
    // fewer than five, one more request waits (`-N 4`).
    let counts: Vec<usize> = std::env::var("BENCH_HELD")
        .unwrap_or_else(|_| "1".into())
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    let secs = env_num("BENCH_QUEUE_SECS", 60) as u64;
    let mut holders = Vec::new();
    let mut extra = None;
    for want in counts {
        if let Some(mut p) = extra.take() {
            let (h, _): &mut (Child, support::LineReader) = &mut p;
            let _ = h.kill();
            let _ = h.wait();
        }
        while holders.len() < want {
            let t = Instant::now();
            let mut held = palloc(&["-N", "1", "-t", "30m"]);
            let lines = support::LineReader::new(held.stdout.take().expect("stdout"));
            if holders.len() < 4 {
                lines
                    .next_line(Duration::from_secs(300))
                    .expect("the grant");
                println!(
                    "grant with {n} jobs queued: {:.0} ms",
                    t.elapsed().as_secs_f64() * 1e3
                );
            }
            holders.push((held, lines));
        }
        let granted = want.min(4);
        if want <= 4 {
            let mut p = palloc(&["-N", "4", "-t", "30m"]);
            let lines = support::LineReader::new(p.stdout.take().expect("stdout"));
            extra = Some((p, lines));
        }
        let pending = want - granted + usize::from(extra.is_some());
        std::thread::sleep(Duration::from_secs(5));
        let pid = c.psched_pid().expect("psched runs");
        s.run("sdiag", &["--reset"]);
        let (own0, kids0) = cpu_of(pid);
        std::thread::sleep(Duration::from_secs(secs));
        let (own1, kids1) = cpu_of(pid);
        let (total, by_type) = rpcs(s);
        let per_min = total as f64 * 60.0 / secs as f64;
        println!(
            "over {secs} s, {granted} grants held + {pending} requests pending, {n} other jobs queued:"
        );
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
    }
    for (h, _) in holders.iter_mut().chain(extra.as_mut()) {
        let _ = h.kill();
        let _ = h.wait();
    }
}

/// (a): one node, `true`; and Slurm's grant alone.
fn grant_times(
    c: &support::cluster::Cluster,
    s: &support::slurm::Slurm,
    runs: usize,
) -> Vec<(String, f64, f64)> {
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
        a.push(ms(timed(palloc(c, &["-N", "1", "-t", "5m", "--", "true"]))));
        b.push(ms(timed(salloc())));
        n.push(ms(no_shell()));
    }
    let (ma, mb, mn) = (median_ms(a), median_ms(b), median_ms(n));
    println!("(Slurm's grant alone, salloc -N 1 --no-shell: {mn:.0} ms)");
    vec![(format!("(a) -N 1 true, median of {runs}"), ma, mb)]
}
