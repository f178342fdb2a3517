//! Black-box harness: a private pdvm per test, the four tools run either from
//! outside (as tools) or inside pdvm's session-leader job (as the
//! application), and their `--json` output parsed.
//!
//! The session leader is a small shell loop (`LEADER_LOOP`) started as
//! `pdvm ... -- sh -c LOOP`: it reads command numbers from a FIFO, runs
//! `cmd.N` with `sh`, and publishes `out.N`, `err.N` and `rc.N`. So every
//! command a test sends through [`Dvm::app`] runs inside the leader's job
//! (the tools act for its namespace) while the test keeps full control.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::ops::Deref;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::pdvm::Pdvm;
use crate::support::{run_with_timeout, tool, unique_tmpdir, wait, wait_until, ToolCommand};

/// Longest any single tool invocation may take before the test fails.
pub const TOOL_SECS: u64 = 20;
/// Longest a poll loop waits for a state change before the test fails.
pub const POLL: Duration = Duration::from_secs(15);

/// The leader's command loop (see the module docs). `$1` is the control dir.
const LEADER_LOOP: &str = r#"D="$1"
exec 3<"$D/ctl"
echo "$PMIX_NAMESPACE" >"$D/leader.ns.tmp" && mv "$D/leader.ns.tmp" "$D/leader.ns"
while IFS= read -r n <&3; do
  [ "$n" = exit ] && exit 0
  sh "$D/cmd.$n" >"$D/out.$n" 2>"$D/err.$n" </dev/null
  echo $? >"$D/rc.$n.tmp"; mv "$D/rc.$n.tmp" "$D/rc.$n"
done
"#;

/// What one tool invocation produced.
#[derive(Debug, Clone)]
pub struct Out {
    /// Exit code (`-1` when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Out {
    /// Every stdout line that parses as a JSON object.
    pub fn json(&self) -> Vec<Value> {
        crate::support::json_records(&self.stdout)
    }

    /// The JSON objects whose `"type"` is `ty`.
    pub fn of_type(&self, ty: &str) -> Vec<Value> {
        self.json()
            .into_iter()
            .filter(|v| v["type"] == ty)
            .collect()
    }

    /// The first JSON object of type `ty`; panics with the output when none.
    pub fn first(&self, ty: &str) -> Value {
        self.of_type(ty)
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no {ty:?} object in output:\n{self}"))
    }

    /// Panic unless the exit code is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code:\n{self}");
        self
    }

    /// The allocation id of a successful palloc (`--json`).
    #[track_caller]
    pub fn alloc_id(&self) -> String {
        self.expect_code(0);
        str_field(&self.first("allocation"), "alloc_id")
    }

    /// The namespace of a launched job (pspawn `--json`).
    #[track_caller]
    pub fn job_nspace(&self) -> String {
        self.expect_code(0);
        str_field(&self.first("job"), "nspace")
    }

    /// The PMIx status name of a `--json` error object.
    pub fn error_status(&self) -> Option<String> {
        self.of_type("error")
            .first()
            .and_then(|e| e["status"].as_str().map(String::from))
    }

    /// Forwarded output lines (pspawn/palloc `--json` "output" objects).
    pub fn output_lines(&self) -> Vec<String> {
        self.of_type("output")
            .iter()
            .filter_map(|o| o["line"].as_str().map(String::from))
            .collect()
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {}\n--- stdout:\n{}--- stderr:\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Run a prepared tool command (bounded by [`TOOL_SECS`]) and collect what
/// it produced.
pub fn run_tool(cmd: &mut Command) -> Out {
    let o = run_with_timeout(cmd, TOOL_SECS);
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A string field of a JSON object; panics when absent.
#[track_caller]
pub fn str_field(v: &Value, name: &str) -> String {
    v[name]
        .as_str()
        .unwrap_or_else(|| panic!("no string {name:?} in {v}"))
        .to_string()
}

/// A JSON array of strings as a sorted vector.
pub fn strings(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// A running pdvm private to one test, optionally with a session leader
/// whose job runs the commands [`Dvm::app`] sends; stopped on drop. It is a
/// [`Pdvm`] (the one launcher) plus the leader's control channel.
pub struct Dvm {
    pdvm: Pdvm,
    /// The leader's control FIFO (write end), when started with a leader.
    ctl: Option<fs::File>,
    next: u32,
    /// The session leader's namespace, when started with a leader.
    pub leader_ns: Option<String>,
}

impl Deref for Dvm {
    type Target = Pdvm;
    fn deref(&self) -> &Pdvm {
        &self.pdvm
    }
}

impl Dvm {
    /// `pdvm ARGS` with no command: every tool is run from outside.
    pub fn start(args: &[&str]) -> Dvm {
        Dvm::launch(args, false)
    }

    /// `pdvm ARGS -- sh -c LEADER_LOOP`: [`Dvm::app`] runs commands as the
    /// session leader's job.
    pub fn with_leader(args: &[&str]) -> Dvm {
        Dvm::launch(args, true)
    }

    fn launch(args: &[&str], leader: bool) -> Dvm {
        let tmp = unique_tmpdir("conf");
        let ctl_dir = tmp.path().join("ctl.d");
        fs::create_dir(&ctl_dir).expect("control dir");
        let mut builder = Pdvm::builder(args)
            .in_tmpdir(tmp)
            .tmpdir_env()
            .lenient_ready();
        if leader {
            nix::unistd::mkfifo(&ctl_dir.join("ctl"), nix::sys::stat::Mode::S_IRWXU)
                .expect("mkfifo");
            builder = builder.leader([
                std::ffi::OsStr::new("sh"),
                "-c".as_ref(),
                LEADER_LOOP.as_ref(),
                "leader".as_ref(),
                ctl_dir.as_os_str(),
            ]);
        }
        let mut dvm = Dvm {
            pdvm: builder.start(),
            ctl: None,
            next: 0,
            leader_ns: None,
        };
        if leader {
            let fifo = ctl_dir.join("ctl");
            // A FIFO opens for writing (non-blocking) once its reader has it.
            let mut last = None;
            let file = wait::value_within(POLL, || {
                fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(nix::libc::O_NONBLOCK)
                    .open(&fifo)
                    .map_err(|e| last = Some(e))
                    .ok()
            })
            .unwrap_or_else(|| {
                panic!(
                    "leader never opened its FIFO: {}\n{}",
                    last.map(|e| e.to_string()).unwrap_or_default(),
                    dvm.logs()
                )
            });
            dvm.ctl = Some(file);
            let ns_file = ctl_dir.join("leader.ns");
            dvm.poll("leader publishes its namespace", |_| ns_file.exists());
            let ns = fs::read_to_string(&ns_file).expect("leader.ns");
            dvm.leader_ns = Some(ns.trim().to_string());
        }
        dvm
    }
    /// The leader's namespace; panics without a leader.
    pub fn leader(&self) -> String {
        self.leader_ns.clone().expect("started with a leader")
    }

    /// Poll `cond` every 10 ms until true; panic after [`POLL`].
    #[track_caller]
    pub fn poll(&self, what: &str, mut cond: impl FnMut(&Dvm) -> bool) {
        if !wait::within(POLL, || cond(self)) {
            panic!("timed out waiting until {what}\n{}", self.logs());
        }
    }

    /// A command for one of the tools, run from outside any job (a tool
    /// requester), finding this pdvm through `TMPDIR` ([`tool`]), with
    /// `NO_COLOR=1`.
    pub fn tool_cmd(&self, name: &str) -> Command {
        tool(&self.pdvm, name).no_color()
    }

    /// Run a tool from outside (tool requester) and wait for it.
    pub fn tool(&self, name: &str, args: &[&str]) -> Out {
        let mut cmd = self.tool_cmd(name);
        cmd.args(args);
        run_tool(&mut cmd)
    }

    /// The control directory shared with the leader (scripts go there).
    pub fn ctl_dir(&self) -> PathBuf {
        self.tmpdir.path().join("ctl.d")
    }

    /// Write an executable-by-sh script into the control dir; its path.
    pub fn script(&self, name: &str, body: &str) -> String {
        let p = self.ctl_dir().join(name);
        fs::write(&p, body).expect("write script");
        p.to_string_lossy().into_owned()
    }

    /// A path in the control dir (for gate and marker files).
    pub fn path(&self, name: &str) -> String {
        self.ctl_dir().join(name).to_string_lossy().into_owned()
    }

    /// Run shell `line` inside the session leader's job (application
    /// requester) and wait for it.
    pub fn app(&mut self, line: &str) -> Out {
        let n = self.next;
        self.next += 1;
        let dir = self.ctl_dir();
        fs::write(dir.join(format!("cmd.{n}")), line).expect("write command");
        let ctl = self.ctl.as_mut().expect("started with a leader");
        ctl.write_all(format!("{n}\n").as_bytes())
            .expect("send command to the leader");
        let rc = dir.join(format!("rc.{n}"));
        if !wait::within(Duration::from_secs(TOOL_SECS), || rc.exists()) {
            panic!("leader command {line:?} did not finish\n{}", self.logs());
        }
        let read = |p: &Path| fs::read_to_string(p).unwrap_or_default();
        Out {
            code: read(&rc).trim().parse().unwrap_or(-1),
            stdout: read(&dir.join(format!("out.{n}"))),
            stderr: read(&dir.join(format!("err.{n}"))),
        }
    }

    /// `pwatch --status --json` from outside: every status object.
    pub fn status(&self) -> Vec<Value> {
        let o = self.tool("pwatch", &["--status", "--json"]);
        o.expect_code(0);
        o.json()
    }

    /// The reservation objects of the status.
    pub fn reservations(&self) -> Vec<Value> {
        self.status()
            .into_iter()
            .filter(|v| v["type"] == "reservation")
            .collect()
    }

    /// The reservation with this id, if it exists.
    pub fn reservation(&self, id: &str) -> Option<Value> {
        self.reservations()
            .into_iter()
            .find(|r| r["alloc_id"] == id)
    }

    /// The node objects of the status.
    pub fn nodes(&self) -> Vec<Value> {
        self.status()
            .into_iter()
            .filter(|v| v["type"] == "node")
            .collect()
    }

    /// The node named `name`, if it is in the DVM.
    pub fn node(&self, name: &str) -> Option<Value> {
        self.nodes().into_iter().find(|n| n["name"] == name)
    }

    /// Send SIGTERM to pdvm and wait for it to exit; its exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        self.pdvm.terminate().and_then(|st| st.code())
    }
}

impl Drop for Dvm {
    fn drop(&mut self) {
        // The leader ends its loop; pdvm itself is stopped by its own drop.
        if let Some(ctl) = self.ctl.as_mut() {
            let _ = ctl.write_all(b"exit\n");
        }
        self.ctl = None;
    }
}

/// A tool left running in the background (e.g. `palloc --hold`, `pwatch`).
pub struct Bg {
    child: Option<Child>,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Bg {
    /// Start `cmd` with stdout and stderr captured.
    pub fn start(mut cmd: Command) -> Bg {
        use std::os::unix::process::CommandExt;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().expect("start background tool");
        let out = Arc::new(Mutex::new(String::new()));
        let err = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        for (pipe, buf) in [
            (
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
                Arc::clone(&out),
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
                Arc::clone(&err),
            ),
        ] {
            if let Some(p) = pipe {
                readers.push(std::thread::spawn(move || {
                    for line in BufReader::new(p).lines().map_while(Result::ok) {
                        let mut b = buf.lock().expect("bg buffer");
                        b.push_str(&line);
                        b.push('\n');
                    }
                }));
            }
        }
        Bg {
            child: Some(child),
            out,
            err,
            readers,
        }
    }

    /// What it printed so far.
    pub fn snapshot(&self) -> Out {
        Out {
            code: -1,
            stdout: self.out.lock().expect("bg").clone(),
            stderr: self.err.lock().expect("bg").clone(),
        }
    }

    /// Wait until its stdout holds a JSON object of type `ty`; that object.
    #[track_caller]
    pub fn wait_for(&self, ty: &str) -> Value {
        wait::value_within(POLL, || self.snapshot().of_type(ty).into_iter().next()).unwrap_or_else(
            || {
                panic!(
                    "no {ty:?} object from background tool:\n{}",
                    self.snapshot()
                )
            },
        )
    }

    /// Send `sig` and wait for the exit; everything it printed.
    pub fn stop(mut self, sig: nix::sys::signal::Signal) -> Out {
        let mut child = self.child.take().expect("running");
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig);
        self.finish(&mut child)
    }

    /// Wait (bounded) for it to exit by itself; everything it printed.
    pub fn wait(mut self) -> Out {
        let mut child = self.child.take().expect("running");
        self.finish(&mut child)
    }

    fn finish(&self, child: &mut Child) -> Out {
        let Some(st) = wait_until(child, Instant::now() + POLL).0 else {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            panic!("background tool did not exit:\n{}", self.snapshot());
        };
        // Let the reader threads drain the pipes: they end when the last
        // process holding them exits (bounded: a stray grandchild may not).
        wait::within(Duration::from_secs(2), || {
            self.readers.iter().all(|r| r.is_finished())
        });
        let mut o = self.snapshot();
        o.code = st.code().unwrap_or(-1);
        o
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = c.wait();
        }
    }
}

/// Whether process `pid` exists (signal 0).
pub fn alive(pid: i32) -> bool {
    pid > 0 && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// Poll until `cond` holds (bounded by [`POLL`]).
#[track_caller]
pub fn eventually(what: &str, cond: impl FnMut() -> bool) {
    crate::support::wait::eventually_within(what, POLL, cond)
}

/// Read a pid written by a job into `path` (waits for it).
#[track_caller]
pub fn read_pid(path: &str) -> i32 {
    let mut pid = 0;
    eventually(&format!("{path} holds a pid"), || {
        pid = fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid > 0
    });
    pid
}

/// A job body that records its pid and host, then waits (bounded, 30 s) for
/// a gate file: lets a test keep a job alive exactly as long as it needs.
pub struct GateJob {
    /// `sh SCRIPT`, the command to give pspawn.
    pub cmd: String,
    /// File the job writes its pid into.
    pub pidfile: String,
    /// File the job writes its `PMIX_HOSTNAME` into.
    pub hostfile: String,
    /// Creating this file lets the job end (exit 0).
    pub gate: String,
}

impl GateJob {
    /// A gate job named `tag` in `dvm`'s control dir.
    pub fn new(dvm: &Dvm, tag: &str) -> GateJob {
        GateJob::in_dir(&dvm.ctl_dir(), tag)
    }

    /// A gate job named `tag` whose script and files live in `dir`.
    pub fn in_dir(dir: &Path, tag: &str) -> GateJob {
        let at = |n: String| dir.join(n).to_string_lossy().into_owned();
        let pidfile = at(format!("{tag}.pid"));
        let hostfile = at(format!("{tag}.host"));
        let gate = at(format!("{tag}.gate"));
        let body = format!(
            "echo \"$PMIX_HOSTNAME\" >{hostfile}.tmp && mv {hostfile}.tmp {hostfile}\n\
             echo $$ >{pidfile}.tmp && mv {pidfile}.tmp {pidfile}\n\
             i=0\nwhile [ ! -e {gate} ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done\n"
        );
        let script = at(format!("{tag}.sh"));
        fs::write(&script, body).expect("write gate script");
        GateJob {
            cmd: format!("sh {script}"),
            pidfile,
            hostfile,
            gate,
        }
    }

    /// The job's pid, once it started.
    pub fn pid(&self) -> i32 {
        read_pid(&self.pidfile)
    }

    /// The node the job runs on, once it started.
    pub fn host(&self) -> String {
        self.pid();
        fs::read_to_string(&self.hostfile)
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    /// A shell line that waits (bounded, 15 s) until the job has started.
    pub fn await_started_sh(&self) -> String {
        format!(
            "i=0; while [ ! -s {} ] && [ $i -lt 750 ]; do sleep 0.02; i=$((i+1)); done\n",
            self.pidfile
        )
    }

    /// Let it end.
    pub fn open(&self) {
        fs::write(&self.gate, "").expect("open gate");
    }
}

/// Hosts reported by a job whose processes print `host=$PMIX_HOSTNAME`.
pub fn hosts(out: &Out) -> Vec<String> {
    let mut h: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("host=").map(String::from))
        .collect();
    h.sort();
    h
}

/// The shell command printing each process's host (`host=NODE`).
pub const PRINT_HOST: &str = "sh -c 'echo host=$PMIX_HOSTNAME'";

/// Status with the volatile parts removed (node busy counters are kept: a
/// launched process would change them), for before/after comparisons.
pub fn comparable(status: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = status.iter().map(|x| x.to_string()).collect();
    v.sort();
    v
}

/// Shell: the first `"alloc_id":"…"` of a palloc `--json` run into `$A`,
/// exiting 3 (after printing what palloc said) when it was refused.
pub fn palloc_into_a(flags: &str) -> String {
    format!(
        "out=$(palloc {flags} --json 2>&1); rc=$?\n\
         A=$(printf '%s\\n' \"$out\" | sed -n 's/.*\"alloc_id\":\"\\([^\"]*\\)\".*/\\1/p' | head -n 1)\n\
         echo \"alloc=$A\"\n\
         if [ $rc -ne 0 ] || [ -z \"$A\" ]; then echo \"palloc failed ($rc): $out\"; exit 3; fi\n"
    )
}

/// The `alloc=ID` a job script printed.
#[track_caller]
pub fn printed_alloc(out: &Out) -> String {
    out.stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("alloc="))
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| panic!("no alloc= line:\n{out}"))
        .to_string()
}
