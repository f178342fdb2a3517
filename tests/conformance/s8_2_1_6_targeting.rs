//! §8.2.1.6 spawn targeting: absent, one id, several ids (union), ids plus
//! the default pool, and isolation of reserved nodes.

use crate::support::blackbox::{hosts, strings, Dvm, PRINT_HOST};

/// Absent → the default session only; reserved nodes are never used, even
/// when the job needs more slots than the default session has.
#[test]
fn s8_2_1_6_absent_default_session_only() {
    let mut dvm = Dvm::with_leader(&["--nodes", "2", "--slots", "2", "--scheduler-nodes", "2"]);
    let a = dvm.app("palloc -N 2 --json").alloc_id();
    let reserved = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    let j = dvm.app(&format!("pspawn -n 6 {PRINT_HOST}"));
    if j.code == 0 {
        let h = hosts(&j);
        assert_eq!(h.len(), 6, "{j}");
        assert!(h.iter().all(|n| n == "n001" || n == "n002"), "{h:?}");
        assert!(h.iter().all(|n| !reserved.contains(n)), "{h:?}");
    }
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
/// launches it (tool or application), however many processes it has.
#[test]
fn s8_2_1_6_isolation() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let a = dvm.app("palloc -N 2 --json").alloc_id();
    let reserved = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    let from_tool = dvm.tool(
        "pspawn",
        &["-n", "5", "sh", "-c", "echo host=$PMIX_HOSTNAME"],
    );
    let from_app = dvm.app(&format!("pspawn -n 5 {PRINT_HOST}"));
    for j in [from_tool, from_app] {
        if j.code == 0 {
            let h = hosts(&j);
            assert_eq!(h.len(), 5, "{j}");
            assert!(
                h.iter().all(|n| !reserved.contains(n)),
                "{h:?} {reserved:?}"
            );
        }
    }
    // Naming only the invalid namespace is the default session as well.
    let j = dvm.app(&format!("pspawn --default-pool -n 2 {PRINT_HOST}"));
    j.expect_code(0);
    assert!(hosts(&j).iter().all(|n| n == "n001"), "{j}");
}
