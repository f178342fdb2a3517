//! An orchestrator (issue 14): a Python driver (tests/peers/orchestrator.py)
//! using the tools and their JSON holds an allocation, runs 40 jobs 6 at a
//! time, extends on the timeout warning and releases at the end, against
//! two pdvms at once, one chosen by PMIX_TOOLS_URI and one by --pid: zero
//! cross-talk, zero refusals, every holder gone at the end.

use crate::support;

use std::process::{Command, Stdio};

use crate::support::pdvm::Pdvm;
use crate::support::{show, text};

fn driver(pdvm: &Pdvm, xdg: &std::path::Path, mode: &str, value: &str) -> Command {
    let mut c = support::command_like(&pdvm.tool("pwatch"), "python3");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/orchestrator.py");
    c.arg(script)
        .args([mode, value])
        .env("XDG_RUNTIME_DIR", xdg)
        .stdin(Stdio::null());
    c
}

fn uri_file(pdvm: &Pdvm) -> String {
    let suffix = format!(".tool.{}", pdvm.pid);
    let f = std::fs::read_dir(pdvm.rendezvous_dir())
        .expect("rendezvous dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&suffix))
        .expect("rendezvous file");
    format!("file:{}", f.display())
}

#[test]
fn an_orchestrator_on_two_dvms_sees_no_crosstalk_no_refusal_and_leaves_no_holder() {
    let args = [
        "--slots",
        "8",
        "--scheduler-nodes",
        "2",
        "--time-scale",
        "60",
    ];
    let a = Pdvm::start(&args);
    let b = Pdvm::start(&args);
    let nowhere = support::unique_tmpdir("orch-nodvm");
    let (xa, xb) = (
        support::unique_tmpdir("orch-a"),
        support::unique_tmpdir("orch-b"),
    );
    let mut by_env = driver(&a, xa.path(), "env", &uri_file(&a));
    by_env.env("TMPDIR", nowhere.path());
    let pid = format!("{}:{}", b.tmpdir.path().display(), b.pid);
    let mut by_pid = driver(&b, xb.path(), "pid", &pid);
    by_pid.env("TMPDIR", nowhere.path());
    let ta = std::thread::spawn(move || support::run_with_timeout(&mut by_env, 300));
    let tb = std::thread::spawn(move || support::run_with_timeout(&mut by_pid, 300));
    for o in [ta.join().expect("driver A"), tb.join().expect("driver B")] {
        let out = text(&o.stdout);
        let s: serde_json::Value = serde_json::from_str(out.trim().lines().last().unwrap_or(""))
            .unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
        assert_eq!(s["jobs_ok"], 40, "{s}");
        assert_eq!(s["crosstalk"], 0, "{s}");
        assert_eq!(s["refusals"], 0, "{s}");
        assert_eq!(s["warned"], true, "{s}");
        assert_eq!(s["extended"], true, "{s}");
        assert_eq!(s["released"], true, "{s}");
        assert_eq!(s["holders_left"], serde_json::json!([]), "{s}");
    }
}
