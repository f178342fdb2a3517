//! pdvm under pressure at full scale (`cargo bench --bench pdvm_pressure`);
//! the bounded versions are tests (`server_pressure`, `discover_crowded`,
//! `dvm_model_genealogy`). `PRESSURE_PARTS` picks parts (comma-separated,
//! default all); `PRESSURE_SPAWNS` the number of unread pspawns (default
//! 300), `PRESSURE_CONNS` the tool connections (default 100,000),
//! `PRESSURE_ENTRIES` the foreign entries (default 100,000).
//!
//! 1. `squat`: 16 connections each announcing (just under) 16 MiB and never
//!    sending it, then `pspawn -n 1 seq 1 200000 | wc -c` and
//!    `pwatch --status`.
//! 2. `unread`: N `pspawn`s each writing 20,000,000 bytes that nobody reads
//!    for 5 s, then all read: bytes per pspawn, exit codes, pdvm's peak RSS.
//! 3. `crowd`: N foreign entries in the search directory: `pwatch --status`
//!    finds pdvm; median discovery time over 5 runs.
//! 4. `conns`: pdvm's RSS before and after N tool connections (connect,
//!    goodbye), half with names pdvm mints and half with names they choose.

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pmix_tools::conn::ConnectOptions;
use pmix_tools::ops::Session;
use support::pdvm::Pdvm;

fn env_num(k: &str, d: usize) -> usize {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
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

/// Samples pdvm's RSS every 20 ms until dropped; `peak()` is the largest.
struct Peak(Arc<AtomicBool>, Arc<AtomicU64>);

impl Peak {
    fn start(pid: u32) -> Peak {
        let (stop, peak) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let (s, p) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_kib(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Peak(stop, peak)
    }
    fn peak(&self) -> u64 {
        self.1.load(Ordering::Relaxed)
    }
}

impl Drop for Peak {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn sh(dvm: &Pdvm, script: &str) -> std::process::Output {
    let bin = support::cargo_bin("pspawn");
    let dir = bin.parent().expect("bin dir").display().to_string();
    let mut c = Command::new("bash");
    support::scrub_pmix_env(&mut c);
    c.env("TMPDIR", dvm.tmpdir.path())
        .env("PATH", format!("{dir}:{}", support::user_path()))
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("run bash")
}

fn header(tag: u32, nbytes: u32) -> Vec<u8> {
    [0u32, tag, nbytes, 0]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect()
}

fn squat() {
    let dvm = Pdvm::builder(&["--nodes", "1"]).tag("pressure").start();
    let conns: Vec<_> = (0..16u32)
        .map(|i| {
            let mut s = dvm.raw_tool();
            s.write_all(&header(700 + i, 16 * 1024 * 1024 - 32))
                .expect("header");
            s
        })
        .collect();
    let o = sh(
        &dvm,
        "pspawn -n 1 seq 1 200000 | wc -c; echo rc=${PIPESTATUS[0]}",
    );
    let st = sh(&dvm, "pwatch --status >/dev/null; echo $?");
    println!(
        "squat: 16 connections announcing 16 MiB; `pspawn -n 1 seq 1 200000 | wc -c` printed {:?}; pwatch --status exit {}",
        String::from_utf8_lossy(&o.stdout).trim().replace('\n', " "),
        String::from_utf8_lossy(&st.stdout).trim()
    );
    drop(conns);
}

fn unread() {
    let n = env_num("PRESSURE_SPAWNS", 300);
    let dvm = Pdvm::builder(&["--nodes", "1", "--slots", &n.to_string()])
        .tag("pressure")
        .start();
    let peak = Peak::start(dvm.pid);
    let mut script = String::from("d=$(mktemp -d); ");
    for i in 0..n {
        script.push_str(&format!(
            "( pspawn -n 1 head -c 20000000 /dev/zero | (sleep 5; wc -c) > $d/{i}.out; echo ${{PIPESTATUS[0]}} > $d/{i}.rc ) & "
        ));
    }
    script
        .push_str("wait; for f in $d/*.out; do echo $(cat $f) $(cat ${f%.out}.rc); done; rm -r $d");
    let t = Instant::now();
    let o = sh(&dvm, &script);
    let took = t.elapsed();
    let out = String::from_utf8_lossy(&o.stdout);
    let exact = out.lines().filter(|l| *l == "20000000 0").count();
    println!(
        "unread: {n} pspawns x 20,000,000 bytes, nobody reading for 5 s: {exact} of {n} byte-exact with exit 0 ({:.1} s); pdvm peak RSS {} KiB",
        took.as_secs_f64(),
        peak.peak()
    );
    for l in out.lines().filter(|l| *l != "20000000 0").take(5) {
        println!("  not exact: {l}");
    }
}

fn crowd() {
    let n = env_num("PRESSURE_ENTRIES", 100_000);
    let dvm = Pdvm::builder(&["--nodes", "1"]).tag("pressure").start();
    for i in 0..n {
        let d = dvm.tmpdir.path().join(format!("crowd.{i:06}"));
        std::fs::create_dir(&d).expect("mkdir");
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::chown(&d, Some(65534), Some(65534)).expect("chown");
        }
    }
    let mut times = Vec::new();
    let mut ok = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let o = sh(&dvm, "pwatch --status >/dev/null");
        times.push(t.elapsed());
        ok += usize::from(o.status.success());
    }
    times.sort();
    println!(
        "crowd: {n} foreign entries in the search directory: pwatch --status found pdvm {ok} of 5 times, median {:.3} s",
        times[2].as_secs_f64()
    );
}

fn conns() {
    let n = env_num("PRESSURE_CONNS", 100_000);
    let dvm = Pdvm::builder(&["--nodes", "1"]).tag("pressure").start();
    let opts = ConnectOptions {
        tmpdir: Some(dvm.tmpdir.path().to_path_buf()),
        force_tool: true,
        ..Default::default()
    };
    // One connection first, so the figure is not pdvm's start-up.
    Session::connect(&opts).expect("connect").finalize().ok();
    let before = rss_kib(dvm.pid);
    let t = Instant::now();
    for i in 0..n {
        let o = if i % 2 == 0 {
            opts.clone()
        } else {
            ConnectOptions {
                tool_id: Some((format!("bench-tool-{i}"), 0)),
                ..opts.clone()
            }
        };
        let s = Session::connect(&o).unwrap_or_else(|e| panic!("tool {i}: {e}"));
        let _ = s.finalize();
    }
    let after = rss_kib(dvm.pid);
    println!(
        "conns: {n} tool connections ({} minted names, {} chosen) in {:.1} s: pdvm RSS {before} KiB -> {after} KiB (+{} KiB, {:.0} bytes per connection)",
        n.div_ceil(2),
        n / 2,
        t.elapsed().as_secs_f64(),
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 * 1024.0 / n as f64
    );
}

fn main() {
    if !watchdog::start("pdvm_pressure", Duration::from_secs(1800)) {
        return;
    }
    let parts =
        std::env::var("PRESSURE_PARTS").unwrap_or_else(|_| "squat,crowd,conns,unread".into());
    for p in parts.split(',') {
        match p {
            "squat" => squat(),
            "unread" => unread(),
            "crowd" => crowd(),
            "conns" => conns(),
            other => eprintln!("pdvm_pressure: unknown part {other:?}"),
        }
    }
}
