//! pdvm at scale, over the wire (`cargo bench --bench pdvm_scale`).
//!
//! 1. With 10,000 simulated startup nodes, 2,000 scheduler nodes and 1,000
//!    live reservations, time allocation requests (NEW then RELEASE, so the
//!    count stays at 1,000) as one tool sees them: request sent to reply
//!    decoded. Reports median and p99.
//! 2. Connect 1,000 tools at once, have every one query the namespaces, and
//!    report how many were served and pdvm's resident memory per idle
//!    connection (RSS before and after, divided by 1,000).

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use pmix_tools::codec::Info;
use pmix_tools::conn::ConnectOptions;
use pmix_tools::ops::{self, Session};
use pmix_tools::proto::keys;
use support::pdvm::Pdvm;

/// pdvm with `args`, through the tests' one pdvm launcher.
fn start(args: &[&str]) -> Pdvm {
    Pdvm::builder(args)
        .tag("pdvm-scale")
        .lenient_ready()
        .start()
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    if !watchdog::start("pdvm_scale", Duration::from_secs(300)) {
        return;
    }
    let dvm = start(&[
        "--nodes",
        "10000",
        "--slots",
        "1",
        "--scheduler-nodes",
        "2000",
    ]);
    let opts = ConnectOptions {
        tmpdir: Some(dvm.tmpdir.path().to_path_buf()),
        force_tool: true,
        ..Default::default()
    };
    let s = Session::connect(&opts).expect("connect");
    let one = [Info::new(keys::ALLOC_NUM_NODES, 1u64)];
    let mut live = Vec::new();
    for _ in 0..1000 {
        let r = ops::alloc::allocate(&s, pmix_tools::proto::Directive::New, &one).expect("NEW");
        live.push(r.alloc_id.expect("alloc id"));
    }
    let mut lat = Vec::new();
    for _ in 0..1000 {
        let t = Instant::now();
        let r = ops::alloc::allocate(&s, pmix_tools::proto::Directive::New, &one).expect("NEW");
        lat.push(t.elapsed());
        let id = r.alloc_id.expect("alloc id");
        let t = Instant::now();
        ops::alloc::allocate(
            &s,
            pmix_tools::proto::Directive::Release,
            &[Info::new(keys::ALLOC_ID, id.as_str())],
        )
        .expect("RELEASE");
        lat.push(t.elapsed());
    }
    lat.sort();
    println!(
        "allocation request, 10,000 nodes + 2,000 scheduler nodes, 1,000 live reservations, {} requests: median {:.1} us, p99 {:.1} us, max {:.1} us",
        lat.len(),
        pct(&lat, 0.5).as_secs_f64() * 1e6,
        pct(&lat, 0.99).as_secs_f64() * 1e6,
        lat.last().unwrap().as_secs_f64() * 1e6
    );

    let before = rss_kib(dvm.pid);
    let t = Instant::now();
    let tools: Vec<Session> = (0..1000)
        .map(|i| Session::connect(&opts).unwrap_or_else(|e| panic!("tool {i}: {e}")))
        .collect();
    let connected = t.elapsed();
    let after = rss_kib(dvm.pid);
    let served = tools
        .iter()
        .filter(|t| {
            ops::query::namespaces(t)
                .map(|n| n.len() >= 1000)
                .unwrap_or(false)
        })
        .count();
    println!(
        "1,000 tools connected at once in {:.2} s; {served} of 1000 served a namespaces query; pdvm RSS {} KiB -> {} KiB: {:.1} KiB per idle connection",
        connected.as_secs_f64(),
        before,
        after,
        (after.saturating_sub(before)) as f64 / 1000.0
    );
    drop(tools);
    let _ = s.finalize();
}
