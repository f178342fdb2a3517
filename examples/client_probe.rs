//! Connects to the PMIx server the way every pmix-tools binary does and
//! reports who it connected as: run it inside a job (e.g. under `pspawn`) to
//! see the job-client identity, outside to see the tool identity.
//!
//! `cargo run --example client_probe [-- --alloc | --extend-no-id]` prints
//! one JSON line:
//! `{"identity":"client"|"tool","nspace":…,"rank":…,"namespaces":[…],"alloc":…}`.
//! `--alloc` asks for one node (NEW); `--extend-no-id` sends an EXTEND by
//! one node naming no allocation, which palloc refuses before it connects:
//! the DVM's own answer to it (§8.2.1.8).

use pmix_tools::codec::Info;
use pmix_tools::conn::{ConnectOptions, Identity};
use pmix_tools::ops::{self, Session};
use pmix_tools::proto::keys;

fn main() {
    let directive = if std::env::args().any(|a| a == "--extend-no-id") {
        Some(pmix_tools::proto::Directive::Extend)
    } else if std::env::args().any(|a| a == "--alloc") {
        Some(pmix_tools::proto::Directive::New)
    } else {
        None
    };
    let s = match Session::connect(&ConnectOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("client_probe: {e}");
            std::process::exit(3);
        }
    };
    let identity = match s.conn().identity() {
        Identity::Client { .. } => "client",
        _ => "tool",
    };
    let (nspace, rank) = s.me();
    let namespaces = ops::query::namespaces(&s).unwrap_or_default();
    let alloc = directive.map(|d| {
        match ops::alloc::allocate(&s, d, &[Info::new(keys::ALLOC_NUM_NODES, 1u64)]) {
            Ok(r) => serde_json::json!({"ok": true, "alloc_id": r.alloc_id}),
            Err(e) => {
                serde_json::json!({"ok": false, "status": e.status.name(), "code": e.status.0})
            }
        }
    });
    println!(
        "{}",
        serde_json::json!({"identity": identity, "nspace": nspace, "rank": rank, "namespaces": namespaces, "alloc": alloc})
    );
    let _ = s.finalize();
}
