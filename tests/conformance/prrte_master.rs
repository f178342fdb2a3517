//! The same clauses against the real PRRTE master DVM (PRRTE 5.0.0a1 +
//! OpenPMIx 7.0.0a1, the one DVM that implements spec 001), on the 4-node
//! cluster (`tests/support/nodes.rs`: `node01` … `node04`, 2 slots each, a
//! real `prted` per node) and no scheduler attached. Every test runs on a
//! fresh cluster through [`on_cluster`] (once more when PRRTE master itself
//! died, D9), but the teardown test, which ends its cluster itself.
//!
//! Consequences of that set-up, which every test here relies on:
//!
//! * `palloc -N 1` is granted with no node (nothing to take one from); a
//!   reservation that holds a node is made with `palloc -w node02`
//!   ([`HOST`]), which carves the node out of the default session.
//! * Isolation and the default session are checked by where processes
//!   really ran (`$PMIX_HOSTNAME` of `pspawn --map-by node` processes).
//! * A **tool** requester is one of our tools run from outside (a fresh
//!   tool namespace each); an **application** requester is a tool run inside
//!   a job PRRTE launched (`pspawn -H node01 -n 1 sh -c SCRIPT`): it
//!   connects as a client of that job; scripts name our tools by absolute
//!   path ([`bin`]).
//! * To spawn *as the owner* of a tool's reservation, the spawn runs under
//!   `palloc -w node02 -- CMD` (palloc relays CMD's tools through itself).
//!
//! Where PRRTE master does not do what the spec says, the test asserts what
//! it does and its messages and comments name the deviation; the list, with
//! the evidence, is in docs/conformance.md ("PRRTE master deviations").

use std::fs;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::support::blackbox::{
    alive, comparable, eventually, hosts, printed_alloc, str_field, strings, Bg, Out,
};
use crate::support::nodes::{
    assert_foreign, assert_node02_daemon_killed, bin, each_times, failed_to_map, json_hosts,
    on_cluster, refused, sorted, Nodes, ALL, OTHERS,
};
use crate::support::wait;

/// The node the tests reserve (jobs run from outside a reservation are
/// pinned to `node01`).
const HOST: &str = "node02";

/// Shell: print `ns=$PMIX_NAMESPACE`.
const ECHO_NS: &str = "echo ns=$PMIX_NAMESPACE\n";

/// The `ns=` line a job printed.
#[track_caller]
fn printed_ns(o: &Out) -> String {
    o.stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("ns="))
        .unwrap_or_else(|| panic!("no ns= line:\n{o}"))
        .to_string()
}

/// The allocation objects of a run, in order.
fn allocations(o: &Out) -> Vec<Value> {
    o.of_type("allocation")
}

// ---------------------------------------------------------------- §8.2.1.5

/// §8.2.1.5 row 2 (tool, no TARGET, no SHARE → reservation owned by the
/// tool's namespace): while the tool lives the host is reserved (listed,
/// out of the default pool); the tool's exit ends it (its namespace owned
/// it). §8.2.1.5.2: the id is PRRTE's `prte-<host>-<pid>@N.M`.
#[test]
fn prrte_s8_2_1_5_tool_absent_absent() {
    on_cluster(|dvm| {
        let (hold, id) = dvm.hold(HOST, &[]);
        let a = hold.wait_for("allocation");
        let owner = str_field(&a, "owner_nspace");
        assert_eq!(a["reserved"], true, "{a}");
        assert_eq!(strings(&a["nodes"]), vec![HOST.to_string()], "{a}");
        assert!(
            id.starts_with(&format!("{owner}.")),
            "id {id} is minted under the tool's namespace {owner}"
        );
        let r = dvm.reservation(&id).expect("held reservation listed");
        assert_eq!(strings(&r["nodes"]), vec![HOST.to_string()], "{r}");
        assert_eq!(dvm.node(HOST)["alloc_id"], id.as_str());
        // Out of the default pool: a default-session job runs on the others.
        assert_eq!(dvm.default_pool_hosts(&OTHERS, 2), each_times(&OTHERS, 2));
        // Ended by SIGTERM: 128 + 15 (README, exit codes).
        hold.stop(Signal::SIGTERM).expect_code(143);
        dvm.await_no_reservation("the tool's exit ends its reservation");
    });
}

/// §8.2.1.5 row 1 (tool + TARGET <nspace> → owned by <nspace>): the
/// reservation of node02 outlives the requesting tool, keeps default jobs
/// off node02, and ends when the target job (on node03) ends (DEFAULT fires
/// on the target's termination, not the tool's): node02 serves the default
/// session again.
#[test]
fn prrte_s8_2_1_5_tool_with_target() {
    on_cluster(|dvm| {
        let g = dvm.gate("target");
        let j = dvm.tool(
            "pspawn",
            &[
                "--detach", "-H", "node03", "-n", "1", "--json", "sh", "-c", &g.cmd,
            ],
        );
        let target = j.job_nspace();
        assert_eq!(g.host(), "node03");
        let o = dvm.tool("palloc", &["-w", HOST, "--target", &target, "--json"]);
        let id = o.alloc_id();
        let a = o.first("allocation");
        assert_eq!(a["owner_nspace"], target.as_str(), "{o}");
        assert!(
            id.starts_with(&format!("{target}.")),
            "{id} minted for {target}"
        );
        // The tool has exited: the reservation is the target's, so it stays.
        let r = dvm.reservation(&id).expect("outlives the requesting tool");
        assert_eq!(strings(&r["nodes"]), vec![HOST.to_string()], "{r}");
        assert_eq!(dvm.node_owner(HOST).as_deref(), Some(id.as_str()));
        failed_to_map(&dvm.hosts_of(&["-H", HOST, "-n", "1", "--json"]));
        g.open();
        dvm.await_no_reservation("the target job's end ends its reservation");
        let on02 = dvm.hosts_of(&["-H", HOST, "-n", "1"]);
        dvm.expect_ok(&on02);
        assert_eq!(hosts(&on02), [HOST], "{on02}");
    });
}

/// §8.2.1.5 row 3 (tool + SHARE → default session): nothing is reserved,
/// a default-session job of another tool runs on the node.
#[test]
fn prrte_s8_2_1_5_tool_share() {
    on_cluster(|dvm| {
        let mut cmd = dvm.tool_cmd("palloc");
        cmd.args(["-w", HOST, "--share", "--hold", "--json"]);
        let hold = Bg::start(cmd);
        let a = hold.wait_for("allocation");
        assert_eq!(a["reserved"], false, "{a}");
        assert_eq!(strings(&a["nodes"]), vec![HOST.to_string()], "{a}");
        assert!(
            dvm.reservations().is_empty(),
            "a shared grant reserves nothing"
        );
        assert_eq!(dvm.node_owner(HOST), None);
        // The node stays in the default pool: a job over all nodes uses it.
        assert_eq!(dvm.default_pool_hosts(&ALL, 2), each_times(&ALL, 2));
        hold.stop(Signal::SIGTERM);
    });
}

/// §8.2.1.5 row 4 (application, no TARGET → owned by its namespace): the
/// reservation is the job's while the job lives and ends with it.
#[test]
fn prrte_s8_2_1_5_application_absent() {
    on_cluster(|dvm| {
        let o = dvm.job(&format!(
            "{ECHO_NS}{} -w {} --json\n{} --status --json\n",
            bin("palloc"),
            HOST,
            bin("pwatch")
        ));
        o.expect_code(0);
        let ns = printed_ns(&o);
        let a = allocations(&o).into_iter().next().expect("granted");
        let id = str_field(&a, "alloc_id");
        assert_eq!(a["owner_nspace"], ns.as_str(), "{o}");
        assert!(id.starts_with(&format!("{ns}.")), "{id} minted for {ns}");
        let listed = o.of_type("reservation");
        assert!(
        listed
            .iter()
            .any(|r| r["alloc_id"] == id.as_str() && strings(&r["nodes"]) == [HOST.to_string()]),
        "reservation listed while its job lives: {o}"
    );
        dvm.await_no_reservation("the job's end ends its reservation (DEFAULT)");
    });
}

/// §8.2.1.5 row 5 (application + SHARE → default session).
#[test]
fn prrte_s8_2_1_5_application_share() {
    on_cluster(|dvm| {
        let o = dvm.job(&format!(
            "{} -w {} --share --json\n{} --status --json\n",
            bin("palloc"),
            HOST,
            bin("pwatch")
        ));
        o.expect_code(0);
        let a = allocations(&o).into_iter().next().expect("granted");
        assert_eq!(a["reserved"], false, "{o}");
        assert!(o.of_type("reservation").is_empty(), "nothing reserved: {o}");
        assert_eq!(dvm.default_pool_hosts(&ALL, 2), each_times(&ALL, 2));
    });
}

/// §8.2.1.5 row 6 / §8.2.1.8 row 1 (application + TARGET →
/// PMIX_ERR_NO_PERMISSIONS), with no partial effect.
#[test]
fn prrte_s8_2_1_5_application_with_target() {
    on_cluster(|dvm| {
        let o = dvm.job(&format!(
            "{p} -w {h} --target $PMIX_NAMESPACE --json; echo rc1=$?\n\
         {p} -N 1 --target $PMIX_NAMESPACE --json; echo rc2=$?\n\
         {w} --status --json\n",
            p = bin("palloc"),
            h = HOST,
            w = bin("pwatch")
        ));
        assert!(
            o.stdout.contains("rc1=6") && o.stdout.contains("rc2=6"),
            "{o}"
        );
        let errs = o.of_type("error");
        assert_eq!(errs.len(), 2, "{o}");
        for e in &errs {
            assert_eq!(e["status"], "PMIX_ERR_NO_PERMISSIONS", "{o}");
        }
        assert!(o.of_type("reservation").is_empty(), "partial effect: {o}");
        // Every node listed, none reserved.
        let mut unreserved: Vec<String> = o
            .of_type("node")
            .iter()
            .filter(|n| n["alloc_id"].is_null())
            .map(|n| str_field(n, "name"))
            .collect();
        unreserved.sort();
        assert_eq!(unreserved, sorted(&ALL), "{o}");
        // And node02 still serves the default session.
        assert_eq!(dvm.default_pool_hosts(&ALL, 2), each_times(&ALL, 2));
    });
}

/// §8.2.1.5.1: NEW twice from one namespace mints two reservations.
#[test]
fn prrte_s8_2_1_5_1_new_twice_two_reservations() {
    on_cluster(|dvm| {
        let p = bin("palloc");
        let o = dvm.job(&format!(
            "{ECHO_NS}{p} -N 1 --json\n{p} -N 1 --json\n{} --status --json\n",
            bin("pwatch")
        ));
        o.expect_code(0);
        let ns = printed_ns(&o);
        let ids: Vec<String> = allocations(&o)
            .iter()
            .map(|a| str_field(a, "alloc_id"))
            .collect();
        assert_eq!(ids.len(), 2, "{o}");
        assert_ne!(ids[0], ids[1], "{o}");
        for a in allocations(&o) {
            assert_eq!(a["owner_nspace"], ns.as_str(), "{o}");
        }
        let mut listed: Vec<String> = o
            .of_type("reservation")
            .iter()
            .map(|r| str_field(r, "alloc_id"))
            .collect();
        listed.sort();
        let mut want = ids.clone();
        want.sort();
        assert_eq!(listed, want, "both listed: {o}");
    });
}

/// §8.2.1.5.1: EXTEND by PMIX_ALLOC_ID and by PMIX_ALLOC_REQ_ID, from the
/// owner, names that reservation (granted, same id, still one
/// reservation). With no scheduler no node can be added.
#[test]
fn prrte_s8_2_1_5_1_extend_by_alloc_id_and_request_id() {
    on_cluster(|dvm| {
        let p = bin("palloc");
        let o = dvm.job(&format!(
        "A=$({p} -N 1 --request-id grow-me --json | sed -n 's/.*\"alloc_id\":\"\\([^\"]*\\)\".*/\\1/p' | head -n 1)\n\
         echo alloc=$A\n\
         {p} --extend \"$A\" -N 1 --json; echo rc1=$?\n\
         {p} --extend-request grow-me -N 1 --json; echo rc2=$?\n\
         {} --status --json\n",
        bin("pwatch")
    ));
        assert!(
            o.stdout.contains("rc1=0") && o.stdout.contains("rc2=0"),
            "{o}"
        );
        let id = printed_alloc(&o);
        let ext: Vec<Value> = allocations(&o)
            .into_iter()
            .filter(|a| a["directive"] == "extend")
            .collect();
        assert_eq!(ext.len(), 2, "{o}");
        for a in &ext {
            assert_eq!(a["alloc_id"], id.as_str(), "{o}");
            assert_eq!(a["state"], "granted", "{o}");
        }
        let listed = o.of_type("reservation");
        assert_eq!(listed.len(), 1, "{o}");
        assert_eq!(listed[0]["alloc_id"], id.as_str(), "{o}");
    });
}

/// §8.2.1.5.2: the reply carries PMIX_ALLOC_ID (PRRTE's
/// `prte-<host>-<pid>@N.M`) and echoes PMIX_ALLOC_REQ_ID.
#[test]
fn prrte_s8_2_1_5_2_reply_carries_alloc_id_and_request_id() {
    on_cluster(|dvm| {
        let (hold, id) = dvm.hold(HOST, &["--request-id", "my-req-42"]);
        let a = hold.wait_for("allocation");
        assert_eq!(a["request_id"], "my-req-42", "{a}");
        let prefix = format!("prte-node01-{}@", dvm.c.pid);
        let tail = id.strip_prefix(&prefix).unwrap_or_else(|| panic!("{id}"));
        let (job, n) = tail.split_once('.').unwrap_or_else(|| panic!("{id}"));
        assert!(
            job.parse::<u32>().is_ok() && n.parse::<u32>().is_ok(),
            "{id}"
        );
        assert!(dvm.reservation(&id).is_some(), "the id names a reservation");
        hold.stop(Signal::SIGTERM);
    });
}

// ---------------------------------------------------------------- §8.2.1.6

/// §8.2.1.6 absent → default session; §8.2.1.11 (2): nothing is reserved
/// without a request (not by a spawn either).
#[test]
fn prrte_s8_2_1_6_absent_default_session_only() {
    on_cluster(|dvm| {
        assert!(dvm.reservations().is_empty());
        assert!(dvm.node(HOST)["alloc_id"].is_null());
        assert_eq!(dvm.default_pool_hosts(&ALL, 2), each_times(&ALL, 2));
        assert!(dvm.reservations().is_empty(), "a spawn reserved something");
    });
}

/// §8.2.1.6 one id: the owner's job targeting its reservation runs on the
/// reservation's node (the spawn runs under `palloc -- CMD`, as the owner;
/// pspawn there targets `$PMIX_ALLOC_ID`, `--target` made explicit).
#[test]
fn prrte_s8_2_1_6_one_id() {
    on_cluster(|dvm| {
        let o = dvm.under_palloc(
            HOST,
            &["--json"],
            &format!(
                "{} --target \"$PMIX_ALLOC_ID\" -n 1 --json sh -c 'echo host=$PMIX_HOSTNAME'\n",
                bin("pspawn")
            ),
        );
        o.expect_code(0);
        let id = o.alloc_id();
        let job = o.first("job");
        assert_eq!(strings(&job["targets"]), vec![id.clone()], "{o}");
        assert_eq!(o.output_lines(), vec![format!("host={}", HOST)], "{o}");
    });
}

/// §8.2.1.6 isolation: once node02 is reserved a default-session job
/// cannot use it: spread over every node it lands on the other three, and
/// one asking for node02 by name fails to map, and nothing runs there.
#[test]
fn prrte_s8_2_1_6_isolation() {
    on_cluster(|dvm| {
        // DEFAULT: the node is unreserved (not released, D6) at the tool's exit.
        let (hold, _id) = dvm.hold(HOST, &["--inherit", "default"]);
        assert_eq!(dvm.default_pool_hosts(&OTHERS, 2), each_times(&OTHERS, 2));
        let (cmd, marker) = dvm.marking();
        let o = dvm.tool(
            "pspawn",
            &["-H", HOST, "-n", "1", "--json", "sh", "-c", &cmd],
        );
        assert_ne!(
            o.code, 0,
            "a default-session job ran on the reserved node:\n{o}"
        );
        assert!(!Path::new(&marker).exists(), "a process ran");
        hold.stop(Signal::SIGTERM);
        // Node back (DEFAULT): the same job now runs there.
        dvm.await_no_reservation("reservation ends with its tool");
        dvm.tool("pspawn", &["-H", HOST, "-n", "1", "sh", "-c", &cmd])
            .expect_code(0);
        assert!(Path::new(&marker).exists());
    });
}

/// §8.2.1.6 ids + the invalid namespace: the job runs on the union of the
/// reservation (node02) and the default session (the other three).
#[test]
fn prrte_s8_2_1_6_ids_plus_default_pool() {
    on_cluster(|dvm| {
        let o = dvm.under_palloc(
 HOST,
        &["--json"],
        &format!(
            "{} --target \"$PMIX_ALLOC_ID\" --default-pool -n 8 --map-by node --json sh -c 'echo host=$PMIX_HOSTNAME'\n",
            bin("pspawn")
        ),
    );
        o.expect_code(0);
        let id = o.alloc_id();
        let job = o.first("job");
        assert_eq!(strings(&job["targets"]), vec![String::new(), id], "{o}");
        assert_eq!(json_hosts(&o), each_times(&ALL, 2), "{o}");
    });
}

// ---------------------------------------------------------------- §8.2.1.7

/// §8.2.1.7 / §8.2.1.8 row 6: a spawn targeting a reservation the requester
/// does not own must be refused with PMIX_ERR_NO_PERMISSIONS and launch
/// nothing. PRRTE master DEVIATES (D1): it launches the foreign tool's job
/// on the reserved node02. This test pins what it does.
#[test]
fn prrte_s8_2_1_7_spawn_into_unowned_reservation_deviation() {
    on_cluster(|dvm| {
        let (hold, id) = dvm.hold(HOST, &[]);
        let marker = dvm.path("foreign");
        let cmd = format!("echo $PMIX_HOSTNAME >{marker}");
        // --as-tool: not relayed by the owner's holder; a tool of its own.
        let o = dvm.tool(
            "pspawn",
            &[
                "-v",
                "--as-tool",
                "--target",
                &id,
                "-n",
                "1",
                "--json",
                "sh",
                "-c",
                &cmd,
            ],
        );
        assert_foreign(&o);
        assert_eq!(
            o.code, 0,
            "PRRTE master deviation (§8.2.1.7): a foreign tool's spawn into a reservation it does \
         not own is expected to run on PRRTE master (the spec requires PMIX_ERR_NO_PERMISSIONS, \
         exit 6); if this fails PRRTE may now conform — update docs/conformance.md:\n{o}"
        );
        assert_eq!(
            fs::read_to_string(&marker).unwrap_or_default().trim(),
            HOST,
            "PRRTE master deviation (§8.2.1.7): the unowned spawn's process ran on node02"
        );
        hold.stop(Signal::SIGTERM);
    });
}

// ---------------------------------------------------------------- §8.2.1.8

/// §8.2.1.8: EXTEND naming an allocation that does not exist (by id, by
/// request id) → PMIX_ERR_NOT_FOUND, nothing changes.
#[test]
fn prrte_s8_2_1_8_extend_not_found() {
    on_cluster(|dvm| {
        let (hold, id) = dvm.hold(HOST, &[]);
        let before = comparable(&dvm.status());
        for args in [
            ["--extend", "no-such-alloc", "-N", "1", "--json"],
            ["--extend-request", "no-such-request", "-N", "1", "--json"],
        ] {
            refused(&dvm.tool("palloc", &args), 5, "PMIX_ERR_NOT_FOUND");
        }
        let after = comparable(&dvm.status());
        assert_eq!(
            strip_namespaces(&before),
            strip_namespaces(&after),
            "partial effect"
        );
        assert!(dvm.reservation(&id).is_some());
        hold.stop(Signal::SIGTERM);
    });
}

/// §8.2.1.8: EXTEND of a reservation the requester does not own must be
/// PMIX_ERR_NO_PERMISSIONS. PRRTE master DEVIATES: a foreign tool's EXTEND
/// (by id and by request id) is granted. This test pins what it does.
#[test]
fn prrte_s8_2_1_8_extend_not_owner_deviation() {
    on_cluster(|dvm| {
        let (hold, id) = dvm.hold(HOST, &["--request-id", "mine"]);
        for args in [
            [
                "-v",
                "--as-tool",
                "--extend",
                id.as_str(),
                "-N",
                "1",
                "--json",
            ],
            [
                "-v",
                "--as-tool",
                "--extend-request",
                "mine",
                "-N",
                "1",
                "--json",
            ],
        ] {
            let o = dvm.tool("palloc", &args);
            assert_foreign(&o);
            assert_eq!(
            o.code, 0,
            "PRRTE master deviation (§8.2.1.8): a non-owner's EXTEND is expected to be granted \
             on PRRTE master (the spec requires PMIX_ERR_NO_PERMISSIONS, exit 6):\n{o}"
        );
            assert_eq!(o.first("allocation")["alloc_id"], id.as_str(), "{o}");
        }
        hold.stop(Signal::SIGTERM);
    });
}

/// §8.2.1.8: PMIX_SPAWN_TARGET naming no session → PMIX_ERR_NOT_FOUND,
/// nothing launched — alone or next to a valid id (rejected whole).
#[test]
fn prrte_s8_2_1_8_spawn_target_not_found() {
    on_cluster(|dvm| {
        let (hold, id) = dvm.hold(HOST, &[]);
        let (cmd, marker) = dvm.marking();
        for target in ["no-such-alloc".to_string(), format!("{id},no-such-alloc")] {
            let o = dvm.tool(
                "pspawn",
                &["--target", &target, "-n", "1", "--json", "sh", "-c", &cmd],
            );
            refused(&o, 5, "PMIX_ERR_NOT_FOUND");
        }
        assert!(!Path::new(&marker).exists(), "a process ran");
        assert!(dvm.reservation(&id).is_some());
        hold.stop(Signal::SIGTERM);
    });
}

/// Status lines other than namespaces (each tool run adds and removes a
/// namespace of its own).
fn strip_namespaces(v: &[String]) -> Vec<String> {
    v.iter()
        .filter(|l| !l.contains("\"type\":\"namespace\""))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------- §8.2.1.9

/// §8.2.1.9.1 (1): the owner releases its reservation (prelease inside the
/// owning job): it ends and the node is back in the default session.
#[test]
fn prrte_s8_2_1_9_1_owner_release() {
    on_cluster(|dvm| {
        let g = dvm.gate("owner");
        let o = dvm.job(&format!(
        "A=$({p} -w {h} --json | sed -n 's/.*\"alloc_id\":\"\\([^\"]*\\)\".*/\\1/p' | head -n 1)\n\
         echo alloc=$A\n\
         {w} --status --json\n\
         {r} \"$A\" --json; echo rc=$?\n\
         {w} --status --json\n",
        p = bin("palloc"),
        h = HOST,
        w = bin("pwatch"),
        r = bin("prelease")
    ));
        let id = printed_alloc(&o);
        assert!(o.stdout.contains("rc=0"), "{o}");
        let rel = o.first("release");
        assert_eq!(rel["alloc_id"], id.as_str(), "{o}");
        let res = o.of_type("reservation");
        assert_eq!(res.len(), 1, "listed once, before the release only: {o}");
        assert!(dvm.reservations().is_empty());
        assert!(
            dvm.node(HOST)["alloc_id"].is_null(),
            "node02 is reserved no more"
        );
        // The default session goes on (node02 itself, a startup node, lost its
        // daemon with the release: D6, pinned by
        // prrte_nodes_s8_2_1_9_1_owner_release_startup_node_deviation).
        let j = dvm.tool("pspawn", &["--detach", "-n", "1", "sh", "-c", &g.cmd]);
        j.expect_code(0);
        assert!(OTHERS.contains(&g.host().as_str()), "{}", g.host());
        g.open();
    });
}

/// §8.2.1.9.1 (1) only owners release: PRRTE master DEVIATES (D3) — a
/// foreign tool's `prelease ID` of another tool's reservation of node02
/// succeeds and ends it while its owner still holds it; then D6 takes
/// node02's daemon.
#[test]
fn prrte_s8_2_1_9_1_release_by_non_owner_deviation() {
    on_cluster(|dvm| {
        let (hold, id) = dvm.hold(HOST, &[]);
        let o = dvm.tool("prelease", &["-v", "--as-tool", &id, "--json"]);
        assert_foreign(&o);
        assert_eq!(
            o.code, 0,
            "PRRTE master deviation (§8.2.1.7, §8.2.1.9.1): a non-owner's release is expected to \
         succeed on PRRTE master:\n{o}"
        );
        dvm.await_no_reservation("the foreign release ended the reservation (deviation)");
        assert_node02_daemon_killed(dvm, "a foreign tool's release");
        hold.stop(Signal::SIGTERM);
    });
}

/// §8.2.1.9.1 (2): DVM teardown ends everything, the owner's job running
/// in its reservation on node02 too, and leaves no process behind. (Not
/// through [`on_cluster`]: the test ends its cluster itself.)
#[test]
fn prrte_s8_2_1_9_1_dvm_teardown() {
    let dvm = Nodes::start();
    let g = dvm.gate("teardown");
    let o = dvm.under_palloc(
        HOST,
        &["--inherit", "child", "--json"],
        &format!("{} --detach -n 1 {}\n", bin("pspawn"), g.cmd),
    );
    o.expect_code(0);
    let pid = g.pid();
    assert_eq!(g.host(), HOST, "the owner's job runs in its reservation");
    assert!(dvm.reservation(&o.alloc_id()).is_some());
    let stopped = dvm.c.stop();
    assert!(
        stopped.swept.is_empty(),
        "teardown left processes: {stopped:?}"
    );
    // Ended (a zombie not yet reaped by init counts as alive: poll).
    eventually("the DVM's teardown ends the reserved job", || !alive(pid));
}

/// §8.2.1.9.2 DEFAULT: at the owning tool's exit the node becomes
/// unreserved in the default session, and a job still running on it is not
/// killed (§8.2.1.9.4, nodes stay). The rule is named: palloc sends CHILD
/// when none is.
#[test]
fn prrte_s8_2_1_9_2_default_owner_death_live_child() {
    on_cluster(|dvm| {
        let g = dvm.gate("default");
        let o = dvm.under_palloc(
            HOST,
            &["--inherit", "default", "--json"],
            &format!("{} --detach -n 1 {}\n", bin("pspawn"), g.cmd),
        );
        o.expect_code(0);
        assert_eq!(o.first("allocation")["inherit"], "default", "{o}");
        let pid = g.pid();
        dvm.await_no_reservation("DEFAULT unreserves at the owner's exit");
        assert!(dvm.node(HOST)["alloc_id"].is_null());
        assert!(
            alive(pid),
            "§8.2.1.9.4: an unreserved node's job is not killed"
        );
        g.open();
    });
}

/// §8.2.1.9.2 NONE: released at the owning tool's exit even with a live
/// derived child; the node was carved from the startup pool, so it reverts
/// to the default session and the child is not killed.
#[test]
fn prrte_s8_2_1_9_2_none_owner_death_live_child() {
    on_cluster(|dvm| {
        let g = dvm.gate("none");
        let o = dvm.under_palloc(
            HOST,
            &["--inherit", "none", "--json"],
            &format!("{} --detach -n 1 {}\n", bin("pspawn"), g.cmd),
        );
        o.expect_code(0);
        assert_eq!(o.first("allocation")["inherit"], "none", "{o}");
        let pid = g.pid();
        dvm.await_no_reservation("NONE releases at the owner's exit");
        assert!(alive(pid), "a startup node stays in the DVM: nobody killed");
        g.open();
    });
}

/// §8.2.1.9.2 CHILD: held after the owning tool's exit until its last
/// derived child ends, then released.
#[test]
fn prrte_s8_2_1_9_2_child_drain_live_child() {
    child_flavoured("child");
}

/// §8.2.1.9.2 CHILD_DEFAULT: held until the last derived child ends, then
/// unreserved in the session.
#[test]
fn prrte_s8_2_1_9_2_child_default_drain_live_child() {
    child_flavoured("child-default");
}

fn child_flavoured(rule: &str) {
    on_cluster(|dvm| {
        let g = dvm.gate(rule);
        let o = dvm.under_palloc(
            HOST,
            &["--inherit", rule, "--json"],
            &format!("{} --detach -n 1 {}\n", bin("pspawn"), g.cmd),
        );
        o.expect_code(0);
        let id = o.alloc_id();
        assert_eq!(o.first("allocation")["inherit"], rule, "{o}");
        g.pid();
        // palloc (the owner) has exited; the child keeps the reservation.
        assert!(
            wait::holds_for(Duration::from_millis(300), || dvm
                .reservation(&id)
                .is_some()),
            "{rule}: reservation ended before its last child"
        );
        let r = dvm
            .reservation(&id)
            .unwrap_or_else(|| panic!("{rule}: reservation ended before its last child"));
        assert_eq!(strings(&r["nodes"]), vec![HOST.to_string()], "{r}");
        g.open();
        dvm.await_no_reservation(&format!("{rule}: the last child's end ends it"));
        assert!(dvm.node(HOST)["alloc_id"].is_null());
        dvm.hosts_of(&["-n", "1"]).expect_code(0);
    });
}

/// Carving node02 into a reservation and getting it back (here DEFAULT at
/// the tool's exit) leaves the default session as it was (§8.2.1.9.2
/// DEFAULT: the nodes "join the default session for general use";
/// §8.2.1.6: a job that targets no reservation behaves as before): the
/// reservation offers node02's two slots, and afterwards node02 has its two
/// slots and runs a two-process default-session job. (On a one-node DVM,
/// whose only node is the head node, PRRTE master kept one slot of two: D4.)
#[test]
fn prrte_s8_2_1_9_2_default_node_back_as_it_was() {
    on_cluster(|dvm| {
        assert_eq!(
            dvm.node(HOST)["slots"].as_u64(),
            Some(2),
            "{}",
            dvm.node(HOST)
        );
        let (hold, id) = dvm.hold(HOST, &["--inherit", "default"]);
        let two = dvm.tool(
            "pspawn",
            &[
                "--target",
                &id,
                "-n",
                "2",
                "--json",
                "sh",
                "-c",
                "echo host=$PMIX_HOSTNAME",
            ],
        );
        two.expect_code(0);
        assert_eq!(json_hosts(&two), vec![HOST.to_string(); 2], "{two}");
        hold.stop(Signal::SIGTERM);
        dvm.await_no_reservation("DEFAULT at the tool's exit");
        let node = dvm.node(HOST);
        assert_eq!(node["slots"].as_u64(), Some(2), "{node}");
        assert!(node["alloc_id"].is_null(), "{node}");
        let after = dvm.tool(
            "pspawn",
            &[
                "-H",
                &format!("{}:2", HOST),
                "-n",
                "2",
                "--json",
                "sh",
                "-c",
                "echo host=$PMIX_HOSTNAME",
            ],
        );
        after.expect_code(0);
        assert_eq!(json_hosts(&after), vec![HOST.to_string(); 2], "{after}");
    });
}
