//! The four tools against a multi-node PRRTE master DVM on this machine
//! (`support::cluster`: N nodes, each a real `prted` in its own UTS
//! namespace, all inside a private network namespace the test creates).
//! Each test starts its own cluster (about a second) and every tool runs
//! inside that namespace.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::cluster::{processes_in, Cluster};
use crate::support::{run_with_timeout, show, text, tool, user_path, wait, ToolCommand};

fn run(cmd: &mut Command) -> Output {
    run_with_timeout(cmd.stdin(Stdio::null()), 60)
}

/// Files in /dev/shm that name `pid` (what a DVM and its daemons could
/// leave behind there).
fn shm_files_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(&pid.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// A 4-node cluster: `pspawn -n 4 --map-by node hostname` prints four
/// distinct node names (each rank's own UTS namespace); stopping it ends
/// `prte` cleanly, its daemons with it (nothing needs killing), and leaves
/// no process in the namespace and no file behind.
#[test]
fn four_nodes_map_by_node_then_nothing_left_behind() {
    let c = Cluster::start(4, 2);
    let o = run(tool(&c, "pspawn")
        .no_color()
        .args(["-n", "4", "--map-by", "node", "hostname"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let mut hosts: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    hosts.sort();
    assert_eq!(
        hosts,
        ["node01", "node02", "node03", "node04"],
        "{}",
        show(&o)
    );
    assert!(
        c.processes().len() >= 4,
        "prte and three daemons run in the namespace"
    );
    let (dir, netns, pid) = (c.dir().to_path_buf(), c.netns_id().to_string(), c.pid);
    let stopped = c.stop();
    assert!(
        stopped.prte.is_some_and(|s| s.success()),
        "prte ends cleanly on SIGTERM: {stopped:?}"
    );
    assert!(
        stopped.swept.is_empty(),
        "processes left after prte exited (killed by pid): {stopped:?}"
    );
    assert!(!netns.is_empty());
    assert_eq!(processes_in(&netns, 0), Vec::<i32>::new(), "left running");
    assert!(!dir.exists(), "{} left behind", dir.display());
    assert_eq!(shm_files_of(pid), Vec::<String>::new(), "left in /dev/shm");
}

/// 200 launches, one after the other, of 8 processes that end at once
/// (`echo`, 2 on each of 4 nodes' daemons): every one prints its 8 lines and
/// exits 0, and `prte` is still up. With PRRTE master's default worker
/// threads `prte` aborted at launch 31 to 166 of such a loop
/// (docs/conformance.md, D9); the cluster starts it without them
/// (`support::MASTER_PRTE_ARGS`), as README tells users to.
#[test]
fn prte_survives_short_processes_launched_side_by_side() {
    let c = Cluster::start(4, 2);
    for i in 1..=200 {
        let o = run(tool(&c, "pspawn")
            .no_color()
            .args(["-n", "8", "--map-by", "node", "echo", "x"]));
        assert!(
            o.status.code() == Some(0) && text(&o.stdout).lines().count() == 8,
            "launch {i} of 200: {}\n{}",
            show(&o),
            c.logs()
        );
    }
    assert!(!c.prte_exited(), "{}", c.logs());
}

/// `scripts/prrte-cluster.sh` as a user runs it: `start -n 3 -s 1` prints
/// how to reach the cluster, `run pspawn` lands on the three nodes, `stop`
/// leaves no process in the namespace and no state directory.
#[test]
fn the_user_script_starts_runs_and_stops_cleanly() {
    let state = crate::support::unique_tmpdir("usercluster");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/prrte-cluster.sh");
    let sh = |args: &[&str]| {
        let mut cmd = Command::new(&script);
        crate::support::scrub_pmix_env(&mut cmd);
        cmd.args(args)
            .env("PRRTE_CLUSTER_STATE", state.path())
            .env("PRRTE_PREFIX", crate::support::master_dir().join("prrte"))
            .env("PATH", user_path());
        run(&mut cmd)
    };
    let up = sh(&["start", "-n", "3", "-s", "1"]);
    let guard = StopOnDrop(&sh);
    assert_eq!(up.status.code(), Some(0), "{}", show(&up));
    let said = text(&up.stdout);
    assert!(said.contains("3 nodes x 1 slots"), "{said}");
    assert!(
        said.contains("nsenter --net=/proc/"),
        "prints the prefix: {said}"
    );
    let holder: u32 = std::fs::read_to_string(state.join("holder.pid"))
        .expect("holder pid")
        .trim()
        .parse()
        .expect("a pid");
    let netns = crate::support::cluster::ns_link(holder).expect("namespace");
    let o = sh(&["run", "pspawn", "-n", "3", "--map-by", "node", "hostname"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut hosts: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    hosts.sort();
    assert_eq!(hosts, ["node01", "node02", "node03"], "{}", show(&o));
    std::mem::forget(guard);
    let down = sh(&["stop"]);
    assert_eq!(down.status.code(), Some(0), "{}", show(&down));
    assert_eq!(processes_in(&netns, 0), Vec::<i32>::new(), "left running");
    assert!(!state.exists(), "state directory left behind");
}

/// Runs `stop` when a failed assertion unwinds past it.
struct StopOnDrop<'a>(&'a dyn Fn(&[&str]) -> Output);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        (self.0)(&["stop"]);
    }
}

/// `pwatch --status` across nodes: every node with its slots, the
/// reservation holding it, what runs on it (`JOBS`) and its slots in use
/// (PRRTE reports none: counted from the jobs' process tables).
#[test]
fn pwatch_status_shows_every_node_its_jobs_and_reservation() {
    let c = Cluster::start(4, 2);
    let mut hold = tool(&c, "palloc").no_color();
    hold.args(["-w", "node02", "--hold", "--json"]);
    let hold = crate::support::blackbox::Bg::start(hold);
    let id = crate::support::blackbox::str_field(&hold.wait_for("allocation"), "alloc_id");
    let gate = c.dir().join("gate");
    let wait = format!("while [ ! -e {} ]; do sleep 0.05; done", gate.display());
    let spawn = |args: &[&str]| {
        let o = run(tool(&c, "pspawn")
            .no_color()
            .args(["--detach", "--json"])
            .args(args)
            .args(["sh", "-c", &wait]));
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        crate::support::json_objects(&o)[0]["nspace"]
            .as_str()
            .expect("nspace")
            .to_string()
    };
    let inside = spawn(&["--target", &id, "-n", "2"]);
    let outside = spawn(&["-n", "3", "--map-by", "node"]);
    // Each look runs pwatch: one every 50 ms, for at most 30 s.
    let (limit, step) = (Duration::from_secs(30), Duration::from_millis(50));
    let nodes = wait::value_within_every(limit, step, || {
        let o = run(tool(&c, "pwatch")
            .no_color()
            .args(["--status", "--what", "nodes", "--json"]));
        let recs = crate::support::json_records(&text(&o.stdout));
        let placed = recs
            .iter()
            .filter(|n| !n["jobs"].as_array().is_none_or(Vec::is_empty));
        (placed.count() == 4).then_some(recs)
    })
    .expect("timed out waiting until both jobs placed");
    let node = |name: &str| {
        nodes
            .iter()
            .find(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {nodes:?}"))
            .clone()
    };
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    let jobs = |n: &serde_json::Value| crate::support::blackbox::strings(&n["jobs"]);
    let n2 = node("node02");
    assert_eq!(n2["slots"], 2, "{n2}");
    assert_eq!(n2["alloc_id"], id.as_str(), "{n2}");
    assert_eq!(jobs(&n2), vec![inside.clone()], "{n2}");
    assert_eq!(
        (n2["state"].as_str(), n2["slots_used"].as_u64()),
        (Some("busy"), Some(2))
    );
    for name in ["node03", "node04"] {
        let n = node(name);
        assert!(n["alloc_id"].is_null(), "{n}");
        assert_eq!(jobs(&n), vec![outside.clone()], "{n}");
        assert_eq!(n["slots_used"], 1, "{n}");
    }
    assert!(jobs(&node("node01")).contains(&outside), "{nodes:?}");
    let table = run(tool(&c, "pwatch")
        .no_color()
        .args(["--status", "--what", "nodes"]));
    let t = text(&table.stdout);
    assert!(t.lines().next().is_some_and(|h| h.contains("JOBS")), "{t}");
    let row = t
        .lines()
        .find(|l| l.starts_with(" node02") || l.starts_with("node02"));
    let row = row.unwrap_or_else(|| panic!("no node02 row:\n{t}"));
    assert!(
        row.contains(&id) && row.contains(&inside) && row.contains("busy 2/2"),
        "{t}"
    );
    std::fs::write(&gate, "").expect("open the gate");
    hold.stop(nix::sys::signal::Signal::SIGTERM);
}

/// pspawn MPMD spread over nodes: every app's output comes back from its
/// node, `--tag-output` tags each line with its rank, stdin reaches rank 0
/// on a remote node (and not rank 1), and a failing rank on a remote node
/// sets the exit status.
#[test]
fn pspawn_mpmd_across_nodes_output_tags_stdin_and_remote_failure() {
    crate::support::rerun::once_more_if_a_peer_died(|| {
        let c = &Cluster::start(4, 2);
        let o = run(tool(&c, "pspawn").no_color().args([
            "--tag-output",
            "-n",
            "1",
            "-H",
            "node02",
            "sh",
            "-c",
            "echo A $(hostname)",
            ":",
            "-n",
            "1",
            "-H",
            "node03",
            "sh",
            "-c",
            "echo B $(hostname)",
            ":",
            "-n",
            "2",
            "-H",
            "node04:2",
            "sh",
            "-c",
            "echo C $(hostname)",
        ]));
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                "[0] A node02",
                "[1] B node03",
                "[2] C node04",
                "[3] C node04"
            ],
            "{}",
            show(&o)
        );
        // stdin to rank 0, which runs on node03; rank 1 (node04) gets none.
        let mut cmd = tool(&c, "pspawn").no_color();
        cmd.args([
            "-n",
            "1",
            "-H",
            "node03",
            "sh",
            "-c",
            "read x; echo \"$x on $(hostname)\"",
            ":",
            "-n",
            "1",
            "-H",
            "node04",
            "sh",
            "-c",
            "cat; echo end on $(hostname)",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start pspawn");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(b"hello\n").expect("write stdin");
        }
        let o = crate::support::wait_output(child, std::time::Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
        lines.sort();
        assert_eq!(lines, ["end on node04", "hello on node03"], "{}", show(&o));
        // A failing rank, on a remote node: its status is pspawn's. (Alone: an
        // MPMD job with a failing rank once wedged PRRTE master, D5.)
        let o = run(tool(&c, "pspawn").no_color().args([
            "-n",
            "1",
            "-H",
            "node04",
            "sh",
            "-c",
            "echo failing on $(hostname); exit 7",
        ]));
        assert_eq!(o.status.code(), Some(7), "{}", show(&o));
        assert_eq!(text(&o.stdout).trim(), "failing on node04", "{}", show(&o));
    });
}

/// `palloc -w 'node[02-03]'` reserves exactly those two nodes, and a
/// command run under it spreads over them with `--map-by node`.
#[test]
fn palloc_nodelist_range_reserves_both_nodes() {
    let c = Cluster::start(4, 2);
    let o = run(tool(&c, "palloc").no_color().args([
        "-w",
        "node[02-03]",
        "--json",
        "--",
        "pspawn",
        "-n",
        "2",
        "--map-by",
        "node",
        "--json",
        "sh",
        "-c",
        "echo host=$PMIX_HOSTNAME",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let recs = crate::support::json_records(&text(&o.stdout));
    let a = recs
        .iter()
        .find(|r| r["type"] == "allocation")
        .unwrap_or_else(|| panic!("no allocation: {}", show(&o)));
    assert_eq!(
        crate::support::blackbox::strings(&a["nodes"]),
        ["node02", "node03"]
    );
    assert_eq!(a["reserved"], true, "{a}");
    let mut hosts: Vec<String> = recs
        .iter()
        .filter(|r| r["type"] == "output")
        .filter_map(|r| r["line"].as_str()?.strip_prefix("host=").map(String::from))
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["node02", "node03"], "{}", show(&o));
}
