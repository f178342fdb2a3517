//! `palloc -- CMD`: CMD runs as a local process (the caller's environment,
//! directory, stdin and terminal, as `salloc` does) while palloc holds the
//! allocation, relays the requests of the tools CMD runs (see
//! [`crate::conn::holder`]), passes signals on, stops a batch script when
//! its allocation ends, and gives the allocation back when CMD ends.

use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cli::exit::Exit;
use crate::conn::holder::{Holder, HOLDER_ENV};
use crate::ops::Session;
use crate::render::{AllocationRecord, BatchStop};

use super::batch::Batch;
use crate::app::alloc_end::AllocEnd;
use crate::app::alloc_wait::{notice, release_after, share, step, Step};
use crate::app::{signals, Failure, Ui};

/// Run `cmd` in allocation `rec` and wait for it; then give the allocation
/// back (when `give_back`) unless a child-flavoured rule or `--keep` says
/// otherwise. `announce` says the grant once other shells can reach the
/// holder. Returns CMD's status.
pub(super) fn run_command(
    s: &Session,
    rec: &mut AllocationRecord,
    cmd: &[String],
    give_back: bool,
    ui: &Ui,
    announce: &dyn Fn(&AllocationRecord),
) -> std::result::Result<i32, Failure> {
    let program = cmd
        .first()
        .ok_or_else(|| Failure::other("no command to run"))?;
    let (mut holder, _alias) = share(s, rec, "cannot share the allocation with the command")?;
    announce(rec);
    // `palloc --no-wait -- SCRIPT`: the script is stopped when its
    // allocation ends, and how it ended is written to its log; its record
    // is written before it starts.
    let batch_run = std::env::var_os(super::batch::LOG_ENV).is_some();
    let mut starting = batch_run.then(|| Batch::starting(&s.conn().target().uri.nspace, rec, cmd));
    let output = starting.as_mut().and_then(|b| b.output());
    let mut child = match start_command(s, rec, cmd, (holder.path(), output), give_back, ui) {
        Ok(c) => c,
        Err(f) => {
            if let Some(b) = starting {
                b.failed();
            }
            return Err(f);
        }
    };
    let mut run = Running {
        s,
        program,
        pid: Pid::from_raw(child.id() as i32),
        forward_int: !std::io::IsTerminal::is_terminal(&std::io::stdin()),
        batch: starting.map(|b| b.running_as(child.id())),
        dvm_lost: None,
        ended: None,
    };
    ui.detail(&format!(
        "running {program} (pid {}) in allocation {}; its tools act through palloc",
        child.id(),
        rec.alloc_id
    ));
    let status = run.wait(&mut child, &mut holder, rec, ui);
    drop(holder);
    run.finish(status, rec, give_back, ui)
}

/// CMD while it runs: what palloc has seen of it and of its allocation.
struct Running<'a> {
    s: &'a Session,
    program: &'a str,
    pid: Pid,
    /// Pass SIGINT on (a terminal's Ctrl-C reaches CMD by itself).
    forward_int: bool,
    /// A batch script's record and stop schedule.
    batch: Option<Batch>,
    /// The DVM's loss, and when CMD, told with SIGTERM, is killed.
    dvm_lost: Option<(crate::error::Error, Instant)>,
    /// The allocation's end while CMD ran.
    ended: Option<AllocEnd>,
}

impl Running<'_> {
    /// Watch CMD, the DVM, the holder and signals until CMD ends.
    fn wait(
        &mut self,
        child: &mut std::process::Child,
        holder: &mut Holder,
        rec: &mut AllocationRecord,
        ui: &Ui,
    ) -> std::io::Result<std::process::ExitStatus> {
        let child_fd = pidfd(child.id());
        loop {
            if let Some(st) = child.try_wait()? {
                return Ok(st);
            }
            self.pass_signals();
            self.watch_batch(holder, rec);
            let kill_at = self.batch.as_ref().and_then(Batch::kill_at);
            let deadline = child_fd
                .is_none()
                .then(|| Instant::now() + NO_PIDFD_CHECK)
                .into_iter()
                .chain(kill_at)
                .min();
            let child_watch = child_fd.as_ref().map(|f| f.as_fd());
            if self.dvm_lost.is_some() {
                self.wait_without_dvm(child_watch, deadline);
                continue;
            }
            match step(self.s, Some(holder), child_watch, deadline) {
                Step::Notify(bytes) => self.on_notice(&bytes, holder, rec, ui),
                Step::Lost(e) => self.on_lost(e),
                _ => {}
            }
        }
    }

    /// Signals palloc caught, passed on to CMD (a batch script's group is
    /// stopped on SIGTERM, SIGINT and SIGHUP).
    fn pass_signals(&mut self) {
        let Some(sig) = signals::take_new() else {
            return;
        };
        if sig == Signal::SIGINT as i32 && !self.forward_int {
            return;
        }
        let Ok(sig) = Signal::try_from(sig) else {
            return;
        };
        match self.batch.as_mut() {
            Some(b) if matches!(sig, Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP) => {
                b.stop(BatchStop::Signalled)
            }
            Some(b) => b.forward(sig),
            None => {
                let _ = nix::sys::signal::kill(self.pid, sig);
            }
        }
    }

    /// A batch script: stopped once another shell released its allocation;
    /// killed when its grace time is over.
    fn watch_batch(&mut self, holder: &Holder, rec: &mut AllocationRecord) {
        let Some(b) = self.batch.as_mut() else {
            return;
        };
        if holder.released() && self.ended.is_none() {
            b.stop(BatchStop::Released);
            rec.on_owner_exit = format!("allocation {} has ended (released)", rec.alloc_id);
            self.ended = Some(AllocEnd::released());
        }
        b.kill_due();
    }

    /// The DVM has gone: only CMD and signals are left to watch; CMD is
    /// killed once its grace time is over.
    fn wait_without_dvm(&self, child: Option<BorrowedFd<'_>>, deadline: Option<Instant>) {
        let Some((_, kill_at)) = &self.dvm_lost else {
            return;
        };
        if Instant::now() >= *kill_at {
            let _ = nix::sys::signal::kill(self.pid, Signal::SIGKILL);
        }
        let fds: Vec<BorrowedFd<'_>> = signals::fd().into_iter().chain(child).collect();
        let wake = deadline.map_or(*kill_at, |d| d.min(*kill_at));
        wait_fds(&fds, Some(wake.max(Instant::now() + NO_PIDFD_CHECK / 10)));
        signals::drain();
    }

    /// An event: the allocation's end stops a batch script and is said.
    fn on_notice(&mut self, bytes: &[u8], holder: &Holder, rec: &mut AllocationRecord, ui: &Ui) {
        let Some(end) = notice(self.s, bytes, &rec.alloc_id, ui) else {
            return;
        };
        if let Some(b) = self.batch.as_mut() {
            b.stop(if end.expired {
                BatchStop::TimeLimit
            } else if holder.released() {
                BatchStop::Released
            } else {
                BatchStop::Ended
            });
        }
        let program = self.program;
        ui.warn(&format!(
            "allocation {} has ended ({}) while {program} runs",
            rec.alloc_id, end.why
        ));
        rec.on_owner_exit = format!(
            "{program} ended; allocation {} had already ended ({})",
            rec.alloc_id, end.why
        );
        self.ended = Some(end);
    }

    /// The allocation is gone with the DVM: CMD is stopped, as salloc
    /// stops its command when the allocation is revoked.
    fn on_lost(&mut self, e: crate::error::Error) {
        match self.batch.as_mut() {
            Some(b) => b.stop(BatchStop::Ended),
            None => {
                let _ = nix::sys::signal::kill(self.pid, Signal::SIGTERM);
            }
        }
        self.dvm_lost = Some((e, Instant::now() + LOST_GRACE));
    }

    /// CMD ended with `status`: say how, give the allocation back, and
    /// return CMD's status (or why palloc fails).
    fn finish(
        self,
        status: std::io::Result<std::process::ExitStatus>,
        rec: &mut AllocationRecord,
        give_back: bool,
        ui: &Ui,
    ) -> std::result::Result<i32, Failure> {
        let program = self.program;
        let st = status.map_err(|e| Failure::other(format!("waiting for {program}: {e}")))?;
        let code = shell_status(st);
        if let Some((e, _)) = self.dvm_lost {
            if let Some(b) = self.batch {
                b.ended(st);
            }
            rec.on_owner_exit = format!(
                "the DVM has gone: allocation {} is gone with it",
                rec.alloc_id
            );
            let mut f = Failure::lost(&e);
            f.message = format!(
                "lost the DVM while {program} ran ({}); {program} was stopped (it exited with {code})",
                e.context
            );
            return Err(f);
        }
        if give_back && self.ended.is_none() {
            release_after(self.s, rec, &format!("{program} ended"), ui);
        }
        // A batch log ends with how the script ended (said here, after what
        // became of the allocation, so it is the last line).
        if let Some(b) = self.batch {
            ui.note(&std::mem::take(&mut rec.on_owner_exit));
            b.ended(st);
        }
        // CMD's own failure wins; a CMD that succeeded in an allocation its
        // node source ended reports that end (salloc's revoked allocation).
        match self.ended.and_then(|e| e.failure(&rec.alloc_id)) {
            Some(mut f) if code == 0 => {
                f.message = format!("{program} exited 0, but {}", f.message);
                Err(f)
            }
            _ => Ok(code),
        }
    }
}

/// A descriptor that becomes readable when process `pid` (our child) ends
/// (pidfd_open(2)); `None` on kernels without it.
fn pidfd(pid: u32) -> Option<std::os::fd::OwnedFd> {
    let pid = i32::try_from(pid).ok().filter(|&p| p != 0)?;
    crate::conn::pidfd::open(nix::unistd::Pid::from_raw(pid)).ok()
}

/// Wait until one of `fds` is readable or `deadline` passes (the DVM
/// connection is gone, only the child and signals are left to watch).
fn wait_fds(fds: &[BorrowedFd<'_>], deadline: Option<Instant>) {
    let _ = crate::conn::client::poll_readable(fds, deadline);
}

/// How often the end of a child is looked for on a kernel without pidfds.
const NO_PIDFD_CHECK: Duration = Duration::from_millis(250);

/// Start `cmd` with the allocation's id and its holder's socket in its
/// environment; when it cannot start, the allocation is given back (if
/// `give_back`) and the failure has a shell's status (127: not found).
fn start_command(
    s: &Session,
    rec: &mut AllocationRecord,
    cmd: &[String],
    (holder, output): (
        &std::path::Path,
        Option<(std::process::Stdio, std::process::Stdio)>,
    ),
    give_back: bool,
    ui: &Ui,
) -> std::result::Result<std::process::Child, Failure> {
    use std::os::unix::process::CommandExt;
    let program = &cmd[0];
    let mut command = std::process::Command::new(program);
    if let Some((out, err)) = output {
        command.stdout(out).stderr(err);
    }
    command
        .args(&cmd[1..])
        .env("PMIX_ALLOC_ID", &rec.alloc_id)
        .env(HOLDER_ENV, holder);
    // The granted nodes, as SLURM_JOB_NODELIST / SLURM_JOB_NUM_NODES: a
    // script writes its host file without asking the DVM again.
    if rec.nodes.is_empty() {
        command.env_remove(NODELIST_ENV).env_remove(NUM_NODES_ENV);
    } else {
        command
            .env(NODELIST_ENV, rec.nodes.join(","))
            .env(NUM_NODES_ENV, rec.nodes.len().to_string());
    }
    // A batch script leads a process group of its own, so stopping it
    // stops everything it started.
    if std::env::var_os(super::batch::LOG_ENV).is_some() {
        command.env_remove(super::batch::LOG_ENV).process_group(0);
    }
    let spawned = command.spawn();
    spawned.map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        if give_back {
            release_after(s, rec, &format!("{program} ended"), ui);
        }
        Failure::with(
            Exit::Command(code),
            None,
            format!("cannot run `{program}`: {e}"),
        )
    })
}

/// CMD's environment: the granted nodes, comma-separated.
const NODELIST_ENV: &str = "PMIX_ALLOC_NODELIST";
/// CMD's environment: how many nodes were granted.
const NUM_NODES_ENV: &str = "PMIX_ALLOC_NUM_NODES";

/// A process's status as a shell gives it (128+N for signal N).
fn shell_status(st: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code()
        .or_else(|| st.signal().map(|n| 128 + n))
        .unwrap_or(1)
}

/// How long CMD has to end after SIGTERM once the DVM has gone, before
/// SIGKILL.
const LOST_GRACE: Duration = Duration::from_secs(1);
