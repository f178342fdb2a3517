//! A burst of simultaneous requests, side by side in one run (issue 26):
//! `BURST` (default 200) `palloc -N 1 -t 5m -- pspawn -n 1 true` started at
//! once, over 8 nodes, against PRRTE master with psched attached and
//! against pdvm with 8 scheduler nodes. Prints how many were served, the
//! p50 and p99 of each palloc's wall time, the whole burst's time, and the
//! ratios PRRTE+psched / pdvm. `cargo bench --bench psched_burst`.

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Run `n` commands made by `make` at once; each one's wall time (or
/// `None` when it failed) and the whole burst's time.
fn burst(n: usize, make: &dyn Fn() -> Command) -> (Vec<Option<Duration>>, Duration) {
    let t0 = Instant::now();
    let mut kids: Vec<(Child, Option<Duration>)> = (0..n)
        .map(|_| {
            let c = make()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start palloc");
            (c, None)
        })
        .collect();
    let mut codes: Vec<Option<i32>> = vec![None; n];
    let deadline = t0 + Duration::from_secs(600);
    while codes.iter().any(Option::is_none) && Instant::now() < deadline {
        for (i, (k, took)) in kids.iter_mut().enumerate() {
            if codes[i].is_none() {
                if let Ok(Some(st)) = k.try_wait() {
                    codes[i] = Some(st.code().unwrap_or(-1));
                    *took = Some(t0.elapsed());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let all = t0.elapsed();
    let times = kids
        .into_iter()
        .zip(codes)
        .map(|((mut k, took), code)| {
            let _ = k.kill();
            let _ = k.wait();
            took.filter(|_| code == Some(0))
        })
        .collect();
    (times, all)
}

fn pct(v: &[Duration], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e3
}

/// Print one line for a burst; its (p50, p99, whole) in ms.
fn report(what: &str, n: usize, (times, all): (Vec<Option<Duration>>, Duration)) -> [f64; 3] {
    let mut ok: Vec<Duration> = times.into_iter().flatten().collect();
    ok.sort();
    let r = [pct(&ok, 0.5), pct(&ok, 0.99), all.as_secs_f64() * 1e3];
    println!(
        "{what:<24} served {:>4}/{n}  p50 {:>9.1} ms  p99 {:>9.1} ms  whole burst {:>9.1} ms",
        ok.len(),
        r[0],
        r[1],
        r[2]
    );
    r
}

fn main() {
    if !watchdog::start("psched_burst", Duration::from_secs(1500)) {
        return;
    }
    let n: usize = std::env::var("BURST")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let args = [
        "-q", "-N", "1", "-t", "5m", "--", "pspawn", "-n", "1", "true",
    ];
    let c = support::cluster::Cluster::start_with_psched(2, 8, &[]);
    let prrte = report("PRRTE master + psched", n, {
        let make = || {
            let mut cmd = c.command(support::cargo_bin("palloc"));
            cmd.env("PATH", support::user_path()).args(args);
            cmd
        };
        burst(n, &make)
    });
    assert!(!c.prte_exited(), "prte died in the burst\n{}", c.logs());
    drop(c);
    let d = support::blackbox::Dvm::start(&["--nodes", "1", "--scheduler-nodes", "8"]);
    let pdvm = report("pdvm", n, {
        let make = || {
            let mut cmd = d.tool_cmd("palloc");
            cmd.args(args);
            cmd
        };
        burst(n, &make)
    });
    println!(
        "ratio PRRTE+psched/pdvm: p50 {:.2}  p99 {:.2}  whole burst {:.2}",
        prrte[0] / pdvm[0],
        prrte[1] / pdvm[1],
        prrte[2] / pdvm[2]
    );
}
