//! A multi-node PRRTE master DVM on this one machine, private to a test.
//!
//! [`Cluster::start`]`(n, s)` builds it the way `scripts/prrte-cluster.sh`
//! does for users (the recipe: `/work/shared/peers/README.md`, "Several
//! nodes on one machine"):
//!
//! * a **private network namespace**, created by a holder process
//!   (`unshare --net sh -c …`): loopback up plus a veth pair with the private
//!   address [`CLUSTER_ADDR`] (PRRTE's out-of-band channel ignores loopback
//!   when another interface exists and fails when confined to it). The DVM,
//!   its daemons, their jobs and every tool the test runs live in it
//!   ([`Cluster::command`] runs a program there through `nsenter`), so no
//!   byte crosses the host's real interfaces;
//! * `prte --hostfile` listing `node01 … nodeNN` with `slots=S`, itself run
//!   in a UTS namespace named `node01` (the head node), started with
//!   `--leave-session-attached` so that every daemon stays a child of `prte`
//!   (no daemonizing: each is reaped by pid);
//! * `scripts/prrte-node-agent.sh` as PRRTE's ssh: each `prted` runs in its
//!   own UTS namespace named after its node, with its own `TMPDIR`
//!   (`<dir>/nodes/<node>`).
//!
//! Stopping (drop, also after a failed test): PRRTE's `pterm` (`prte` ends
//! its daemons and removes its session directories; SIGTERM and SIGKILL if
//! it does not), SIGKILL by pid to anything still running in the namespace,
//! then the holder exits and the directory is removed. Should the test
//! process die without dropping, the holder sees its stdin close, kills, by
//! pid, every process left in the namespace and removes the directory.
//! If the namespace cannot be created, [`Cluster::start`] panics with the
//! reason: a test needing it fails, never skips.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::support::{
    master_dir, parse_report_uri, scrub_pmix_env, try_run_with_timeout, unique_tmpdir, wait,
    wait_until, LineReader, PRTE_STOP_TIMEOUT, PSEC,
};

/// The private address of the cluster's veth end (inside its namespace).
pub const CLUSTER_ADDR: &str = "10.213.0.1/24";
/// How long [`Cluster::start`] waits for "DVM ready" (all daemons up).
pub const CLUSTER_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The holder (`$1` the address, `$2` the cluster's directory): sets the
/// namespace up, says `ready`, then waits for its stdin to close, kills by
/// pid whatever still runs in the namespace and removes the directory.
const HOLDER: &str = r#"set -e
ip link set lo up
ip link add pmt0 type veth peer name pmt1
ip addr add "$1" dev pmt0
ip link set pmt0 up
ip link set pmt1 up
echo ready
set +e
while read -r _; do :; done
me=$(readlink /proc/$$/ns/net)
for round in 1 2 3 4 5; do
  left=0
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] && continue
    [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$me" ] || continue
    kill -9 "$pid" 2>/dev/null && left=1
  done
  [ $left = 0 ] && break
  sleep 0.2
done
rm -rf "$2"
"#;

/// A running multi-node PRRTE master DVM in its own network namespace;
/// stopped, swept and removed on drop.
pub struct Cluster {
    /// The nodes' names, `node01` … (`node01` is the head node, running `prte`).
    pub nodes: Vec<String>,
    /// Slots per node.
    pub slots: u32,
    /// `prte`'s process id.
    pub pid: u32,
    /// The DVM's namespace, `prte-node01-<pid>@0`.
    pub server_nspace: String,
    /// The DVM's PMIx URI (`tcp4://10.213.0.1:PORT`).
    pub uri: String,
    dir: PathBuf,
    netns: String,
    holder: Child,
    holder_in: Option<ChildStdin>,
    prte: Option<Child>,
    /// Nodes known only to psched's pool (empty without psched).
    pub pool: Vec<String>,
    psched: Option<Child>,
}

impl Cluster {
    /// Start `nodes` nodes of `slots` slots each and wait until every daemon
    /// reported (`DVM ready`). Panics with the reason when the namespace or
    /// the DVM cannot be started; with "run scripts/install-peers.sh" when
    /// PRRTE master is not installed.
    pub fn start(nodes: u32, slots: u32) -> Cluster {
        assert!((1..=99).contains(&nodes), "1..=99 nodes, not {nodes}");
        let prefix = master_dir().join("prrte");
        let dir = unique_tmpdir("cluster").into_path();
        let names: Vec<String> = (1..=nodes).map(|i| format!("node{i:02}")).collect();
        let (holder, holder_in) = start_holder(&dir);
        let netns = ns_link(holder.id()).unwrap_or_default();
        let mut c = Cluster {
            nodes: names,
            slots,
            pid: 0,
            server_nspace: String::new(),
            uri: String::new(),
            dir,
            netns,
            holder,
            holder_in: Some(holder_in),
            prte: None,
            pool: Vec::new(),
            psched: None,
        };
        c.launch(&prefix, &[]);
        c
    }

    /// A cluster whose DVM allocates through psched: `prte` started with
    /// its ras/pmix component (`ras_pmix_system_scheduler 1`), so only the
    /// head node `node01` is there at start; `pool` more nodes (`node02`…)
    /// are known only to psched, which attaches as the DVM's scheduler with
    /// `extra` flags (e.g. a partition). PRRTE starts a daemon on each node
    /// psched grants through the same ssh stand-in. Waits until psched
    /// says it attached.
    pub fn start_with_psched(slots: u32, pool: u32, extra: &[&str]) -> Cluster {
        let mut c = Cluster::start_for_scheduler(slots, pool, &[]);
        c.start_psched(extra);
        c
    }

    /// [`Cluster::start_with_psched`] with `prte_extra` more arguments for
    /// `prte` (e.g. `--prtemca rmaps_default_mapping_policy :OVERSUBSCRIBE`).
    pub fn start_with_psched_prte(
        slots: u32,
        pool: u32,
        prte_extra: &[&str],
        extra: &[&str],
    ) -> Cluster {
        let mut c = Cluster::start_for_scheduler(slots, pool, prte_extra);
        c.start_psched(extra);
        c
    }

    /// The cluster of [`Cluster::start_with_psched`] before any scheduler
    /// attached (`prte_extra`: more arguments for `prte`): start one with
    /// [`Cluster::start_psched_with`].
    pub fn start_for_scheduler(slots: u32, pool: u32, prte_extra: &[&str]) -> Cluster {
        assert!((1..=98).contains(&pool), "1..=98 pool nodes, not {pool}");
        let prefix = master_dir().join("prrte");
        let dir = unique_tmpdir("cluster").into_path();
        let (holder, holder_in) = start_holder(&dir);
        let netns = ns_link(holder.id()).unwrap_or_default();
        let mut c = Cluster {
            nodes: vec!["node01".to_string()],
            slots,
            pid: 0,
            server_nspace: String::new(),
            uri: String::new(),
            dir,
            netns,
            holder,
            holder_in: Some(holder_in),
            prte: None,
            pool: (2..=pool + 1).map(|i| format!("node{i:02}")).collect(),
            psched: None,
        };
        let mut args = vec!["--prtemca", "ras_pmix_system_scheduler", "1"];
        args.extend_from_slice(prte_extra);
        c.launch(&prefix, &args);
        c
    }

    /// psched's ledger file.
    pub fn ledger_path(&self) -> PathBuf {
        self.dir.join("psched-ledger.json")
    }

    /// psched's output so far.
    pub fn psched_log(&self) -> String {
        fs::read_to_string(self.dir.join("psched.log")).unwrap_or_default()
    }

    /// Start psched (again) over the pool, against this DVM, with the same
    /// ledger; waits (bounded) until it says it attached once more.
    pub fn start_psched(&mut self, extra: &[&str]) {
        self.start_psched_with(extra, &[]);
    }

    /// [`Cluster::start_psched`] with `env` set for psched; with
    /// `--backend` among `extra` the pool is not passed as `--nodes`.
    pub fn start_psched_with(&mut self, extra: &[&str], env: &[(&str, &str)]) {
        let before = self.psched_log().matches("attached to").count();
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("psched.log"))
            .expect("psched log");
        let nodes = self.pool.join(",");
        let mut cmd = self.command(crate::support::cargo_bin("psched"));
        if !extra.contains(&"--backend") {
            cmd.args(["--nodes", &nodes]);
        }
        cmd.envs(env.iter().copied());
        cmd.arg("--ledger")
            .arg(self.ledger_path())
            .arg("--uri")
            .arg(format!("file:{}", self.uri_file().display()))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("psched log"))
            .stderr(log);
        let child = cmd.spawn().expect("start psched");
        self.psched = Some(child);
        let deadline = Instant::now() + CLUSTER_START_TIMEOUT;
        let mut exited = false;
        let attached = wait::within(CLUSTER_START_TIMEOUT, || {
            if self.psched_log().matches("attached to").count() > before {
                return true;
            }
            exited = self
                .psched
                .as_mut()
                .is_some_and(|p| matches!(p.try_wait(), Ok(Some(_))));
            exited
        });
        assert!(!exited, "psched exited early\n{}", self.psched_log());
        assert!(
            attached,
            "psched did not attach\n{}\n{}",
            self.psched_log(),
            self.logs()
        );
        // psched starts its idle nodes' daemons as it attaches (one grow
        // of the DVM a node, as a site's psched does before users come):
        // wait for every pool node, as a site would before letting users
        // in (a grow beside other work can kill PRRTE master, P6).
        let pool = if extra.contains(&"--backend") {
            0
        } else {
            self.pool.len()
        };
        assert!(
            wait::within(deadline.saturating_duration_since(Instant::now()), || {
                self.psched_log().matches("daemons up on").count() >= pool
            }),
            "psched's idle daemons did not come up\n{}\n{}",
            self.psched_log(),
            self.logs()
        );
    }

    /// psched's pid (while it runs).
    pub fn psched_pid(&self) -> Option<u32> {
        self.psched.as_ref().map(Child::id)
    }

    /// SIGKILL psched and reap it (the ledger is all that is left of it).
    pub fn kill_psched(&mut self) {
        if let Some(mut p) = self.psched.take() {
            let _ = p.kill();
            let _ = p.wait();
        }
    }

    /// SIGTERM psched and reap it (bounded; SIGKILL after).
    fn stop_psched(&mut self) {
        if let Some(mut p) = self.psched.take() {
            let _ = kill(Pid::from_raw(p.id() as i32), Signal::SIGTERM);
            if wait_until(&mut p, Instant::now() + Duration::from_secs(5))
                .0
                .is_none()
            {
                let _ = p.kill();
                let _ = p.wait();
            }
        }
    }

    fn launch(&mut self, prefix: &Path, extra: &[&str]) {
        let hostfile = self.dir.join("hosts");
        let lines: String = self
            .nodes
            .iter()
            .map(|n| format!("{n} slots={}\n", self.slots))
            .collect();
        fs::write(&hostfile, lines).expect("write hostfile");
        let head = self.dir.join("hnp");
        fs::create_dir_all(&head).expect("head node dir");
        fs::create_dir_all(self.dir.join("nodes")).expect("nodes dir");
        let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/prrte-node-agent.sh");
        let uri_file = self.dir.join("uri.txt");
        let mut cmd = self.command("unshare");
        cmd.args(["--uts", "sh", "-c", "hostname node01 && exec \"$@\"", "sh"])
            .arg(prefix.join("bin/prte"))
            .args(["--leave-session-attached", "--report-uri"])
            .arg(&uri_file)
            .arg("--hostfile")
            .arg(&hostfile)
            .args(["--prtemca", "plm_ssh_agent"])
            .arg(&agent)
            .args(["--prtemca", "plm_ssh_no_tree_spawn", "1"])
            .args(crate::support::MASTER_PRTE_ARGS)
            .args(extra);
        if nix::unistd::geteuid().is_root() {
            cmd.arg("--allow-run-as-root");
        }
        let log = |n: &str| fs::File::create(self.dir.join(n)).expect("prte log");
        cmd.env("TMPDIR", &head)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("PRRTE_CLUSTER_DIR", &self.dir)
            .stdin(Stdio::null())
            .stdout(log("prte.out"))
            .stderr(log("prte.err"));
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start prte through nsenter: {e}"));
        self.pid = child.id();
        self.prte = Some(child);
        self.await_ready(&uri_file);
    }

    fn await_ready(&mut self, uri_file: &Path) {
        // The uri file once prte is ready, or prte's early exit.
        let outcome = wait::value_within(CLUSTER_START_TIMEOUT, || {
            let out = fs::read_to_string(self.dir.join("prte.out")).unwrap_or_default();
            let uri = fs::read_to_string(uri_file).unwrap_or_default();
            if out.contains("DVM ready") && uri.lines().count() >= 2 {
                return Some(Ok(uri));
            }
            let prte = self.prte.as_mut().expect("prte started");
            match prte.try_wait() {
                Ok(Some(st)) => Some(Err(st)),
                _ => None,
            }
        });
        match outcome {
            Some(Ok(uri)) => {
                let (ns, _rank, uri, _version) = parse_report_uri(&uri)
                    .unwrap_or_else(|e| panic!("bad uri file: {e}\n{}", self.logs()));
                self.server_nspace = ns;
                self.uri = uri;
            }
            Some(Err(st)) => panic!(
                "PRRTE master cluster: prte exited early ({st})\n{}",
                self.logs()
            ),
            None => panic!(
                "PRRTE master cluster not ready after {CLUSTER_START_TIMEOUT:?}\n{}",
                self.logs()
            ),
        }
    }

    /// A command running `program` inside the cluster's network namespace
    /// (`nsenter --net=/proc/<holder>/ns/net -- program`), with inherited
    /// PMIx/PRRTE variables removed and `TMPDIR` set to the head node's, so
    /// a tool finds this DVM and no other (the cluster's
    /// [`crate::support::ToolHost`]; [`crate::support::tool()`] for our tools).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(self.netns_arg()).arg("--").arg(program);
        scrub_pmix_env(&mut cmd);
        cmd.env("TMPDIR", self.tmpdir()).env(PSEC.0, PSEC.1);
        cmd
    }

    /// `--net=/proc/<holder pid>/ns/net`: how to enter the namespace.
    pub fn netns_arg(&self) -> String {
        format!("--net=/proc/{}/ns/net", self.holder.id())
    }

    /// The head node's `TMPDIR` (holds `prte.<pid>/` with the rendezvous
    /// files the tools discover).
    pub fn tmpdir(&self) -> PathBuf {
        self.dir.join("hnp")
    }

    /// The cluster's private directory (removed on drop).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The namespace's identity (`net:[INODE]`), to find its processes.
    pub fn netns_id(&self) -> &str {
        &self.netns
    }

    /// The report-uri file, as `prun --dvm-uri file:PATH` takes it.
    pub fn uri_file(&self) -> PathBuf {
        self.dir.join("uri.txt")
    }

    /// `prte`'s stdout and stderr so far (for failure messages).
    pub fn logs(&self) -> String {
        let read = |n: &str| fs::read_to_string(self.dir.join(n)).unwrap_or_default();
        format!(
            "--- prte stdout:\n{}--- prte stderr:\n{}",
            read("prte.out"),
            read("prte.err")
        )
    }

    /// Whether `prte` has exited (a zombie not yet reaped counts as exited).
    pub fn prte_exited(&self) -> bool {
        let stat = fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        // `PID (comm) STATE …`: the state follows the last `)`.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        matches!(state, None | Some("Z") | Some("X"))
    }

    /// Whether `prte` has exited, or does so within `timeout`: a dying
    /// `prte` closes its connections before it is a zombie, so a tool can
    /// report the DVM lost while `prte` still shows running for a moment.
    pub fn prte_exited_within(&self, timeout: Duration) -> bool {
        wait::within(timeout, || self.prte_exited())
    }

    /// The pids of the processes running in the namespace now (the holder
    /// excluded).
    pub fn processes(&self) -> Vec<i32> {
        processes_in(&self.netns, self.holder.id())
    }

    /// Stop the DVM as [`Drop`] does (`pterm`, then signals, then a sweep
    /// of the namespace); what it took.
    pub fn stop(mut self) -> Stopped {
        self.stop_psched();
        let prte = self.stop_prte();
        let swept = self.drain_and_sweep();
        let logs = self.logs();
        Stopped { prte, swept, logs }
    }

    /// `pterm` (PRRTE's own way to end a DVM, daemons first), then SIGTERM,
    /// then SIGKILL, each with a bounded wait; `prte`'s exit status.
    fn stop_prte(&mut self) -> Option<ExitStatus> {
        let mut child = self.prte.take()?;
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        let mut pterm = self.command(master_dir().join("prrte/bin/pterm"));
        pterm
            .arg("--dvm-uri")
            .arg(format!("file:{}", self.uri_file().display()));
        if nix::unistd::geteuid().is_root() {
            pterm.arg("--allow-run-as-root");
        }
        let _ = try_run_with_timeout(&mut pterm, PRTE_STOP_TIMEOUT);
        if let (Some(st), _) = wait_until(&mut child, Instant::now() + PRTE_STOP_TIMEOUT) {
            return Some(st);
        }
        let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
        match wait_until(&mut child, Instant::now() + PRTE_STOP_TIMEOUT) {
            (Some(st), _) => Some(st),
            (None, _) => {
                let _ = child.kill();
                child.wait().ok()
            }
        }
    }

    /// Wait (bounded) for the namespace to empty by itself, then SIGKILL,
    /// by pid, every process still in it; the pids it had to kill.
    fn drain_and_sweep(&mut self) -> Vec<i32> {
        wait::within(PRTE_STOP_TIMEOUT, || self.processes().is_empty());
        self.sweep()
    }

    /// SIGKILL, by pid, every process still in the namespace; their pids.
    fn sweep(&mut self) -> Vec<i32> {
        let mut swept = Vec::new();
        // Kill what is left at each step until nothing is (bounded).
        wait::within(Duration::from_secs(5), || {
            let left = self.processes();
            for &pid in &left {
                if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() && !swept.contains(&pid) {
                    swept.push(pid);
                }
            }
            left.is_empty()
        });
        swept
    }
}

/// What stopping a cluster found.
#[derive(Debug)]
pub struct Stopped {
    /// `prte`'s exit status (none when it was already gone and reaped).
    pub prte: Option<ExitStatus>,
    /// Processes still in the namespace after `prte` exited, killed by pid.
    pub swept: Vec<i32>,
    /// `prte`'s stdout and stderr.
    pub logs: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A failing test whose `prte` died on its own runs once more
        // (support::rerun), with prte's words.
        if std::thread::panicking() && self.prte_exited_within(Duration::from_secs(5)) {
            eprintln!("PRRTE master had died:\n{}", self.logs());
            crate::support::rerun::peer_died();
        }
        self.stop_psched();
        self.stop_prte();
        self.drain_and_sweep();
        drop(self.holder_in.take());
        if wait_until(&mut self.holder, Instant::now() + Duration::from_secs(10))
            .0
            .is_none()
        {
            let _ = self.holder.kill();
            let _ = self.holder.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Start the namespace holder; panics with its words when it cannot create
/// the namespace (not root, no unprivileged user namespaces, no `ip`).
fn start_holder(dir: &Path) -> (Child, ChildStdin) {
    use std::os::unix::process::CommandExt;
    // Its own process group: a signal to the test's group leaves it alive
    // to sweep the namespace when the test process is gone.
    let spawned = Command::new("unshare")
        .process_group(0)
        .args(["--net", "--", "sh", "-c", HOLDER, "holder", CLUSTER_ADDR])
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut holder = match spawned {
        Ok(h) => h,
        Err(e) => {
            let _ = fs::remove_dir_all(dir);
            panic!("cannot create a private network namespace: cannot run unshare: {e}")
        }
    };
    let stdin = holder.stdin.take().expect("holder stdin");
    let lines = LineReader::new(holder.stdout.take().expect("holder stdout"));
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lines.next_line(Duration::from_secs(20))
    }));
    if let Ok(Some(l)) = &first {
        if l == "ready" {
            return (holder, stdin);
        }
    }
    drop(stdin);
    let _ = holder.kill();
    let out = crate::support::wait_output(holder, Duration::from_secs(10));
    let _ = fs::remove_dir_all(dir);
    let mut why = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !nix::unistd::geteuid().is_root() {
        why.push_str(" (needs root, or unprivileged user namespaces)");
    }
    panic!(
        "cannot create a private network namespace ({}): {why}",
        out.status
    );
}

/// `net:[INODE]` of process `pid`.
pub fn ns_link(pid: u32) -> Option<String> {
    fs::read_link(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// Every process whose network namespace is `netns`, except `except`.
pub fn processes_in(netns: &str, except: u32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.filter_map(Result::ok) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid as u32 == except {
            continue;
        }
        if ns_link(pid as u32).as_deref() == Some(netns) {
            out.push(pid);
        }
    }
    out
}
