//! The detached pallocs a `palloc --stdin-requests` agent started (one per
//! batch job, each its child): watched through pidfds, so that the agent
//! wakes as soon as one ends and says how its job ended (the job's batch
//! record, as `pwatch --status --all` lists it) instead of its caller
//! polling for it.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::render::BatchRecord;

/// How often holders are looked at when one could not be given a pidfd
/// (an old kernel): their ends are then seen this late at most.
const NO_PIDFD_CHECK: Duration = Duration::from_millis(100);

/// One detached palloc holding a job.
struct Holder {
    request_id: String,
    pid: Pid,
    /// Readable once it has ended; `None` without pidfds.
    fd: Option<OwnedFd>,
}

/// The agent's detached pallocs still running.
#[derive(Default)]
pub(super) struct Holders {
    running: Vec<Holder>,
    /// The DVM folders of batch records where their records were found
    /// (looked in first: one, unless lines name other DVMs).
    record_dirs: Vec<PathBuf>,
}

impl Holders {
    /// Watch the detached palloc `pid` holding request `request_id`.
    pub(super) fn add(&mut self, request_id: String, pid: u32) {
        let Some(pid) = i32::try_from(pid).ok().filter(|&p| p > 0) else {
            return;
        };
        let pid = Pid::from_raw(pid);
        let fd = crate::conn::pidfd::open(pid).ok();
        self.running.push(Holder {
            request_id,
            pid,
            fd,
        });
    }

    /// The fds that become readable when a holder ends.
    pub(super) fn fds(&self) -> Vec<BorrowedFd<'_>> {
        self.running
            .iter()
            .filter_map(|h| h.fd.as_ref().map(|f| f.as_fd()))
            .collect()
    }

    /// Until when the agent may sleep without looking at its holders:
    /// forever when each has a pidfd.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.running
            .iter()
            .any(|h| h.fd.is_none())
            .then(|| Instant::now() + NO_PIDFD_CHECK)
    }

    /// Reap the holders that have ended; the record of each one's job (see
    /// [`crate::app::batch_records::ended_holder`]; none for a request that
    /// ended unanswered, e.g. cancelled while queued).
    pub(super) fn reap(&mut self) -> Vec<BatchRecord> {
        let mut ended = Vec::new();
        let dirs = &mut self.record_dirs;
        self.running.retain(|h| {
            match waitpid(h.pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => true,
                // Ended (or no longer our child: nothing to wait for).
                Ok(_) | Err(_) => {
                    ended.extend(crate::app::batch_records::ended_holder(
                        &h.request_id,
                        h.pid.as_raw() as u32,
                        dirs,
                    ));
                    false
                }
            }
        });
        ended
    }
}
