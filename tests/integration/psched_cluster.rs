//! psched attached to a multi-node PRRTE master (`support::cluster`,
//! `Cluster::start_with_psched`): the DVM starts with its head node only,
//! every other node is psched's, and reaches the DVM only when psched
//! grants it (PRRTE then starts a daemon there through the ssh stand-in).

use std::process::{Command, Output, Stdio};

use crate::support::cluster::Cluster;
use crate::support::{cargo_bin, run_with_timeout, show, text, user_path, LineReader};

/// `name` run inside the cluster's namespace, with our binaries on PATH.
fn tool(c: &Cluster, name: &str) -> Command {
    let mut cmd = c.command(cargo_bin(name));
    cmd.env("PATH", user_path()).env("NO_COLOR", "1");
    cmd
}

/// `cmd` preceded by a bounded wait (30 s) until `prte` has said `DVM ready`
/// twice (its start, then the end of the grow that started the granted
/// nodes' daemons).
fn wait_grown(cmd: &str) -> String {
    format!(
        "i=0; until [ \"$(grep -c 'DVM ready' \"$PRRTE_OUT\")\" -ge 2 ]; do \
         i=$((i+1)); [ $i -gt 300 ] && exit 99; sleep 0.1; done; {cmd}"
    )
}

fn run(cmd: &mut Command) -> Output {
    run_with_timeout(cmd.stdin(Stdio::null()), 90)
}

/// `palloc -N 2 -t 2m --warn-timeout 1m --inherit child -- sh -c 'pspawn -n
/// 2 --map-by node hostname'` prints two nodes of psched's pool (not the
/// head node) and exits 0; psched's ledger recorded the grant.
///
/// PRRTE master answers the grant before the granted nodes' daemons are up
/// (deviation P1 in docs/conformance.md: a spawn at once is
/// `PMIX_ERR_JOB_FAILED_TO_MAP`), so the command first waits, bounded, for
/// the DVM's own signal that the grow finished: `prte` prints `DVM ready`
/// a second time.
#[test]
fn palloc_n2_runs_on_two_pool_nodes() {
    let c = Cluster::start_with_psched(1, 4, &[]);
    let o = run(tool(&c, "palloc")
        .env("PRRTE_OUT", c.dir().join("prte.out"))
        .args([
            "-N",
            "2",
            "-t",
            "2m",
            "--warn-timeout",
            "1m",
            "--inherit",
            "child",
            "--",
            "sh",
            "-c",
            &wait_grown("pspawn -n 2 --map-by node hostname"),
        ]));
    let ctx = format!(
        "{}\n{}\n--- psched:\n{}",
        show(&o),
        c.logs(),
        c.psched_log()
    );
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let mut hosts: Vec<String> = text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("node"))
        .map(String::from)
        .collect();
    hosts.sort();
    hosts.dedup();
    assert_eq!(hosts.len(), 2, "two distinct nodes: {ctx}");
    for h in &hosts {
        assert!(c.pool.contains(h), "{h} is one of psched's nodes: {ctx}");
    }
    let ledger = std::fs::read_to_string(c.ledger_path()).expect("ledger written");
    assert!(ledger.contains("next_id"), "{ledger}");
}

/// `psched --status` (the ledger's grants with their expiry, the free
/// nodes), as JSON.
fn psched_status(c: &Cluster) -> serde_json::Value {
    let o = run(Command::new(cargo_bin("psched"))
        .args(["--status", "--nodes", &c.pool.join(","), "--ledger"])
        .arg(c.ledger_path()));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    serde_json::from_slice(&o.stdout).expect("psched --status is JSON")
}

/// The grant of `id` in psched's ledger, if held.
fn grant(c: &Cluster, id: &str) -> Option<serde_json::Value> {
    psched_status(c)["grants"]
        .as_array()?
        .iter()
        .find(|g| g["alloc_id"] == id)
        .cloned()
}

/// Poll (every 100 ms, at most 60 s) until `f` holds.
#[track_caller]
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A `palloc --hold --json` with `args`, inside the cluster; its stdout
/// lines and the allocation id of its grant.
fn hold(c: &Cluster, args: &[&str]) -> (std::process::Child, LineReader, String) {
    let mut child = tool(c, "palloc")
        .args(["--hold", "--json"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start palloc --hold");
    let lines = LineReader::new(child.stdout.take().expect("stdout"));
    let first = lines
        .next_line(std::time::Duration::from_secs(60))
        .expect("palloc prints its grant");
    let v: serde_json::Value = serde_json::from_str(&first).expect("grant JSON");
    let id = v["alloc_id"].as_str().expect("alloc_id").to_string();
    (child, lines, id)
}

/// A held allocation with `-t 20s --warn-timeout 10s` gets psched's
/// warning (relayed by PRRTE to the holder, with its id); `palloc --extend
/// ID -t 30s` then moves psched's expiry later; psched's status shows it.
#[test]
fn warning_reaches_holder_then_extend_moves_expiry() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let (mut child, lines, id) = hold(&c, &["-N", "1", "-t", "20s", "--warn-timeout", "10s"]);
    let before = grant(&c, &id).expect("granted")["expires_at_ms"]
        .as_u64()
        .expect("an expiry");
    let warned = loop {
        let l = lines
            .next_line(std::time::Duration::from_secs(60))
            .expect("palloc still runs");
        if l.contains("ALLOC_TIMEOUT_WARNING") {
            break l;
        }
    };
    assert!(warned.contains(&id), "the warning names {id}: {warned}");
    let o = run(tool(&c, "palloc").args(["--extend", &id, "-t", "30s"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let after = grant(&c, &id).expect("still granted")["expires_at_ms"]
        .as_u64()
        .expect("an expiry");
    assert_eq!(after, before + 30_000, "psched's expiry moved by 30 s");
    let _ = child.kill();
    let _ = child.wait();
}

/// An allocation left to expire (`-t 5s`) is ended by psched: its grant
/// leaves the ledger and its node is free again in psched's pool.
#[test]
fn unextended_allocation_expires_and_nodes_return() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let (mut child, _lines, id) = hold(&c, &["-N", "2", "-t", "5s"]);
    let g = grant(&c, &id).expect("granted");
    let nodes: Vec<String> = serde_json::from_value(g["nodes"].clone()).expect("nodes");
    assert_eq!(nodes.len(), 2);
    assert!(psched_status(&c)["free"]
        .as_array()
        .expect("free")
        .is_empty());
    wait_for("the grant expired", || grant(&c, &id).is_none());
    let free: Vec<String> =
        serde_json::from_value(psched_status(&c)["free"].clone()).expect("free list");
    for n in &nodes {
        assert!(free.contains(n), "{n} is free again: {free:?}");
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `kill -9` of psched while an allocation is held; a new psched over the
/// same ledger keeps the grant, and the next grant takes another node.
#[test]
fn psched_killed_and_restarted_keeps_grants() {
    let mut c = Cluster::start_with_psched(1, 3, &[]);
    let (mut a, _la, id_a) = hold(&c, &["-N", "1", "-t", "5m"]);
    let held = grant(&c, &id_a).expect("granted")["nodes"].clone();
    c.kill_psched();
    assert_eq!(
        grant(&c, &id_a).expect("the ledger keeps it")["nodes"],
        held,
        "{}",
        c.psched_log()
    );
    c.start_psched(&[]);
    assert_eq!(grant(&c, &id_a).expect("kept after restart")["nodes"], held);
    let (mut b, _lb, id_b) = hold(&c, &["-N", "1", "-t", "5m"]);
    assert_ne!(id_a, id_b, "a new id");
    let got = grant(&c, &id_b).expect("granted")["nodes"].clone();
    assert_ne!(got, held, "{}", c.psched_log());
    for ch in [&mut a, &mut b] {
        let _ = ch.kill();
        let _ = ch.wait();
    }
}

/// `palloc -N 1 --inherit none -- true`: at palloc's end PRRTE master
/// ends the reservation under NONE but tells psched nothing (deviation P3);
/// psched finds it gone by asking the DVM for its allocation ids and frees
/// the node.
#[test]
fn none_disposition_returns_node_to_psched_by_query() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let o = run(tool(&c, "palloc").args([
        "-N",
        "1",
        "-t",
        "5m",
        "--inherit",
        "none",
        "--json",
        "--",
        "true",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let first = text(&o.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let v: serde_json::Value = serde_json::from_str(&first).expect("grant JSON");
    let id = v["alloc_id"].as_str().expect("alloc_id").to_string();
    wait_for("psched freed the NONE reservation's node", || {
        grant(&c, &id).is_none()
    });
    assert_eq!(
        psched_status(&c)["free"].as_array().map(Vec::len),
        Some(2),
        "both pool nodes free"
    );
}

/// EXTEND adding nodes: `palloc --extend ID -N 1` of a held one-node
/// allocation; psched grants one more node of its pool to the same id, and
/// a job spread over the reservation runs on both. Each step waits
/// (bounded) for `prte` to report the previous grow done (P1; a grow
/// during a grow broke the DVM, P6).
#[test]
fn extend_adds_a_node_from_psched() {
    let c = Cluster::start_with_psched(1, 3, &[]);
    let readies = || {
        std::fs::read_to_string(c.dir().join("prte.out"))
            .unwrap_or_default()
            .matches("DVM ready")
            .count()
    };
    let (mut child, _lines, id) = hold(&c, &["-N", "1", "-t", "5m"]);
    wait_for("the first grow is done", || readies() >= 2);
    let o = run(tool(&c, "palloc").args(["--extend", &id, "-N", "1"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let nodes: Vec<String> =
        serde_json::from_value(grant(&c, &id).expect("granted")["nodes"].clone()).expect("nodes");
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    wait_for("the second grow is done", || readies() >= 3);
    let o =
        run(tool(&c, "pspawn").args(["--target", &id, "-n", "2", "--map-by", "node", "hostname"]));
    let mut hosts: Vec<String> = text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("node"))
        .map(String::from)
        .collect();
    hosts.sort();
    let mut want = nodes.clone();
    want.sort();
    assert_eq!(hosts, want, "{}\n{}", show(&o), c.logs());
    let _ = child.kill();
    let _ = child.wait();
}

/// Issue 17: `pspawn -N 2 hostname` outside any allocation, as `srun -N2`
/// outside salloc: psched grants two of its nodes for the job, the job
/// prints two distinct pool nodes, and the reservation is given back (no
/// reservation left, psched's grant gone).
#[test]
fn pspawn_n2_outside_an_allocation_reserves_and_gives_back() {
    let c = Cluster::start_with_psched(1, 4, &[]);
    let o = run(tool(&c, "pspawn").args(["-N", "2", "-v", "hostname"]));
    let ctx = format!(
        "{}\n{}\n--- psched:\n{}",
        show(&o),
        c.logs(),
        c.psched_log()
    );
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let mut hosts: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    hosts.sort();
    hosts.dedup();
    assert_eq!(hosts.len(), 2, "two distinct nodes: {ctx}");
    for h in &hosts {
        assert!(c.pool.contains(h), "{h} is one of psched's nodes: {ctx}");
    }
    let o = run(tool(&c, "pwatch").args(["--status", "--what", "reservations", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).expect("JSON");
    assert_eq!(v["reservations"], serde_json::json!([]), "{v}\n{ctx}");
}
