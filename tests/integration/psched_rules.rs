//! Spec 001's scheduler rules on PRRTE master with psched attached (the
//! multi-node harness of `psched_cluster`): the warning relayed only to the
//! requester, the scheduler as implicit owner, and what each inheritance
//! rule does with psched's nodes. Where PRRTE master differs from the spec
//! the test pins what it does (deviations P1–P7 in docs/conformance.md).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::psched_cluster::{grant, hold, psched_status, readies, run, wait_for};
use crate::support::cluster::Cluster;
use crate::support::tool::{watching, Watching};
use crate::support::{cargo_bin, json_records, show, text, tool, LineReader, ToolCommand};

/// The names of psched's nodes in `key` (`free`, `retained`) of its status.
fn status_nodes(c: &Cluster, key: &str) -> Vec<String> {
    serde_json::from_value(psched_status(c)[key].clone()).unwrap_or_default()
}

/// When psched last read the DVM's allocation ids (ms since the epoch).
fn reconciled_at(c: &Cluster) -> u64 {
    psched_status(c)["reconciled_at_ms"].as_u64().unwrap_or(0)
}

/// Wait (bounded) until psched has compared its grants with the DVM's
/// allocations twice after now, so that a grant the DVM ended before now
/// and that psched still holds is one psched decided to keep.
fn wait_two_reconciles(c: &Cluster) {
    let t0 = pmix_tools::psched::now_ms();
    wait_for("psched read the DVM's allocations", || {
        reconciled_at(c) > t0
    });
    let t1 = reconciled_at(c);
    wait_for("psched read them again", || reconciled_at(c) > t1);
}

/// The hosts a default-pool `pspawn -n N --map-by node hostname` ran on.
fn default_pool_hosts(c: &Cluster, n: usize) -> Vec<String> {
    let o = run(tool(c, "pspawn").no_color().args([
        "-n",
        &n.to_string(),
        "--map-by",
        "node",
        "hostname",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let mut h: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    h.sort();
    h
}

/// The node names `pwatch --status --what nodes --json` lists (PRRTE's
/// node table as psched amends it).
fn dvm_nodes(c: &Cluster) -> Vec<String> {
    let o = run(tool(c, "pwatch")
        .no_color()
        .args(["--status", "--what", "nodes", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status JSON");
    v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["name"].as_str().map(String::from))
        .collect()
}

/// P4: after psched's session termination PRRTE master keeps `node` in
/// the DVM and psched parks it; `pwatch --status` asks psched and shows it
/// as the scheduler's free node, not as a node of the DVM (as on pdvm), and
/// no default-pool job runs there.
fn assert_parked_and_unused(c: &Cluster, node: &str) {
    let listed = dvm_nodes(c);
    assert!(
        !listed.iter().any(|n| n == node),
        "{node} not a DVM node to the user: {listed:?}"
    );
    let hosts = default_pool_hosts(c, 2);
    assert_eq!(hosts, ["node01", "node01"], "{}", c.logs());
}

/// A job body that writes its pid to `pidfile` and then waits (at most
/// 300 s) for `go` to exist.
fn waiting_job(pidfile: &Path, go: &Path) -> String {
    format!(
        "echo $$ > {p}; i=0; while [ ! -e {g} ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done",
        p = pidfile.display(),
        g = go.display()
    )
}

/// The pid a [`waiting_job`] wrote, once it did.
fn job_pid(pidfile: &Path) -> u32 {
    let mut pid = 0;
    wait_for("the job started", || {
        pid = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid != 0
    });
    pid
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

/// The allocation id on the first line of a `palloc --json` run.
fn first_alloc_id(stdout: &[u8]) -> String {
    let recs = json_records(&text(stdout));
    recs.first()
        .and_then(|v| v["alloc_id"].as_str())
        .expect("palloc printed its grant")
        .to_string()
}

fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Read `lines` until the first timeout warning; the lines before it too.
fn until_warning(lines: &LineReader) -> (serde_json::Value, Vec<String>) {
    let mut before = Vec::new();
    loop {
        let l = lines
            .next_line(Duration::from_secs(60))
            .expect("palloc still runs");
        if l.contains("timeout-warning") {
            return (serde_json::from_str(&l).expect("warning JSON"), before);
        }
        before.push(l);
    }
}

/// Whatever a child still prints after it is stopped.
fn rest(mut child: Child, lines: &LineReader) -> String {
    stop(&mut child);
    lines.rest(Duration::from_secs(10))
}

/// §8.2.1.9.5: psched's warning reaches only the requester, carrying the
/// allocation id, the request id and the seconds left; it is advisory
/// (the reservation still works after it). Two holders A and B each get
/// their own warning and not the other's; a foreign tool listening to
/// every event (`pwatch --as-tool`) gets none. Then (§8.2.1.5.1) `palloc
/// --extend A -t 30s` moves psched's expiry.
#[test]
fn warning_only_to_requester_advisory_then_extend() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let Watching {
        child: watcher,
        events: seen,
        ..
    } = watching(tool(&c, "pwatch").no_color().args(["--as-tool", "--json"]));
    let (a_child, a_lines, a) = hold(&c, &["-N", "1", "-t", "20s", "--warn-timeout", "10s"]);
    wait_for("the first grow is done", || readies(&c) >= 2);
    let (b_child, b_lines, b) = hold(&c, &["-N", "1", "-t", "25s", "--warn-timeout", "12s"]);
    let g = grant(&c, &a).expect("granted");
    let before = g["expires_at_ms"].as_u64().expect("an expiry");
    let req_id = g["req_id"].as_str().expect("a request id").to_string();
    let (warned, _) = until_warning(&a_lines);
    assert_eq!(warned["alloc_id"], a.as_str(), "{warned}");
    assert_eq!(warned["request_id"], req_id.as_str(), "{warned}");
    let left = warned["time_remaining"].as_u64().expect("time left");
    assert!((1..=10).contains(&left), "seconds left: {warned}");
    // Advisory: the reservation lives on and a job runs in it.
    assert!(grant(&c, &a).is_some(), "still granted after the warning");
    let o = run(tool(&c, "pspawn")
        .no_color()
        .args(["--target", &a, "-n", "1", "hostname"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let nodes: Vec<String> = serde_json::from_value(g["nodes"].clone()).expect("nodes");
    assert_eq!(text(&o.stdout).trim(), nodes[0], "ran on the granted node");
    let o = run(tool(&c, "palloc")
        .no_color()
        .args(["--extend", &a, "-t", "30s"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let after = grant(&c, &a).expect("still granted")["expires_at_ms"]
        .as_u64()
        .expect("an expiry");
    assert_eq!(after, before + 30_000, "psched's expiry moved by 30 s");
    // B's own warning reaches B, and B only.
    let (warned_b, b_before) = until_warning(&b_lines);
    assert_eq!(warned_b["alloc_id"], b.as_str(), "{warned_b}");
    assert!(!b_before.iter().any(|l| l.contains(&a)), "{b_before:?}");
    let a_rest = rest(a_child, &a_lines);
    assert!(
        !a_rest.contains("timeout-warning"),
        "A got only its own: {a_rest}"
    );
    let _ = rest(b_child, &b_lines);
    let heard = rest(watcher, &seen);
    assert!(
        !heard.contains("timeout-warning"),
        "none for pwatch: {heard}"
    );
}

/// §8.2.1.9.1 (3), §8.2.1.9.4: an allocation left to expire is ended by
/// psched; the job running on its node is terminated; the node is free in
/// psched's pool. PRRTE master still lists the node, though no default-pool
/// job runs there (P4).
#[test]
fn expiry_terminates_the_job_on_the_departing_node() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let (mut holder, _l, id) = hold(&c, &["-N", "1", "-t", "15s"]);
    let nodes: Vec<String> =
        serde_json::from_value(grant(&c, &id).expect("granted")["nodes"].clone()).expect("nodes");
    wait_for("the grow is done", || readies(&c) >= 2);
    let (pidfile, go) = (c.dir().join("job.pid"), c.dir().join("job.go"));
    let mut job = tool(&c, "pspawn")
        .no_color()
        .args(["--target", &id, "-n", "1", "sh", "-c"])
        .arg(waiting_job(&pidfile, &go))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pspawn");
    let pid = job_pid(&pidfile);
    wait_for("psched ended the grant", || grant(&c, &id).is_none());
    wait_for("the job on the departing node ended", || !alive(pid));
    assert!(!go.exists(), "ended before it was let go");
    let free = status_nodes(&c, "free");
    assert!(free.contains(&nodes[0]), "{:?} free again: {free:?}", nodes);
    assert_parked_and_unused(&c, &nodes[0]);
    let _ = crate::support::wait_exit(&mut job, Duration::from_secs(30));
    stop(&mut holder);
}

/// §8.2.1.7 / §8.2.1.9.1 (3): the scheduler is an implicit owner and may
/// release any reservation: `psched --release ID` of a reservation held by
/// another tool's `palloc --hold`. psched frees the node and tells PRRTE to
/// end the session, as at expiry: the job running there is terminated;
/// PRRTE master still lists the node, unused (P4).
#[test]
fn scheduler_releases_any_reservation() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let (mut holder, _l, id) = hold(&c, &["-N", "1", "-t", "5m"]);
    let nodes: Vec<String> =
        serde_json::from_value(grant(&c, &id).expect("granted")["nodes"].clone()).expect("nodes");
    wait_for("the grow is done", || readies(&c) >= 2);
    let (pidfile, go) = (c.dir().join("job.pid"), c.dir().join("job.go"));
    let mut job = tool(&c, "pspawn")
        .no_color()
        .args(["--target", &id, "-n", "1", "sh", "-c"])
        .arg(waiting_job(&pidfile, &go))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pspawn");
    let pid = job_pid(&pidfile);
    let o = run(Command::new(cargo_bin("psched"))
        .arg("--release")
        .arg(&id)
        .arg("--ledger")
        .arg(c.ledger_path()));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    assert!(grant(&c, &id).is_none(), "released in the ledger");
    assert!(status_nodes(&c, "free").contains(&nodes[0]));
    // Unknown now: refused, exit 1.
    let again = run(Command::new(cargo_bin("psched"))
        .arg("--release")
        .arg(&id)
        .arg("--ledger")
        .arg(c.ledger_path()));
    assert_eq!(again.status.code(), Some(1), "{}", show(&again));
    wait_for("the job on the released node ended", || !alive(pid));
    assert!(!go.exists(), "ended before it was let go");
    assert_parked_and_unused(&c, &nodes[0]);
    let _ = crate::support::wait_exit(&mut job, Duration::from_secs(30));
    stop(&mut holder);
}

/// §8.2.1.9.2 CHILD: the reservation outlives its owner while a job
/// spawned into it runs, and its node returns to psched when that job
/// ends. PRRTE master tells psched nothing (P3): psched sees the
/// reservation gone by query and frees the node.
#[test]
fn child_holds_then_returns_node_to_psched() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let (pidfile, go) = (c.dir().join("job.pid"), c.dir().join("job.go"));
    let spawn = format!(
        "pspawn --detach --target \"$PMIX_ALLOC_ID\" -n 1 sh -c '{}' >/dev/null",
        waiting_job(&pidfile, &go)
    );
    let o = run(tool(&c, "palloc")
        .no_color()
        .env("PRRTE_OUT", c.dir().join("prte.out"))
        .args(["-N", "1", "-t", "5m", "--inherit", "child", "--json", "--"])
        .args(["sh", "-c", &spawn]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let id = first_alloc_id(&o.stdout);
    let pid = job_pid(&pidfile);
    wait_two_reconciles(&c);
    assert!(
        grant(&c, &id).is_some(),
        "held while its child runs: {}",
        c.psched_log()
    );
    assert!(alive(pid));
    std::fs::write(&go, "").expect("let the job go");
    wait_for("psched freed the drained reservation's node", || {
        grant(&c, &id).is_none()
    });
    assert_eq!(status_nodes(&c, "free").len(), 2, "both pool nodes free");
    assert!(status_nodes(&c, "retained").is_empty());
}

/// §8.2.1.9.2 DEFAULT and CHILD_DEFAULT: at the owner's end (DEFAULT) or
/// its last child's (CHILD_DEFAULT) the reservation ends but its node stays
/// in the DVM's default pool: psched keeps it out of its free pool
/// (`retained`) and a default-pool job runs on it.
#[test]
fn default_and_child_default_keep_nodes_in_the_dvm() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let o = run(tool(&c, "palloc")
        .no_color()
        .env("PRRTE_OUT", c.dir().join("prte.out"))
        .args([
            "-N",
            "1",
            "-t",
            "5m",
            "--inherit",
            "default",
            "--json",
            "--",
        ])
        .args(["sh", "-c", "true"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let a = first_alloc_id(&o.stdout);
    let (pidfile, go) = (c.dir().join("job.pid"), c.dir().join("job.go"));
    let spawn = format!(
        "pspawn --detach --target \"$PMIX_ALLOC_ID\" -n 1 sh -c '{}' >/dev/null",
        waiting_job(&pidfile, &go)
    );
    let o = run(tool(&c, "palloc")
        .no_color()
        .env("PRRTE_OUT", c.dir().join("prte.out"))
        .args([
            "-N",
            "1",
            "-t",
            "5m",
            "--inherit",
            "child-default",
            "--json",
        ])
        .args(["--", "sh", "-c", &spawn]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let b = first_alloc_id(&o.stdout);
    let pid = job_pid(&pidfile);
    wait_for("DEFAULT: the reservation ended", || grant(&c, &a).is_none());
    wait_two_reconciles(&c);
    assert!(
        grant(&c, &b).is_some(),
        "CHILD_DEFAULT: held while its child runs"
    );
    assert!(alive(pid));
    std::fs::write(&go, "").expect("let the job go");
    wait_for("the CHILD_DEFAULT reservation ended", || {
        grant(&c, &b).is_none()
    });
    let kept = status_nodes(&c, "retained");
    assert_eq!(
        kept,
        c.pool,
        "both nodes stay in the DVM: {}",
        c.psched_log()
    );
    assert!(status_nodes(&c, "free").is_empty(), "none back in the pool");
    let mut want = vec!["node01".to_string()];
    want.extend(c.pool.iter().cloned());
    assert_eq!(default_pool_hosts(&c, 3), want, "{}", c.logs());
}

/// Whether a process whose command line is exactly `argv` runs on this
/// machine.
fn runs(argv: &[&str]) -> bool {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc").is_ok_and(|d| {
        d.flatten()
            .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want))
    })
}

/// Issue 40: under rule NONE, the owner's end stops its jobs before any
/// node of the reservation is granted again (spec 001 §8.2.1.9.2, nodes
/// leaving the DVM). PRRTE master, told DEFAULT by psched (so that it
/// keeps the daemons, P10), left the job running and psched granted its
/// node to the next request; psched now stops the work on the nodes first.
#[test]
fn rule_none_stops_the_owners_jobs_before_the_node_is_granted_again() {
    let c = Cluster::start_with_psched(1, 1, &[]);
    let job = ["sleep", "6143"];
    let o = run(tool(&c, "palloc").no_color().args([
        "-N",
        "1",
        "--inherit",
        "none",
        "--",
        "sh",
        "-c",
        "pspawn --detach sleep 6143 && sleep 2",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    // The next request gets the only pool node; by then the job is gone.
    let o = run(tool(&c, "palloc")
        .no_color()
        .args(["-N", "1", "--", "pspawn", "hostname"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    assert_eq!(text(&o.stdout).trim(), "node02", "{}", show(&o));
    wait_for("the job stopped", || !runs(&job));
    assert!(
        c.psched_log()
            .contains("the jobs still on node02 are stopped"),
        "{}",
        c.psched_log()
    );
}
