//! What palloc and `pwatch --status` show on PRRTE master + psched is what
//! psched granted (issue 40, point 4), as on pdvm: PRRTE passes a grant on
//! without its nodes, keeps a reservation's nodes as first granted (a
//! partial release changes nothing there), knows no owner, rule or time
//! left, and lists psched's parked nodes in psched's own reservation.

use crate::psched_cluster::{hold_with, run};
use crate::support::cluster::Cluster;
use crate::support::{show, tool, ToolCommand};

fn status(c: &Cluster) -> serde_json::Value {
    let o = run(tool(c, "pwatch").no_color().args(["--status", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    serde_json::from_slice(&o.stdout).expect("status JSON")
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_str().expect("a name").to_string())
        .collect()
}

/// `palloc -N 2 -t 10m --hold`: the grant names its two nodes;
/// `pwatch --status` lists that one reservation with its owner, rule and
/// time left; after `prelease alloc -w NODE` the reservation holds the
/// other node alone, the released node is no node of the DVM's table and
/// is free in the scheduler's.
#[test]
fn status_after_a_partial_release_is_what_psched_holds() {
    let c = Cluster::start_with_psched(2, 3, &["--slots", "2"]);
    let (mut holder, _lines, id) = hold_with(
        tool(&c, "palloc").no_color(),
        &["-N", "2", "-t", "10m", "--inherit", "child"],
    );
    let grant_nodes = crate::psched_cluster::grant(&c, &id).expect("granted")["nodes"].clone();
    let granted = names(&grant_nodes);
    assert_eq!(granted.len(), 2, "{granted:?}");

    let s = status(&c);
    let res = s["reservations"].as_array().expect("reservations");
    assert_eq!(
        res.len(),
        1,
        "only the user's grant, not psched's parking: {s}"
    );
    let r = &res[0];
    assert_eq!(r["alloc_id"], id.as_str(), "{s}");
    assert_eq!(names(&r["nodes"]), granted, "{s}");
    assert!(
        r["owner_nspace"].as_str().is_some_and(|o| !o.is_empty()),
        "{s}"
    );
    assert_eq!(r["inherit"], "child", "{s}");
    let left = r["expires_in"].as_u64().expect("time left");
    assert!((1..=600).contains(&left), "{s}");
    assert_eq!(s["scheduler"][0]["free"], 1, "{s}");

    let o = run(tool(&c, "prelease")
        .no_color()
        .args([id.as_str(), "-w", granted[0].as_str()]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let s = status(&c);
    let r = &s["reservations"][0];
    assert_eq!(names(&r["nodes"]), [granted[1].clone()], "{s}");
    let nodes: Vec<&str> = s["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["name"].as_str().unwrap_or(""))
        .collect();
    assert!(!nodes.contains(&granted[0].as_str()), "{s}");
    assert!(nodes.contains(&granted[1].as_str()), "{s}");
    let free = names(&s["scheduler"][0]["free_nodes"]);
    assert!(free.contains(&granted[0]), "{s}");
    let _ = holder.kill();
    let _ = holder.wait();
}

/// palloc's grant line names the nodes PRRTE master did not pass on.
#[test]
fn the_grant_line_names_its_nodes() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let o = run(tool(&c, "palloc").args(["-N", "2", "--", "true"]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = crate::support::text(&o.stderr);
    assert!(err.contains(": 2 nodes node"), "{err}");
    assert!(!err.contains("nodes not reported"), "{err}");
}

/// A tool outside a reservation's owner set spawning into it (`pspawn
/// --as-tool --target A`, which bypasses the palloc holding A) is refused
/// with exit 6 before anything runs, as pdvm refuses it
/// (`palloc_context::another_shell_spawns_extends_and_releases_through_the_holder`);
/// PRRTE master alone would launch it. Through the holder it runs.
#[test]
fn a_foreign_tool_cannot_spawn_into_a_reservation() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let (mut holder, _lines, id) = hold_with(tool(&c, "palloc").no_color(), &["-N", "1"]);
    let o = run(tool(&c, "pspawn").no_color().args([
        "--as-tool",
        "--target",
        id.as_str(),
        "echo",
        "ran",
    ]));
    let err = crate::support::text(&o.stderr);
    assert_eq!(o.status.code(), Some(6), "{}", show(&o));
    assert!(err.contains("PMIX_ERR_NO_PERMISSIONS"), "{err}");
    assert!(
        !crate::support::text(&o.stdout).contains("ran"),
        "{}",
        show(&o)
    );
    let o = run(tool(&c, "pspawn")
        .no_color()
        .args(["--target", id.as_str(), "echo", "ran"]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(crate::support::text(&o.stdout), "ran\n", "{}", show(&o));
    let _ = holder.kill();
    let _ = holder.wait();
}

/// psched's pool backend says why it refuses, and PRRTE master passes the
/// sentence on: palloc shows it as it shows pdvm's (they were bare
/// statuses).
#[test]
fn psched_refusals_carry_their_reason_to_palloc() {
    let c = Cluster::start_with_psched(1, 2, &["--partition", "batch:10m:1h"]);
    for (args, code, words) in [
        (
            &["-N", "9"][..],
            4,
            "exceeds every node psched could ever grant (its pool has 2)",
        ),
        (
            &["-N", "1", "-p", "nosuch"][..],
            5,
            "no partition `nosuch` (psched's: batch)",
        ),
        (
            &["-N", "1", "-t", "2h"][..],
            4,
            "exceeds partition batch's maximum of 3600 s",
        ),
    ] {
        let o = run(tool(&c, "palloc")
            .no_color()
            .args(args)
            .args(["--", "true"]));
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", show(&o));
        let err = crate::support::text(&o.stderr);
        assert!(
            err.contains("allocation request refused: ") && err.contains(words),
            "{args:?}: {err}"
        );
    }
}
