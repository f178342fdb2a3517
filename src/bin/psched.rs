//! `psched`: a PMIx scheduler for a PRRTE DVM.
//!
//! Flags are defined in [`pmix_tools::cli::PschedArgs`]; the scheduler is
//! [`pmix_tools::psched::run`].

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use pmix_tools::cli::PschedArgs;
use pmix_tools::psched::{self, admin, ledger::Ledger, serve::STOP};

/// A line in psched's log, through its one place ([`psched::diag::line`]).
macro_rules! say {
    ($($arg:tt)*) => {
        pmix_tools::psched::diag::line(format_args!($($arg)*))
    };
}

/// How long `psched --release` waits for the running psched to act.
const RELEASE_WAIT: Duration = Duration::from_secs(15);

fn main() -> ExitCode {
    let args = PschedArgs::parse();
    let cfg = match args.config() {
        Ok(c) => c,
        Err(m) => {
            say!("psched: {m}");
            return ExitCode::from(2);
        }
    };
    // Started by psched on Slurm beside itself (PSCHED_WATCHDOG_OF).
    if let Some(of) = psched::watchdog::asked() {
        return match psched::watchdog::run(&cfg, of) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                say!("psched watchdog: {e}");
                ExitCode::from(3)
            }
        };
    }
    if args.status {
        return status(&cfg);
    }
    if args.check {
        return check(&cfg);
    }
    if let Some(id) = &args.release {
        return release(&cfg, id);
    }
    // SIGTERM and SIGINT set STOP (signal-hook's handler, async-signal-safe):
    // psched leaves after the current step instead of dying at once.
    for sig in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let _ = signal_hook::flag::register(sig as i32, &STOP);
    }
    match psched::run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say!("psched: {e}");
            ExitCode::from(3)
        }
    }
}

/// `psched --check`: one line per finding; 1 when one failed.
fn check(cfg: &psched::Config) -> ExitCode {
    let found = psched::check::run(cfg);
    for f in &found {
        println!("{:<5} {:<8} {}", f.verdict.word(), f.what, f.said);
    }
    if found
        .iter()
        .any(|f| f.verdict == psched::check::Verdict::Fail)
    {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn status(cfg: &psched::Config) -> ExitCode {
    let l = match Ledger::load(&cfg.ledger) {
        Ok(l) => l,
        Err(e) => {
            say!("psched: {e}");
            return ExitCode::FAILURE;
        }
    };
    let pool = if cfg.nodes.is_empty() {
        &l.pool
    } else {
        &cfg.nodes
    };
    let held: Vec<&String> = l.grants.iter().flat_map(|g| &g.nodes).collect();
    let free: Vec<&String> = pool
        .iter()
        .filter(|n| !held.contains(n) && !l.retained.contains(n))
        .collect();
    let now = psched::now_ms();
    let grants: Vec<serde_json::Value> = l
        .grants
        .iter()
        .map(|g| {
            let mut v = serde_json::json!(g);
            v["left_secs"] = serde_json::json!(g
                .expires_at_ms
                .map(|e| e.saturating_sub(now).div_ceil(1000)));
            v
        })
        .collect();
    let doc = serde_json::json!({
        "queues": l.partitions,
        "pool": pool,
        "free": free,
        "retained": l.retained,
        "pending": l.pending,
        "grants": grants,
        "next_id": l.next_id,
        "dvm": l.dvm,
        "reconciled_at_ms": l.reconciled_at_ms,
    });
    println!("{doc}");
    ExitCode::SUCCESS
}

fn held(cfg: &psched::Config, id: &str) -> Result<bool, ExitCode> {
    match Ledger::load(&cfg.ledger) {
        Ok(l) => Ok(l.grants.iter().any(|g| g.alloc_id == id)),
        Err(e) => {
            say!("psched: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

fn release(cfg: &psched::Config, id: &str) -> ExitCode {
    let ledger = cfg.ledger.display();
    match held(cfg, id) {
        Ok(true) => {}
        Ok(false) => {
            say!("psched: {id} is not a grant in {ledger} (see psched --status)");
            return ExitCode::FAILURE;
        }
        Err(c) => return c,
    }
    let path = match admin::submit(&cfg.ledger, id) {
        Ok(p) => p,
        Err(e) => {
            say!("psched: cannot write a release request beside {ledger}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !admin::wait_gone(&path, Instant::now() + RELEASE_WAIT) {
        let _ = std::fs::remove_file(&path);
        say!(
            "psched: no psched serving {ledger} acted within {} s; is it running?",
            RELEASE_WAIT.as_secs()
        );
        return ExitCode::from(3);
    }
    match held(cfg, id) {
        Ok(false) => {
            println!("released {id}");
            ExitCode::SUCCESS
        }
        Ok(true) => {
            say!("psched: {id} is still granted (see psched's log)");
            ExitCode::FAILURE
        }
        Err(c) => c,
    }
}
