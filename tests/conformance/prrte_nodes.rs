//! The clauses of spec 001 that need more than one node, against a real
//! 4-node PRRTE master DVM on this machine (`support::nodes` on
//! `support::cluster`: `node01` … `node04`, 2 slots each, every `prted` in
//! its own UTS namespace, all in a private network namespace; `node01` runs
//! `prte`). Each test starts its own cluster (through `on_cluster`, which
//! runs it once more when PRRTE master itself died, D9): several of PRRTE
//! master's deviations kill node daemons, so no cluster can be shared
//! safely.
//!
//! * Where processes ran is read from their host names (`$PMIX_HOSTNAME`,
//!   the node's UTS name), so isolation is proved, not inferred.
//! * A **tool** owner is `palloc -w NODES --hold`; our tools run from
//!   outside with `--target ID` are relayed by that holder (they act for the
//!   owner); `--as-tool` makes a tool really foreign.
//! * An **application** owner is a job (`pspawn -H node01 -n 1 sh -c
//!   SCRIPT`) whose script runs our tools by absolute path.
//!
//! Where PRRTE master differs from the spec, the test asserts what it does
//! and fails if PRRTE starts to conform (docs/conformance.md, D6–D8, D11).

use std::fs;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::support::blackbox::{alive, eventually, hosts, GateJob, Out};
use crate::support::nodes::{
    assert_node02_daemon_killed, bin, failed_to_map, on_cluster, sorted, Nodes,
};
use crate::support::wait;

/// Shell: `palloc FLAGS --json` into `$VAR` (also printed and written to
/// the file `VAR.id`), exit 3 when refused.
fn palloc_into(n: &Nodes, var: &str, flags: &str) -> String {
    format!(
        "{var}=$({p} {flags} --json | sed -n 's/.*\"alloc_id\":\"\\([^\"]*\\)\".*/\\1/p' | head -n 1)\n\
         [ -n \"${var}\" ] || {{ echo 'palloc {flags} refused'; exit 3; }}\n\
         echo {var}=${var}; echo ${var} >{f}\n",
        p = bin("palloc"),
        f = n.path(&format!("{var}.id"))
    )
}

/// The id a job's [`palloc_into`] got for `VAR`.
#[track_caller]
fn alloc_of(n: &Nodes, o: &Out, var: &str) -> String {
    fs::read_to_string(n.path(&format!("{var}.id")))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| panic!("no {var}:\n{o}\n{}", n.c.logs()))
}

/// Shell: `pspawn ARGS` whose processes append `host=NODE` to the file
/// `TAG` in the control dir, and pspawn's exit code to `TAG.rc`. (Files, not stdout: PRRTE master also forwards a nested job's
/// output to the tool that launched the outer job, so the outer stdout
/// holds some lines twice.)
fn spawn_hosts(n: &Nodes, tag: &str, args: &str) -> String {
    format!(
        "{} {args} sh -c 'echo host=$PMIX_HOSTNAME >>{}'; echo $? >{}.rc\n",
        bin("pspawn"),
        n.path(tag),
        n.path(tag)
    )
}

/// The sorted `host=` lines of the file `TAG` (see [`spawn_hosts`]).
fn file_hosts(n: &Nodes, tag: &str) -> Vec<String> {
    let mut h: Vec<String> = fs::read_to_string(n.path(tag))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("host=").map(String::from))
        .collect();
    h.sort();
    h
}

/// The exit code of the [`spawn_hosts`] spawn `TAG` (from the file
/// `TAG.rc`: a job's own stdout can lose lines after nested spawns, see
/// docs/conformance.md).
#[track_caller]
fn rc(n: &Nodes, o: &Out, tag: &str) -> i32 {
    fs::read_to_string(format!("{}.rc", n.path(tag)))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no exit code of {tag}:\n{o}\n{}", n.c.logs()))
}

// -------------------------------------------------------------- §8.2.1.5.1

/// §8.2.1.5.1 EXTEND adds nodes to the named reservation: the tool owner
/// of node02 (A) extends it by node03 (`palloc --extend A -w node03`,
/// relayed by its holder, so the owner asks): granted with A's id, node03
/// is A's now, A's jobs (`--target A -n 4 --map-by node`) fill node02 and
/// node03, and the default session keeps node01 and node04 only.
#[test]
fn prrte_nodes_s8_2_1_5_1_extend_adds_a_node() {
    on_cluster(|n| {
        let (hold, id) = n.hold("node02", &[]);
        let o = n.tool("palloc", &["--extend", &id, "-w", "node03", "--json"]);
        n.expect_ok(&o);
        let a = o.first("allocation");
        assert_eq!(a["alloc_id"], id.as_str(), "{o}");
        assert_eq!(a["directive"], "extend", "{o}");
        assert_eq!(n.node_owner("node03").as_deref(), Some(id.as_str()));
        assert_eq!(n.node_owner("node02").as_deref(), Some(id.as_str()));
        assert_eq!(n.reservation_ids(), std::slice::from_ref(&id));
        let inside = n.hosts_of(&["--target", &id, "-n", "4", "--map-by", "node"]);
        n.expect_ok(&inside);
        assert_eq!(
            hosts(&inside),
            sorted(&["node02", "node02", "node03", "node03"]),
            "{inside}"
        );
        assert_eq!(
            n.default_pool_hosts(&["node01", "node04"], 2),
            sorted(&["node01", "node01", "node04", "node04"])
        );
        failed_to_map(&n.hosts_of(&["-n", "5", "--json"]));
        hold.stop(Signal::SIGTERM);
    });
}

// ---------------------------------------------------------------- §8.2.1.6

/// §8.2.1.6 several ids → the union of their nodes: one application owns
/// node02 (A) and node03 (B); `--target A,B -n 2 --map-by node` runs once on
/// each, and so does `--target A --target B`; `--target A -n 2 --map-by
/// node` stays on node02.
#[test]
fn prrte_nodes_s8_2_1_6_several_ids_union() {
    on_cluster(|n| {
        let o = n.job(&format!(
            "{}{}{}{}{}",
            palloc_into(n, "A", "-w node02"),
            palloc_into(n, "B", "-w node03"),
            spawn_hosts(n, "union", "--target $A,$B -n 2 --map-by node"),
            spawn_hosts(n, "repeated", "--target $A --target $B -n 2 --map-by node"),
            spawn_hosts(n, "one", "--target $A -n 2 --map-by node"),
        ));
        n.expect_ok(&o);
        for tag in ["union", "repeated", "one"] {
            assert_eq!(rc(n, &o, tag), 0, "{tag}: {o}");
        }
        assert_eq!(file_hosts(n, "union"), sorted(&["node02", "node03"]), "{o}");
        assert_eq!(
            file_hosts(n, "repeated"),
            sorted(&["node02", "node03"]),
            "{o}"
        );
        assert_eq!(file_hosts(n, "one"), sorted(&["node02", "node02"]), "{o}");
    });
}

/// §8.2.1.6 ids + the invalid namespace → the union plus the default pool:
/// with node02 reserved (A), `--target A --default-pool -n 4 --map-by node`
/// runs once on every node; without `--default-pool` the same job cannot
/// map (A has 2 slots), and a default-pool-only job never reaches node02.
#[test]
fn prrte_nodes_s8_2_1_6_ids_plus_default_pool() {
    on_cluster(|n| {
        let o = n.job(&format!(
            "{}{}{}{}",
            palloc_into(n, "A", "-w node02"),
            spawn_hosts(n, "union", "--target $A --default-pool -n 4 --map-by node"),
            spawn_hosts(n, "ids", "--target $A -n 4 --map-by node"),
            spawn_hosts(n, "pool", "--default-pool -n 3 --map-by node"),
        ));
        n.expect_ok(&o);
        assert_eq!(
            (rc(n, &o, "union"), rc(n, &o, "ids"), rc(n, &o, "pool")),
            (0, 4, 0),
            "{o}"
        );
        assert_eq!(file_hosts(n, "union"), n.c.nodes, "{o}");
        assert_eq!(file_hosts(n, "ids"), Vec::<String>::new(), "{o}");
        assert_eq!(
            file_hosts(n, "pool"),
            sorted(&["node01", "node03", "node04"]),
            "{o}"
        );
    });
}

/// §8.2.1.6 absent → the default session only, and isolation (§8.2.1.11
/// (1)), proved by host names: with node02 held by a tool, a default-session
/// job from a tool fills exactly the other three nodes (6 slots); one more
/// process fails to map rather than touch node02, and nothing of it runs;
/// `-H node02` (outside the reservation) fails too; an application's
/// untargeted job (from node01) fills the 5 slots left and never node02.
#[test]
fn prrte_nodes_s8_2_1_6_isolation() {
    on_cluster(|n| {
        let (hold, id) = n.hold("node02", &[]);
        assert_eq!(n.node_owner("node02").as_deref(), Some(id.as_str()));
        let six = n.hosts_of(&["-n", "6", "--json"]);
        six.expect_code(0);
        let mut ran: Vec<String> = six
            .output_lines()
            .iter()
            .filter_map(|l| l.strip_prefix("host=").map(String::from))
            .collect();
        ran.sort();
        assert_eq!(
            ran,
            sorted(&["node01", "node01", "node03", "node03", "node04", "node04"]),
            "{six}"
        );
        let marker = n.path("ran");
        let seven = n.tool(
            "pspawn",
            &["-n", "7", "--json", "sh", "-c", &format!("touch {marker}")],
        );
        failed_to_map(&seven);
        failed_to_map(&n.hosts_of(&["-H", "node02", "-n", "1", "--json"]));
        let app = n.job(&format!(
            "{}{}",
            spawn_hosts(n, "five", "-n 5"),
            spawn_hosts(n, "six", "-n 6"),
        ));
        n.expect_ok(&app);
        assert_eq!((rc(n, &app, "five"), rc(n, &app, "six")), (0, 4), "{app}");
        assert_eq!(
            file_hosts(n, "five"),
            sorted(&["node01", "node03", "node03", "node04", "node04"]),
            "{app}"
        );
        assert!(
            !Path::new(&marker).exists(),
            "a process of the refused job ran"
        );
        assert!(!Path::new(&n.path("six")).exists(), "{app}");
        hold.stop(Signal::SIGTERM);
    });
}

/// §8.2.1.6 absent / only the invalid namespace → the default session, for
/// a job inside a reservation too. PRRTE master DEVIATES (D8): J1, running
/// in reservation A (node02), gets A's nodes for an untargeted spawn and for
/// `--default-pool`, and `--default-pool -H node04` fails to map.
#[test]
fn prrte_nodes_s8_2_1_6_absent_from_inside_a_reservation_deviation() {
    on_cluster(|n| {
        let j1 = n.path("j1.sh");
        fs::write(
            &j1,
            format!(
                "{}{}{}",
                spawn_hosts(n, "absent", "-n 1"),
                spawn_hosts(n, "pool", "--default-pool -n 1"),
                spawn_hosts(n, "pool4", "--default-pool -H node04 -n 1"),
            ),
        )
        .expect("j1 script");
        let o = n.job(&format!(
            "{}{} --target $A -n 1 sh {j1}\n",
            palloc_into(n, "A", "-w node02"),
            bin("pspawn"),
        ));
        n.expect_ok(&o);
        let seen = (
            file_hosts(n, "absent"),
            file_hosts(n, "pool"),
            rc(n, &o, "pool4"),
        );
        assert_eq!(
            seen,
            (vec!["node02".to_string()], vec!["node02".to_string()], 4),
            "PRRTE master deviation D8 (§8.2.1.6): a job inside a reservation is expected to get \
             the reservation's node for an untargeted or --default-pool spawn on PRRTE master (the \
             spec maps them onto the default session: node01, node03, node04); if this fails PRRTE \
             may now conform — update docs/conformance.md\n{o}"
        );
    });
}

/// `--map-by node` and `-H` inside and outside a reservation: with
/// node[02-03] held, the owner's `--target ID -n 2 --map-by node` runs on
/// both reserved nodes, `--target ID -H node03` on node03, and `--target ID
/// -H node04` (outside it) fails to map; a default-session `-n 2 --map-by
/// node` runs on node01 and node04, `-H node04` there, `-H node03` fails.
#[test]
fn prrte_nodes_map_by_node_and_hosts_inside_and_outside_reservations() {
    on_cluster(|n| {
        let (hold, id) = n.hold("node[02-03]", &[]);
        let t = id.as_str();
        let inside = n.hosts_of(&["--target", t, "-n", "2", "--map-by", "node"]);
        inside.expect_code(0);
        assert_eq!(hosts(&inside), sorted(&["node02", "node03"]), "{inside}");
        let one = n.hosts_of(&["--target", t, "-H", "node03", "-n", "1"]);
        one.expect_code(0);
        assert_eq!(hosts(&one), ["node03"], "{one}");
        failed_to_map(&n.hosts_of(&["--target", t, "-H", "node04", "-n", "1", "--json"]));
        let outside = n.hosts_of(&["-n", "2", "--map-by", "node"]);
        outside.expect_code(0);
        assert_eq!(hosts(&outside), sorted(&["node01", "node04"]), "{outside}");
        let four = n.hosts_of(&["-H", "node04", "-n", "1"]);
        four.expect_code(0);
        assert_eq!(hosts(&four), ["node04"], "{four}");
        failed_to_map(&n.hosts_of(&["-H", "node03", "-n", "1", "--json"]));
        hold.stop(Signal::SIGTERM);
    });
}

// ---------------------------------------------------------------- §8.2.1.7

/// §8.2.1.7 the owner set grows with each spawn into the reservation, and
/// ownership is not transitive. Application J0 (on node01) owns A (node02,
/// CHILD_DEFAULT) and B (node03) and spawns J1 into A, then ends. J1 joined
/// A's owner set: its own spawn into A runs on node02, and A stays reserved
/// while J1 lives (B, whose owner J0 ended, is unreserved). J1 does not own
/// B, its parent's other reservation: its spawn into B is refused with
/// PMIX_ERR_NO_PERMISSIONS and runs nothing.
#[test]
fn prrte_nodes_s8_2_1_7_owner_set_grows_not_transitive() {
    on_cluster(|n| {
        let g = n.gate("j1");
        let marker = n.path("in-b");
        let j1 = n.path("j1-body.sh");
        fs::write(
            &j1,
            format!(
                "{}{} --target $B -n 1 --json touch {marker} >{}; echo $? >{}\n{}",
                spawn_hosts(n, "grown", "--target $A -n 1"),
                bin("pspawn"),
                n.path("b.out"),
                n.path("b.rc"),
                g.cmd
            ),
        )
        .expect("j1 script");
        let o = n.job(&format!(
            "{}{}{} --target $A --detach -n 1 env A=$A B=$B sh {j1}\n{}",
            palloc_into(n, "A", "-w node02 --inherit child-default"),
            palloc_into(n, "B", "-w node03"),
            bin("pspawn"),
            g.await_started_sh(),
        ));
        n.expect_ok(&o);
        let (a, b) = (alloc_of(n, &o, "A"), alloc_of(n, &o, "B"));
        assert_eq!(g.host(), "node02");
        assert_eq!(file_hosts(n, "grown"), ["node02"], "J1 spawns into A");
        eventually("B ends with its owner J0 (DEFAULT)", || {
            !n.reservation_ids().contains(&b)
        });
        assert!(
            n.reservation_ids().contains(&a),
            "J1 (a derived child) holds A"
        );
        let b_rc = fs::read_to_string(n.path("b.rc")).unwrap_or_default();
        let b_out = fs::read_to_string(n.path("b.out")).unwrap_or_default();
        assert_eq!(b_rc.trim(), "6", "J1 does not own B: {b_out}");
        assert!(b_out.contains("PMIX_ERR_NO_PERMISSIONS"), "{b_out}");
        assert!(!Path::new(&marker).exists(), "J1's job ran in B");
        g.open();
        eventually("A is unreserved after J1, its last derived child", || {
            !n.reservation_ids().contains(&a)
        });
    });
}

// ---------------------------------------------------------------- §8.2.1.9

/// §8.2.1.9.2 CHILD, 000 §6.5.1.5 (2)–(3): derived children are tracked
/// transitively, across sessions. Application J0 (on node01) owns A
/// (node02, CHILD) and spawns J1 into A; J1 reserves B (node03) for itself
/// and spawns J2 into B, then ends; J0 waits for J2 to start and ends. J2,
/// J0's grandchild running in another session, still holds A; when it ends
/// A is released. PRRTE master DEVIATES (D11): A is released while J2 still
/// runs (J2 is not killed); then, D6, node02's daemon is gone.
#[test]
fn prrte_nodes_s8_2_1_9_2_child_drain_grandchild_other_session_deviation() {
    on_cluster(|n| {
        let g = n.gate("j2");
        let j1 = n.path("j1-body.sh");
        fs::write(
            &j1,
            format!(
                "{}{} --target $B --detach -n 1 {}\n",
                palloc_into(n, "B", "-w node03"),
                bin("pspawn"),
                g.cmd
            ),
        )
        .expect("j1 script");
        let o = n.job(&format!(
            "{}{} --target $A -n 1 sh {j1}\n{}",
            palloc_into(n, "A", "-w node02 --inherit child"),
            bin("pspawn"),
            g.await_started_sh(),
        ));
        n.expect_ok(&o);
        let (a, b) = (alloc_of(n, &o, "A"), alloc_of(n, &o, "B"));
        assert_eq!(g.host(), "node03", "J2 runs in B");
        eventually("B ends with its owner J1 (DEFAULT)", || {
            !n.reservation_ids().contains(&b)
        });
        eventually(
            "PRRTE master deviation D11 (§8.2.1.9.2 CHILD, 000 §6.5.1.5 (2)-(3)): A is expected \
             to be released while J0's grandchild J2 still runs in B (the spec holds A until J2 \
             ends); if this fails PRRTE may now conform — update docs/conformance.md",
            || !n.reservation_ids().contains(&a),
        );
        assert!(alive(g.pid()), "J2 is not killed");
        assert_node02_daemon_killed(n, "A's release (CHILD)");
        g.open();
    });
}

/// Tool owner `palloc -w node02 --inherit RULE --hold`, its job (spawned as
/// the owner, relayed by the holder) running on node02; then the holder is
/// ended. Returns the gate job and the allocation id.
fn owner_ends_with_job_on_reserved_node(n: &Nodes, rule: &str) -> (GateJob, String) {
    let (hold, id) = n.hold("node02", &["--inherit", rule]);
    let g = n.gate(rule);
    let o = n.tool(
        "pspawn",
        &["--target", &id, "--detach", "-n", "1", "sh", "-c", &g.cmd],
    );
    n.expect_ok(&o);
    assert_eq!(
        g.host(),
        "node02",
        "the owner's job runs on the reserved node"
    );
    hold.stop(Signal::SIGTERM);
    (g, id)
}

/// §8.2.1.9.2 DEFAULT (§8.2.1.9.4 nodes stay): at the owner's end node02 is
/// unreserved at once, its job keeps running, and the default session uses
/// node02 again (`-n 4 --map-by node` reaches every node).
#[test]
fn prrte_nodes_s8_2_1_9_2_default_job_on_reserved_node() {
    on_cluster(|n| {
        let (g, id) = owner_ends_with_job_on_reserved_node(n, "default");
        eventually("DEFAULT unreserves at the owner's end", || {
            !n.reservation_ids().contains(&id)
        });
        assert!(
            alive(g.pid()),
            "§8.2.1.9.4: the job on node02 is not killed"
        );
        let all = n.hosts_of(&["-n", "4", "--map-by", "node"]);
        all.expect_code(0);
        assert_eq!(hosts(&all), n.c.nodes, "{all}");
        g.open();
    });
}

/// §8.2.1.9.2 CHILD_DEFAULT: held while the owner's job runs on node02
/// after the owner ended; unreserved when it ends; node02 then serves the
/// default session.
#[test]
fn prrte_nodes_s8_2_1_9_2_child_default_job_on_reserved_node() {
    on_cluster(|n| {
        let (g, id) = owner_ends_with_job_on_reserved_node(n, "child-default");
        assert!(
            wait::holds_for(Duration::from_millis(500), || n
                .reservation_ids()
                .contains(&id)),
            "held for its job"
        );
        assert_eq!(n.node_owner("node02").as_deref(), Some(id.as_str()));
        g.open();
        eventually("unreserved after its last job", || {
            !n.reservation_ids().contains(&id)
        });
        let all = n.hosts_of(&["-n", "4", "--map-by", "node"]);
        all.expect_code(0);
        assert_eq!(hosts(&all), n.c.nodes, "{all}");
    });
}

/// §8.2.1.9.2 NONE: released at the owner's end; node02 was a startup node,
/// so spec 001 returns it to the default session (§8.2.1.9.4: nobody
/// killed). PRRTE master DEVIATES (D6): the release kills node02's daemon,
/// node02 stays in the map, and every later job that maps onto it fails to
/// launch (the job that ran there is orphaned, not ended).
#[test]
fn prrte_nodes_s8_2_1_9_2_none_job_on_reserved_node_deviation() {
    on_cluster(|n| {
        let (g, id) = owner_ends_with_job_on_reserved_node(n, "none");
        eventually("NONE releases at the owner's end", || {
            !n.reservation_ids().contains(&id)
        });
        assert_node02_daemon_killed(n, "NONE at the owner's end");
        g.open();
    });
}

/// §8.2.1.9.2 CHILD: held while the owner's job runs on node02, released
/// when it ends; node02 (a startup node) should rejoin the default session.
/// PRRTE master holds it correctly, then DEVIATES at the release (D6).
#[test]
fn prrte_nodes_s8_2_1_9_2_child_job_on_reserved_node_deviation() {
    on_cluster(|n| {
        let (g, id) = owner_ends_with_job_on_reserved_node(n, "child");
        assert!(
            wait::holds_for(Duration::from_millis(500), || n
                .reservation_ids()
                .contains(&id)),
            "held for its job"
        );
        assert!(alive(g.pid()));
        g.open();
        eventually("CHILD releases after its last job", || {
            !n.reservation_ids().contains(&id)
        });
        assert_node02_daemon_killed(n, "CHILD after the last job");
    });
}

/// §8.2.1.9.1 (1) owner release of a reservation carved from a startup
/// node: the node should rejoin the default session. PRRTE master DEVIATES
/// (D6): it kills node02's daemon.
#[test]
fn prrte_nodes_s8_2_1_9_1_owner_release_startup_node_deviation() {
    on_cluster(|n| {
        let (hold, id) = n.hold("node02", &[]);
        let o = n.tool("prelease", &[&id, "--json"]);
        n.expect_ok(&o);
        eventually("released", || !n.reservation_ids().contains(&id));
        assert_node02_daemon_killed(n, "the owner's release");
        hold.stop(Signal::SIGTERM);
    });
}

/// §8.2.1.9.1 (1) partial release: the owner of node[02-03] releases
/// node03 only; node02 stays reserved and node03 rejoins the default
/// session. PRRTE master DEVIATES (D7): the whole reservation ends, and
/// (D6) both nodes' daemons die.
#[test]
fn prrte_nodes_s8_2_1_9_1_partial_release_deviation() {
    on_cluster(|n| {
        let (hold, id) = n.hold("node[02-03]", &[]);
        let o = n.tool("prelease", &[&id, "-w", "node03", "--json"]);
        n.expect_ok(&o);
        assert_eq!(o.first("release")["alloc_id"], id.as_str(), "{o}");
        eventually("the release took effect", || {
            n.node_owner("node03").is_none()
        });
        let still = n.reservation_ids();
        let live = n.live_nodes();
        assert!(
        !still.contains(&id) && live == sorted(&["node01", "node04"]),
        "PRRTE master deviation D7 (§8.2.1.9.1): releasing node03 of node[02-03] is expected to \
         end the whole reservation and kill both nodes' daemons on PRRTE master (the spec keeps \
         node02 reserved and returns node03 to the default session); if this fails PRRTE may \
         now conform — update docs/conformance.md\nreservations: {still:?}, live nodes: {live:?}\n{}",
        n.c.logs()
    );
        hold.stop(Signal::SIGTERM);
    });
}
