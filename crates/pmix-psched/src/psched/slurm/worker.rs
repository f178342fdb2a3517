//! Slurm's commands off psched's serving loop: one thread asks about jobs,
//! one lists the partitions (so an `sinfo` never delays the job query a
//! grant waits for), one changes jobs (cancel, extend, shrink), and each
//! `salloc` waits for its grant on a thread of its own. The backend sends [`Task`]s and
//! collects [`Done`]s in its `tick`, so a slow or unreachable controller
//! never stalls the conversation with the DVM. Each result handed over
//! wakes the serving loop's wait through the [`Waker`].

use std::sync::mpsc::{channel, Receiver, Sender};

use super::ctl::{self, Ask, Dialect, Failure, QueryForm, SallocSays};
use super::job::{Seen, Unreachable};
use super::waker::Waker;

/// Which `salloc` an event is about: the allocation, whether it is for an
/// EXTEND in nodes (else a NEW), and a number of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubKey {
    /// The allocation id.
    pub alloc: String,
    /// For an EXTEND in nodes (else a NEW).
    pub extend: bool,
    /// Distinguishes a resubmission from an earlier salloc.
    pub seq: u64,
}

/// Something for Slurm.
#[derive(Debug, Clone)]
pub enum Task {
    /// What Slurm says of these jobs (one `squeue` for all, or one each:
    /// [`ctl::QueryForm`]).
    Show(Vec<u64>),
    /// `scancel` this job.
    Cancel(u64),
    /// Add `secs` to each of `jobs` (an EXTEND in time of `alloc`).
    Extend {
        /// The allocation.
        alloc: String,
        /// Its result answers the request (else the EXTEND's nodes do).
        answer: bool,
        /// Its jobs.
        jobs: Vec<u64>,
        /// How much longer.
        secs: u32,
    },
    /// Shrink `job` to `keep`.
    Shrink {
        /// The job.
        job: u64,
        /// The nodes it keeps.
        keep: Vec<String>,
    },
    /// What Slurm's partitions are (`sinfo`).
    Partitions,
    /// Whether the controller answers (`scontrol ping`).
    Ping,
    /// Start a `salloc` for `ask`, job named `name`.
    Submit {
        /// Who it is for.
        key: SubKey,
        /// What it asks.
        ask: Box<Ask>,
        /// The job name.
        name: String,
    },
}

/// What a `salloc` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SallocEvent {
    /// Slurm gave it this job id (granted, or queued).
    Job {
        /// The job id.
        id: u64,
        /// Granted (else queued).
        granted: bool,
    },
    /// Its granted job's nodes are ready: these.
    Ready(Vec<String>),
    /// It exited: successfully, or with why.
    Exit(Result<(), Failure>),
}

/// Something Slurm did or said.
#[derive(Debug, Clone)]
pub enum Done {
    /// Answers to a [`Task::Show`].
    Seen(Vec<(u64, Result<Seen, Unreachable>)>),
    /// A [`Task::Cancel`] done or failed.
    Cancelled(u64, Result<(), Failure>),
    /// A [`Task::Extend`] done or failed.
    Extended {
        /// The allocation.
        alloc: String,
        /// Its result answers the request.
        answer: bool,
        /// Done, or why not.
        result: Result<(), Failure>,
    },
    /// A [`Task::Shrink`] done or failed.
    Shrunk(u64, Result<(), Failure>),
    /// A `salloc`'s news.
    Salloc(SubKey, SallocEvent),
    /// Answer to a [`Task::Partitions`].
    Partitions(Result<Vec<crate::psched::SourcePartition>, Unreachable>),
    /// Answer to a [`Task::Ping`]: whether the controller answered.
    Pinged(bool),
}

/// The threads and their channels.
pub struct Worker {
    ask: Sender<Task>,
    list: Sender<Task>,
    /// `scontrol ping` alone: never behind a command an outage stalls.
    ping: Sender<Task>,
    change: Sender<Task>,
    done_tx: Sender<Done>,
    done: Receiver<Done>,
    waker: Waker,
    /// Tasks sent and not answered yet.
    busy: usize,
    /// `salloc`s still running.
    sallocs: usize,
}

fn lane(done: Sender<Done>, waker: Waker) -> Sender<Task> {
    let (tx, rx) = channel::<Task>();
    std::thread::spawn(move || {
        let (mut dialect, mut form) = (None, None);
        for t in rx {
            let d = perform(t, &mut dialect, &mut form);
            if done.send(d).is_err() {
                return;
            }
            waker.wake();
        }
    });
    tx
}

fn perform(t: Task, dialect: &mut Option<Dialect>, form: &mut Option<QueryForm>) -> Done {
    match t {
        Task::Show(jobs) => {
            let d = *dialect.get_or_insert_with(ctl::dialect);
            let uid = nix::unistd::geteuid().as_raw();
            let asked = std::env::var(ctl::QUERY_FORM).ok();
            let form = *form.get_or_insert_with(|| ctl::query_form(uid, asked.as_deref()));
            Done::Seen(ctl::show_jobs(d, form, &jobs))
        }
        Task::Cancel(j) => Done::Cancelled(j, ctl::cancel(j)),
        Task::Extend {
            alloc,
            answer,
            jobs,
            secs,
        } => Done::Extended {
            alloc,
            answer,
            result: jobs.iter().try_for_each(|j| ctl::add_time(*j, secs)),
        },
        Task::Shrink { job, keep } => Done::Shrunk(job, ctl::shrink(job, &keep)),
        Task::Partitions => Done::Partitions(ctl::partitions()),
        Task::Ping => Done::Pinged(ctl::controller_up()),
        Task::Submit { .. } => unreachable!("salloc runs on its own thread"),
    }
}

/// Run one `salloc` to its end, telling `done` what it says.
fn salloc(key: SubKey, ask: Ask, name: String, done: Sender<Done>, waker: Waker) {
    let tell = |e: SallocEvent| {
        if done.send(Done::Salloc(key.clone(), e)).is_ok() {
            waker.wake();
        }
    };
    let (mut child, err) = match ctl::submit(&ask, &name) {
        Ok(c) => c,
        Err(e) => {
            tell(SallocEvent::Exit(Err(Failure::Unreachable(format!(
                "cannot run salloc: {e}"
            )))));
            return;
        }
    };
    let mut words = None;
    let mut had_job = false;
    ctl::follow_salloc(err, |s| match s {
        SallocSays::Job { id, granted } => {
            had_job = true;
            tell(SallocEvent::Job { id, granted });
        }
        SallocSays::Ready(nodes) => tell(SallocEvent::Ready(nodes)),
        SallocSays::Error(w) => words = Some(w),
        SallocSays::Other => {}
    });
    let ok = child.wait().is_ok_and(|s| s.success());
    let result = match (ok, words) {
        (true, _) => Ok(()),
        // Its job was withdrawn or ended: the job's own state says why.
        (false, w) if had_job => Err(Failure::Refused(w.unwrap_or_default())),
        (false, w) => Err(ctl::classify(w.unwrap_or_else(|| "salloc failed".into()))),
    };
    tell(SallocEvent::Exit(result));
}

impl Worker {
    /// Start the threads (fails only when no eventfd can be made).
    pub fn start() -> std::io::Result<Worker> {
        let (done_tx, done) = channel();
        let waker = Waker::new()?;
        Ok(Worker {
            ask: lane(done_tx.clone(), waker.clone()),
            list: lane(done_tx.clone(), waker.clone()),
            ping: lane(done_tx.clone(), waker.clone()),
            change: lane(done_tx.clone(), waker.clone()),
            done_tx,
            done,
            waker,
            busy: 0,
            sallocs: 0,
        })
    }

    /// Hand `t` to its thread.
    pub fn send(&mut self, t: Task) {
        match t {
            Task::Submit { key, ask, name } => {
                self.sallocs += 1;
                let done = self.done_tx.clone();
                let waker = self.waker.clone();
                std::thread::spawn(move || salloc(key, *ask, name, done, waker));
            }
            Task::Show(_) => {
                self.busy += 1;
                let _ = self.ask.send(t);
            }
            Task::Partitions => {
                self.busy += 1;
                let _ = self.list.send(t);
            }
            Task::Ping => {
                self.busy += 1;
                let _ = self.ping.send(t);
            }
            _ => {
                self.busy += 1;
                let _ = self.change.send(t);
            }
        }
    }

    /// What came back since the last call (the waker quiet again).
    pub fn results(&mut self) -> Vec<Done> {
        self.waker.drain();
        let v: Vec<Done> = self.done.try_iter().collect();
        for d in &v {
            match d {
                Done::Salloc(_, SallocEvent::Exit(_)) => self.sallocs -= 1,
                Done::Salloc(..) => {}
                _ => self.busy -= 1,
            }
        }
        v
    }

    /// The descriptor that turns readable when a result is waiting.
    pub fn wake_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.waker.fd()
    }

    /// Whether a command psched waits on is under way.
    pub fn busy(&self) -> bool {
        self.busy > 0
    }

    /// Whether a `salloc` still waits.
    pub fn sallocs(&self) -> usize {
        self.sallocs
    }
}
