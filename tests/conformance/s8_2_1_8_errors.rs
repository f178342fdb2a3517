//! §8.2.1.8 error semantics: every row, each with no observable partial
//! effect (the DVM's status is identical before and after, and no process of
//! a rejected spawn ever ran).

use std::path::Path;

use crate::support::blackbox::{comparable, Bg, Dvm, Out};

/// Run `reject` and check it failed with `code`/`status`, that the status
/// did not change and that `marker` was never created.
#[track_caller]
fn rejected(dvm: &Dvm, code: i32, status: &str, marker: &str, reject: impl FnOnce() -> Out) {
    let o = rejected_outcome(dvm, code, status, marker, reject);
    // Issue 3: a refusal's message carries the PMIx status name.
    assert!(
        o.of_type("error")[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains(status)),
        "message names the status: {o}"
    );
}

/// [`rejected`] without the message check; the failing [`Out`].
#[track_caller]
fn rejected_outcome(
    dvm: &Dvm,
    code: i32,
    status: &str,
    marker: &str,
    reject: impl FnOnce() -> Out,
) -> Out {
    let before = comparable(&dvm.status());
    let o = reject();
    o.expect_code(code);
    assert_eq!(o.error_status().as_deref(), Some(status), "{o}");
    let after = comparable(&dvm.status());
    assert_eq!(before, after, "partial effect of a rejected request");
    assert!(
        !Path::new(marker).exists(),
        "a process of a rejected spawn ran"
    );
    o
}

/// A job body that would leave a marker file if it ever ran.
fn marking(dvm: &Dvm) -> (String, String) {
    let marker = dvm.path("ran");
    let script = dvm.script("mark.sh", &format!("touch {marker}\n"));
    (format!("sh {script}"), marker)
}

/// Application request carrying PMIX_ALLOC_TARGET → PMIX_ERR_NO_PERMISSIONS.
#[test]
fn s8_2_1_8_app_target() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    dvm.app("palloc -N 1 --json").alloc_id();
    let leader = dvm.leader();
    let (_, marker) = marking(&dvm);
    let line = format!("palloc -N 1 --target {leader} --json");
    let o = {
        let before = comparable(&dvm.status());
        let o = dvm.app(&line);
        assert_eq!(before, comparable(&dvm.status()), "partial effect");
        o
    };
    rejected(&dvm, 6, "PMIX_ERR_NO_PERMISSIONS", &marker, || o);
}

/// EXTEND of a reservation the requester does not own → NO_PERMISSIONS.
#[test]
fn s8_2_1_8_extend_not_owner() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let a = dvm.app("palloc -N 1 --request-id mine --json").alloc_id();
    let (_, marker) = marking(&dvm);
    rejected(&dvm, 6, "PMIX_ERR_NO_PERMISSIONS", &marker, || {
        dvm.tool("palloc", &["--extend", &a, "-N", "1", "--json"])
    });
    rejected(&dvm, 6, "PMIX_ERR_NO_PERMISSIONS", &marker, || {
        dvm.tool("palloc", &["--extend-request", "mine", "-N", "1", "--json"])
    });
}

/// EXTEND naming an allocation that does not exist → PMIX_ERR_NOT_FOUND.
#[test]
fn s8_2_1_8_extend_not_found() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    dvm.app("palloc -N 1 --json").alloc_id();
    let (_, marker) = marking(&dvm);
    let before = comparable(&dvm.status());
    let o = dvm.app("palloc --extend no-such-alloc -N 1 --json");
    let o2 = dvm.app("palloc --extend-request no-such-request -N 1 --json");
    assert_eq!(before, comparable(&dvm.status()), "partial effect");
    rejected(&dvm, 5, "PMIX_ERR_NOT_FOUND", &marker, || o);
    rejected(&dvm, 5, "PMIX_ERR_NOT_FOUND", &marker, || o2);
}

/// EXTEND naming no target → PMIX_ERR_BAD_PARAM. palloc refuses it before
/// connecting (usage error, exit 2, naming the rule); nothing changes.
#[test]
fn s8_2_1_8_extend_no_id() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--scheduler-nodes", "2"]);
    dvm.app("palloc -N 1 --json").alloc_id();
    let before = comparable(&dvm.status());
    for o in [
        dvm.app("palloc --extend -N 1 --json"),
        dvm.tool("palloc", &["--extend", "-N", "1", "--json"]),
    ] {
        o.expect_code(2);
        assert!(o.stderr.contains("PMIX_ERR_BAD_PARAM"), "{o}");
    }
    assert_eq!(before, comparable(&dvm.status()), "partial effect");
    // palloc refuses before connecting: the DVM itself must refuse the
    // same request sent as is, from the owner's job and from a tool, and
    // grant nothing (not a NEW in disguise).
    let probe = crate::support::example("client_probe");
    let probe = probe.to_string_lossy();
    for o in [
        dvm.app(&format!("{probe} --extend-no-id")),
        dvm.tool(&probe, &["--extend-no-id"]),
    ] {
        o.expect_code(0);
        let line: serde_json::Value = serde_json::from_str(o.stdout.trim()).expect(&o.stdout);
        assert_eq!(line["alloc"]["ok"], false, "{o}");
        assert_eq!(line["alloc"]["status"], "PMIX_ERR_BAD_PARAM", "{o}");
    }
    assert_eq!(before, comparable(&dvm.status()), "partial effect");
}

/// PMIX_SPAWN_TARGET naming an allocation that resolves to no session →
/// PMIX_ERR_NOT_FOUND, nothing launched — also when other entries are valid.
#[test]
fn s8_2_1_8_spawn_target_not_found() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let a = dvm.app("palloc -N 1 --json").alloc_id();
    let (job, marker) = marking(&dvm);
    let before = comparable(&dvm.status());
    let o1 = dvm.app(&format!("pspawn --json --target no-such-alloc -n 1 {job}"));
    let o2 = dvm.app(&format!(
        "pspawn --json --target {a},no-such-alloc -n 1 {job}"
    ));
    assert_eq!(before, comparable(&dvm.status()), "partial effect");
    rejected(&dvm, 5, "PMIX_ERR_NOT_FOUND", &marker, || o1);
    rejected(&dvm, 5, "PMIX_ERR_NOT_FOUND", &marker, || o2);
    let o3 = dvm.tool(
        "pspawn",
        &[
            "--json",
            "--target",
            "no-such-alloc",
            "-n",
            "1",
            "sh",
            "-c",
            &format!("touch {marker}"),
        ],
    );
    rejected(&dvm, 5, "PMIX_ERR_NOT_FOUND", &marker, || o3);
}

/// PMIX_SPAWN_TARGET naming a session the requester does not own →
/// PMIX_ERR_NO_PERMISSIONS; a spawn with one unowned entry among owned
/// ones is rejected whole, never narrowed.
#[test]
fn s8_2_1_8_spawn_target_not_owned() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "3"]);
    let mine = dvm.app("palloc -N 1 --json").alloc_id();
    let mut cmd = dvm.tool_cmd("palloc");
    cmd.args(["-N", "1", "--hold", "--json"]);
    let hold = Bg::start(cmd);
    let theirs = crate::support::blackbox::str_field(&hold.wait_for("allocation"), "alloc_id");
    let (job, marker) = marking(&dvm);
    let before = comparable(&dvm.status());
    let o1 = dvm.app(&format!("pspawn --json --target {theirs} -n 1 {job}"));
    let o2 = dvm.app(&format!(
        "pspawn --json --target {mine},{theirs} -n 1 {job}"
    ));
    let o3 = dvm.app(&format!(
        "pspawn --json --target {theirs} --default-pool -n 1 {job}"
    ));
    assert_eq!(before, comparable(&dvm.status()), "partial effect");
    rejected(&dvm, 6, "PMIX_ERR_NO_PERMISSIONS", &marker, || o1);
    rejected(&dvm, 6, "PMIX_ERR_NO_PERMISSIONS", &marker, || o2);
    rejected(&dvm, 6, "PMIX_ERR_NO_PERMISSIONS", &marker, || o3);
    // and from outside: a fresh tool owns nothing
    let o4 = dvm.tool(
        "pspawn",
        &[
            "--json",
            "--target",
            &mine,
            "-n",
            "1",
            "sh",
            "-c",
            &format!("touch {marker}"),
        ],
    );
    rejected(&dvm, 6, "PMIX_ERR_NO_PERMISSIONS", &marker, || o4);
    hold.stop(nix::sys::signal::Signal::SIGTERM);
}

/// A non-default PMIX_ALLOC_INHERITANCE the host does not support (pdvm
/// --pmix-compat) → PMIX_ERR_NOT_SUPPORTED, nothing reserved.
#[test]
fn s8_2_1_8_inheritance_not_supported() {
    let mut dvm = Dvm::with_leader(&["--pmix-compat", "--nodes", "1", "--scheduler-nodes", "2"]);
    let (_, marker) = marking(&dvm);
    for rule in ["none", "child", "child-default"] {
        let before = comparable(&dvm.status());
        let o = dvm.app(&format!("palloc -N 1 --inherit {rule} --json"));
        assert_eq!(before, comparable(&dvm.status()), "partial effect");
        rejected_outcome(&dvm, 7, "PMIX_ERR_NOT_SUPPORTED", &marker, || o);
        let o = dvm.tool("palloc", &["-N", "1", "--inherit", rule, "--json"]);
        rejected_outcome(&dvm, 7, "PMIX_ERR_NOT_SUPPORTED", &marker, || o);
    }
    assert!(dvm.reservations().is_empty());
}
