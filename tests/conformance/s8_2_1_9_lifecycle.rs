//! §8.2.1.9 lifecycle: unconditional triggers (owner release, DVM teardown,
//! scheduler expiry), the four namespace-termination dispositions with
//! DEFAULT when absent (§8.2.1.9.2, §8.2.1.9.3), CHILD drain over a
//! grandchild in another session, tool owners, and §8.2.1.9.4 ending a
//! reservation while jobs are mapped.

use std::path::Path;

use crate::support::blackbox::{
    alive, eventually, hosts, palloc_into_a, printed_alloc, str_field, Bg, Dvm, GateJob,
};

/// The scheduler node every test here reserves (`--scheduler-nodes 1`).
const S1: &str = "s001";

/// The node is in the DVM and belongs to no reservation.
#[track_caller]
fn unreserved_in_dvm(dvm: &Dvm, node: &str) {
    let n = dvm
        .node(node)
        .unwrap_or_else(|| panic!("{node} left the DVM; expected it unreserved in the session"));
    assert!(n["alloc_id"].is_null(), "{node} still reserved: {n}");
}

/// An owner job (a child of the leader, default session) reserves S1 with
/// `inherit` (None: no --inherit), optionally starts `child` in it, and
/// ends. Returns the allocation id once the owner's job has ended.
fn owner_job(dvm: &mut Dvm, inherit: Option<&str>, child: Option<&GateJob>) -> String {
    let flags = match inherit {
        Some(r) => format!("-N 1 --inherit {r}"),
        None => "-N 1".to_string(),
    };
    let mut body = palloc_into_a(&flags);
    if let Some(c) = child {
        body.push_str(&format!("pspawn --detach --target \"$A\" -n 1 {}\n", c.cmd));
        // the owner ends only once its child runs (bounded poll)
        body.push_str(&c.await_started_sh());
    }
    let script = dvm.script("owner.sh", &body);
    let o = dvm.app(&format!("pspawn -n 1 sh {script}"));
    o.expect_code(0);
    printed_alloc(&o)
}

fn dvm() -> Dvm {
    Dvm::with_leader(&["--nodes", "1", "--slots", "4", "--scheduler-nodes", "1"])
}

/// What the disposition must do once the owner ended.
#[derive(Clone, Copy, PartialEq)]
enum Rule {
    /// Released at owner death, nodes returned to the scheduler.
    None,
    /// Released after the last derived child, nodes returned.
    Child,
    /// Unreserved at owner death, nodes stay.
    Default,
    /// Unreserved after the last derived child, nodes stay.
    ChildDefault,
}

fn disposition(word: Option<&str>, rule: Rule, live_child: bool) {
    let mut dvm = dvm();
    let child = live_child.then(|| GateJob::new(&dvm, "child"));
    let a = owner_job(&mut dvm, word, child.as_ref());
    let child_pid = child.as_ref().map(|c| {
        assert_eq!(c.host(), S1, "derived child runs in the reservation");
        c.pid()
    });
    let drains = matches!(rule, Rule::Child | Rule::ChildDefault) && live_child;
    if drains {
        // The owner is gone, a derived child lives: the reservation stays.
        let r = dvm
            .reservation(&a)
            .expect("CHILD-flavoured reservation outlives its owner");
        assert_eq!(r["inherit"], word.unwrap_or("default"), "{r}");
        assert!(alive(child_pid.unwrap()), "derived child killed");
        child.as_ref().unwrap().open();
        eventually("the last derived child ends", || !alive(child_pid.unwrap()));
    }
    eventually("the disposition fires", || dvm.reservation(&a).is_none());
    match rule {
        Rule::None | Rule::Child => {
            eventually("the node returns to the scheduler", || {
                dvm.node(S1).is_none()
            });
            if let Some(pid) = child_pid {
                // NONE: nodes left while the child ran on them → terminated.
                eventually("the job on the departed node is terminated", || !alive(pid));
            }
        }
        Rule::Default | Rule::ChildDefault => {
            unreserved_in_dvm(&dvm, S1);
            if let (Some(pid), Some(c)) = (child_pid, child.as_ref()) {
                // Nodes stay: nobody is killed (§8.2.1.9.4).
                assert!(alive(pid) || drains, "job killed although its node stayed");
                c.open();
            }
        }
    }
}

#[test]
fn s8_2_1_9_2_none_owner_death_no_children() {
    disposition(Some("none"), Rule::None, false);
}

#[test]
fn s8_2_1_9_2_none_owner_death_live_child() {
    disposition(Some("none"), Rule::None, true);
}

#[test]
fn s8_2_1_9_2_child_owner_death_no_children() {
    disposition(Some("child"), Rule::Child, false);
}

#[test]
fn s8_2_1_9_2_child_drain_live_child() {
    disposition(Some("child"), Rule::Child, true);
}

#[test]
fn s8_2_1_9_2_default_owner_death_no_children() {
    disposition(Some("default"), Rule::Default, false);
}

#[test]
fn s8_2_1_9_2_default_owner_death_live_child() {
    disposition(Some("default"), Rule::Default, true);
}

#[test]
fn s8_2_1_9_2_child_default_owner_death_no_children() {
    disposition(Some("child-default"), Rule::ChildDefault, false);
}

#[test]
fn s8_2_1_9_2_child_default_drain_live_child() {
    disposition(Some("child-default"), Rule::ChildDefault, true);
}

/// §8.2.1.9.3: no PMIX_ALLOC_INHERITANCE → DEFAULT (unreserve in session).
#[test]
fn s8_2_1_9_3_absent_is_default_no_children() {
    disposition(None, Rule::Default, false);
}

/// §8.2.1.9.3 with a live derived child: unreserved, child untouched, and
/// the node then serves default-session jobs.
#[test]
fn s8_2_1_9_3_absent_is_default_live_child() {
    disposition(None, Rule::Default, true);
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "1"]);
    let a = owner_job(&mut dvm, None, None);
    eventually("unreserved", || dvm.reservation(&a).is_none());
    unreserved_in_dvm(&dvm, S1);
    // n001 has one free slot (the leader holds the other): a 3-process
    // default-session job needs the formerly reserved node.
    let j = dvm.tool(
        "pspawn",
        &["-n", "3", "sh", "-c", "echo host=$PMIX_HOSTNAME"],
    );
    j.expect_code(0);
    assert!(hosts(&j).contains(&S1.to_string()), "{j}");
}

/// CHILD drain tracks the transitive genealogy: a grandchild running in the
/// default session (spawned into the default pool by a child of the
/// reservation — `--default-pool`, since inside a reservation pspawn
/// otherwise targets it, `$PMIX_ALLOC_ID`) keeps the reservation alive after
/// owner and child ended.
#[test]
fn s8_2_1_9_2_child_drain_grandchild_other_session() {
    let mut dvm = dvm();
    let grand = GateJob::new(&dvm, "grandchild");
    let child = dvm.script(
        "child.sh",
        &format!(
            "pspawn --default-pool --detach -n 1 {}\n{}",
            grand.cmd,
            grand.await_started_sh()
        ),
    );
    let mut body = palloc_into_a("-N 1 --inherit child");
    body.push_str(&format!("pspawn --target \"$A\" -n 1 sh {child}\n"));
    let owner = dvm.script("owner.sh", &body);
    let o = dvm.app(&format!("pspawn -n 1 sh {owner}"));
    o.expect_code(0);
    let a = printed_alloc(&o);
    // owner and child have ended; the grandchild runs outside the reservation
    assert_eq!(
        grand.host(),
        "n001",
        "grandchild runs in the default session"
    );
    let r = dvm
        .reservation(&a)
        .expect("reservation kept by a live descendant");
    assert_eq!(r["inherit"], "child", "{r}");
    grand.open();
    eventually("released after the last descendant", || {
        dvm.reservation(&a).is_none()
    });
    eventually("node returned to the scheduler", || dvm.node(S1).is_none());
}

/// A tool owner (`palloc --hold`, then killed): its namespace ends with it
/// and the default disposition unreserves the nodes in the session.
#[test]
fn s8_2_1_9_2_tool_owner_hold_killed() {
    let dvm = Dvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut cmd = dvm.tool_cmd("palloc");
    // The DEFAULT rule named (palloc sends CHILD when none is named).
    cmd.args(["-N", "1", "--hold", "--json", "--inherit", "default"]);
    let hold = Bg::start(cmd);
    let a = str_field(&hold.wait_for("allocation"), "alloc_id");
    assert!(dvm.reservation(&a).is_some());
    let out = hold.stop(nix::sys::signal::Signal::SIGTERM);
    let exit = out.first("exit");
    assert!(
        exit["on_owner_exit"]
            .as_str()
            .is_some_and(|s| s.contains("default")),
        "palloc says what becomes of the reservation: {out}"
    );
    eventually("the tool's reservation ends with it", || {
        dvm.reservation(&a).is_none()
    });
    unreserved_in_dvm(&dvm, S1);
}

/// A tool owner with CHILD: `palloc --inherit child -- CMD` where CMD starts
/// a worker in the reservation and returns; the reservation outlives palloc
/// until the worker ends, then goes back to the scheduler.
#[test]
fn s8_2_1_9_2_tool_owner_child() {
    let dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let worker = GateJob::new(&dvm, "worker");
    let cmd = dvm.script(
        "cmd.sh",
        &format!(
            "echo alloc=$PMIX_ALLOC_ID\npspawn --detach --target \"$PMIX_ALLOC_ID\" -n 1 {}\n{}",
            worker.cmd,
            worker.await_started_sh()
        ),
    );
    let o = dvm.tool(
        "palloc",
        &["-N", "1", "--inherit", "child", "--", "sh", &cmd],
    );
    o.expect_code(0);
    let a = printed_alloc(&o);
    assert_eq!(worker.host(), S1);
    assert!(
        dvm.reservation(&a).is_some(),
        "drains while the worker runs"
    );
    worker.open();
    eventually("released after the worker", || {
        dvm.reservation(&a).is_none()
    });
    eventually("node returned", || dvm.node(S1).is_none());
}

/// §8.2.1.9.1 (1): an owner releases; the scheduler node goes back.
#[test]
fn s8_2_1_9_1_owner_release() {
    let mut dvm = dvm();
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    dvm.app(&format!("prelease {a} --json")).expect_code(0);
    assert!(dvm.reservation(&a).is_none());
    assert!(
        dvm.node(S1).is_none(),
        "released scheduler node still in the DVM"
    );
    // released twice: it no longer exists
    dvm.app(&format!("prelease {a} --json")).expect_code(5);
}

/// §8.2.1.9.1 (1): any namespace in the owner set may release — a job
/// spawned into the reservation does (on a startup node, which stays, so the
/// releasing job survives to report); a stranger (fresh tool) may not.
#[test]
fn s8_2_1_9_1_child_owner_releases() {
    let mut dvm = Dvm::with_leader(&["--nodes", "3", "--slots", "2"]);
    let a = dvm.app("palloc -w n002 --json").alloc_id();
    let o = dvm.app(&format!(
        "pspawn --target {a} -n 1 sh -c 'prelease {a}; echo rc=$?'"
    ));
    o.expect_code(0);
    assert!(o.stdout.contains("rc=0"), "{o}");
    assert!(dvm.reservation(&a).is_none(), "released by the child");
    unreserved_in_dvm(&dvm, "n002");
    let b = dvm.app("palloc -w n003 --json").alloc_id();
    dvm.tool("prelease", &[&b, "--json"]).expect_code(6);
    assert!(dvm.reservation(&b).is_some());
}

/// §8.2.1.9.1 (2): DVM teardown ends every session and its jobs.
#[test]
fn s8_2_1_9_1_dvm_teardown() {
    let mut dvm = dvm();
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let inside = GateJob::new(&dvm, "inside");
    let outside = GateJob::new(&dvm, "outside");
    dvm.app(&format!("pspawn --detach --target {a} -n 1 {}", inside.cmd))
        .expect_code(0);
    dvm.app(&format!("pspawn --detach -n 1 {}", outside.cmd))
        .expect_code(0);
    let (p1, p2) = (inside.pid(), outside.pid());
    let rdv = dvm.tmpdir.path().join(format!("pdvm.{}", dvm.pid));
    assert!(rdv.exists());
    dvm.terminate();
    eventually("jobs end with the DVM", || !alive(p1) && !alive(p2));
    assert!(!Path::new(&rdv).exists(), "rendezvous files left behind");
}

/// §8.2.1.9.1 (3): the scheduler's time limit reclaims the reservation; its
/// jobs are terminated, jobs on startup nodes are not.
#[test]
fn s8_2_1_9_1_scheduler_expiry() {
    let mut dvm = Dvm::with_leader(&[
        "--nodes",
        "1",
        "--slots",
        "4",
        "--scheduler-nodes",
        "1",
        "--time-scale",
        "60",
    ]);
    let a = dvm.app("palloc -N 1 -t 1m --json").alloc_id();
    let inside = GateJob::new(&dvm, "inside");
    let outside = GateJob::new(&dvm, "outside");
    dvm.app(&format!("pspawn --detach --target {a} -n 1 {}", inside.cmd))
        .expect_code(0);
    dvm.app(&format!("pspawn --detach -n 1 {}", outside.cmd))
        .expect_code(0);
    let (p1, p2) = (inside.pid(), outside.pid());
    eventually("the allocation expires", || dvm.reservation(&a).is_none());
    eventually("its node leaves", || dvm.node(S1).is_none());
    eventually("its job is terminated", || !alive(p1));
    assert!(alive(p2), "job on a startup node killed by the expiry");
    outside.open();
}

/// §8.2.1.9.4: a reservation carved from startup nodes ends while a job runs
/// on it: the node stays, nobody is killed, the job finishes normally.
#[test]
fn s8_2_1_9_4_startup_nodes_stay_nobody_killed() {
    let mut dvm = Dvm::with_leader(&["--nodes", "2", "--slots", "2"]);
    let a = dvm.app("palloc -w n002 --json").alloc_id();
    let job = GateJob::new(&dvm, "job");
    let finished = dvm.path("finished");
    let script = dvm.script(
        "run.sh",
        &format!(
            "{}\necho finished >{finished}.tmp && mv {finished}.tmp {finished}\n",
            job.cmd
        ),
    );
    dvm.app(&format!("pspawn --detach --target {a} -n 1 sh {script}"))
        .expect_code(0);
    assert_eq!(job.host(), "n002");
    let pid = job.pid();
    dvm.app(&format!("prelease {a}")).expect_code(0);
    assert!(dvm.reservation(&a).is_none());
    unreserved_in_dvm(&dvm, "n002");
    assert!(alive(pid), "job killed although its node stayed in the DVM");
    job.open();
    // it runs on to its normal end
    eventually("the job finishes its script", || {
        Path::new(&finished).exists()
    });
}

/// §8.2.1.9.4: a reservation of scheduler nodes released while a job runs:
/// the nodes leave and the job is terminated.
#[test]
fn s8_2_1_9_4_scheduler_nodes_leave_jobs_terminated() {
    let mut dvm = dvm();
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let job = GateJob::new(&dvm, "job");
    dvm.app(&format!("pspawn --detach --target {a} -n 1 {}", job.cmd))
        .expect_code(0);
    assert_eq!(job.host(), S1);
    let pid = job.pid();
    dvm.app(&format!("prelease {a}")).expect_code(0);
    assert!(dvm.reservation(&a).is_none());
    assert!(dvm.node(S1).is_none(), "scheduler node still in the DVM");
    eventually("the job on the departed node is terminated", || !alive(pid));
}
