//! §8.2.1.7 ownership: the owner set grows with each job spawned into a
//! reservation; ownership is not transitive; the scheduler is an implicit
//! owner, which may release any reservation.

use crate::support::blackbox::{eventually, strings, Bg, Dvm};

/// Each job spawned into the reservation joins its owner set, and may then
/// spawn further jobs onto the same nodes (and release it).
#[test]
fn s8_2_1_7_owner_set_grows_with_each_spawn() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "4", "--scheduler-nodes", "1"]);
    let leader = dvm.leader();
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let j1 = dvm
        .app(&format!("pspawn --json --target {a} -n 1 true"))
        .job_nspace();
    let j2 = dvm
        .app(&format!("pspawn --json --target {a} -n 1 true"))
        .job_nspace();
    let r = dvm.reservation(&a).unwrap();
    let mut want = vec![leader.clone(), j1.clone(), j2.clone()];
    want.sort();
    assert_eq!(strings(&r["owners"]), want, "{r}");
    assert_eq!(
        r["owner_nspace"],
        leader.as_str(),
        "owning namespace never changes: {r}"
    );
    // A child in the owner set spawns a grandchild there; it joins too.
    let inner = dvm.script(
        "inner.sh",
        &format!("pspawn --json --target {a} -n 1 true\n"),
    );
    let o = dvm.app(&format!("pspawn --json --target {a} -n 1 sh {inner}"));
    o.expect_code(0);
    let jobs = o.of_type("job");
    let nss: Vec<String> = o
        .output_lines()
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "job")
        .filter_map(|v| v["nspace"].as_str().map(String::from))
        .collect();
    assert!(!jobs.is_empty() && !nss.is_empty(), "{o}");
    let r = dvm.reservation(&a).unwrap();
    let owners = strings(&r["owners"]);
    assert!(
        owners.contains(&nss[0]),
        "grandchild {} not an owner: {r}",
        nss[0]
    );
    assert_eq!(owners.len(), 5, "{r}");
}

/// A child owns only the reservation it was spawned into, never its
/// parent's other reservations: spawn, extend and release of the other one
/// are refused with PMIX_ERR_NO_PERMISSIONS.
#[test]
fn s8_2_1_7_not_transitive() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "4", "--scheduler-nodes", "3"]);
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let b = dvm.app("palloc -N 1 --json").alloc_id();
    let body = format!(
        "pspawn --target {b} -n 1 true; echo spawn_b=$?\n\
         palloc --extend {b} -N 1; echo extend_b=$?\n\
         prelease {b}; echo release_b=$?\n\
         pspawn --target {a} -n 1 true; echo spawn_a=$?\n"
    );
    let child = dvm.script("child.sh", &body);
    let o = dvm.app(&format!("pspawn --target {a} -n 1 sh {child}"));
    o.expect_code(0);
    for (k, v) in [
        ("spawn_b", "6"),
        ("extend_b", "6"),
        ("release_b", "6"),
        ("spawn_a", "0"),
    ] {
        assert!(o.stdout.contains(&format!("{k}={v}")), "{k} != {v}:\n{o}");
    }
    let rb = dvm.reservation(&b).expect("b untouched");
    assert_eq!(strings(&rb["nodes"]).len(), 1, "{rb}");
    assert_eq!(strings(&rb["owners"]), vec![dvm.leader()], "{rb}");
}

/// The scheduler is an implicit owner of every reservation: it reclaims one
/// at its time limit although it is in no owner set, while the owner lives.
#[test]
fn s8_2_1_7_scheduler_implicit_owner() {
    let mut dvm = Dvm::with_leader(&[
        "--nodes",
        "1",
        "--scheduler-nodes",
        "1",
        "--time-scale",
        "60",
    ]);
    let leader = dvm.leader();
    let a = dvm.app("palloc -N 1 -t 1m --json").alloc_id();
    let r = dvm.reservation(&a).expect("granted");
    assert_eq!(strings(&r["owners"]), vec![leader]);
    let node = strings(&r["nodes"]).remove(0);
    eventually("the scheduler reclaims the reservation", || {
        dvm.reservation(&a).is_none()
    });
    assert!(dvm.node(&node).is_none(), "scheduler node still in the DVM");
    // The leader lived throughout.
    assert_eq!(dvm.app("echo alive").stdout.trim(), "alive");
}

/// The scheduler may release any reservation (§8.2.1.7), not only at its
/// time limit: a reservation the live session leader owns, which a foreign
/// tool may not release, is released by pdvm's own scheduler (`pdvm
/// --release`, a `PMIX_ALLOC_RELEASE` the scheduler makes); its node leaves
/// the DVM, the owner's tools are told who released it, and the owner lives
/// on. An id the DVM never gave is NOT_FOUND.
#[test]
fn s8_2_1_7_scheduler_releases_any_reservation() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let leader = dvm.leader();
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let r = dvm.reservation(&a).expect("granted");
    assert_eq!(strings(&r["owners"]), vec![leader], "{r}");
    let node = strings(&r["nodes"]).remove(0);
    let foreign = dvm.tool("prelease", &[&a]);
    foreign.expect_code(6);
    assert!(
        dvm.reservation(&a).is_some(),
        "a foreign release changed it"
    );
    let watch = Bg::start({
        let mut w = dvm.tool_cmd("pwatch");
        w.args(["-v", "--event", "alloc", "--count", "1", "--timeout", "30s"]);
        w
    });
    dvm.poll("pwatch is watching", |_| {
        watch.snapshot().stderr.contains("watching for events")
    });
    let by_scheduler = dvm.tool("pdvm", &["--release", &a]);
    by_scheduler.expect_code(0);
    let ended = watch.wait();
    assert!(
        ended.stdout.contains(&format!("alloc released {a} "))
            && ended.stdout.contains("(the scheduler released it)"),
        "{ended}"
    );
    assert!(
        dvm.reservation(&a).is_none(),
        "still held after the scheduler's release"
    );
    assert!(
        dvm.node(&node).is_none(),
        "its node {node} is still in the DVM"
    );
    assert_eq!(dvm.app("echo alive").stdout.trim(), "alive");
    dvm.tool("pdvm", &["--release", "alloc.99"]).expect_code(5);
}
