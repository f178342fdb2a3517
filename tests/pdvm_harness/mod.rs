//! Starting the built `pdvm` binary for black-box tests, and connecting to it
//! with the library's connection and operations layers.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pmix_tools::conn::ConnectOptions;
use pmix_tools::ops::Session;

use crate::support::{cargo_bin, scrub_pmix_env, unique_tmpdir, TempDir};

/// A running pdvm, stopped (SIGTERM, then SIGKILL) on drop.
pub struct Pdvm {
    child: Child,
    /// Its pid.
    pub pid: u32,
    /// The tmpdir it writes its rendezvous directory into.
    pub tmpdir: TempDir,
    /// Lines it printed on stdout.
    pub stdout: mpsc::Receiver<String>,
}

impl Pdvm {
    /// Start `pdvm ARGS --tmpdir <fresh dir>` and wait for "DVM ready" (on
    /// its stderr; its other stderr lines are passed on to ours).
    pub fn start(args: &[&str]) -> Pdvm {
        let tmpdir = unique_tmpdir("pdvm");
        let mut cmd = Command::new(cargo_bin("pdvm"));
        scrub_pmix_env(&mut cmd);
        cmd.args(args)
            .arg("--tmpdir")
            .arg(tmpdir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start pdvm");
        let out = child.stdout.take().expect("pdvm stdout");
        let err = child.stderr.take().expect("pdvm stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (rtx, ready) = mpsc::channel();
        std::thread::spawn(move || {
            let mut first = Some(rtx);
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                match first.take() {
                    Some(t) => {
                        let _ = t.send(line);
                    }
                    None => eprintln!("{line}"),
                }
            }
        });
        let first = ready
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("pdvm did not print DVM ready"));
        assert_eq!(first, "DVM ready", "pdvm's first line on stderr");
        let pid = child.id();
        Pdvm {
            child,
            pid,
            tmpdir,
            stdout: rx,
        }
    }

    /// A command for one of our tools as a user runs it next to this pdvm:
    /// found through its tmpdir, our binaries first on PATH.
    pub fn tool(&self, name: &str) -> Command {
        let mut cmd = Command::new(cargo_bin(name));
        scrub_pmix_env(&mut cmd);
        cmd.env("TMPDIR", self.tmpdir.path())
            .env("PATH", crate::support::user_path());
        cmd
    }

    /// The rendezvous directory `tmpdir/pdvm.<pid>`.
    pub fn rendezvous_dir(&self) -> PathBuf {
        self.tmpdir.path().join(format!("pdvm.{}", self.pid))
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

    /// Resident memory of the pdvm process in KiB.
    pub fn rss_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// Stop it with SIGTERM and return its exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        wait_for(&mut self.child, Duration::from_secs(10)).expect("pdvm stops on SIGTERM")
    }
}

/// Wait for a child with a deadline.
pub fn wait_for(child: &mut Child, d: Duration) -> Option<std::process::ExitStatus> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

impl Drop for Pdvm {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            if wait_for(&mut self.child, Duration::from_secs(5)).is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
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
