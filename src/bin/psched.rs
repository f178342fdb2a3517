//! `psched`: a PMIx scheduler for a PRRTE DVM.
//!
//! Flags are defined in [`pmix_tools::cli::PschedArgs`]; the scheduler is
//! [`pmix_tools::psched::run`].

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::Parser;
use pmix_tools::cli::PschedArgs;
use pmix_tools::psched::{self, ledger::Ledger, serve::STOP};

extern "C" fn on_stop(_: nix::libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() -> ExitCode {
    let args = PschedArgs::parse();
    let cfg = match args.config() {
        Ok(c) => c,
        Err(m) => {
            eprintln!("psched: {m}");
            return ExitCode::from(2);
        }
    };
    if args.status {
        return status(&cfg);
    }
    for sig in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let h = nix::sys::signal::SigHandler::Handler(on_stop);
        // SAFETY: the handler only stores to an atomic.
        let _ = unsafe { nix::sys::signal::signal(sig, h) };
    }
    match psched::run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("psched: {e}");
            ExitCode::from(3)
        }
    }
}

fn status(cfg: &psched::Config) -> ExitCode {
    match Ledger::load(&cfg.ledger) {
        Ok(l) => {
            let held: Vec<&String> = l.grants.iter().flat_map(|g| &g.nodes).collect();
            let free: Vec<&String> = cfg.nodes.iter().filter(|n| !held.contains(n)).collect();
            let doc = serde_json::json!({
                "grants": l.grants,
                "next_id": l.next_id,
                "dvm": l.dvm,
                "free": free,
            });
            println!("{doc}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("psched: {e}");
            ExitCode::FAILURE
        }
    }
}
