//! A private Slurm with several nodes on this machine, either version the
//! tests run on ([`Version`]: Debian's `slurm-wlm` 22.05 or Slurm 26.05.3
//! built by `scripts/install-peers.sh`; a missing one fails): its own munge
//! daemon and key, its own cluster name, ports, state, spool and log
//! directories under a fresh temporary directory, one `slurmctld` and one
//! `slurmd` per node, every daemon in the foreground as a child of the test
//! and stopped by pid on drop (a failed test included). It never reads or
//! touches the machine's own Slurm or munge (`SLURM_CONF` and munge's
//! socket point into the directory).
//!
//! The daemons run through a command builder the caller gives: plain
//! commands on this host's loopback, or `Cluster::command` to run them in a
//! test cluster's network namespace beside PRRTE and psched.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::cluster::Cluster;
use super::{short_hostname, unique_tmpdir, wait, wait_until};

/// How long the daemons may take to come up.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A Slurm release the psched-on-Slurm tests run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// Debian 12's `slurm-wlm` 22.05 (on PATH).
    Debian22,
    /// Slurm 26.05.3, the current release, under `<peers>/slurm-26.05.3`.
    Current26,
}

impl Version {
    /// Its release number, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Version::Debian22 => "22.05",
            Version::Current26 => "26.05.3",
        }
    }

    /// Its install prefix (`None`: Debian's, on PATH); panics when the
    /// peer is missing.
    fn prefix(self) -> Option<PathBuf> {
        match self {
            Version::Debian22 => None,
            Version::Current26 => {
                let p = super::peers_dir().join("slurm-26.05.3");
                assert!(
                    p.join("bin/salloc").exists() && p.join("sbin/slurmctld").exists(),
                    "Slurm 26.05.3 not found at {} (run scripts/install-peers.sh)",
                    p.display()
                );
                Some(p)
            }
        }
    }

    /// `rest` with this version's `bin` and `sbin` first.
    pub fn path_before(self, rest: &str) -> String {
        match self.prefix() {
            None => rest.to_string(),
            Some(p) => format!(
                "{}:{}:{rest}",
                p.join("bin").display(),
                p.join("sbin").display()
            ),
        }
    }

    /// `program` of this version (an absolute path for a built one).
    pub fn program(self, program: &str) -> PathBuf {
        let Some(p) = self.prefix() else {
            return PathBuf::from(program);
        };
        for d in ["bin", "sbin"] {
            if p.join(d).join(program).exists() {
                return p.join(d).join(program);
            }
        }
        PathBuf::from(program)
    }
}

/// A running private Slurm (see the module documentation).
pub struct Slurm {
    dir: PathBuf,
    /// The `slurm.conf` every command must be given (`SLURM_CONF`).
    pub conf: PathBuf,
    /// The node names.
    pub nodes: Vec<String>,
    /// Which Slurm it is.
    pub version: Version,
    daemons: Vec<Child>,
    /// The controller (stopped and started again by the outage tests).
    ctld: Option<Child>,
    wrap: Box<dyn Fn(&std::ffi::OsStr) -> Command + Send + Sync>,
}

/// One job as `squeue --json` shows it, read the same from both schemas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SJob {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its owner's uid.
    pub user_id: u64,
    /// Its base state (`RUNNING`, `PENDING`, `TIMEOUT`…).
    pub state: String,
    /// Its nodes, expanded and sorted.
    pub nodes: Vec<String>,
    /// Its end time (seconds since the epoch; 0 unknown).
    pub end_time: u64,
    /// Its time limit in minutes (`None`: unlimited).
    pub time_limit: Option<u64>,
    /// Why it waits.
    pub reason: String,
}

/// A number of either schema (`N` or `{set, infinite, number}`);
/// `None` when unset or infinite.
fn num(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::Object(o) => {
            let set = o.get("set").and_then(|x| x.as_bool()).unwrap_or(false);
            let inf = o.get("infinite").and_then(|x| x.as_bool()).unwrap_or(false);
            (set && !inf)
                .then(|| o.get("number").and_then(|x| x.as_u64()))
                .flatten()
        }
        other => other.as_u64(),
    }
}

/// A free TCP port on this host's loopback (inside a fresh network
/// namespace every port is free).
/// A loopback port for one of Slurm's daemons, bindable now. It comes
/// from below the kernel's ephemeral range (32768 and up here), which
/// `bind(0)` and outgoing connections use: a port taken from that range and
/// let go was, with eight tests at once, taken by another socket before
/// slurmd bound it ("Unable to bind listen port … Address already in
/// use"). Each test process walks its own stretch of 20000–31999 (a start
/// from its pid), one port after the other, so no two picks in it repeat.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(997) % SPAN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..SPAN {
        let port = (LOW + NEXT.fetch_add(1, Ordering::SeqCst) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {LOW}..{}", LOW + SPAN)
}

/// How slurmctld hands out nodes: whole nodes to every job
/// (`select/linear`, the tests' usual), or CPUs, several jobs on a node
/// (`select/cons_tres`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    /// `select/linear`.
    WholeNodes,
    /// `select/cons_tres` with `CR_CPU`.
    Cpus,
}

fn slurm_conf(dir: &Path, nodes: &[String], select: Select) -> String {
    let d = dir.display();
    let host = short_hostname();
    let mut s = format!(
        "ClusterName=pmixtools{}\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={}\n\
SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\n\
CredType=cred/munge\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool/%n\n\
SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd-%n.pid\n\
SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd-%n.log\n\
SlurmdParameters=config_overrides\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
{select}SchedulerType=sched/backfill\nJobAcctGatherType=jobacct_gather/none\n\
AccountingStorageType=accounting_storage/none\nMpiDefault=none\nReturnToService=2\n\
MinJobAge=300\nMaxJobCount=50000\nPlugStackConfig={d}/plugstack.conf\n",
        std::process::id(),
        free_port(),
        select = match select {
            Select::WholeNodes => "SelectType=select/linear\n",
            Select::Cpus => "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n",
        },
    );
    // Each node its own NodeHostname, as on a real cluster: a Slurm built
    // without --enable-multiple-slurmd (26.05.3 here) keeps only the first
    // node of a shared NodeHostname in its address table ("Duplicated
    // NodeHostName"), so slurmctld cannot reach the others' slurmd
    // (`_fwd_tree_get_addr: can't find address`): their jobs' ends are
    // never confirmed and the nodes stay COMPLETING+NOT_RESPONDING for
    // seconds, which held every second `salloc -N 1 true` about 2.9 s.
    // NodeAddr gives the address; the names need not resolve.
    for n in nodes {
        s.push_str(&format!(
            "NodeName={n} NodeHostname={n} NodeAddr=127.0.0.1 Port={} CPUs=2 RealMemory=512 \
State=UNKNOWN\n",
            free_port()
        ));
    }
    // `batch`, the default; `short`, whose one-minute limit a longer
    // request can never meet (Slurm keeps it pending: PartitionTimeLimit).
    for (name, extra) in [
        ("batch", "Default=YES MaxTime=INFINITE"),
        ("short", "MaxTime=1"),
    ] {
        s.push_str(&format!(
            "PartitionName={name} Nodes={} {extra} State=UP\n",
            nodes.join(",")
        ));
    }
    s
}

impl Slurm {
    /// Start munge, slurmctld and one slurmd per name in `nodes`, each
    /// through `wrap(program)`, and wait (bounded) until `sinfo` shows every
    /// node idle. Panics with the daemons' logs when it cannot.
    pub fn start(
        version: Version,
        nodes: &[String],
        wrap: impl Fn(&std::ffi::OsStr) -> Command + Send + Sync + 'static,
    ) -> Slurm {
        Slurm::start_with(version, nodes, Select::WholeNodes, wrap)
    }

    /// [`Slurm::start`] handing out nodes as `select` says.
    pub fn start_with(
        version: Version,
        nodes: &[String],
        select: Select,
        wrap: impl Fn(&std::ffi::OsStr) -> Command + Send + Sync + 'static,
    ) -> Slurm {
        let dir = unique_tmpdir("slurm").into_path();
        // Readable by other users (a second user's salloc in the tests);
        // the munge key stays the owner's.
        let open = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        fs::set_permissions(&dir, open).expect("slurm dir mode");
        for sub in ["state", "spool"] {
            fs::create_dir_all(dir.join(sub)).expect("slurm dirs");
        }
        let mut key = vec![0u8; 1024];
        fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .expect("random key");
        fs::write(dir.join("munge.key"), key).expect("munge key");
        let restrict = std::os::unix::fs::PermissionsExt::from_mode(0o600);
        fs::set_permissions(dir.join("munge.key"), restrict).expect("munge key mode");
        fs::write(dir.join("plugstack.conf"), "").expect("plugstack.conf");
        let conf = dir.join("slurm.conf");
        fs::write(&conf, slurm_conf(&dir, nodes, select)).expect("slurm.conf");
        let mut s = Slurm {
            dir,
            conf,
            nodes: nodes.to_vec(),
            version,
            daemons: Vec::new(),
            ctld: None,
            wrap: Box::new(wrap),
        };
        s.start_daemons();
        s
    }

    fn spawn(&mut self, program: &str, args: &[&str], log: &str) {
        let c = self.spawned(program, args, log);
        self.daemons.push(c);
    }

    fn spawned(&self, program: &str, args: &[&str], log: &str) -> Child {
        let out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(log))
            .expect("daemon log");
        let mut c = self.command(program);
        c.args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out);
        match c.spawn() {
            Ok(child) => child,
            Err(e) => panic!("cannot start {program} (run scripts/install-peers.sh): {e}"),
        }
    }

    /// Start slurmctld (again, over its saved state).
    pub fn start_controller(&mut self) {
        let conf = self.conf.display().to_string();
        let c = self.spawned("slurmctld", &["-D", "-f", &conf], "slurmctld.out");
        self.ctld = Some(c);
        self.wait_for("the controller answering", |s| {
            let mut c = s.command("scontrol");
            c.arg("ping").stdin(Stdio::null());
            super::run_with_timeout(&mut c, 30).status.success()
        });
        // Slurm 26.05.3 here never pings the nodes that held no job back
        // after a restart (`_fwd_tree_get_addr: can't find address`: they
        // turn `unknown*` and stay so); their slurmd, started again,
        // registers them. Nodes holding a job are never restarted.
        for n in self.nodes_without_jobs() {
            let i = 1 + self.nodes.iter().position(|x| *x == n).expect("a node");
            stop(&mut self.daemons[i]);
            let conf = self.conf.display().to_string();
            let log = format!("slurmd-{n}.out");
            self.daemons[i] = self.spawned("slurmd", &["-D", "-f", &conf, "-N", &n], &log);
        }
        self.wait_for("every node responding", |s| {
            let idle = s.idle_nodes();
            s.nodes_without_jobs().iter().all(|n| idle.contains(n))
        });
    }

    /// The nodes `sinfo` shows holding no job.
    fn nodes_without_jobs(&self) -> Vec<String> {
        let mut c = self.command("sinfo");
        c.args(["-h", "-N", "-o", "%N %T"]).stdin(Stdio::null());
        let o = super::run_with_timeout(&mut c, 60);
        let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, st)| !st.starts_with("alloc") && !st.starts_with("mix"))
            .map(|(n, _)| n.to_string())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Stop slurmctld (SIGTERM, by pid; it saves its state): the jobs stay
    /// with the slurmds, the commands fail until [`Slurm::start_controller`].
    pub fn stop_controller(&mut self) {
        if let Some(mut c) = self.ctld.take() {
            stop(&mut c);
        }
    }

    fn start_daemons(&mut self) {
        let d = self.dir.display().to_string();
        let sock = format!("--socket={d}/munge.sock");
        let key = format!("--key-file={d}/munge.key");
        let pid = format!("--pid-file={d}/munged.pid");
        let log = format!("--log-file={d}/munged.log");
        let seed = format!("--seed-file={d}/munged.seed");
        let munge = ["-F", "-f", &sock, &key, &pid, &log, &seed];
        self.spawn("munged", &munge, "munged.out");
        self.wait_for("munge's socket", |s| s.dir.join("munge.sock").exists());
        let conf = self.conf.display().to_string();
        let ctld = self.spawned("slurmctld", &["-D", "-i", "-f", &conf], "slurmctld.out");
        self.ctld = Some(ctld);
        for n in self.nodes.clone() {
            fs::create_dir_all(self.dir.join("spool").join(&n)).expect("spool");
            let log = format!("slurmd-{n}.out");
            self.spawn("slurmd", &["-D", "-f", &conf, "-N", &n], &log);
        }
        let want = self.nodes.len();
        self.wait_for("every node idle in sinfo", |s| s.idle_nodes().len() == want);
    }

    /// Poll `ok` (it runs Slurm's commands: every 100 ms) until it holds;
    /// panics when a daemon died or after [`START_TIMEOUT`].
    fn wait_for(&mut self, what: &str, mut ok: impl FnMut(&Slurm) -> bool) {
        let mut dead = false;
        let held = wait::value_within_every(START_TIMEOUT, Duration::from_millis(100), || {
            if ok(self) {
                return Some(true);
            }
            dead = self
                .daemons
                .iter_mut()
                .chain(self.ctld.as_mut())
                .any(|c| matches!(c.try_wait(), Ok(Some(_))));
            dead.then_some(false)
        });
        assert!(
            held == Some(true),
            "private Slurm: no {what}{}\n{}",
            if dead { " (a daemon died)" } else { "" },
            self.logs()
        );
    }

    /// A command for `program` pointed at this Slurm (`SLURM_CONF`).
    pub fn command(&self, program: &str) -> Command {
        let mut c = (self.wrap)(self.version.program(program).as_os_str());
        c.envs(self.env());
        c
    }

    /// What a program needs to use this Slurm: `SLURM_CONF`, and `PATH`
    /// with this version's programs first.
    pub fn env(&self) -> Vec<(String, String)> {
        let path = std::env::var("PATH").unwrap_or_default();
        vec![
            ("SLURM_CONF".into(), self.conf.display().to_string()),
            ("PATH".into(), self.version.path_before(&path)),
        ]
    }

    /// `program args…` run to its end (bounded): its stdout.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let mut c = self.command(program);
        c.args(args).stdin(Stdio::null());
        let o = super::run_with_timeout(&mut c, 60);
        assert!(
            o.status.success(),
            "{program} {args:?}: {}",
            super::show(&o)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The nodes `sinfo` shows idle (expanded).
    pub fn idle_nodes(&self) -> Vec<String> {
        let mut c = self.command("sinfo");
        c.args(["-h", "-N", "-t", "idle", "-o", "%N"])
            .stdin(Stdio::null());
        let o = super::run_with_timeout(&mut c, 60);
        let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(String::from)
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The jobs `squeue --json --states=all` lists (ended ones too, for
    /// `MinJobAge`; 22.05 ignores the filter and lists them anyway), read
    /// the same from both versions' schemas.
    pub fn jobs(&self) -> Vec<SJob> {
        let out = self.run("squeue", &["--json", "--states=all"]);
        let doc: serde_json::Value = serde_json::from_str(&out).expect("squeue --json");
        let list = doc["jobs"].as_array().cloned().unwrap_or_default();
        list.iter()
            .map(|j| {
                let state = match &j["job_state"] {
                    serde_json::Value::Array(a) => a.first().and_then(|x| x.as_str()),
                    other => other.as_str(),
                };
                SJob {
                    id: num(&j["job_id"]).expect("job_id"),
                    name: j["name"].as_str().unwrap_or_default().to_string(),
                    user_id: num(&j["user_id"]).unwrap_or(u64::MAX),
                    state: state.unwrap_or_default().to_string(),
                    nodes: self.hostnames(j["nodes"].as_str().unwrap_or_default()),
                    end_time: num(&j["end_time"]).unwrap_or(0),
                    time_limit: num(&j["time_limit"]),
                    reason: j["state_reason"].as_str().unwrap_or_default().to_string(),
                }
            })
            .collect()
    }

    /// `scontrol show job ID` (one line per field group, as an
    /// administrator reads it).
    pub fn show_job(&self, id: u64) -> String {
        self.run("scontrol", &["show", "job", &id.to_string()])
    }

    /// Job `id` as `squeue --json` lists it.
    pub fn job(&self, id: u64) -> Option<SJob> {
        self.jobs().into_iter().find(|j| j.id == id)
    }

    /// `node[02-03]` as names.
    pub fn hostnames(&self, list: &str) -> Vec<String> {
        if list.is_empty() {
            return Vec::new();
        }
        let mut v: Vec<String> = self
            .run("scontrol", &["show", "hostnames", list])
            .split_whitespace()
            .map(String::from)
            .collect();
        v.sort();
        v
    }

    /// The daemons' logs (for failure messages).
    pub fn logs(&self) -> String {
        let mut s = String::new();
        let mut names: Vec<PathBuf> = fs::read_dir(&self.dir)
            .map(|r| r.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        names.sort();
        for p in names
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "log" || e == "out"))
        {
            let text = fs::read_to_string(p).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            s.push_str(&format!("--- {}\n", p.display()));
            for l in tail.iter().rev() {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    }
}

/// PRRTE master with its head node and three pool nodes that only Slurm
/// knows (`prte_extra`: more arguments for `prte`), the private Slurm
/// `version` over them in the cluster's network namespace, and psched on it
/// attached.
pub fn cluster_on_slurm(version: Version, prte_extra: &[&str]) -> (Cluster, Slurm) {
    cluster_on_slurm_nodes(version, 3, prte_extra)
}

/// [`cluster_on_slurm`] with `pool` nodes that only Slurm knows.
pub fn cluster_on_slurm_nodes(
    version: Version,
    pool: u32,
    prte_extra: &[&str],
) -> (Cluster, Slurm) {
    // Four pool nodes or more: the head node gets two slots (P9).
    let slots = if pool >= 4 { 2 } else { 1 };
    let mut c = Cluster::start_for_scheduler(slots, pool, prte_extra);
    let slurm = slurm_in(&c, version, Select::WholeNodes);
    start_psched_on(&mut c, &slurm);
    (c, slurm)
}

/// A private Slurm whose nodes are `c`'s pool nodes, its daemons in `c`'s
/// network namespace, handing out nodes as `select` says.
pub fn slurm_in(c: &Cluster, version: Version, select: Select) -> Slurm {
    let ns = c.netns_arg();
    Slurm::start_with(version, &c.pool, select, move |p| {
        let mut cmd = Command::new("nsenter");
        cmd.arg(&ns).arg("--").arg(p);
        cmd
    })
}

/// Start (or restart) `c`'s psched with `--backend slurm` on `s`.
pub fn start_psched_on(c: &mut Cluster, s: &Slurm) {
    start_psched_with_env(c, s, &[("PSCHED_SLURM_ROOT_ONLY", "1")]);
}

/// [`start_psched_on`] with `extra` variables instead of the tests' usual
/// ones (root alone uses the test DVMs: `PSCHED_SLURM_ROOT_ONLY=1`).
pub fn start_psched_with_env(c: &mut Cluster, s: &Slurm, extra: &[(&str, &str)]) {
    start_psched_with_env_args(c, s, extra, &[]);
}

/// [`start_psched_on`] with `args` after `--backend slurm` (`--slots 2`,
/// `--status-uri PATH`).
pub fn start_psched_with_args(c: &mut Cluster, s: &Slurm, args: &[&str]) {
    start_psched_with_env_args(c, s, &[("PSCHED_SLURM_ROOT_ONLY", "1")], args);
}

fn start_psched_with_env_args(c: &mut Cluster, s: &Slurm, extra: &[(&str, &str)], args: &[&str]) {
    let mut env = s.env();
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut all = vec!["--backend", "slurm"];
    all.extend_from_slice(args);
    c.start_psched_with(&all, &env);
}

/// SIGTERM `c` and reap it (bounded; SIGKILL after).
fn stop(c: &mut Child) {
    let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM);
    if wait_until(c, Instant::now() + Duration::from_secs(10))
        .0
        .is_none()
    {
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // Jobs first (their steps would outlive slurmd), bounded.
        let mut c = self.command("scancel");
        c.args(["--full"]).arg("--user=root").stdin(Stdio::null());
        let _ = super::try_run_with_timeout(&mut c, Duration::from_secs(20));
        // slurmd first, then slurmctld, then munge: each by pid.
        let mut daemons: Vec<Child> = self.daemons.drain(..).collect();
        let munge = daemons.remove(0);
        for mut c in daemons
            .into_iter()
            .rev()
            .chain(self.ctld.take())
            .chain([munge])
        {
            stop(&mut c);
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Each test body once per Slurm version: `v22_05::NAME` and `v26_05::NAME`,
/// once more (counted) when PRRTE master itself died during it
/// (`support::rerun`, docs/conformance.md D9).
#[allow(unused_macros)]
macro_rules! on_both_versions {
    ($($name:ident),* $(,)?) => {
        mod v22_05 {
            $(#[test] fn $name() {
                $crate::support::rerun::once_more_if_a_peer_died(|| {
                    super::$name($crate::support::slurm::Version::Debian22)
                })
            })*
        }
        mod v26_05 {
            $(#[test] fn $name() {
                $crate::support::rerun::once_more_if_a_peer_died(|| {
                    super::$name($crate::support::slurm::Version::Current26)
                })
            })*
        }
    };
}

#[allow(unused_imports)]
pub(crate) use on_both_versions;
