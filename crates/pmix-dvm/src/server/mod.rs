//! pdvm's PMIx server side: the mirror image of [`crate::conn`] and
//! `ops`.
//!
//! - [`listener`]: the listening socket on `127.0.0.1:0` and the PRRTE-style
//!   rendezvous files that let tools find pdvm with no flags.
//! - [`handshake`]: parsing a connect-ack (every length bounded) and the raw
//!   answers to tools and clients; [`creds`]: the peer's uid (only the same
//!   user may connect).
//! - [`ident`]: typed process names ([`ident::ProcName`], with a wildcard rank).
//! - [`frames`]: sans-I/O framing of what a peer sends; [`request`]: a
//!   request decoded into a typed [`request::Request`] (the fuzz target's
//!   entry point, [`request::decode_stream`]); [`peer`]: one connection's
//!   socket and buffers.
//! - [`reactor`]: epoll over the listener, the signalfd, the spawner's
//!   eventfd, connections and output pipes, each registered once;
//!   [`spawn`]: one process's clone and exec; [`spawner`]: the thread that
//!   makes those clones for jobs; [`event_loop`]: one serving thread, timers
//!   from exact deadlines, backpressure; [`dispatch`]: the request handlers;
//!   [`query`]: query answers and pdvm's own table keys.
//! - [`job_data`]: a job's layout on the simulated nodes and the job data
//!   its PMIx clients read at init; [`modex`]: what they commit, their
//!   fences and waiting gets (no I/O); [`exchange`]: the handlers of
//!   commit, fence, get and abort.
//! - [`state`]: the server, composed of [`conns::ConnTable`] (connections,
//!   memory accounting, per-uid counts, event listeners),
//!   [`jobs::JobTable`] (real local processes, their pipes and statuses) and
//!   [`model::ModelDriver`] (the model, the scheduler, the clock, replies
//!   waiting on them), each with private state; [`events`]: the allocation
//!   and node events pdvm broadcasts; [`diag`]: pdvm's one way to say
//!   something on stderr (never a panic, the time in front under
//!   `PDVM_LOG_TIMES`).
//!
//! The reservation rules themselves live in [`crate::dvm`] and
//! [`crate::sched`]; this module only carries their inputs and effects.
//!
//! Entry point: [`run`].

pub(crate) mod attrs;
pub(crate) mod connect;
pub(crate) mod conns;
pub mod diag;
pub(crate) mod dispatch;
pub(crate) mod event_loop;
pub(crate) mod events;
pub(crate) mod exchange;
pub(crate) mod frames;
pub(crate) mod handshake;
pub(crate) mod ident;
pub(crate) mod job_data;
pub(crate) mod job_env;
pub(crate) mod jobs;
pub(crate) mod leader_tty;
pub mod listener;
pub(crate) mod model;
pub(crate) mod modex;
pub(crate) mod peer;
pub(crate) mod programs;
pub(crate) mod publications;
pub(crate) mod query;
pub(crate) mod reactor;
pub mod request;
pub(crate) mod spawn;
pub(crate) mod spawner;
pub(crate) mod state;

use std::path::PathBuf;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use crate::codec::App;
use crate::dvm::{Dvm, DvmConfig, Requester};
use crate::error::{Error, Result};
use crate::proto::status::Status;
use crate::sched::Scheduler;

pub use listener::ServerIdent;
pub use state::Server;

/// How pdvm was asked to start.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Startup nodes (the default session).
    pub nodes: usize,
    /// Slots per node.
    pub slots: u32,
    /// Nodes the simulated scheduler holds beyond the startup pool.
    pub sched_nodes: usize,
    /// Where the rendezvous directory goes.
    pub tmpdir: PathBuf,
    /// Model time runs this many times faster than real time.
    pub time_scale: f64,
    /// `--pmix-compat` (§8.2.1.10).
    pub compat: bool,
    /// Also write the URI here.
    pub report_uri: Option<PathBuf>,
    /// Directory prepended to launched processes' PATH (the tools).
    pub bin_dir: Option<PathBuf>,
    /// Log activity on stderr.
    pub verbose: bool,
    /// How many ended jobs stay listed ([`crate::dvm::JOB_HISTORY`] by
    /// default).
    pub job_history: usize,
}

impl ServerConfig {
    /// Defaults: 1 node of 1 slot... overridden by the caller.
    pub fn new(nodes: usize) -> Self {
        ServerConfig {
            nodes,
            slots: 1,
            sched_nodes: 0,
            tmpdir: std::env::temp_dir(),
            time_scale: 1.0,
            compat: false,
            report_uri: None,
            bin_dir: None,
            verbose: false,
            job_history: crate::dvm::JOB_HISTORY,
        }
    }
}

fn err(ctx: &str, e: impl std::fmt::Display) -> Error {
    Error::new(Status::ERROR, format!("{ctx}: {e}"))
}

/// Start pdvm: listen, write the rendezvous files, call `ready` (which
/// prints "DVM ready" on stderr), run `command` (if any) as the session leader job,
/// serve until a signal or the command's end, tear down.
///
/// Returns the exit status pdvm should end with: the command's, else 0.
pub fn run(
    cfg: ServerConfig,
    command: Option<Vec<String>>,
    ready: impl FnOnce(&ServerIdent),
) -> Result<i32> {
    raise_fd_limit();
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        mask.add(s);
    }
    mask.thread_block()
        .map_err(|e| err("blocking signals", e))?;
    let sigfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| err("signalfd", e))?;
    let (listener, ident) = listener::bind()?;
    let mut io = reactor::Reactor::new(std::os::fd::AsFd::as_fd(&listener), sigfd)
        .map_err(|e| err("epoll", e))?;
    // Started after the signals are blocked: the worker inherits the mask.
    let spawner = spawner::Spawner::start().map_err(|e| err("spawner thread", e))?;
    io.add_spawner(spawner.fd()).map_err(|e| err("epoll", e))?;
    let rdv = listener::RendezvousFiles::write(&ident, &cfg.tmpdir, cfg.report_uri.as_deref())?;
    // A name someone else took is never passed over silently.
    for note in rdv.notes() {
        say!("pdvm: {note}; rendezvous files in {}", rdv.dir().display());
    }
    let mut sched = Scheduler::new(cfg.sched_nodes, 1);
    let mut dvm = Dvm::new(
        DvmConfig {
            nodes: cfg.nodes,
            slots: cfg.slots,
            compat: cfg.compat,
        },
        &mut sched,
    );
    dvm.set_job_history(cfg.job_history);
    let launch = job_env::LaunchEnv {
        uri: ident.uri(),
        tmpdir: rdv.dir().to_path_buf(),
        bin_dir: cfg.bin_dir.clone(),
        programs: Default::default(),
        base: Default::default(),
    };
    let mut srv = Server {
        model: model::ModelDriver::new(dvm, sched, model::Clock::new(cfg.time_scale)),
        cfg,
        ident,
        listener,
        rendezvous: Some(rdv),
        conns: conns::ConnTable::new(),
        jobs: jobs::JobTable::default(),
        launch,
        leader: None,
        warn_conns: Default::default(),
        leader_status: None,
        accept_paused_until: None,
        io,
        spawner,
        early_exits: Default::default(),
        modex: Default::default(),
        published: Default::default(),
        read_buf: Box::default(),
        stop: false,
    };
    ready(&srv.ident);
    if let Some(argv) = command.filter(|a| !a.is_empty()) {
        if let Err(e) = srv.start_leader(argv) {
            srv.teardown();
            return Err(e);
        }
    }
    srv.run_loop();
    srv.teardown();
    Ok(srv.leader_status.unwrap_or(0))
}

impl Server {
    /// Run pdvm's own command as a one-process job of a fresh namespace
    /// (the session leader), output passed through.
    pub fn start_leader(&mut self, argv: Vec<String>) -> Result<()> {
        let app = App {
            cmd: argv[0].clone(),
            argv: argv.clone(),
            env: Vec::new(),
            cwd: None,
            maxprocs: 1,
            info: Vec::new(),
        };
        let programs = jobs::resolve_apps(std::slice::from_ref(&app), &self.launch)
            .map_err(|a| Error::new(Status::ERR_NOT_FOUND, jobs::not_runnable(a, "command")))?;
        let me = Requester::tool(&self.ident.nspace);
        let plan = self
            .model
            .dvm()
            .plan_spawn(&me, None, &[1])
            .map_err(|e| Error::new(e.status(), e.rule()))?;
        let ns = self.mint_nspace();
        self.model
            .commit_spawn(&plan, &ns, None)
            .map_err(|e| Error::new(e.status(), e.rule()))?;
        let mut job = jobs::Job::new(&ns);
        job.cmdline = dispatch::command_line(std::slice::from_ref(&app));
        job.uid = Some(nix::unistd::geteuid().as_raw());
        self.jobs.insert(job);
        self.leader = Some(ns.clone());
        let failed = self.start_procs(
            &ns,
            &programs,
            &plan.procs,
            None,
            1,
            jobs::Output::Inherit,
            jobs::Output::Inherit,
        );
        if self
            .jobs
            .get(&ns)
            .is_some_and(|j| j.procs.iter().all(|p| p.pid.is_none()))
        {
            return Err(Error::new(
                Status::ERR_NOT_FOUND,
                cannot_start(&argv[0], failed.as_ref()),
            ));
        }
        Ok(())
    }
}

/// Why the session leader `cmd` did not start, in the system's words, with
/// a hint for a script that has no `#!` line (exec refuses it, as PRRTE's
/// launcher does).
fn cannot_start(cmd: &str, e: Option<&std::io::Error>) -> String {
    let Some(e) = e else {
        return format!("cannot start {cmd:?}");
    };
    let hint = if e.raw_os_error() == Some(nix::errno::Errno::ENOEXEC as i32) {
        " (a script needs a #! line, e.g. #!/bin/sh, or run it as `sh SCRIPT`)"
    } else {
        ""
    };
    format!("cannot start {cmd:?}: {e}{hint}")
}

/// Let pdvm hold as many connections as the hard limit allows (thousands of
/// tools connected at once), by raising the soft descriptor limit to it.
fn raise_fd_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}
