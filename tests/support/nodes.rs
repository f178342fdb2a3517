//! The conformance suite's driver for the 4-node PRRTE master DVM
//! ([`crate::support::cluster`]): `node01` … `node04`, 2 slots each, a real
//! `prted` per node, run through our four binaries inside the cluster's
//! network namespace. Shared by `tests/conformance/prrte_master.rs` (the
//! clauses of spec 001, one cluster per test) and
//! `tests/conformance/prrte_nodes.rs` (the clauses that need several nodes).
//!
//! * A **tool** requester is one of our tools run from outside
//!   ([`Nodes::tool`]); a **tool owner** is `palloc -w NODES --hold`
//!   ([`Nodes::hold`]), and our tools run from outside with `--target ID`
//!   are relayed by that holder (they act for the owner); `--as-tool` makes
//!   a tool really foreign ([`assert_foreign`]).
//! * An **application** requester is a tool run inside a job PRRTE launched
//!   ([`Nodes::job`]: `pspawn -H node01 -n 1 sh -c SCRIPT`); jobs get the
//!   DVM's `PATH`, which lacks our tools, so scripts name them by absolute
//!   path ([`bin`]).
//! * Where processes ran is read from their host names (`$PMIX_HOSTNAME`,
//!   the node's UTS name), so isolation is proved, not inferred.
//! * [`on_cluster`] runs a test on a fresh cluster, once more when PRRTE
//!   master itself died (docs/conformance.md, D9).

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::blackbox::{eventually, str_field, Bg, GateJob, Out, POLL, TOOL_SECS};
use crate::support::cluster::Cluster;
use crate::support::{cargo_bin, try_run_with_timeout, wait, ToolCommand, ToolHost};

/// Nodes per cluster.
pub const NODES: u32 = 4;
/// Slots per node.
pub const SLOTS: u32 = 2;
/// All four nodes.
pub const ALL: [&str; 4] = ["node01", "node02", "node03", "node04"];
/// The three nodes of the default session while `node02` is reserved.
pub const OTHERS: [&str; 3] = ["node01", "node03", "node04"];

/// A 4-node PRRTE master DVM private to one test (stopped on drop), driven
/// only through our binaries run inside its network namespace.
pub struct Nodes {
    /// The running cluster.
    pub c: Cluster,
}

impl Nodes {
    /// Start `node01`…`node04` with 2 slots each.
    pub fn start() -> Nodes {
        let c = Cluster::start(NODES, SLOTS);
        fs::create_dir_all(c.dir().join("ctl")).expect("control dir");
        Nodes { c }
    }

    /// One of our tools, run from outside any job (inside the namespace),
    /// `NO_COLOR=1` and `PATH` as inherited ([`ToolHost::tool_command`]).
    pub fn tool_cmd(&self, name: &str) -> Command {
        self.c.tool_command(cargo_bin(name)).no_color()
    }

    /// Run a tool from outside and wait for it (at most [`TOOL_SECS`]; past
    /// that the test fails with the DVM's logs).
    #[track_caller]
    pub fn tool(&self, name: &str, args: &[&str]) -> Out {
        let mut cmd = self.tool_cmd(name);
        cmd.args(args);
        self.run(cmd, &format!("{name} {args:?}"))
    }

    /// Run `cmd` (made by [`Nodes::tool_cmd`]) and wait for it, as
    /// [`Nodes::tool`] does.
    #[track_caller]
    pub fn run(&self, mut cmd: Command, what: &str) -> Out {
        match try_run_with_timeout(&mut cmd, Duration::from_secs(TOOL_SECS)) {
            Ok(o) => Out {
                code: o.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            },
            Err(o) => panic!(
                "{what} did not end within {TOOL_SECS} s:\n{}\n{}",
                crate::support::show(&o),
                self.c.logs()
            ),
        }
    }

    /// `pspawn -H node01 -n 1 sh -c SCRIPT` (default session): the tools
    /// SCRIPT runs are application requesters acting for that job's
    /// namespace. Its stdout, stderr and exit status come back through
    /// pspawn.
    #[track_caller]
    pub fn job(&self, script: &str) -> Out {
        self.tool("pspawn", &["-H", "node01", "-n", "1", "sh", "-c", script])
    }

    /// `palloc -w NODES ARGS -- sh -c SCRIPT` from outside: SCRIPT's tools
    /// act for palloc's namespace, the reservation's owner.
    #[track_caller]
    pub fn under_palloc(&self, nodes: &str, args: &[&str], script: &str) -> Out {
        let mut cmd = self.tool_cmd("palloc");
        cmd.args(["-w", nodes])
            .args(args)
            .args(["--", "sh", "-c", script]);
        self.run(cmd, &format!("palloc -w {nodes} {args:?} -- {script}"))
    }

    /// Panic, with the DVM's logs, unless `o` exited 0.
    #[track_caller]
    pub fn expect_ok(&self, o: &Out) {
        assert_eq!(o.code, 0, "unexpected exit code:\n{o}\n{}", self.c.logs());
    }

    /// `palloc -w NODES --hold --json ARGS` in the background, once granted;
    /// the holder and its allocation id.
    pub fn hold(&self, nodes: &str, args: &[&str]) -> (Bg, String) {
        let mut cmd = self.tool_cmd("palloc");
        cmd.args(["-w", nodes, "--hold", "--json"]).args(args);
        let bg = Bg::start(cmd);
        let id = str_field(&bg.wait_for("allocation"), "alloc_id");
        (bg, id)
    }

    /// A path in the test's control directory (scripts, gates, markers).
    pub fn path(&self, name: &str) -> String {
        self.ctl().join(name).to_string_lossy().into_owned()
    }

    fn ctl(&self) -> PathBuf {
        self.c.dir().join("ctl")
    }

    /// A gate job (records pid and host, runs until opened).
    pub fn gate(&self, tag: &str) -> GateJob {
        GateJob::in_dir(&self.ctl(), tag)
    }

    /// A job body that leaves a marker file if it ever runs; (cmd, marker).
    pub fn marking(&self) -> (String, String) {
        let marker = self.path("ran");
        (format!("touch {marker}"), marker)
    }

    /// `pwatch --status --json` from outside: every status object.
    #[track_caller]
    pub fn status(&self) -> Vec<Value> {
        let o = self.tool("pwatch", &["--status", "--json"]);
        self.expect_ok(&o);
        o.json()
    }

    /// The reservation objects of the status.
    #[track_caller]
    pub fn reservations(&self) -> Vec<Value> {
        of_type(self.status(), "reservation")
    }

    /// The reservation with this id, if listed.
    #[track_caller]
    pub fn reservation(&self, id: &str) -> Option<Value> {
        self.reservations()
            .into_iter()
            .find(|r| r["alloc_id"] == id)
    }

    /// The reservation ids listed now.
    #[track_caller]
    pub fn reservation_ids(&self) -> Vec<String> {
        self.reservations()
            .iter()
            .map(|r| str_field(r, "alloc_id"))
            .collect()
    }

    /// Wait until no reservation is listed.
    #[track_caller]
    pub fn await_no_reservation(&self, why: &str) {
        eventually(why, || self.reservations().is_empty());
    }

    /// The node object of `name` in the status.
    #[track_caller]
    pub fn node(&self, name: &str) -> Value {
        of_type(self.status(), "node")
            .into_iter()
            .find(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in the status\n{}", self.c.logs()))
    }

    /// The reservation holding node `name`, if any.
    #[track_caller]
    pub fn node_owner(&self, name: &str) -> Option<String> {
        self.node(name)["alloc_id"].as_str().map(String::from)
    }

    /// `pspawn ARGS sh -c 'echo host=$PMIX_HOSTNAME'` from outside (read
    /// the hosts with [`crate::support::blackbox::hosts`], or with
    /// [`json_hosts`] under `--json`).
    #[track_caller]
    pub fn hosts_of(&self, args: &[&str]) -> Out {
        let mut a = args.to_vec();
        a.extend(["sh", "-c", "echo host=$PMIX_HOSTNAME"]);
        self.tool("pspawn", &a)
    }

    /// The hosts a default-session job (`-n N --map-by node --json`, from
    /// outside) of `per_node` processes on each of `nodes` ran on, sorted;
    /// the job is checked to succeed.
    #[track_caller]
    pub fn default_pool_hosts(&self, nodes: &[&str], per_node: u32) -> Vec<String> {
        let n = (nodes.len() as u32 * per_node).to_string();
        let j = self.hosts_of(&["-n", &n, "--map-by", "node", "--json"]);
        self.expect_ok(&j);
        json_hosts(&j)
    }

    /// Which nodes still launch a process (`pspawn -H NODE -n 1`).
    pub fn live_nodes(&self) -> Vec<String> {
        self.c
            .nodes
            .iter()
            .filter(|n| self.hosts_of(&["-H", n, "-n", "1"]).code == 0)
            .cloned()
            .collect()
    }
}

/// Run `test` on a fresh cluster; if it fails because PRRTE master itself
/// died (D9: a job that spawns jobs now and then makes `prte` abort), run
/// it once more on another fresh cluster, counted against the rerun budget
/// ([`crate::support::rerun`]). A second failure, or any failure with
/// `prte` alive, fails the test.
pub fn on_cluster(test: impl Fn(&Nodes)) {
    crate::support::rerun::once_more_if_a_peer_died(|| test(&Nodes::start()))
}

/// Absolute path of one of our binaries (jobs' `PATH` lacks them).
pub fn bin(name: &str) -> String {
    cargo_bin(name).to_string_lossy().into_owned()
}

/// The objects of type `ty` among `v`.
pub fn of_type(v: Vec<Value>, ty: &str) -> Vec<Value> {
    v.into_iter().filter(|x| x["type"] == ty).collect()
}

/// `v` as owned strings, sorted.
pub fn sorted(v: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    out.sort();
    out
}

/// `names`, each `times` times, sorted (what [`json_hosts`] gives).
pub fn each_times(names: &[&str], times: usize) -> Vec<String> {
    let mut v: Vec<String> = names
        .iter()
        .flat_map(|n| std::iter::repeat_n(n.to_string(), times))
        .collect();
    v.sort();
    v
}

/// The `host=` lines of a `pspawn --json` run, sorted.
pub fn json_hosts(o: &Out) -> Vec<String> {
    let mut h: Vec<String> = o
        .output_lines()
        .iter()
        .filter_map(|l| l.strip_prefix("host=").map(String::from))
        .collect();
    h.sort();
    h
}

/// A failed spawn: exit 4, `PMIX_ERR_JOB_FAILED_TO_MAP`.
#[track_caller]
pub fn failed_to_map(o: &Out) {
    refused(o, 4, "PMIX_ERR_JOB_FAILED_TO_MAP");
}

/// A failed tool run: exit `code`, `--json` error `status`.
#[track_caller]
pub fn refused(o: &Out, code: i32, status: &str) {
    o.expect_code(code);
    assert_eq!(o.error_status().as_deref(), Some(status), "{o}");
}

/// A tool run with `-v --as-tool` connected as a tool of its own, not
/// through the owner's palloc holder (whose relay acts for the owner): a
/// really foreign requester.
#[track_caller]
pub fn assert_foreign(o: &Out) {
    let route = o
        .stderr
        .lines()
        .find(|l| l.contains(": connected to "))
        .unwrap_or_else(|| panic!("no connection line (-v):\n{o}"));
    assert!(
        route.contains(" as tool ") && !route.contains("holder"),
        "not a foreign tool: {route}"
    );
}

/// D6 (docs/conformance.md), as every test releasing node02 sees it: node02 is back in the map, unreserved,
/// but its daemon is gone — soon every job on it fails to launch, while
/// every other node still runs jobs.
#[track_caller]
pub fn assert_node02_daemon_killed(n: &Nodes, what: &str) {
    let deviation = format!(
        "PRRTE master deviation D6 (§8.2.1.9.2, §8.2.1.9.4): after {what}, node02 (a startup \
         node) is expected to stay in the map, unreserved, with its daemon killed (jobs on it \
         fail PMIX_ERR_JOB_FAILED_TO_LAUNCH); the spec returns it to the default session. If \
         this fails PRRTE may now conform — update docs/conformance.md"
    );
    // Each probe launches a job: one every 200 ms.
    let mut last = None;
    let failed = wait::value_within_every(POLL, Duration::from_millis(200), || {
        let o = n.hosts_of(&["-H", "node02", "-n", "1", "--json"]);
        let failed = o.error_status().as_deref() == Some("PMIX_ERR_JOB_FAILED_TO_LAUNCH");
        last = Some(o);
        failed.then_some(())
    });
    assert!(
        failed.is_some(),
        "{deviation}\n-H node02: {}\n{}",
        last.expect("probed at least once"),
        n.c.logs()
    );
    let listed = n.node_owner("node02");
    let live = n.live_nodes();
    assert!(
        listed.is_none() && live == sorted(&["node01", "node03", "node04"]),
        "{deviation}\nnode02 owner: {listed:?}, live nodes: {live:?}\n{}",
        n.c.logs()
    );
}
