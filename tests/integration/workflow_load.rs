//! A workflow driver as users write them (issue 40), on pdvm and on PRRTE
//! master + psched: `tests/peers/workflow_load.py` holds one allocation of
//! 4 nodes with 2 slots each, runs 60 tasks 8 at a time into it with
//! `pspawn --target`, cancels 5 of them with `prelease NSPACE` once they
//! have started, extends the allocation on its timeout warning and
//! releases it. Every task's stdout and stderr must be byte-exact and every
//! status the task's own (143 for a cancelled one), on both engines.

use std::process::Stdio;

use crate::support;
use crate::support::cluster::Cluster;
use crate::support::pdvm::Pdvm;
use crate::support::{show, ToolHost};

/// Run the driver next to `host`'s DVM; its JSON summary.
fn drive(host: &impl ToolHost, logs: &dyn Fn() -> String) -> serde_json::Value {
    let xdg = support::unique_tmpdir("workflow-xdg");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/workflow_load.py");
    let mut c = host.tool_command("/usr/bin/python3");
    c.env("PATH", support::user_path())
        .env("XDG_RUNTIME_DIR", xdg.path())
        .arg(script)
        .args(["4", "30s", "25s"])
        .stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 300);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), logs());
    let last = support::text(&o.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    serde_json::from_str(&last).unwrap_or_else(|e| panic!("summary ({e}): {}", show(&o)))
}

fn check(engine: &str, v: &serde_json::Value, logs: &dyn Fn() -> String) {
    assert_eq!(
        v["wrong"],
        serde_json::json!([]),
        "{engine}: {v:#}\n{}",
        logs()
    );
    assert_eq!(v["right"], 60, "{engine}: {v:#}");
    assert_eq!(v["errors"], serde_json::json!([]), "{engine}: {v:#}");
    assert_eq!(v["warned"], true, "{engine}: {v:#}");
    assert_eq!(v["extended"], true, "{engine}: {v:#}");
    assert_eq!(v["released"], true, "{engine}: {v:#}");
    eprintln!(
        "FIGURE workflow_load {engine}: 60 tasks in {} s",
        v["seconds"]
    );
}

#[test]
fn sixty_tasks_with_cancels_and_an_extend_are_exact_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "4", "--slots", "2"]);
    let v = drive(&pdvm, &|| pdvm.logs());
    check("pdvm", &v, &|| pdvm.logs());
}

#[test]
fn sixty_tasks_with_cancels_and_an_extend_are_exact_on_prrte_master_with_psched() {
    let c = Cluster::start_with_psched(2, 4, &["--slots", "2"]);
    let v = drive(&c, &|| {
        format!("{}\n--- psched:\n{}", c.logs(), c.psched_log())
    });
    check("PRRTE master + psched", &v, &|| c.logs());
}
