//! §8.2.1.9.5 the allocation timeout warning: directed only to the process
//! that requested the allocation (never a broadcast), refreshed on EXTEND,
//! advisory. Time runs 60× faster (`--time-scale 60`).

use crate::support::blackbox::{eventually, str_field, strings, Bg, Dvm};

/// The timeout-warning events in a tool's `--json` output.
fn warnings(out: &crate::support::blackbox::Out) -> Vec<serde_json::Value> {
    out.of_type("event")
        .into_iter()
        .filter(|e| e["event"] == "timeout-warning")
        .collect()
}

/// The requester (palloc --hold, a tool) receives the warning with the
/// allocation id, its request id and the seconds remaining; a pwatch in
/// another tool process and a pwatch of the session leader's job see
/// nothing; the reservation is unchanged by the warning, and only the
/// expiry reclaims it.
#[test]
fn s8_2_1_9_5_warning_only_to_requester() {
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
    let mut w = dvm.tool_cmd("pwatch");
    w.args(["--json", "--timeout", "4s"]);
    let outside = Bg::start(w);
    let leader_log = dvm.path("leader-watch.out");
    dvm.app(&format!(
        "(pwatch --json --timeout 4s; echo rc=$?) >{leader_log} 2>&1 &"
    ))
    .expect_code(0);
    let mut cmd = dvm.tool_cmd("palloc");
    cmd.args([
        "-N",
        "1",
        "-t",
        "2m",
        "--warn-timeout",
        "60s",
        "--request-id",
        "w-req",
        "--hold",
        "--json",
    ]);
    let hold = Bg::start(cmd);
    let a = str_field(&hold.wait_for("allocation"), "alloc_id");
    // expires_at and expires_in are left out: they move with the clock, and
    // under --time-scale pdvm reports expires_at as "real now + simulated
    // seconds left", which drifts (see docs/conformance.md).
    let stable = |mut r: serde_json::Value| {
        r.as_object_mut().map(|o| {
            o.remove("expires_at");
            o.remove("expires_in")
        });
        r
    };
    let before = stable(dvm.reservation(&a).expect("granted"));
    let warn = hold.wait_for("event");
    assert_eq!(warn["event"], "timeout-warning", "{warn}");
    assert_eq!(warn["alloc_id"], a.as_str(), "{warn}");
    assert_eq!(warn["request_id"], "w-req", "{warn}");
    let left = warn["time_remaining"].as_u64().expect("time_remaining");
    assert!(left > 0 && left <= 60, "{warn}");
    // advisory: nothing about the reservation changed
    let after = stable(dvm.reservation(&a).expect("still there after the warning"));
    assert_eq!(before, after);
    eventually("the allocation expires", || dvm.reservation(&a).is_none());
    // control: the observers do receive events (a job of the leader ends)
    dvm.app("pspawn -n 1 true").expect_code(0);
    let o = outside.wait();
    assert!(
        warnings(&o).is_empty(),
        "an outside tool saw the warning:\n{o}"
    );
    assert!(
        o.of_type("event").iter().any(|e| e["event"] == "job-end"),
        "the outside observer received no events at all:\n{o}"
    );
    eventually("the leader's pwatch ends", || {
        std::fs::read_to_string(&leader_log).is_ok_and(|s| s.contains("rc="))
    });
    let leader_seen = std::fs::read_to_string(&leader_log).unwrap_or_default();
    assert!(
        !leader_seen.contains("timeout-warning"),
        "the owning job's other process saw the warning: {leader_seen}"
    );
    assert!(
        leader_seen.contains("job-end"),
        "leader's observer got no events: {leader_seen}"
    );
    let h = hold.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(warnings(&h).len(), 1, "{h}");
}

/// Two connections of one process name (two tools inside the session
/// leader's job both connect as its rank 0): the warning goes to the
/// connection that asked for it (a `palloc --hold` there), never to the
/// other (a `pwatch` there), which still receives the job's end.
#[test]
fn s8_2_1_9_5_warning_only_to_the_requesting_connection() {
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
    let watch_log = dvm.path("same-name-watch.out");
    let hold_log = dvm.path("same-name-hold.out");
    dvm.app(&format!(
        "(pwatch --json --timeout 6s; echo rc=$?) >{watch_log} 2>&1 &"
    ))
    .expect_code(0);
    dvm.app(&format!(
        "(palloc -N 1 -t 2m --warn-timeout 60s --hold --json; echo rc=$?) >{hold_log} 2>&1 &"
    ))
    .expect_code(0);
    eventually("the requesting connection gets the warning", || {
        std::fs::read_to_string(&hold_log).is_ok_and(|s| s.contains("timeout-warning"))
    });
    dvm.app("pspawn -n 1 true").expect_code(0);
    eventually("the other connection's pwatch ends", || {
        std::fs::read_to_string(&watch_log).is_ok_and(|s| s.contains("rc="))
    });
    let seen = std::fs::read_to_string(&watch_log).unwrap_or_default();
    assert!(
        seen.contains("job-end"),
        "the other connection got no events at all: {seen}"
    );
    assert!(
        !seen.contains("timeout-warning"),
        "the other connection of the requester's process saw the warning: {seen}"
    );
}

/// The requester is refreshed on EXTEND: palloc (the NEW's requester) has
/// exited (it refuses --warn-timeout when it returns at once: nobody would
/// hear it); a pwatch of the owning job arms the warning by an EXTEND
/// carrying PMIX_ALLOC_WARN_TIMEOUT and receives it; an outside tool still
/// sees nothing.
#[test]
fn s8_2_1_9_5_extend_refreshes_requester() {
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
    let a = dvm
        .app("palloc -N 1 -t 3m --request-id first --json")
        .alloc_id();
    let mut w = dvm.tool_cmd("pwatch");
    w.args(["--json", "--timeout", "3s"]);
    let outside = Bg::start(w);
    let o = dvm.app(&format!(
        "pwatch --alloc {a} --warn-timeout 90s --event timeout-warning --count 1 --timeout 10s --json"
    ));
    o.expect_code(0);
    let ws = warnings(&o);
    assert_eq!(ws.len(), 1, "{o}");
    assert_eq!(ws[0]["alloc_id"], a.as_str());
    let left = ws[0]["time_remaining"].as_u64().expect("time_remaining");
    assert!(left > 0 && left <= 90, "{o}");
    let r = dvm.reservation(&a).expect("still reserved");
    assert_eq!(strings(&r["nodes"]).len(), 1, "{r}");
    dvm.app("pspawn -n 1 true").expect_code(0);
    let out = outside.wait();
    assert!(
        warnings(&out).is_empty(),
        "an outside tool saw the warning:\n{out}"
    );
    assert!(
        out.of_type("event").iter().any(|e| e["event"] == "job-end"),
        "the outside observer received no events at all:\n{out}"
    );
}
