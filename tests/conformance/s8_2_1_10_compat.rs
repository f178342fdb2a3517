//! §8.2.1.10 backward compatibility: `pdvm --pmix-compat` behaves as a DVM
//! whose PMIx lacks the five attributes.

use crate::support::blackbox::{
    eventually, hosts, palloc_into_a, printed_alloc, str_field, strings, Bg, Dvm,
};

fn compat(extra: &[&str]) -> Dvm {
    let mut args = vec![
        "--pmix-compat",
        "--nodes",
        "1",
        "--slots",
        "4",
        "--scheduler-nodes",
        "2",
    ];
    args.extend_from_slice(extra);
    Dvm::with_leader(&args)
}

/// Without PMIX_ALLOC_TARGET a dynamic allocation is always reserved to the
/// requester's own namespace: a tool's --target is not honoured.
#[test]
fn s8_2_1_10_compat_target_reserves_to_requester() {
    let dvm = compat(&[]);
    let leader = dvm.leader();
    let mut cmd = dvm.tool_cmd("palloc");
    cmd.args(["-N", "1", "--target", &leader, "--hold", "--json"]);
    let hold = Bg::start(cmd);
    let granted = hold.wait_for("allocation");
    let a = str_field(&granted, "alloc_id");
    let r = dvm.reservation(&a).expect("reserved");
    assert_ne!(
        r["owner_nspace"],
        leader.as_str(),
        "TARGET honoured in compat mode: {r}"
    );
    assert_eq!(strings(&r["owners"]).len(), 1, "{r}");
    // palloc reports what was granted, not what it asked for
    assert_eq!(
        granted["owner_nspace"], r["owner_nspace"],
        "palloc misreports the owner: {granted}"
    );
    hold.stop(nix::sys::signal::Signal::SIGTERM);
}

/// Without PMIX_ALLOC_SHARE the "reserve" default applies: nodes are never
/// routed to the default pool by a dynamic request.
#[test]
fn s8_2_1_10_compat_share_still_reserves() {
    let mut dvm = compat(&[]);
    let o = dvm.app("palloc -N 2 --share --json");
    let a = o.alloc_id();
    let r = dvm
        .reservation(&a)
        .expect("a reservation, not the default pool");
    assert_eq!(r["share"], false, "{r}");
    // palloc reports what was granted, not what it asked for
    assert_eq!(
        o.first("allocation")["reserved"],
        true,
        "palloc misreports sharing:\n{o}"
    );
    assert_eq!(strings(&r["nodes"]).len(), 2, "{r}");
    // n001 (4 slots, leader on one) holds 3 processes, all on n001; 6 do
    // not fit and are refused rather than use the reserved nodes.
    let j = dvm.tool(
        "pspawn",
        &["-n", "3", "sh", "-c", "echo host=$PMIX_HOSTNAME"],
    );
    j.expect_code(0);
    assert_eq!(hosts(&j), ["n001"; 3], "{j}");
    let marker = dvm.path("ran");
    let six = dvm.tool("pspawn", &["-n", "6", "--json", "touch", &marker]);
    six.expect_code(4);
    assert_eq!(
        six.error_status().as_deref(),
        Some("PMIX_ERR_JOB_FAILED_TO_MAP"),
        "{six}"
    );
    assert!(!std::path::Path::new(&marker).exists(), "{six}");
}

/// Without PMIX_ALLOC_INHERITANCE every reservation takes DEFAULT: when its
/// owning namespace ends, the nodes become unreserved in the session.
#[test]
fn s8_2_1_10_compat_default_disposition() {
    let mut dvm = compat(&[]);
    let owner = dvm.script("owner.sh", &palloc_into_a("-N 1"));
    let o = dvm.app(&format!("pspawn -n 1 sh {owner}"));
    o.expect_code(0);
    let a = printed_alloc(&o);
    eventually("unreserved at owner death", || {
        dvm.reservation(&a).is_none()
    });
    let n = dvm.node("s001").expect("node stays in the DVM");
    assert!(n["alloc_id"].is_null(), "{n}");
}

/// A non-default inheritance cannot be requested: PMIX_ERR_NOT_SUPPORTED.
#[test]
fn s8_2_1_10_compat_non_default_inheritance_rejected() {
    let mut dvm = compat(&[]);
    let o = dvm.app("palloc -N 1 --inherit none --json");
    o.expect_code(7);
    assert_eq!(
        o.error_status().as_deref(),
        Some("PMIX_ERR_NOT_SUPPORTED"),
        "{o}"
    );
    assert!(dvm.reservations().is_empty());
    // the default value is accepted (it is the behaviour anyway)
    dvm.app("palloc -N 1 --inherit default --json").alloc_id();
}

/// Without PMIX_ALLOC_WARN_TIMEOUT no warning is delivered, but the
/// allocation still expires and is reclaimed.
#[test]
fn s8_2_1_10_compat_no_warning_expiry_still_reclaims() {
    let dvm = compat(&["--time-scale", "60"]);
    let mut cmd = dvm.tool_cmd("palloc");
    cmd.args([
        "-N",
        "1",
        "-t",
        "1m",
        "--warn-timeout",
        "30s",
        "--hold",
        "--json",
    ]);
    let hold = Bg::start(cmd);
    let a = str_field(&hold.wait_for("allocation"), "alloc_id");
    eventually("expiry reclaims the allocation", || {
        dvm.reservation(&a).is_none()
    });
    eventually("the node leaves", || dvm.node("s001").is_none());
    let h = hold.stop(nix::sys::signal::Signal::SIGTERM);
    assert!(
        !h.stdout.contains("timeout-warning"),
        "a compat DVM delivered a warning:\n{h}"
    );
}

/// Without PMIX_SPAWN_TARGET spawns use the default (or parent) session.
#[test]
fn s8_2_1_10_compat_spawn_target_ignored() {
    let mut dvm = compat(&[]);
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let reserved = strings(&dvm.reservation(&a).unwrap()["nodes"]);
    let j = dvm.app(&format!(
        "pspawn --target {a} -n 2 sh -c 'echo host=$PMIX_HOSTNAME'"
    ));
    j.expect_code(0);
    assert_eq!(
        hosts(&j),
        vec!["n001".to_string(), "n001".to_string()],
        "{j}"
    );
    assert!(hosts(&j).iter().all(|h| !reserved.contains(h)));
}

/// A request with none of the attributes behaves as before: plain spawns
/// and allocations work, nothing is reserved by the DVM's own initiative.
#[test]
fn s8_2_1_10_compat_plain_requests_unchanged() {
    let mut dvm = compat(&[]);
    let j = dvm.app("pspawn -n 2 sh -c 'echo host=$PMIX_HOSTNAME'");
    j.expect_code(0);
    assert_eq!(hosts(&j).len(), 2, "{j}");
    assert!(dvm.reservations().is_empty());
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    assert_eq!(
        dvm.reservation(&a).unwrap()["owner_nspace"],
        dvm.leader().as_str()
    );
}
