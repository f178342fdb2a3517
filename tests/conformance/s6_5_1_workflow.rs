//! Spec 000 §6.5.1.2–6.5.1.5 allocation inheritance: the recorded value, the
//! attribute on NEW and EXTEND, the §6.5.1.4 orchestrator workflow (also as
//! examples/child-drain.sh) and the host's responsibilities.

use std::path::Path;
use std::process::Command;

use crate::support::blackbox::{
    alive, eventually, palloc_into_a, printed_alloc, Dvm, GateJob, Out,
};
use crate::support::{cargo_bin, run_with_timeout, scrub_pmix_env, unique_tmpdir};

/// §6.5.1.2/§6.5.1.5 (1): each of the four values is recorded with the
/// allocation at grant time, keyed to its owning namespace.
#[test]
fn s6_5_1_5_1_inheritance_recorded() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "5"]);
    for rule in ["none", "child", "default", "child-default"] {
        let a = dvm
            .app(&format!("palloc -N 1 --inherit {rule} --json"))
            .alloc_id();
        let r = dvm.reservation(&a).expect("granted");
        assert_eq!(r["inherit"], rule, "{r}");
        assert_eq!(r["owner_nspace"], dvm.leader().as_str(), "{r}");
    }
    // absent: recorded as the default
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    assert_eq!(dvm.reservation(&a).unwrap()["inherit"], "default");
}

/// §6.5.1.3: the attribute is honoured on EXTEND as well as NEW.
#[test]
fn s6_5_1_3_inheritance_on_extend() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    dvm.app(&format!("palloc --extend {a} -N 1 --inherit child --json"))
        .expect_code(0);
    let r = dvm.reservation(&a).unwrap();
    assert_eq!(r["inherit"], "child", "{r}");
}

/// §6.5.1.4 workflow: an orchestrator allocates with CHILD, launches two
/// children into the reservation, each launching a grandchild the same way,
/// and exits early; the allocation persists until the last descendant ends
/// and is then released to the scheduler (§6.5.1.5 (2)–(4)).
#[test]
fn s6_5_1_4_orchestrator_workflow() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let kids: Vec<GateJob> = (0..2)
        .map(|k| GateJob::new(&dvm, &format!("child{k}")))
        .collect();
    let grands: Vec<GateJob> = (0..2)
        .map(|k| GateJob::new(&dvm, &format!("grand{k}")))
        .collect();
    let mut body = palloc_into_a("-N 2 --inherit child");
    for (k, (c, g)) in kids.iter().zip(&grands).enumerate() {
        let child = dvm.script(
            &format!("launch{k}.sh"),
            &format!(
                "pspawn --detach --target \"$1\" -n 1 {}\n{}\n",
                g.cmd, c.cmd
            ),
        );
        body.push_str(&format!(
            "pspawn --detach --target \"$A\" -n 1 sh {child} \"$A\"\n"
        ));
    }
    let orch = dvm.script("orchestrator.sh", &body);
    let o = dvm.app(&format!("pspawn -n 1 sh {orch}"));
    o.expect_code(0);
    let a = printed_alloc(&o);
    let nodes = dvm.reservation(&a).expect("outlives the orchestrator")["nodes"].clone();
    let pids: Vec<i32> = kids.iter().chain(&grands).map(GateJob::pid).collect();
    for (i, (job, pid)) in kids.iter().chain(&grands).zip(&pids).enumerate() {
        // Every descendant not yet let go still runs: the drain waits for
        // them all and ends none early.
        for (j, later) in pids.iter().enumerate().skip(i) {
            assert!(alive(*later), "descendant {j} ended before it was let go");
        }
        assert!(nodes
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == job.host().as_str()));
        // open one descendant at a time; the last one releases
        assert!(
            dvm.reservation(&a).is_some(),
            "released with descendants alive"
        );
        job.open();
        eventually("the descendant ends", || !alive(*pid));
    }
    eventually("released after the last descendant", || {
        dvm.reservation(&a).is_none()
    });
    for n in nodes.as_array().unwrap() {
        let n = n.as_str().unwrap();
        eventually("node returned to the scheduler", || dvm.node(n).is_none());
    }
}

/// `pdvm … -- examples/<script>` in a private tmpdir; its output.
fn run_example(script: &str, args: &[&str]) -> Out {
    let tmp = unique_tmpdir("example");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(script);
    let mut cmd = Command::new(cargo_bin("pdvm"));
    scrub_pmix_env(&mut cmd);
    cmd.args(args)
        .arg("--tmpdir")
        .arg(tmp.path())
        .env("TMPDIR", tmp.path())
        .arg("--")
        .arg(&path);
    let o = run_with_timeout(&mut cmd, 40);
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The §6.5.1.4 workflow as a user runs it: examples/child-drain.sh as
/// pdvm's session leader checks every step itself.
#[test]
fn s6_5_1_4_child_drain_example() {
    let o = run_example(
        "child-drain.sh",
        &["--nodes", "1", "--slots", "2", "--scheduler-nodes", "1"],
    );
    o.expect_code(0);
    assert!(o.stdout.contains("released alloc."), "{o}");
    assert!(!o.stdout.contains("FAIL"), "{o}");
}

/// The README's main job: examples/reservation-workflow.sh (reservation,
/// inheritance, targeting, a warning answered by an EXTEND, release).
#[test]
fn s8_2_1_readme_reservation_workflow_example() {
    let o = run_example(
        "reservation-workflow.sh",
        &[
            "--nodes",
            "2",
            "--scheduler-nodes",
            "4",
            "--time-scale",
            "60",
        ],
    );
    o.expect_code(0);
    assert!(
        o.stdout.contains("timeout-warning") || o.stdout.contains("warning"),
        "{o}"
    );
}
