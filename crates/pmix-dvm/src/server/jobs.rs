//! Jobs as real local processes: launching them with the PMIx environment,
//! capturing their output, reaping them, and signalling them.

use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::codec::App;

use super::job_env::{LaunchEnv, ProcSpec};

/// Which stream a pipe carries (PMIx IOF channel bits).
pub(crate) const CH_STDOUT: u16 = 0x0002;
/// Stderr channel bit.
pub(crate) const CH_STDERR: u16 = 0x0004;

/// One process of a job.
#[derive(Debug)]
pub(crate) struct ProcRec {
    /// Its rank.
    pub rank: u32,
    /// Its pid (`None` while the spawner thread starts it, or when it could
    /// not be started).
    pub pid: Option<i32>,
    /// Simulated node it runs on.
    pub node: String,
    /// The executable it runs (the resolved path when found on PATH).
    pub exe: String,
    /// Exit status once reaped (127 when it could not start).
    pub exit: Option<i32>,
    /// A signal sent while it was starting, delivered once it has its pid.
    pub pending_signal: Option<Signal>,
}

impl ProcRec {
    /// Handed to the spawner thread and not heard of since: no pid and no
    /// exit yet. It counts as running.
    pub(crate) fn starting(&self) -> bool {
        self.pid.is_none() && self.exit.is_none()
    }

    /// Send `sig` to its process group if it runs; keep it for the start
    /// when it is still starting.
    pub(crate) fn signal(&mut self, sig: Signal) {
        match (self.pid, self.exit) {
            (Some(pid), None) => {
                let _ = killpg(Pid::from_raw(pid), sig);
            }
            (None, None) => self.pending_signal = Some(sig),
            _ => {}
        }
    }
}

/// A job pdvm launched.
#[derive(Debug)]
pub(crate) struct Job {
    /// Its namespace.
    pub nspace: String,
    /// Its processes.
    pub procs: Vec<ProcRec>,
    /// Connection id of the spawner, for forwarded output and completion.
    pub spawner: Option<u64>,
    /// Where its output goes when not to the spawner: a job spawned by a
    /// process (`MPI_Comm_spawn`) sends it to the tool that gets its
    /// parent job's output, as prterun shows the children's lines.
    pub output_to: Option<u64>,
    /// Forward stdout to the spawner.
    pub fwd_stdout: bool,
    /// Forward stderr to the spawner.
    pub fwd_stderr: bool,
    /// Spawner asked to be told of completion.
    pub notify_completion: bool,
    /// Its output is not read for now (`pdvm.iof.pause`): the connection
    /// that asked; its close lifts the pause.
    pub iof_paused_by: Option<u64>,
    /// Pipes still open.
    pub open_pipes: usize,
    /// When the last process exited (pipes then get a grace period).
    pub all_exited_at: Option<Instant>,
    /// When a termination was requested (SIGKILL follows after a grace).
    pub kill_requested: Option<Instant>,
    /// True once the SIGKILL that follows the grace was sent.
    pub killed: bool,
    /// True once reported ended.
    pub ended: bool,
    /// The ranks whose stdin the spawner feeds (`PMIX_STDIN_TGT`), if any.
    pub stdin_rank: Option<StdinFeed>,
    /// Those ranks' stdin, by rank, once started.
    pub stdin: Vec<(u32, StdinSink)>,
    /// The command line it runs (`PMIX_CMD_LINE`): each app's argv, MPMD
    /// apps joined by ` : `.
    pub cmdline: String,
    /// The uid of the process that spawned it, when the kernel said
    /// (`PMIX_USERID`).
    pub uid: Option<u32>,
    /// Its name for people (`pdvm.job.name`, `pspawn -J`), if given.
    pub name: Option<String>,
    /// Where its ranks sit (what its PMIx clients learn at init).
    pub layout: super::job_data::JobLayout,
    /// Its job data as last packed: wire version, buffer kind, bytes.
    pub req_cache: Option<(crate::codec::WireVersion, bool, Vec<u8>)>,
    /// The status a process asked the job to end with (`PMIx_Abort`), and
    /// pdvm's sentence about it.
    pub aborted: Option<(i32, String)>,
}

/// The write end of a process's stdin, fed by IOF pushes
/// (`PMIX_IOF_PUSH_CMD`) on a thread of its own, so a process that does
/// not read never blocks the server. An empty push (end of input) closes it.
#[derive(Debug)]
pub(crate) struct StdinSink {
    tx: Option<std::sync::mpsc::Sender<Vec<u8>>>,
}

impl StdinSink {
    /// Start feeding `stdin`.
    pub(crate) fn start(stdin: std::fs::File) -> StdinSink {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut stdin = stdin;
            for chunk in rx {
                if stdin.write_all(&chunk).is_err() {
                    break;
                }
            }
        });
        StdinSink { tx: Some(tx) }
    }

    /// Take pushed bytes; none means end of input (the pipe closes once
    /// what was queued is written).
    pub(crate) fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            self.tx = None;
        } else if let Some(tx) = &self.tx {
            let _ = tx.send(data.to_vec());
        }
    }
}

/// Which ranks of a job get the spawner's stdin (`PMIX_STDIN_TGT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StdinFeed {
    /// One rank.
    Rank(u32),
    /// Every rank (`all`, as prun's `--stdin all`): each gets a copy.
    All,
}

impl StdinFeed {
    /// Whether `rank` gets the input.
    pub(crate) fn feeds(self, rank: u32) -> bool {
        match self {
            StdinFeed::Rank(r) => r == rank,
            StdinFeed::All => true,
        }
    }
}

/// Read `PMIX_STDIN_TGT` from a spawn's job info: a rank number (as a
/// string, as PRRTE reads it, or an integer) or `all`; `none` or absent
/// give no stdin.
pub(crate) fn stdin_rank(job_info: &[crate::codec::Info]) -> Option<StdinFeed> {
    let v = &job_info
        .iter()
        .find(|i| i.key == crate::proto::keys::STDIN_TGT)?
        .value;
    match v.as_str().map(str::trim) {
        Some(t) if t.eq_ignore_ascii_case("all") => Some(StdinFeed::All),
        Some(t) => t.parse().ok().map(StdinFeed::Rank),
        None => v
            .as_u64()
            .and_then(|r| u32::try_from(r).ok())
            .map(StdinFeed::Rank),
    }
}

impl super::Server {
    /// `PMIX_IOF_PUSH_CMD`: bytes for the stdin of the target processes
    /// (those pdvm feeds; others' input is dropped, as PRRTE does); no
    /// bytes close it. Answered `PMIX_SUCCESS`, `PMIX_ERR_NOT_FOUND` for a
    /// job that is not running.
    pub fn on_iof_push(
        &mut self,
        conn: u64,
        tag: u32,
        targets: Vec<crate::codec::Proc>,
        data: Vec<u8>,
    ) -> crate::error::Result<()> {
        use crate::proto::status::Status;
        let mut found = false;
        for t in &targets {
            if let Some(j) = self.jobs.get_mut(&t.nspace).filter(|j| !j.ended) {
                found = true;
                for (rank, sink) in &mut j.stdin {
                    if t.rank == crate::codec::RANK_WILDCARD || t.rank == *rank {
                        sink.push(&data);
                    }
                }
            }
        }
        let st = if found || targets.is_empty() {
            Status::SUCCESS
        } else {
            Status::ERR_NOT_FOUND
        };
        self.reply_status_infos(conn, tag, st, &[]);
        Ok(())
    }
}

impl Job {
    /// The connection its forwarded output goes to.
    pub(crate) fn output_conn(&self) -> Option<u64> {
        self.output_to.or(self.spawner)
    }

    /// A job just committed: no process yet, nobody spawned it, nothing
    /// forwarded or announced.
    pub(crate) fn new(nspace: &str) -> Job {
        Job {
            nspace: nspace.to_string(),
            procs: Vec::new(),
            spawner: None,
            output_to: None,
            fwd_stdout: false,
            fwd_stderr: false,
            notify_completion: false,
            iof_paused_by: None,
            open_pipes: 0,
            all_exited_at: None,
            kill_requested: None,
            killed: false,
            ended: false,
            stdin_rank: None,
            stdin: Vec::new(),
            cmdline: String::new(),
            uid: None,
            name: None,
            layout: Default::default(),
            req_cache: None,
            aborted: None,
        }
    }

    /// Processes still running.
    pub(crate) fn live(&self) -> usize {
        self.procs.iter().filter(|p| p.exit.is_none()).count()
    }

    /// The status an abort asked for, else the exit status of the first
    /// failing process (by rank), else 0.
    pub(crate) fn status(&self) -> i32 {
        if let Some((s, _)) = &self.aborted {
            return *s;
        }
        self.procs
            .iter()
            .filter_map(|p| p.exit)
            .find(|&s| s != 0)
            .unwrap_or(0)
    }

    /// Send `sig` to every live process (their process groups); one still
    /// starting gets it once started.
    pub(crate) fn signal(&mut self, sig: Signal) {
        for p in &mut self.procs {
            p.signal(sig);
        }
    }
}

/// A captured output pipe.
#[derive(Debug)]
pub(crate) struct OutPipe {
    /// The read end.
    pub file: File,
    /// Owning job.
    pub nspace: String,
    /// Rank of the writer.
    pub rank: u32,
    /// Channel bit.
    pub channel: u16,
    /// When it was last resumed (or opened): its close-after-exit grace
    /// counts from the later of this and the job's end.
    pub resumed: Instant,
}

impl OutPipe {
    /// Read what is available into `buf` (the server's one scratch buffer,
    /// so no read allocates): the bytes read (none when nothing was
    /// ready), `None` at end of stream.
    pub(crate) fn read_some<'b>(&mut self, buf: &'b mut [u8]) -> Option<&'b [u8]> {
        loop {
            match self.file.read(buf) {
                Ok(0) => return None,
                Ok(n) => return Some(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Some(&[]),
                Err(_) => return None,
            }
        }
    }
}

/// How to wire a process's stdout and stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Inherit pdvm's own stdout/stderr.
    Inherit,
    /// Capture through a pipe.
    Capture,
}

/// Make pdvm's read end of a pipe it just made non-blocking: its only
/// status flag (one call, no `F_GETFL`: a fresh pipe end has none else).
fn set_nonblocking(fd: &impl AsRawFd) {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let _ = fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK));
}

/// Each app with its program, found once for all its processes; the
/// first app whose program cannot be found or run is the error.
pub(crate) fn resolve_apps<'a>(
    apps: &'a [App],
    env: &LaunchEnv,
) -> Result<Vec<(&'a App, PathBuf)>, &'a App> {
    apps.iter()
        .map(|a| resolve(a, env).map(|p| (a, p)).ok_or(a))
        .collect()
}

/// Resolve a command name against PATH (with `bin_dir` first).
fn resolve(app: &App, env: &LaunchEnv) -> Option<PathBuf> {
    let cmd = app.cmd.as_str();
    if cmd.contains('/') {
        // A relative path is the caller's: from the app's working directory
        // (the tool's cwd, or its --wdir), as PRRTE resolves it.
        let p = match app_dir(app) {
            Some(dir) => Path::new(dir).join(cmd),
            None => PathBuf::from(cmd),
        };
        return super::programs::is_exec(&p).then_some(p);
    }
    env.programs.find(cmd, app_dir(app), || {
        let mut dirs: Vec<PathBuf> = env.bin_dir.iter().cloned().collect();
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        dirs
    })
}

/// Why `app`'s command cannot run, for a refusal that [`resolve`] led to:
/// a path that names a directory or a file without the execute bit says
/// so, as a shell would ("Permission denied"); anything else is not found.
pub(crate) fn not_runnable(app: &App, what: &str) -> String {
    let cmd = app.cmd.as_str();
    if cmd.contains('/') {
        let p = match app_dir(app) {
            Some(dir) => Path::new(dir).join(cmd),
            None => PathBuf::from(cmd),
        };
        if let Ok(m) = std::fs::metadata(&p) {
            if m.is_dir() {
                return format!("{what} {cmd:?} is a directory");
            }
            return format!("{what} {cmd:?} is not executable (permission denied)");
        }
    }
    format!("{what} {cmd:?} not found")
}

/// The directory an app runs in: its `cwd` (the caller's working
/// directory, or its --wdir), else its `PMIX_WDIR`; `None` is pdvm's own.
pub(crate) fn app_dir(app: &App) -> Option<&str> {
    app.cwd.as_deref().filter(|c| !c.is_empty()).or_else(|| {
        app.info
            .iter()
            .find(|i| i.key == crate::proto::keys::WDIR)
            .and_then(|i| i.value.as_str())
            .filter(|c| !c.is_empty())
    })
}

/// A started process and its captured pipes.
pub(crate) struct Started {
    /// Its pid (`None` while the spawner thread starts it).
    pub pid: Option<i32>,
    /// Captured stdout/stderr (read ends).
    pub pipes: Vec<(u16, OwnedFd)>,
    /// Its stdin, when [`ProcSpec::stdin`] asked for a pipe.
    pub stdin: Option<StdinSink>,
}

/// Start one process of a job in its own process group: `program` is its
/// resolved path ([`resolve_apps`]; a vanished one is the exec's error). With
/// `spawner`, the process is started by the spawner thread under `key`
/// and [`Started::pid`] is `None` until it reports ([`super::spawner`]);
/// its pipes are pdvm's at once either way.
pub(crate) fn launch(
    spec: &ProcSpec,
    env: &LaunchEnv,
    program: &Path,
    out: Output,
    err: Output,
    spawner: Option<&super::spawner::Spawner>,
) -> std::io::Result<Started> {
    let plan = plan_of(spec, env, program, out, err)?;
    let (pid, ends) = match spawner {
        None => {
            let (pid, ends) = super::spawn::spawn(&plan)?;
            (Some(pid), ends)
        }
        Some(sp) => {
            let (d, ends) = super::spawn::detach(plan.into_owned())?;
            sp.submit((spec.nspace.to_string(), spec.rank), d)?;
            (None, ends)
        }
    };
    let mut pipes = Vec::new();
    if let Some(o) = ends.stdout {
        set_nonblocking(&o);
        pipes.push((CH_STDOUT, o));
    }
    if let Some(e) = ends.stderr {
        set_nonblocking(&e);
        pipes.push((CH_STDERR, e));
    }
    let stdin = ends
        .stdin
        .map(|fd| StdinSink::start(std::fs::File::from(fd)));
    Ok(Started { pid, pipes, stdin })
}

/// How to start one process of a job ([`launch`]).
fn plan_of<'a>(
    spec: &ProcSpec,
    env: &'a LaunchEnv,
    program: &Path,
    out: Output,
    err: Output,
) -> std::io::Result<super::spawn::Plan<'a>> {
    use super::spawn::{c_string, Plan, Stdin};
    let app = spec.app;
    let envp = super::job_env::job_env(spec, env)?;
    let programs = vec![c_string(program.as_os_str())?];
    // PMIx argv carries argv[0] first, as exec does.
    let argv = if app.argv.is_empty() {
        vec![c_string(program.as_os_str())?]
    } else {
        app.argv
            .iter()
            .map(|a| c_string(a.as_ref()))
            .collect::<std::io::Result<_>>()?
    };
    Ok(Plan {
        programs,
        argv,
        envp,
        cwd: app_dir(app).map(|d| c_string(d.as_ref())).transpose()?,
        stdin: if spec.terminal {
            Stdin::Inherit
        } else if spec.stdin {
            Stdin::Pipe
        } else {
            Stdin::Null
        },
        capture_out: out == Output::Capture,
        capture_err: err == Output::Capture,
        terminal: spec.terminal,
    })
}

/// Reap every exited child: `(pid, exit status)` (signals as 128 + number).
pub(crate) fn reap() -> Vec<(i32, i32)> {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    let mut out = Vec::new();
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => out.push((pid.as_raw(), code)),
            Ok(WaitStatus::Signaled(pid, sig, _)) => out.push((pid.as_raw(), 128 + sig as i32)),
            Ok(WaitStatus::StillAlive) | Err(_) => break,
            Ok(_) => continue,
        }
    }
    out
}

/// Index from pid to (job namespace, rank).
pub(crate) type PidIndex = HashMap<i32, (String, u32)>;

/// The job table: running jobs by namespace, the pid index, and the
/// captured output pipes. Its state is private.
#[derive(Debug)]
pub(crate) struct JobTable {
    jobs: HashMap<String, Job>,
    pids: PidIndex,
    pipes: std::collections::BTreeMap<u64, OutPipe>,
    next_pipe: u64,
}

impl Default for JobTable {
    fn default() -> Self {
        JobTable {
            jobs: HashMap::new(),
            pids: HashMap::new(),
            pipes: std::collections::BTreeMap::new(),
            next_pipe: 1,
        }
    }
}

impl JobTable {
    /// Job `nspace`.
    pub(crate) fn get(&self, nspace: &str) -> Option<&Job> {
        self.jobs.get(nspace)
    }

    /// Job `nspace`, mutably.
    pub(crate) fn get_mut(&mut self, nspace: &str) -> Option<&mut Job> {
        self.jobs.get_mut(nspace)
    }

    /// True when job `nspace` runs.
    pub(crate) fn contains(&self, nspace: &str) -> bool {
        self.jobs.contains_key(nspace)
    }

    /// Add a job.
    pub(crate) fn insert(&mut self, job: Job) {
        self.jobs.insert(job.nspace.clone(), job);
    }

    /// Remove a job.
    pub(crate) fn remove(&mut self, nspace: &str) -> Option<Job> {
        self.jobs.remove(nspace)
    }

    /// True when no job runs.
    pub(crate) fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Every job's namespace.
    pub(crate) fn names(&self) -> Vec<String> {
        self.jobs.keys().cloned().collect()
    }

    /// Every job.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values()
    }

    /// Every job, to change.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut Job> {
        self.jobs.values_mut()
    }

    /// Record that `pid` is rank `rank` of job `nspace`.
    pub(crate) fn record_pid(&mut self, pid: i32, nspace: &str, rank: u32) {
        self.pids.insert(pid, (nspace.to_string(), rank));
    }

    /// A reaped pid's process: its job and rank, once.
    pub(crate) fn take_pid(&mut self, pid: i32) -> Option<(String, u32)> {
        self.pids.remove(&pid)
    }

    /// The id the next pipe will get.
    pub(crate) fn next_pipe_id(&self) -> u64 {
        self.next_pipe
    }

    /// Add a pipe under [`JobTable::next_pipe_id`], counted in its job.
    pub(crate) fn add_pipe(&mut self, p: OutPipe) -> u64 {
        let id = self.next_pipe;
        self.next_pipe += 1;
        if let Some(j) = self.jobs.get_mut(&p.nspace) {
            j.open_pipes += 1;
        }
        self.pipes.insert(id, p);
        id
    }

    /// Pipe `id`.
    pub(crate) fn pipe(&self, id: u64) -> Option<&OutPipe> {
        self.pipes.get(&id)
    }

    /// Pipe `id`, mutably.
    pub(crate) fn pipe_mut(&mut self, id: u64) -> Option<&mut OutPipe> {
        self.pipes.get_mut(&id)
    }

    /// Remove a pipe, uncounted from its job.
    pub(crate) fn remove_pipe(&mut self, id: u64) -> Option<OutPipe> {
        let p = self.pipes.remove(&id)?;
        if let Some(j) = self.jobs.get_mut(&p.nspace) {
            j.open_pipes = j.open_pipes.saturating_sub(1);
        }
        Some(p)
    }

    /// The pipes of job `nspace`.
    pub(crate) fn pipes_of<'a>(
        &'a self,
        nspace: &'a str,
    ) -> impl Iterator<Item = (u64, &'a OutPipe)> {
        self.pipes
            .iter()
            .filter(move |(_, p)| p.nspace == nspace)
            .map(|(id, p)| (*id, p))
    }

    /// The pipes of the jobs connection `conn` spawned.
    pub(crate) fn pipes_spawned_by(&mut self, conn: u64) -> Vec<(u64, &mut OutPipe)> {
        let jobs = &self.jobs;
        self.pipes
            .iter_mut()
            .filter(|(_, p)| {
                jobs.get(&p.nspace)
                    .is_some_and(|j| j.output_conn() == Some(conn))
            })
            .map(|(id, p)| (*id, p))
            .collect()
    }
}
