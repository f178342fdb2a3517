//! psched attached to a multi-node PRRTE master (`support::cluster`,
//! `Cluster::start_with_psched`): the DVM starts with its head node only,
//! every other node is psched's, and reaches the DVM only when psched
//! grants it (PRRTE then starts a daemon there through the ssh stand-in).

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::cluster::Cluster;
use crate::support::tool::watching;
use crate::support::wait;
use crate::support::{cargo_bin, run_with_timeout, show, text, tool, LineReader, ToolCommand};

pub(crate) fn run(cmd: &mut Command) -> Output {
    run_with_timeout(cmd.stdin(Stdio::null()), 90)
}

/// Issue 40: an MPI program runs on psched's nodes at every grant, not
/// only the first. psched announced each allocation's end to every process
/// (range global) and PRRTE master replayed it to each MPI process started
/// later, whose default handler aborted MPI_Init ("An error occurred in
/// PMIx Event Notification"): rounds 2 and 3 failed. Its events now go to
/// handlers of their code alone and are not cached. Three rounds of
/// `palloc -N 2 -- pspawn -n 2 --map-by node hello` on the same two nodes.
#[test]
fn an_mpi_program_runs_on_reused_pool_nodes() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    mpi_rounds(&c, 3, 2);
}

/// `rounds` rounds of `palloc -N 2 -- pspawn -n NP --map-by node hello`
/// (hello_allreduce.c, the wheel's `mpicc`) on `c`'s psched: each exits 0
/// and prints NP ranks with the right sum, on two of psched's nodes.
pub(crate) fn mpi_rounds(c: &Cluster, rounds: u32, np: u32) {
    let dir = crate::support::unique_tmpdir("psched-mpi");
    let program = crate::support::mpi::mpicc("hello_allreduce.c", dir.path());
    let sum = format!("sum {}", np * (np - 1) / 2);
    for round in 1..=rounds {
        let mut cmd = tool(c, "palloc");
        crate::support::mpi::mpi_env(&mut cmd);
        let o = run(cmd
            .no_color()
            .args(["-N", "2", "--", "pspawn", "-n", &np.to_string()])
            .args(["--map-by", "node"])
            .arg(&program));
        let ctx = || {
            format!(
                "round {round}: {}\n{}\n{}",
                show(&o),
                c.logs(),
                c.psched_log()
            )
        };
        assert_eq!(o.status.code(), Some(0), "{}", ctx());
        let out = text(&o.stdout);
        let sums: Vec<&str> = out.lines().filter(|l| l.contains(" sum ")).collect();
        assert_eq!(sums.len(), np as usize, "{}", ctx());
        assert!(sums.iter().all(|l| l.ends_with(&sum)), "{}", ctx());
        let mut hosts: Vec<&str> = sums
            .iter()
            .filter_map(|l| l.split(" on ").nth(1)?.split_whitespace().next())
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        assert_eq!(hosts.len(), 2, "two nodes: {}", ctx());
        assert!(
            hosts.iter().all(|h| c.pool.iter().any(|p| p == h)),
            "{}",
            ctx()
        );
    }
}

/// Issue 40: `psched --slots 2` gives each pool node two slots in PRRTE
/// master (it gave one, whatever was asked): the DVM lists them with 2,
/// and `palloc -N 1 -- pspawn -n 2 hostname` runs both ranks on its one
/// node at once.
#[test]
fn pool_nodes_have_the_slots_psched_was_told() {
    let c = Cluster::start_with_psched(2, 2, &["--slots", "2"]);
    // Granted, they are the DVM's nodes to the user (parked, the
    // scheduler's free nodes).
    let o = run(tool(&c, "palloc").no_color().args([
        "-N", "2", "--", "pwatch", "--status", "--what", "nodes", "--json",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status JSON");
    let pool: Vec<u64> = v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["name"] != "node01")
        .map(|n| n["slots"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(pool, [2, 2], "{v}");
    let o = run(tool(&c, "palloc").no_color().args([
        "-N",
        "1",
        "--",
        "pspawn",
        "-n",
        "2",
        "--immediate",
        "hostname",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let out = text(&o.stdout);
    let hosts: Vec<&str> = out.lines().collect();
    assert_eq!(hosts.len(), 2, "{}", show(&o));
    assert!(hosts[0] != "node01" && hosts[0] == hosts[1], "{hosts:?}");
}

/// `palloc -N 2 -t 2m --warn-timeout 1m --inherit child -- sh -c 'pspawn -n
/// 2 --map-by node hostname'` prints two nodes of psched's pool (not the
/// head node) and exits 0; psched's ledger recorded the grant.
///
/// PRRTE master answers the grant before the granted nodes' daemons are up
/// (deviation P1 in docs/conformance.md: a spawn at once is
/// `PMIX_ERR_JOB_FAILED_TO_MAP`); palloc returns only once a probe job runs
/// in the reservation, so the command spawns at once.
#[test]
fn palloc_n2_runs_on_two_pool_nodes() {
    let c = Cluster::start_with_psched(2, 4, &[]);
    let o = run(tool(&c, "palloc").no_color().args([
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
        "pspawn -n 2 --map-by node hostname",
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

/// A grant of a node whose daemon is up (psched starts its pool's daemons
/// as it attaches) needs no readiness probe: while `palloc -v -N 1 --
/// pspawn -v -n 1 true` runs, a `pwatch --event job-end` started before it
/// sees only the namespaces palloc and pspawn name (the tools and the
/// user's job) end before a marker job launched after it; a probe would be
/// one more.
#[test]
fn a_grant_of_a_warm_node_launches_only_the_users_job() {
    let c = Cluster::start_with_psched(2, 2, &[]);
    let mut w = watching(tool(&c, "pwatch").no_color().args(["--event", "job-end"]));
    let o = run(tool(&c, "palloc").no_color().args([
        "-v", "-N", "1", "-t", "1m", "--", "pspawn", "-v", "-n", "1", "true",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let err = text(&o.stderr);
    // "… as tool NS" (palloc, pspawn) and "launched job NS" (the user's).
    let named = |after: &str| -> Vec<String> {
        err.lines()
            .filter_map(|l| l.split(after).nth(1))
            .filter_map(|r| r.split_whitespace().next())
            .map(String::from)
            .collect()
    };
    let tools = named(" as tool ");
    let jobs = named("launched job ");
    assert!(tools.len() == 2 && jobs.len() == 1, "{}", show(&o));
    let marker = run(tool(&c, "pspawn").args(["--json", "-n", "1", "true"]));
    assert_eq!(marker.status.code(), Some(0), "{}", show(&marker));
    let first: serde_json::Value =
        serde_json::from_str(text(&marker.stdout).lines().next().expect("a JSON line"))
            .expect("pspawn --json");
    let nspace = first["nspace"].as_str().expect("the marker's namespace");
    let seen = w.events.until(nspace, Duration::from_secs(30));
    let _ = w.child.kill();
    let _ = w.child.wait();
    let seen = seen.unwrap_or_else(|e| panic!("no end of the marker {nspace}: {e}"));
    let ended: Vec<&str> = seen
        .lines()
        .filter_map(|l| l.strip_prefix("job-end job "))
        .filter_map(|r| r.split_whitespace().next())
        .filter(|n| *n != nspace)
        .collect();
    let ctx = format!("ended:\n{seen}--- palloc:\n{}", show(&o));
    assert!(
        ended.contains(&jobs[0].as_str()),
        "the user's job ended: {ctx}"
    );
    let other: Vec<&&str> = ended
        .iter()
        .filter(|n| !tools.iter().chain(&jobs).any(|k| k == **n))
        .collect();
    assert!(
        other.is_empty(),
        "no other job (a probe) ran: {other:?}\n{ctx}"
    );
}

/// How many times `prte` said `DVM ready` (once at start, then once per
/// finished grow).
pub(crate) fn readies(c: &Cluster) -> usize {
    std::fs::read_to_string(c.dir().join("prte.out"))
        .unwrap_or_default()
        .matches("DVM ready")
        .count()
}

/// `psched --status` (the ledger's grants with their expiry, the free
/// nodes), as JSON.
pub(crate) fn psched_status(c: &Cluster) -> serde_json::Value {
    let o = run(Command::new(cargo_bin("psched"))
        .args(["--status", "--nodes", &c.pool.join(","), "--ledger"])
        .arg(c.ledger_path()));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    serde_json::from_slice(&o.stdout).expect("psched --status is JSON")
}

/// The grant of `id` in psched's ledger, if held.
pub(crate) fn grant(c: &Cluster, id: &str) -> Option<serde_json::Value> {
    psched_status(c)["grants"]
        .as_array()?
        .iter()
        .find(|g| g["alloc_id"] == id)
        .cloned()
}

/// Poll (every 100 ms: `f` mostly runs a tool or asks Slurm; at most
/// 60 s) until `f` holds.
#[track_caller]
pub(crate) fn wait_for(what: &str, f: impl FnMut() -> bool) {
    let limit = Duration::from_secs(60);
    let held = wait::within_every(limit, Duration::from_millis(100), f);
    assert!(held, "timed out after {limit:?} waiting until {what}");
}

/// A `palloc --hold --json` with `args`, inside the cluster; its stdout
/// lines and the allocation id of its grant.
pub(crate) fn hold(c: &Cluster, args: &[&str]) -> (std::process::Child, LineReader, String) {
    hold_with(tool(c, "palloc").no_color(), args)
}

/// [`hold`] with the `palloc` command given (its environment set).
pub(crate) fn hold_with(
    mut palloc: Command,
    args: &[&str],
) -> (std::process::Child, LineReader, String) {
    let mut child = palloc
        .args(["--hold", "--json"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start palloc --hold");
    let lines = LineReader::new(child.stdout.take().expect("stdout"));
    let first = lines
        .next_record("allocation", std::time::Duration::from_secs(60))
        .expect("palloc prints its grant");
    let v: serde_json::Value = serde_json::from_str(&first).expect("grant JSON");
    let id = v["alloc_id"].as_str().expect("alloc_id").to_string();
    (child, lines, id)
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
    let o = run(tool(&c, "palloc").no_color().args([
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
    let readies = || readies(&c);
    let (mut child, _lines, id) = hold(&c, &["-N", "1", "-t", "5m"]);
    wait_for("the first grow is done", || readies() >= 2);
    let o = run(tool(&c, "palloc")
        .no_color()
        .args(["--extend", &id, "-N", "1"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let nodes: Vec<String> =
        serde_json::from_value(grant(&c, &id).expect("granted")["nodes"].clone()).expect("nodes");
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    wait_for("the second grow is done", || readies() >= 3);
    let o = run(tool(&c, "pspawn")
        .no_color()
        .args(["--target", &id, "-n", "2", "--map-by", "node", "hostname"]));
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

/// `psched --status` of a live psched with partition `batch:1m:10m` and
/// one node: the queue with its limits, the pool, no free node while a
/// `palloc --hold -N 1` holds it, the second `palloc -N 1` waiting (as
/// `salloc` does) listed as pending, the grant with its expiry and seconds
/// left; `pwatch --status` pointed at psched's status socket shows the
/// same; once the first is released the waiting one is granted.
#[test]
fn status_shows_queues_pending_and_grants() {
    let tmp = crate::support::unique_tmpdir("psched-uri");
    let uri = tmp.path().join("psched.uri");
    let uri_arg = uri.display().to_string();
    let c = Cluster::start_with_psched(
        1,
        1,
        &["--partition", "batch:1m:10m", "--status-uri", &uri_arg],
    );
    let (mut a, _la, id_a) = hold(&c, &["-N", "1", "-t", "5m"]);
    let mut b = tool(&c, "palloc")
        .no_color()
        .args(["--hold", "--json", "-N", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the second palloc");
    let b_lines = LineReader::new(b.stdout.take().expect("stdout"));
    wait_for("the second request waits in psched's queue", || {
        psched_status(&c)["pending"]
            .as_array()
            .is_some_and(|p| p.len() == 1)
    });
    let s = psched_status(&c);
    assert_eq!(s["queues"][0]["name"], "batch", "{s}");
    assert_eq!(s["queues"][0]["default_secs"], 60, "{s}");
    assert_eq!(s["queues"][0]["max_secs"], 600, "{s}");
    assert_eq!(s["pool"], serde_json::json!(c.pool), "{s}");
    assert_eq!(s["free"], serde_json::json!([]), "{s}");
    assert_eq!(s["pending"][0]["nodes"], 1, "{s}");
    assert_eq!(s["pending"][0]["time_secs"], 60, "the queue's default: {s}");
    let g = grant(&c, &id_a).expect("granted");
    assert!(g["expires_at_ms"].as_u64().is_some(), "{g}");
    let left = g["left_secs"].as_u64().expect("seconds left");
    assert!((1..=300).contains(&left), "{g}");
    let o = run(tool(&c, "pwatch")
        .no_color()
        .args(["--status", "--json", "--uri"])
        .arg(format!("file:{uri_arg}")));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status JSON");
    let q = &p["scheduler"][0];
    assert_eq!(q["queue"], "batch", "{p}");
    assert_eq!(q["nodes"], 1, "{p}");
    assert_eq!(q["free"], 0, "{p}");
    assert_eq!(q["pending"], 1, "{p}");
    let r = p["reservations"]
        .as_array()
        .expect("reservations")
        .iter()
        .find(|r| r["alloc_id"] == id_a.as_str())
        .expect("the grant listed");
    assert_eq!(r["nodes"], serde_json::json!(c.pool), "{p}");
    assert!(r["expires_at"].as_u64().is_some(), "with its expiry: {p}");
    assert_eq!(p["nodes"][0]["alloc_id"], id_a.as_str(), "{p}");
    let o = run(tool(&c, "prelease").no_color().arg(&id_a));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    // Its grant (after a request record saying it waits, when the DVM
    // answers only once granted).
    let granted = b_lines
        .next_record("allocation", std::time::Duration::from_secs(60))
        .expect("the waiting palloc is granted");
    let v: serde_json::Value = serde_json::from_str(&granted).expect("grant JSON");
    let id_b = v["alloc_id"].as_str().expect("alloc_id");
    assert!(grant(&c, id_b).is_some(), "{}", c.psched_log());
    assert!(psched_status(&c)["pending"]
        .as_array()
        .is_some_and(Vec::is_empty));
    for ch in [&mut a, &mut b] {
        let _ = ch.kill();
        let _ = ch.wait();
    }
}

/// Issue 17: `pspawn -N 2 hostname` outside any allocation, as `srun -N2`
/// outside salloc: psched grants two of its nodes for the job, the job
/// prints two distinct pool nodes, and the reservation is given back (no
/// reservation left, psched's grant gone).
#[test]
fn pspawn_n2_outside_an_allocation_reserves_and_gives_back() {
    let c = Cluster::start_with_psched(2, 4, &[]);
    let o = run(tool(&c, "pspawn")
        .no_color()
        .args(["-N", "2", "-v", "hostname"]));
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
    let o =
        run(tool(&c, "pwatch")
            .no_color()
            .args(["--status", "--what", "reservations", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).expect("JSON");
    let left: Vec<&serde_json::Value> = v["reservations"]
        .as_array()
        .expect("reservations")
        .iter()
        .filter(|r| !is_idle(r))
        .collect();
    assert!(left.is_empty(), "{v}\n{ctx}");
}

/// Whether reservation `r` (of `pwatch --status --json`) is psched's own
/// reservation of idle nodes (docs/conformance.md, P10).
pub(crate) fn is_idle(r: &serde_json::Value) -> bool {
    r["alloc_id"]
        .as_str()
        .is_some_and(|id| id.starts_with(pmix_tools::psched::dvm::IDLE_REQ_ID))
}
