//! Whole-process benchmarks of the tools against a real PRRTE 3.0.14 DVM
//! (run: `cargo bench --bench tools`; needs the peers, see
//! `scripts/install-peers.sh`, or `PMIX_TOOLS_PEERS`).
//!
//! Side by side in one run, alternating A/B, N runs each, medians and ratios:
//! 1. `pwatch --status --json` vs `/bin/true` (target: at most 3x);
//! 2. `palloc -N 1` (refused NOT_SUPPORTED by PRRTE 3.0, still end to end)
//!    vs `/bin/true` (target: at most 3x);
//! 3. `examples/client_probe` (connect, query, finalize) vs `/bin/true`,
//!    with each run's peak RSS from `wait4`;
//! 4. `pspawn /bin/true` vs the DVM's own time for the same job, measured
//!    inside one connected process: from the spawn request to the job-end
//!    event, and (narrower) from the spawn reply to the job-end event
//!    (target: pspawn at most 1.5x the DVM's time);
//! 5. pwatch's JSON-lines rendering path, fed synthetic events (target: at
//!    least 100,000 events/s).
//!
//! Every wait is bounded: a tool run is killed after [`RUN_DEADLINE`] (the
//! bench then fails naming the command), a job's end is awaited at most
//! [`JOB_END_DEADLINE`] (PRRTE 3.0.14 now and then never sends it: that
//! sample is dropped and counted).

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pmix_tools::conn::{ConnectOptions, Unsolicited};
use pmix_tools::ops::job::{job_end_of, simple_app, watch_job_ends};
use pmix_tools::ops::{events, spawn, Session};
use support::{cargo_bin, Prte, ToolHost};

const N: usize = 30;

/// Longest one tool run may take before it is killed and the bench fails.
const RUN_DEADLINE: Duration = Duration::from_secs(60);
/// Longest the DVM-timing loop waits for one job's end event.
const JOB_END_DEADLINE: Duration = Duration::from_secs(10);
/// Longest the DVM-timing loop spends dropping replayed events.
const REPLAY_DRAIN_DEADLINE: Duration = Duration::from_secs(5);

/// One finished run: wall time, the child's peak RSS (KiB) and exit code.
struct Run {
    wall: Duration,
    maxrss_kib: i64,
    code: i32,
}

/// Spawn `cmd`, reap it with `wait4` for its own rusage, and time it. A
/// watchdog thread (started before the clock) kills it with SIGKILL when it
/// outlives [`RUN_DEADLINE`]; the bench then fails naming the command.
fn run_once(cmd: &mut Command) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let (pid_tx, pid_rx) = mpsc::channel::<i32>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let dog = std::thread::spawn(move || {
        let Ok(pid) = pid_rx.recv() else {
            return false;
        };
        if done_rx.recv_timeout(RUN_DEADLINE).is_ok() {
            return false;
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        true
    });
    let t = Instant::now();
    let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let pid = child.id() as i32;
    let _ = pid_tx.send(pid);
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: nix::libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not yet reaped (std never reaps on its own).
    let r = unsafe { nix::libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = t.elapsed();
    let _ = done_tx.send(());
    let killed = dog.join().unwrap_or(false);
    assert_eq!(r, pid, "wait4 failed for {cmd:?}");
    assert!(
        !killed,
        "{cmd:?} did not finish within {}s and was killed",
        RUN_DEADLINE.as_secs()
    );
    drop(child);
    let code = if nix::libc::WIFEXITED(status) {
        nix::libc::WEXITSTATUS(status)
    } else {
        128 + nix::libc::WTERMSIG(status)
    };
    Run {
        wall,
        maxrss_kib: ru.ru_maxrss,
        code,
    }
}

/// `run_once`, insisting on exit code `want` (a timing of a failed run
/// would mean nothing).
fn run_expect(cmd: &mut Command, want: i32) -> Run {
    let r = run_once(cmd);
    assert_eq!(
        r.code, want,
        "{cmd:?} exited {} (another DVM under /tmp making discovery ambiguous?)",
        r.code
    );
    r
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

struct Row {
    name: String,
    a: Duration,
    b: Duration,
    b_name: String,
    extra: String,
}

/// Alternate A and B `N` times each.
fn ab(
    name: &str,
    mut a: impl FnMut() -> Run,
    b_name: &str,
    mut b: impl FnMut() -> Run,
) -> (Row, Vec<Run>) {
    let (mut ta, mut tb, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    // One warm-up each (page cache, DVM first-connection work).
    a();
    b();
    for _ in 0..N {
        let r = a();
        ta.push(r.wall);
        runs.push(r);
        tb.push(b().wall);
    }
    (
        Row {
            name: name.into(),
            a: median(ta),
            b: median(tb),
            b_name: b_name.into(),
            extra: String::new(),
        },
        runs,
    )
}

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("bench executable");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let p = dir.join("examples").join(name);
    if !p.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--release", "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo");
        assert!(status.success(), "cannot build example {name}");
    }
    assert!(p.exists(), "{} missing", p.display());
    p
}

/// The DVM's own time for a one-process `/bin/true` job, from inside one
/// connected process: (request → end, reply → end, job ends never
/// announced within [`JOB_END_DEADLINE`] — those samples are dropped).
fn dvm_times(dvm: &Prte) -> (Vec<Duration>, Vec<Duration>, usize) {
    let s = Session::connect(&ConnectOptions {
        uri: Some(dvm.full_uri()),
        ..Default::default()
    })
    .expect("connect");
    watch_job_ends(&s).expect("register");
    // Drop the DVM's replay of earlier job ends (bounded).
    let stop = Instant::now() + REPLAY_DRAIN_DEADLINE;
    while Instant::now() < stop
        && s.conn()
            .next_unsolicited(Duration::from_millis(200))
            .is_some()
    {}
    let (mut full, mut after_reply, mut lost) = (Vec::new(), Vec::new(), 0);
    for _ in 0..=N {
        let t0 = Instant::now();
        let ns = spawn::spawn(
            &s,
            &spawn::launcher_job_info(),
            &[simple_app(&["/bin/true"], 1)],
        )
        .expect("spawn");
        let t1 = Instant::now();
        let deadline = t1 + JOB_END_DEADLINE;
        let ended = loop {
            if Instant::now() >= deadline {
                break false;
            }
            match s.conn().next_unsolicited_until(Some(deadline)) {
                Some(Unsolicited::Notify(b)) => {
                    let ev = events::decode_notification(&mut s.decoder(&b)).expect("event");
                    if job_end_of(&ev, &ns).is_some() {
                        break true;
                    }
                }
                Some(Unsolicited::Closed(e)) => panic!("lost the DVM: {e}"),
                Some(_) => {}
                None => break false,
            }
        };
        if ended {
            let t2 = Instant::now();
            full.push(t2 - t0);
            after_reply.push(t2 - t1);
        } else {
            lost += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The first sample is a warm-up.
    if !full.is_empty() {
        full.remove(0);
        after_reply.remove(0);
    }
    let _ = s.finalize();
    (full, after_reply, lost)
}

fn main() {
    if !watchdog::start("tools", Duration::from_secs(600)) {
        return;
    }
    let dvm = Prte::start();
    // `--tmpdir` names the DVM's directory, as a user with several DVMs
    // around would; the plain search also scans /tmp, which other programs
    // share on a busy host.
    let tool = |name: &str| {
        let mut c = dvm.tool_command(cargo_bin(name));
        c.env("NO_COLOR", "1").arg("--tmpdir").arg(&dvm.tmpdir);
        c
    };
    let truth = || run_once(&mut Command::new("/bin/true"));
    let mut rows = Vec::new();

    let (r, _) = ab(
        "pwatch --status --json",
        || run_expect(tool("pwatch").args(["--status", "--json"]), 0),
        "/bin/true",
        truth,
    );
    rows.push(r);

    let (r, _) = ab(
        "palloc -N 1 (NOT_SUPPORTED)",
        || run_expect(tool("palloc").args(["-N", "1"]), 7),
        "/bin/true",
        truth,
    );
    rows.push(r);

    let probe = example("client_probe");
    let (mut r, runs) = ab(
        "client_probe (connect+query+finalize)",
        || run_expect(&mut dvm.tool_command(&probe), 0),
        "/bin/true",
        truth,
    );
    let mut rss: Vec<i64> = runs.iter().map(|r| r.maxrss_kib).collect();
    rss.sort_unstable();
    let true_rss = truth().maxrss_kib;
    r.extra = format!(
        "peak RSS median {} KiB (max {} KiB; /bin/true {} KiB)",
        rss[rss.len() / 2],
        rss[rss.len() - 1],
        true_rss
    );
    rows.push(r);

    // pspawn vs the DVM's own launch time, alternating blocks.
    let mut pspawn_t = Vec::new();
    let (mut dvm_full, mut dvm_reply, mut dvm_lost) = (Vec::new(), Vec::new(), 0);
    run_once(tool("pspawn").arg("/bin/true"));
    for _ in 0..3 {
        for _ in 0..N / 3 {
            pspawn_t.push(run_expect(tool("pspawn").arg("/bin/true"), 0).wall);
            std::thread::sleep(Duration::from_millis(20));
        }
        let (f, r, l) = dvm_times(&dvm);
        dvm_lost += l;
        dvm_full.extend(f.into_iter().take(N / 3));
        dvm_reply.extend(r.into_iter().take(N / 3));
    }
    let p = median(pspawn_t);
    rows.push(Row {
        name: "pspawn /bin/true".into(),
        a: p,
        b: median(dvm_full.clone()),
        b_name: "DVM: spawn request -> job end".into(),
        extra: String::new(),
    });
    rows.push(Row {
        name: "pspawn /bin/true".into(),
        a: p,
        b: median(dvm_reply),
        b_name: "DVM: spawn reply -> job end".into(),
        extra: if dvm_lost > 0 {
            format!("{dvm_lost} DVM job end(s) never announced (samples dropped)")
        } else {
            String::new()
        },
    });

    // Rendering throughput: the same EventWriter path pwatch --json uses.
    const EVENTS: u64 = 1_000_000;
    let mut rates = Vec::new();
    for _ in 0..5 {
        let d = pmix_tools::app::events::render_synthetic(EVENTS, std::io::sink()).expect("render");
        rates.push(EVENTS as f64 / d.as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    let mut buf = Vec::with_capacity(200 * EVENTS as usize);
    let d = pmix_tools::app::events::render_synthetic(EVENTS, &mut buf).expect("render");
    let bytes = buf.len();

    println!(
        "\nbenchmarks against PRRTE {} (N={N}, alternating, medians)\n",
        dvm.version
    );
    println!(
        "{:<40} {:>12}   {:<32} {:>12} {:>7}",
        "A", "median A", "B", "median B", "A/B"
    );
    for r in &rows {
        println!(
            "{:<40} {:>12}   {:<32} {:>12} {:>6.2}x",
            r.name,
            ms(r.a),
            r.b_name,
            ms(r.b),
            r.a.as_secs_f64() / r.b.as_secs_f64()
        );
        if !r.extra.is_empty() {
            println!("    {}", r.extra);
        }
    }
    println!(
        "\npwatch JSON rendering: median {:.0} events/s (min {:.0}, max {:.0}) to a sink; \
{:.0} events/s into memory, {:.1} bytes/event",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1],
        EVENTS as f64 / d.as_secs_f64(),
        bytes as f64 / EVENTS as f64
    );
}
