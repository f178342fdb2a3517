//! The one pdvm launcher: start the built `pdvm` binary, private to one
//! test (its own fresh tmpdir), and reach it as a user's tools or as the
//! library's connection and operations layers do. Stopped on drop.
//!
//! [`Pdvm::start`] runs `pdvm ARGS --tmpdir <fresh dir>`;
//! [`Pdvm::builder`] adds a session-leader command and extra environment
//! (the conformance harness's [`crate::support::blackbox::Dvm`] is built on it).

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use pmix_tools::conn::ConnectOptions;
use pmix_tools::ops::Session;

use crate::support::{cargo_bin, scrub_pmix_env, unique_tmpdir, TempDir};

/// How long pdvm may take to print "DVM ready".
pub const PDVM_START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long [`Pdvm::stop`] / [`Pdvm::terminate`] wait after SIGTERM.
pub const PDVM_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `Drop` waits after SIGTERM before SIGKILL.
const PDVM_DROP_TIMEOUT: Duration = Duration::from_secs(5);

/// How to start a pdvm: arguments, a session-leader command, environment.
pub struct PdvmBuilder {
    args: Vec<OsString>,
    leader: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    tmp_env: bool,
    tag: &'static str,
    tmpdir: Option<TempDir>,
    ready_first: bool,
}

impl PdvmBuilder {
    /// Run `argv` as pdvm's session-leader job (`pdvm ARGS -- ARGV`).
    pub fn leader<S: Into<OsString>>(mut self, argv: impl IntoIterator<Item = S>) -> Self {
        self.leader = argv.into_iter().map(Into::into).collect();
        self
    }

    /// Set an environment variable of pdvm (and so of the jobs it runs).
    pub fn env(mut self, key: impl Into<OsString>, val: impl Into<OsString>) -> Self {
        self.env.push((key.into(), val.into()));
        self
    }

    /// Also set pdvm's `TMPDIR` to its private tmpdir, so that tools run
    /// inside its jobs find it there.
    pub fn tmpdir_env(mut self) -> Self {
        self.tmp_env = true;
        self
    }

    /// Name tag of the private tmpdir (`pmt-<tag>-<pid>-<n>`).
    pub fn tag(mut self, tag: &'static str) -> Self {
        self.tag = tag;
        self
    }

    /// Use this (fresh, private) directory as pdvm's tmpdir, e.g. one the
    /// test prepared files in.
    pub fn in_tmpdir(mut self, dir: TempDir) -> Self {
        self.tmpdir = Some(dir);
        self
    }

    /// Accept other stderr lines before "DVM ready" (by default the test
    /// fails unless it is pdvm's first line on stderr).
    pub fn lenient_ready(mut self) -> Self {
        self.ready_first = false;
        self
    }

    /// Start it and wait (at most [`PDVM_START_TIMEOUT`]) for "DVM ready"
    /// on its stderr.
    pub fn start(self) -> Pdvm {
        let tmpdir = self.tmpdir.unwrap_or_else(|| unique_tmpdir(self.tag));
        let mut cmd = Command::new(cargo_bin("pdvm"));
        scrub_pmix_env(&mut cmd);
        cmd.args(&self.args).arg("--tmpdir").arg(tmpdir.path());
        if self.tmp_env {
            cmd.env("TMPDIR", tmpdir.path());
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        if !self.leader.is_empty() {
            cmd.arg("--").args(&self.leader);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start pdvm");
        let out = child.stdout.take().expect("pdvm stdout");
        let err = child.stderr.take().expect("pdvm stderr");
        let stdout_log = Arc::new(Mutex::new(Vec::new()));
        let stderr_log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let sink = Arc::clone(&stdout_log);
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                sink.lock().expect("pdvm stdout log").push(line.clone());
                let _ = tx.send(line);
            }
        });
        // Every stderr line is kept for [`Pdvm::logs`] and passed on to the
        // test's stderr; the first one and "DVM ready" are signalled.
        let (rtx, ready) = mpsc::channel();
        let sink = Arc::clone(&stderr_log);
        std::thread::spawn(move || {
            let mut first = true;
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if first || line == "DVM ready" {
                    let _ = rtx.send(line.clone());
                }
                first = false;
                eprintln!("{line}");
                sink.lock().expect("pdvm stderr log").push(line);
            }
        });
        let pid = child.id();
        let pdvm = Pdvm {
            child: Some(child),
            pid,
            tmpdir,
            stdout: rx,
            stdout_log,
            stderr_log,
        };
        let deadline = Instant::now() + PDVM_START_TIMEOUT;
        let mut first = true;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match ready.recv_timeout(left) {
                Ok(line) if line == "DVM ready" => break,
                Ok(line) if first && self.ready_first => {
                    assert_eq!(line, "DVM ready", "pdvm's first line on stderr")
                }
                Ok(_) => {}
                Err(_) => panic!(
                    "pdvm did not print DVM ready within {PDVM_START_TIMEOUT:?}\n{}",
                    pdvm.logs()
                ),
            }
            first = false;
        }
        pdvm
    }
}

/// A running pdvm, stopped (SIGTERM, then SIGKILL) on drop.
pub struct Pdvm {
    child: Option<Child>,
    /// Its pid.
    pub pid: u32,
    /// The tmpdir it writes its rendezvous directory into.
    pub tmpdir: TempDir,
    /// Lines it printed on stdout (also kept for [`Pdvm::logs`]).
    pub stdout: mpsc::Receiver<String>,
    stdout_log: Arc<Mutex<Vec<String>>>,
    stderr_log: Arc<Mutex<Vec<String>>>,
}

impl Pdvm {
    /// Start `pdvm ARGS --tmpdir <fresh dir>` and wait for "DVM ready", which
    /// must be its first line on stderr.
    pub fn start(args: &[&str]) -> Pdvm {
        Pdvm::builder(args).start()
    }

    /// A pdvm with these arguments, to be configured and started.
    pub fn builder(args: &[&str]) -> PdvmBuilder {
        PdvmBuilder {
            args: args.iter().map(OsString::from).collect(),
            leader: Vec::new(),
            env: Vec::new(),
            tmp_env: false,
            tag: "pdvm",
            tmpdir: None,
            ready_first: true,
        }
    }

    /// A command for one of our tools as a user runs it next to this pdvm:
    /// found through its tmpdir, our binaries first on PATH
    /// ([`crate::support::tool()`]).
    pub fn tool(&self, name: &str) -> Command {
        crate::support::tool(self, name)
    }

    /// The reservation records pdvm lists (`pwatch --status --json`).
    pub fn reservations(&self) -> Vec<serde_json::Value> {
        let mut cmd = self.tool("pwatch");
        cmd.args(["--status", "--what", "reservations", "--json"]);
        let out = crate::support::run_with_timeout(cmd.stdin(std::process::Stdio::null()), 30);
        assert!(
            out.status.success(),
            "pwatch --status: {}",
            crate::support::show(&out)
        );
        crate::support::json_records(&crate::support::text(&out.stdout))
            .into_iter()
            .filter(|v| v["type"] == "reservation")
            .collect()
    }

    /// The ids of [`Self::reservations`].
    pub fn reservation_ids(&self) -> Vec<String> {
        self.reservations()
            .iter()
            .filter_map(|v| v["alloc_id"].as_str().map(String::from))
            .collect()
    }

    /// The rendezvous directory `tmpdir/pdvm.<pid>`.
    pub fn rendezvous_dir(&self) -> PathBuf {
        self.tmpdir.path().join(format!("pdvm.{}", self.pid))
    }

    /// What pdvm printed so far on stdout and stderr (for failure messages).
    pub fn logs(&self) -> String {
        let join = |l: &Arc<Mutex<Vec<String>>>| l.lock().map(|l| l.join("\n")).unwrap_or_default();
        format!(
            "--- pdvm stdout:\n{}\n--- pdvm stderr:\n{}",
            join(&self.stdout_log),
            join(&self.stderr_log)
        )
    }

    /// Whether pdvm is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// Connection options finding this pdvm through its tmpdir, as a tool.
    pub fn opts(&self) -> ConnectOptions {
        ConnectOptions {
            tmpdir: Some(self.tmpdir.path().to_path_buf()),
            force_tool: true,
            ..Default::default()
        }
    }

    /// A tool session with this pdvm.
    pub fn session(&self) -> Session {
        Session::connect(&self.opts()).expect("connect to pdvm")
    }

    /// The server's address.
    pub fn addr(&self) -> std::net::SocketAddr {
        let t = pmix_tools::conn::discover::discover(
            &self.opts(),
            &pmix_tools::conn::discover::ProcessEnv,
        )
        .expect("discover pdvm");
        t.uri.socket_addr().expect("address")
    }

    /// A tool connection speaking the wire directly (the connect-ack sent,
    /// the welcome read and checked), so the test decides what it sends
    /// and when, or whether, replies are read. Reads time out after 30 s.
    pub fn raw_tool(&self) -> std::net::TcpStream {
        use pmix_tools::conn::handshake::{build_connect_ack, tool_info_blob, Hello, Identity};
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(self.addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("read timeout");
        let hello = Hello {
            identity: Identity::Tool,
            version: "5.0.11".into(),
            bfrops: "v41".into(),
            buffer_kind: 1,
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            info_blob: tool_info_blob(pmix_tools::codec::WireVersion::V41, "raw-tool", 1)
                .expect("blob"),
        };
        s.write_all(&build_connect_ack(&hello)).expect("send hello");
        // status + assigned nspace + rank + server nspace + rank + sec status
        let mut reply = vec![0u8; 4 + 256 + 4 + 256 + 4 + 4];
        s.read_exact(&mut reply).expect("handshake reply");
        assert_eq!(&reply[..4], &[0, 0, 0, 0], "handshake refused");
        s
    }

    /// Resident memory of the pdvm process in KiB.
    pub fn rss_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// Stop it with SIGTERM and return its exit status; panics when it has
    /// not exited within [`PDVM_STOP_TIMEOUT`].
    pub fn stop(mut self) -> ExitStatus {
        self.terminate().expect("pdvm still running")
    }

    /// Send SIGTERM and wait (at most [`PDVM_STOP_TIMEOUT`]) for the exit;
    /// its status, or `None` when it was already stopped by this handle.
    /// Panics (after SIGKILL) when it does not stop.
    pub fn terminate(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        match wait_for(&mut child, PDVM_STOP_TIMEOUT) {
            Some(st) => Some(st),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("pdvm did not stop on SIGTERM\n{}", self.logs());
            }
        }
    }
}

/// Wait for a child with a deadline; `None` when it is still running then.
pub fn wait_for(child: &mut Child, d: Duration) -> Option<ExitStatus> {
    let (status, _) = crate::support::wait_until(child, Instant::now() + d);
    status
}

impl Drop for Pdvm {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(self.pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                if wait_for(&mut child, PDVM_DROP_TIMEOUT).is_none() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
    }
}

/// What a launcher sees of one job: its forwarded output and its end event.
#[derive(Debug, Default)]
pub struct Seen {
    /// Forwarded stdout bytes.
    pub stdout: Vec<u8>,
    /// Forwarded stderr bytes.
    pub stderr: Vec<u8>,
    /// Every event received, in order.
    pub events: Vec<pmix_tools::ops::events::Event>,
}

impl Seen {
    /// The job-end event for `nspace`, if received.
    pub fn job_end(&self, nspace: &str) -> Option<&pmix_tools::ops::events::Event> {
        self.events
            .iter()
            .find(|e| e.status.0 == -145 && e.affected_nspace() == Some(nspace))
    }
}

/// Collect forwarded output and events until the job-end event of `nspace`
/// arrives (or `secs` pass).
pub fn follow_job(s: &Session, nspace: &str, secs: u64) -> Seen {
    use pmix_tools::conn::Unsolicited;
    let mut seen = Seen::default();
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end && seen.job_end(nspace).is_none() {
        match s.conn().next_unsolicited(Duration::from_millis(200)) {
            Some(Unsolicited::Iof(b)) => {
                let c =
                    pmix_tools::ops::iof::decode_iof(&mut s.decoder(&b)).expect("decode output");
                if c.is_stderr() {
                    seen.stderr.extend_from_slice(&c.data);
                } else {
                    seen.stdout.extend_from_slice(&c.data);
                }
            }
            Some(Unsolicited::Notify(b)) => {
                let e = pmix_tools::ops::events::decode_notification(&mut s.decoder(&b))
                    .expect("decode notification");
                seen.events.push(e);
            }
            Some(Unsolicited::Closed(e)) => panic!("connection closed: {e}"),
            Some(Unsolicited::Other(..)) | None => {}
        }
    }
    seen
}

/// An app running `argv` with `nprocs` processes.
pub fn app(argv: &[&str], nprocs: i32) -> pmix_tools::codec::App {
    pmix_tools::codec::App {
        cmd: argv[0].to_string(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: Vec::new(),
        cwd: None,
        maxprocs: nprocs,
        info: Vec::new(),
    }
}
