//! A batch script (`palloc --no-wait -- SCRIPT`), as sbatch users know one:
//! the detached palloc runs SCRIPT in a process group of its own, stops it
//! when its allocation ends (released, cancelled by request id, time limit:
//! SIGTERM to the group, SIGKILL [`GRACE`] later), and writes how it ended
//! as the last line of its log (`palloc: job.sh exited with status 3`,
//! `palloc: job.sh was killed by signal SIGKILL`). A record of it is kept
//! in the user's private holder registry (`batch/SERVER/REQ_ID.json`), which
//! `pwatch --status` lists (`batch_jobs`), as sacct lists ended jobs.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::render::{AllocationRecord, BatchRecord, BatchState, BatchStop};

use super::batch_log_copy::LogCopy;
use crate::app::batch_records::{prune, record_path, save};

/// How long a stopped script has between SIGTERM and SIGKILL (as Slurm's
/// KillWait default of 30 s, shorter: a DVM's allocations are short).
/// (Documented in palloc's man page.)
pub(crate) const GRACE: Duration = Duration::from_secs(10);

/// Environment variable carrying the log's path to the detached palloc.
pub(crate) const LOG_ENV: &str = crate::cli::palloc::BATCH_LOG_ENV;

/// A running batch script and its record.
pub(crate) struct Batch {
    rec: BatchRecord,
    file: Option<PathBuf>,
    group: Pid,
    /// When SIGKILL follows the SIGTERM already sent.
    kill_at: Option<Instant>,
    /// The copy of its output into the log.
    copy: Option<LogCopy>,
}

/// A batch script about to start: its record is already written, so
/// `pwatch --status` lists the job from before the script's first line.
pub(crate) struct Starting {
    rec: BatchRecord,
    file: Option<PathBuf>,
    copy: Option<LogCopy>,
}

impl Starting {
    /// The script's stdout and stderr: a pipe whose bytes a thread copies
    /// into the log, counting what the log cannot take (see
    /// [`LogCopy`]); `None` (the script then writes into the log itself)
    /// when no pipe can be made.
    pub(crate) fn output(&mut self) -> Option<(std::process::Stdio, std::process::Stdio)> {
        let (copy, out, err) = LogCopy::start().ok()?;
        self.copy = Some(copy);
        Some((out, err))
    }

    /// The script started as process (and group) `pid`.
    pub(crate) fn running_as(self, pid: u32) -> Batch {
        Batch {
            rec: self.rec,
            file: self.file,
            group: Pid::from_raw(pid as i32),
            kill_at: None,
            copy: self.copy,
        }
    }

    /// The script could not start: its record goes.
    pub(crate) fn failed(self) {
        if let Some(f) = &self.file {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// A batch script submitted and waiting for its allocation: listed by
/// `pwatch --status` as queued until it starts (its record is then
/// replaced) or its request ends unanswered ([`Queued::withdraw`]).
pub(crate) struct Queued {
    file: Option<PathBuf>,
}

impl Queued {
    /// SCRIPT `cmd`, request `request_id` on DVM `server`, now waits; `None`
    /// unless this palloc runs a batch script.
    pub(crate) fn waiting(server: &str, request_id: &str, cmd: &[String]) -> Option<Queued> {
        let log = std::env::var(LOG_ENV).ok()?;
        let rec = BatchRecord {
            request_id: request_id.to_string(),
            command: cmd.join(" "),
            log: Some(log),
            state: BatchState::Queued,
            palloc_pid: Some(std::process::id()),
            ..Default::default()
        };
        let file = record_path(server, request_id);
        save(file.as_deref(), &rec);
        Some(Queued { file })
    }

    /// The request ended without a grant (cancelled, refused): no record.
    pub(crate) fn withdraw(self) {
        if let Some(f) = &self.file {
            let _ = std::fs::remove_file(f);
        }
    }
}

impl Batch {
    /// SCRIPT `cmd` is about to start in allocation `alloc` of the DVM
    /// `server`: its record is written now, before the script runs (a
    /// script that has printed its first line is always listed).
    pub(crate) fn starting(server: &str, alloc: &AllocationRecord, cmd: &[String]) -> Starting {
        let request_id = alloc.request_id.clone().unwrap_or_default();
        let rec = BatchRecord {
            request_id: request_id.clone(),
            alloc_id: Some(alloc.alloc_id.clone()),
            command: cmd.join(" "),
            log: std::env::var(LOG_ENV).ok(),
            state: BatchState::Running,
            palloc_pid: Some(std::process::id()),
            started_at: Some(crate::app::now_secs() as u64),
            ..Default::default()
        };
        prune();
        let file = record_path(server, &request_id);
        save(file.as_deref(), &rec);
        Starting {
            rec,
            file,
            copy: None,
        }
    }

    /// The allocation has ended (`why`): say so in the log and send SIGTERM
    /// to the script's group, SIGKILL after [`GRACE`] (see [`Self::kill_due`]).
    pub(crate) fn stop(&mut self, why: BatchStop) {
        if self.kill_at.is_some() {
            return;
        }
        let what = match why {
            BatchStop::Released => "was released",
            BatchStop::TimeLimit => "reached its time limit",
            BatchStop::Ended => "has ended",
            BatchStop::Signalled => "is given up (palloc was told to end)",
        };
        say!(
            "palloc: allocation {} {what}: stopping {} (SIGTERM to its process group, SIGKILL \
after {} s)",
            self.rec.alloc_id.as_deref().unwrap_or("?"),
            self.rec.command,
            GRACE.as_secs()
        );
        self.rec.stopped_by = Some(why);
        let _ = killpg(self.group, Signal::SIGTERM);
        self.kill_at = Some(Instant::now() + GRACE);
    }

    /// When the script must be killed, if it was stopped.
    pub(crate) fn kill_at(&self) -> Option<Instant> {
        self.kill_at
    }

    /// SIGKILL to the group once the grace time has passed.
    pub(crate) fn kill_due(&self) {
        if self.kill_at.is_some_and(|t| Instant::now() >= t) {
            let _ = killpg(self.group, Signal::SIGKILL);
        }
    }

    /// A signal palloc received goes to the whole group.
    pub(crate) fn forward(&self, sig: Signal) {
        let _ = killpg(self.group, sig);
    }

    /// The script ended with `st`: the last line of its log, and its record.
    pub(crate) fn ended(mut self, st: std::process::ExitStatus) {
        let name = self.rec.command.split(' ').next().unwrap_or("").to_string();
        self.rec.ended_at = Some(crate::app::now_secs() as u64);
        let lost = self.copy.as_ref().map_or(0, LogCopy::finish);
        if lost > 0 {
            self.rec.output_lost_bytes = Some(lost);
            say!("palloc: {lost} bytes of {name}'s output could not be written to this log");
        }
        match (
            st.code(),
            st.signal().and_then(|n| Signal::try_from(n).ok()),
        ) {
            (Some(code), _) => {
                self.rec.state = BatchState::Exited;
                self.rec.exit_code = Some(code);
                say!("palloc: {name} exited with status {code}");
            }
            (None, Some(sig)) => {
                self.rec.state = BatchState::Killed;
                self.rec.signal = Some(sig.as_str().to_string());
                say!("palloc: {name} was killed by signal {}", sig.as_str());
            }
            (None, None) => {
                self.rec.state = BatchState::Killed;
                say!("palloc: {name} ended ({st})");
            }
        }
        self.save();
    }

    /// Write the record ([`save`]).
    fn save(&self) {
        save(self.file.as_deref(), &self.rec);
    }
}
