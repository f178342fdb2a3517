//! The four tools against a multi-node PRRTE master DVM on this machine
//! (`support::cluster`: N nodes, each a real `prted` in its own UTS
//! namespace, all inside a private network namespace the test creates).
//! Each test starts its own cluster (about a second) and every tool runs
//! inside that namespace.

use std::process::{Command, Output, Stdio};

use crate::support::cluster::{processes_in, Cluster};
use crate::support::{cargo_bin, run_with_timeout, show, text, user_path};

/// `name` run inside the cluster's namespace, finding its DVM through
/// TMPDIR, with our binaries on PATH as after installing them.
fn tool(c: &Cluster, name: &str) -> Command {
    let mut cmd = c.command(cargo_bin(name));
    cmd.env("PATH", user_path()).env("NO_COLOR", "1");
    cmd
}

fn run(cmd: &mut Command) -> Output {
    run_with_timeout(cmd.stdin(Stdio::null()), 60)
}

/// Files anywhere under `dir` or in /dev/shm that name `pid` (what a
/// DVM and its daemons could leave behind).
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
    let o = run(tool(&c, "pspawn").args(["-n", "4", "--map-by", "node", "hostname"]));
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
