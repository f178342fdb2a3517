//! §8.2.1.11 conformance summary items that are not already one rule's test
//! (items 1, 3, 5 and 6 map onto the §8.2.1.6, §8.2.1.8, §8.2.1.9.2 and
//! §8.2.1.9.5 tests; see docs/conformance.md).

use crate::support::blackbox::{hosts, strings, Bg, Dvm, PRINT_HOST};

/// Item 1: candidate nodes are exactly the union of the permitted sessions —
/// with three reservations (two of them the job's) and the default pool,
/// every placement stays within what the spawn named.
#[test]
fn s8_2_1_11_1_candidates_exactly_permitted_union() {
    let mut dvm = Dvm::with_leader(&["--nodes", "2", "--slots", "2", "--scheduler-nodes", "3"]);
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let b = dvm.app("palloc -N 1 --json").alloc_id();
    let c = dvm.app("palloc -N 1 --json").alloc_id();
    let nodes = |dvm: &Dvm, id: &str| strings(&dvm.reservation(id).unwrap()["nodes"]);
    let (na, nb, nc) = (nodes(&dvm, &a), nodes(&dvm, &b), nodes(&dvm, &c));
    let cases: Vec<(String, Vec<String>)> = vec![
        (format!("--target {a}"), na.clone()),
        (
            format!("--target {a},{b}"),
            [na.clone(), nb.clone()].concat(),
        ),
        (
            format!("--target {b} --default-pool"),
            [nb.clone(), vec!["n001".into(), "n002".into()]].concat(),
        ),
        (String::new(), vec!["n001".into(), "n002".into()]),
    ];
    for (flags, allowed) in cases {
        // 4 processes on a 1-node reservation of 2 slots: oversubscribed
        // explicitly (pdvm refuses more processes than slots otherwise).
        let j = dvm.app(&format!(
            "pspawn {flags} --map-by :OVERSUBSCRIBE -n 4 {PRINT_HOST}"
        ));
        j.expect_code(0);
        let h = hosts(&j);
        assert_eq!(h.len(), 4, "{j}");
        assert!(
            h.iter().all(|n| allowed.contains(n)),
            "{flags}: {h:?} ⊄ {allowed:?}"
        );
        assert!(
            h.iter().all(|n| !nc.contains(n)),
            "{flags}: landed on unnamed {nc:?}"
        );
    }
}

/// Item 2: no reservation is created by the DVM's own initiative — plain
/// spawns, nested spawns and queries leave every node unreserved.
#[test]
fn s8_2_1_11_2_no_reservation_without_request() {
    let mut dvm = Dvm::with_leader(&["--nodes", "2", "--slots", "2", "--scheduler-nodes", "2"]);
    // Watched during the whole run, not only at its end: a reservation
    // made and dropped again in between is an allocation event (or a
    // node joining) this pwatch sees; the job ends show it was listening.
    let mut w = dvm.tool_cmd("pwatch");
    w.args([
        "--json",
        "--event",
        "alloc,node,job-end",
        "--timeout",
        "60s",
    ]);
    let watch = Bg::start(w);
    dvm.app(&format!("pspawn -n 3 {PRINT_HOST}")).expect_code(0);
    dvm.app("pspawn -n 1 sh -c 'pspawn -n 1 true'")
        .expect_code(0);
    dvm.tool("pspawn", &["-n", "2", "true"]).expect_code(0);
    dvm.tool("pwatch", &["--status"]).expect_code(0);
    let seen = watch.stop(nix::sys::signal::Signal::SIGTERM);
    let events = seen.of_type("event");
    assert!(
        events.iter().any(|e| e["event"] == "job-end"),
        "the watcher heard nothing: {seen}"
    );
    let changes: Vec<_> = events.iter().filter(|e| e["event"] != "job-end").collect();
    assert!(
        changes.is_empty(),
        "allocation or node changes: {changes:?}"
    );
    assert!(dvm.reservations().is_empty());
    for n in dvm.nodes() {
        assert!(n["alloc_id"].is_null(), "{n}");
        let name = n["name"].as_str().unwrap_or_default();
        assert!(
            name.starts_with('n'),
            "a scheduler node joined unasked: {n}"
        );
    }
}

/// Item 4: a reservation ends on a trigger or its disposition and on no
/// other event — jobs in it starting, failing and ending, other tools
/// coming and going, and another reservation's release leave it intact.
#[test]
fn s8_2_1_11_4_ends_on_no_other_event() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "4", "--scheduler-nodes", "3"]);
    let a = dvm.app("palloc -N 2 --json").alloc_id();
    let before = dvm.reservation(&a).unwrap();
    let b = dvm.app("palloc -N 1 --json").alloc_id();
    dvm.app(&format!("pspawn --target {a} -n 2 true"))
        .expect_code(0);
    dvm.app(&format!("pspawn --target {a} -n 1 sh -c 'exit 3'"))
        .expect_code(3);
    dvm.tool("pwatch", &["--status", "--json"]).expect_code(0);
    dvm.tool("prelease", &[&a]).expect_code(6);
    dvm.tool("palloc", &["--extend", &a, "-N", "1"])
        .expect_code(6);
    dvm.app(&format!("prelease {b}")).expect_code(0);
    let after = dvm
        .reservation(&a)
        .expect("reservation survives unrelated events");
    assert_eq!(before["nodes"], after["nodes"]);
    assert_eq!(before["owner_nspace"], after["owner_nspace"]);
    assert_eq!(after["state"], before["state"]);
}
