//! §8.2.1.5 allocation behaviour: the destination decision table (six rows),
//! §8.2.1.5.1 NEW versus EXTEND, §8.2.1.5.2 the reply.

use crate::support::blackbox::{hosts, str_field, strings, Bg, Dvm, PRINT_HOST};

/// Row 1: tool, TARGET <nspace>, no SHARE → reservation owned by <nspace>.
#[test]
fn s8_2_1_5_tool_with_target() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let leader = dvm.leader();
    let o = dvm.tool("palloc", &["-N", "1", "--target", &leader, "--json"]);
    let id = o.alloc_id();
    let r = dvm
        .reservation(&id)
        .expect("reservation exists after the tool left");
    assert_eq!(r["owner_nspace"], leader.as_str(), "{r}");
    assert_eq!(r["share"], false, "{r}");
    assert_eq!(strings(&r["owners"]), vec![leader.clone()], "{r}");
    // The target namespace owns it: it may spawn into it.
    let j = dvm.app(&format!("pspawn --target {id} -n 1 {PRINT_HOST}"));
    j.expect_code(0);
    assert_eq!(hosts(&j), strings(&r["nodes"]), "{j}");
}

/// Row 2: tool, no TARGET, no SHARE → reservation owned by the tool's own
/// namespace.
#[test]
fn s8_2_1_5_tool_absent_absent() {
    let dvm = Dvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let mut cmd = dvm.tool_cmd("palloc");
    cmd.args(["-N", "1", "--hold", "--json"]);
    let hold = Bg::start(cmd);
    let a = hold.wait_for("allocation");
    let id = str_field(&a, "alloc_id");
    let owner = str_field(&a, "owner_nspace");
    let r = dvm.reservation(&id).expect("held reservation listed");
    assert_eq!(r["owner_nspace"], owner.as_str(), "{r}");
    assert_eq!(r["share"], false, "{r}");
    assert!(owner.starts_with("pdvm-"), "{a}");
    // A job from another tool (default session) cannot reach the node.
    // (2 processes on the one 1-slot default node: oversubscribed explicitly)
    let j = dvm.tool(
        "pspawn",
        &[
            "--map-by",
            ":OVERSUBSCRIBE",
            "-n",
            "2",
            "sh",
            "-c",
            "echo host=$PMIX_HOSTNAME",
        ],
    );
    j.expect_code(0);
    assert!(
        hosts(&j).iter().all(|h| !strings(&r["nodes"]).contains(h)),
        "{j}"
    );
    hold.stop(nix::sys::signal::Signal::SIGTERM);
}

/// Row 3: tool, SHARE=true → default session (shared): any job may use the
/// nodes while the requester lives.
#[test]
fn s8_2_1_5_tool_share() {
    let dvm = Dvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut cmd = dvm.tool_cmd("palloc");
    cmd.args(["-N", "1", "--share", "--hold", "--json"]);
    let hold = Bg::start(cmd);
    let a = hold.wait_for("allocation");
    let id = str_field(&a, "alloc_id");
    assert_eq!(a["reserved"], false, "{a}");
    let r = dvm
        .reservation(&id)
        .unwrap_or_else(|| panic!("pdvm lists the shared grant {id}"));
    assert_eq!(r["share"], true, "{r}");
    let node = strings(&a["nodes"]);
    assert_eq!(node.len(), 1, "{a}");
    // A default-session job from another tool fills both nodes (1 slot each).
    let j = dvm.tool(
        "pspawn",
        &["-n", "2", "sh", "-c", "echo host=$PMIX_HOSTNAME"],
    );
    j.expect_code(0);
    assert!(hosts(&j).contains(&node[0]), "shared node unused: {j}");
    hold.stop(nix::sys::signal::Signal::SIGTERM);
}

/// Row 4: application, no TARGET, no SHARE → reservation owned by the
/// application's namespace.
#[test]
fn s8_2_1_5_application_absent() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let leader = dvm.leader();
    let o = dvm.app("palloc -N 1 --json");
    let id = o.alloc_id();
    let r = dvm.reservation(&id).expect("listed");
    assert_eq!(r["owner_nspace"], leader.as_str(), "{r}");
    assert_eq!(r["share"], false, "{r}");
    assert_eq!(r["nodes"].as_array().map(Vec::len), Some(1), "{r}");
}

/// Row 5: application, SHARE=true → default session (shared).
#[test]
fn s8_2_1_5_application_share() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "1", "--scheduler-nodes", "1"]);
    let o = dvm.app("palloc -N 1 --share --json");
    o.expect_code(0);
    let a = o.first("allocation");
    let node = strings(&a["nodes"]);
    assert_eq!(node.len(), 1, "{o}");
    assert_eq!(a["reserved"], false, "{o}");
    let id = str_field(&a, "alloc_id");
    let r = dvm
        .reservation(&id)
        .unwrap_or_else(|| panic!("pdvm lists the shared grant {id}"));
    assert_eq!(r["share"], true, "{r}");
    // n001's only slot runs the leader: an untargeted job of another tool
    // maps onto the shared node.
    let j = dvm.tool(
        "pspawn",
        &["-n", "1", "sh", "-c", "echo host=$PMIX_HOSTNAME"],
    );
    j.expect_code(0);
    assert_eq!(hosts(&j), node, "{j}");
}

/// Row 6: application with TARGET → PMIX_ERR_NO_PERMISSIONS (exit 6).
#[test]
fn s8_2_1_5_application_with_target() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let leader = dvm.leader();
    let o = dvm.app(&format!("palloc -N 1 --target {leader} --json"));
    o.expect_code(6);
    assert_eq!(
        o.error_status().as_deref(),
        Some("PMIX_ERR_NO_PERMISSIONS"),
        "{o}"
    );
    assert!(dvm.reservations().is_empty());
}

/// §8.2.1.5.1: NEW always mints a fresh reservation, even for an owner of one.
#[test]
fn s8_2_1_5_1_new_twice_two_reservations() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let leader = dvm.leader();
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let b = dvm.app("palloc -N 1 --json").alloc_id();
    assert_ne!(a, b);
    let rs = dvm.reservations();
    assert_eq!(rs.len(), 2, "{rs:?}");
    for r in &rs {
        assert_eq!(r["owner_nspace"], leader.as_str(), "{r}");
    }
    let na = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    let nb = strings(&dvm.reservation(&b).unwrap()["nodes"]);
    assert!(na.iter().all(|n| !nb.contains(n)), "{na:?} {nb:?}");
}

/// §8.2.1.5.1: EXTEND by PMIX_ALLOC_ID adds nodes to that reservation.
#[test]
fn s8_2_1_5_1_extend_by_alloc_id() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let id = dvm.app("palloc -N 1 --json").alloc_id();
    let o = dvm.app(&format!("palloc --extend {id} -N 1 --json"));
    o.expect_code(0);
    let rs = dvm.reservations();
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0]["alloc_id"], id.as_str());
    assert_eq!(strings(&rs[0]["nodes"]).len(), 2, "{rs:?}");
}

/// §8.2.1.5.1: EXTEND by PMIX_ALLOC_REQ_ID names the reservation too.
#[test]
fn s8_2_1_5_1_extend_by_request_id() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let id = dvm
        .app("palloc -N 1 --request-id grow-me --json")
        .alloc_id();
    let o = dvm.app("palloc --extend-request grow-me -N 1 --json");
    o.expect_code(0);
    let rs = dvm.reservations();
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0]["alloc_id"], id.as_str());
    assert_eq!(strings(&rs[0]["nodes"]).len(), 2, "{rs:?}");
}

/// §8.2.1.5.2: the reply carries PMIX_ALLOC_ID and echoes PMIX_ALLOC_REQ_ID.
#[test]
fn s8_2_1_5_2_reply_carries_alloc_id_and_request_id() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let o = dvm.app("palloc -N 1 --request-id my-req-42 --json");
    let id = o.alloc_id();
    assert!(!id.is_empty());
    assert_eq!(o.first("allocation")["request_id"], "my-req-42", "{o}");
    let r = dvm
        .reservation(&id)
        .expect("the id names a live reservation");
    assert_eq!(r["request_id"], "my-req-42", "{r}");
}
