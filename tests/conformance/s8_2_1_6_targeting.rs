//! §8.2.1.6 spawn targeting: absent, one id, several ids (union), ids plus
//! the default pool, and isolation of reserved nodes.

use crate::support::blackbox::{hosts, strings, Dvm, PRINT_HOST};

/// Absent → the default session only; reserved nodes are never used, even
/// when the job needs more slots than the default session has: with 3 free
/// slots left there (n001 runs the leader), 3 processes run on n001/n002,
/// 6 are refused and none of them runs.
#[test]
fn s8_2_1_6_absent_default_session_only() {
    let mut dvm = Dvm::with_leader(&["--nodes", "2", "--slots", "2", "--scheduler-nodes", "2"]);
    let a = dvm.app("palloc -N 2 --json").alloc_id();
    let reserved = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    assert_eq!(reserved.len(), 2, "{reserved:?}");
    let j = dvm.app(&format!("pspawn -n 3 {PRINT_HOST}"));
    j.expect_code(0);
    let h = hosts(&j);
    assert_eq!(h, ["n001", "n002", "n002"], "{j}");
    let marker = dvm.path("ran");
    let six = dvm.app(&format!("pspawn -n 6 --json touch {marker}"));
    refused_to_map(&six);
    assert!(!std::path::Path::new(&marker).exists(), "{six}");
}

/// A spawn refused because it does not fit its candidate nodes.
#[track_caller]
fn refused_to_map(o: &crate::support::blackbox::Out) {
    o.expect_code(4);
    assert_eq!(
        o.error_status().as_deref(),
        Some("PMIX_ERR_JOB_FAILED_TO_MAP"),
        "{o}"
    );
}

/// One valid id → exactly that reservation's nodes.
#[test]
fn s8_2_1_6_one_id() {
    let mut dvm = Dvm::with_leader(&["--nodes", "2", "--slots", "2", "--scheduler-nodes", "2"]);
    let a = dvm.app("palloc -N 2 --json").alloc_id();
    let nodes = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    let j = dvm.app(&format!("pspawn --target {a} -n 4 {PRINT_HOST}"));
    j.expect_code(0);
    let h = hosts(&j);
    assert_eq!(h.len(), 4, "{j}");
    assert!(
        h.iter().all(|n| nodes.contains(n)),
        "{h:?} not within {nodes:?}"
    );
}

/// Several ids → the union of their nodes (one slot each: both are used).
#[test]
fn s8_2_1_6_several_ids_union() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "3"]);
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let b = dvm.app("palloc -N 1 --json").alloc_id();
    let mut union = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    union.extend(strings(&dvm.reservation(&b).unwrap()["nodes"]));
    union.sort();
    let j = dvm.app(&format!("pspawn --target {a},{b} -n 2 {PRINT_HOST}"));
    j.expect_code(0);
    assert_eq!(hosts(&j), union, "{j}");
    // repeated --target is the same request
    let j = dvm.app(&format!(
        "pspawn --target {a} --target {b} -n 2 {PRINT_HOST}"
    ));
    j.expect_code(0);
    assert_eq!(hosts(&j), union, "{j}");
}

/// Ids plus the invalid namespace → the union also includes the default pool.
#[test]
fn s8_2_1_6_ids_plus_default_pool() {
    // n001 runs the leader (1 slot), n002 is free; s001 is reserved.
    let mut dvm = Dvm::with_leader(&["--nodes", "2", "--scheduler-nodes", "1"]);
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let mut want = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    want.push("n002".into());
    want.sort();
    let j = dvm.app(&format!(
        "pspawn --target {a} --default-pool -n 2 {PRINT_HOST}"
    ));
    j.expect_code(0);
    assert_eq!(hosts(&j), want, "{j}");
}

/// Isolation: a default-session job never lands on a reserved node, whoever
/// launches it (tool or application), however many processes it has: n001
/// takes a job of at most 2 processes (its slots), so one process runs
/// there and five are refused (nothing of them runs) although the reserved
/// nodes have room.
#[test]
fn s8_2_1_6_isolation() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let a = dvm.app("palloc -N 2 --json").alloc_id();
    let reserved = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    assert_eq!(reserved.len(), 2, "{reserved:?}");
    let one_tool = dvm.tool(
        "pspawn",
        &["-n", "1", "sh", "-c", "echo host=$PMIX_HOSTNAME"],
    );
    let one_app = dvm.app(&format!("pspawn -n 1 {PRINT_HOST}"));
    for j in [&one_tool, &one_app] {
        j.expect_code(0);
        assert_eq!(hosts(j), ["n001"], "{j}");
    }
    let marker = dvm.path("ran");
    let five_tool = dvm.tool("pspawn", &["-n", "5", "--json", "touch", &marker]);
    let five_app = dvm.app(&format!("pspawn -n 5 --json touch {marker}"));
    for j in [&five_tool, &five_app] {
        refused_to_map(j);
    }
    assert!(!std::path::Path::new(&marker).exists(), "a refused job ran");
    // Naming only the invalid namespace is the default session as well.
    let j = dvm.app(&format!("pspawn --default-pool -n 1 {PRINT_HOST}"));
    j.expect_code(0);
    assert_eq!(hosts(&j), ["n001"], "{j}");
    refused_to_map(&dvm.app(&format!("pspawn --default-pool -n 3 --json {PRINT_HOST}")));
}
