//! The Python peers: Debian's OpenPMIx 4.2.2 binding (`python3-pmix`) as a
//! server ([`Py422`], `tests/peers/pmix422_server.py`), as a tool
//! ([`libpmix_tool`], `tests/peers/libpmix_tool.py`) and as a client a
//! server launches ([`libpmix_client_argv`], `tests/peers/libpmix_client.py`).
//! Each panics with "run scripts/install-peers.sh" when the binding is
//! missing, so tests needing it fail instead of skipping.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::{
    cargo_bin, debian_pmix_python, scrub_pmix_env, unique_tmpdir, TempDir, ToolHost,
};

/// How long the 4.2.2 server may take to register its job and start.
pub const PY422_START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long [`Py422::next`] / [`Py422::next_line`] wait for an upcall line.
pub const PY422_LINE_TIMEOUT: Duration = Duration::from_secs(10);

/// Path of one of the Python peer scripts in `tests/peers/`.
pub fn peer_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("peers")
        .join(name)
}

/// A command running `tests/peers/libpmix_tool.py URI [REQID]` with
/// Debian's python3 (inherited PMIx variables removed): a 4.2.2 tool that
/// connects to `uri`, queries the namespaces, asks for one node and prints
/// one JSON object (see the script).
pub fn libpmix_tool(uri: &str, reqid: Option<&str>) -> Command {
    let mut cmd = Command::new(debian_pmix_python());
    scrub_pmix_env(&mut cmd);
    cmd.args(libpmix_tool_args(uri, reqid));
    cmd
}

/// The arguments of Debian's python3 running `tests/peers/libpmix_tool.py`
/// (for a command prepared otherwise, e.g. [`crate::support::ToolHost::tool_command`]).
pub fn libpmix_tool_args(uri: &str, reqid: Option<&str>) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "-W".into(),
        "ignore".into(),
        peer_script("libpmix_tool.py").into(),
        uri.into(),
    ];
    args.extend(reqid.map(OsString::from));
    args
}

/// The argv of a 4.2.2 client (`tests/peers/libpmix_client.py`) for a server
/// to launch: it inits, asks for one node and prints one JSON object.
pub fn libpmix_client_argv() -> Vec<OsString> {
    vec![
        debian_pmix_python().into(),
        "-W".into(),
        "ignore".into(),
        peer_script("libpmix_client.py").into(),
    ]
}

/// The last stdout line starting with `{`, as JSON; panics when there is none.
pub fn last_json(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A real OpenPMIx 4.2.2 server (`tests/peers/pmix422_server.py`) in its own
/// fresh tmpdir, with one registered job `py422-job`; killed on drop. Each
/// upcall it serves is logged as one line ([`Py422::next`]).
pub struct Py422 {
    child: Child,
    /// The server's pid (names its rendezvous file).
    pub pid: u32,
    /// The environment the server handed its job's rank 0 (`PMIX_*`).
    pub env: HashMap<String, String>,
    /// The server's tmpdir (holds its rendezvous files).
    pub dir: PathBuf,
    log: mpsc::Receiver<String>,
    _dir: TempDir,
}

impl Py422 {
    /// Start the server and wait (at most [`PY422_START_TIMEOUT`]) until it
    /// registered its job and is ready.
    pub fn start() -> Py422 {
        let dir = unique_tmpdir("py422");
        let mut cmd = Command::new(debian_pmix_python());
        scrub_pmix_env(&mut cmd);
        let mut child = cmd
            .arg(peer_script("pmix422_server.py"))
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the 4.2.2 server");
        let out = BufReader::new(child.stdout.take().expect("server stdout"));
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let line = || {
            log.recv_timeout(PY422_START_TIMEOUT).unwrap_or_else(|_| {
                panic!("4.2.2 server printed nothing in {PY422_START_TIMEOUT:?}")
            })
        };
        let first = line();
        let env: HashMap<String, String> = first
            .strip_prefix("ENV ")
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_else(|| panic!("4.2.2 server did not register its job: {first:?}"));
        let second = line();
        let pid = second
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("4.2.2 server did not start: {second:?}"));
        Py422 {
            child,
            pid,
            env,
            dir: dir.path().to_path_buf(),
            log,
            _dir: dir,
        }
    }

    /// `name` (one of our tools) run as the job's process
    /// ([`ToolHost::tool_command`]; `PATH` as inherited).
    pub fn tool(&self, name: &str) -> Command {
        self.tool_command(cargo_bin(name))
    }

    /// The next upcall line (with its newline), within [`PY422_LINE_TIMEOUT`].
    pub fn next_line(&self) -> String {
        let l = self
            .log
            .recv_timeout(PY422_LINE_TIMEOUT)
            .unwrap_or_else(|_| panic!("no upcall logged within {PY422_LINE_TIMEOUT:?}"));
        l + "\n"
    }

    /// The next upcall line starting with `prefix` (earlier ones skipped),
    /// within [`PY422_LINE_TIMEOUT`].
    pub fn next(&self, prefix: &str) -> String {
        let deadline = std::time::Instant::now() + PY422_LINE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let l = self
                .log
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {prefix} upcall logged"));
            if l.starts_with(prefix) {
                return l;
            }
        }
    }
}

impl Drop for Py422 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
