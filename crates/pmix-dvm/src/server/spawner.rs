//! Starting processes off the serving thread. A clone that shares pdvm's
//! memory stops its parent until the child has exec'd (about half a
//! millisecond for `sh`); done on the serving thread, that wait was most of
//! what bounded a job array. A few worker threads make those clones (see
//! [`workers`]), so the serving thread goes on with its connections and
//! pipes meanwhile, and one start's wait overlaps the next; it hears of
//! each start through an eventfd in its epoll set.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::mpsc::{channel, Receiver, Sender};

use nix::sys::eventfd::{EfdFlags, EventFd};

use super::spawn::Detached;

/// How many worker threads start processes: four for each CPU, 8 to 32.
/// A worker is stopped from its clone until the child has exec'd, mostly
/// waiting for the child to be scheduled and load its program; with one
/// worker every start waited for the one before, and an array of short
/// tasks left the CPUs idle 14% of the time while that worker never was.
/// `pspawn --array 1-4000%32` on 2 CPUs, medians of interleaved runs:
/// one worker 1505 tasks/s, four 1655 to 1811, eight 1725 to 1815, twelve
/// 1683.
fn workers() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (4 * cpus).clamp(8, 32)
}

/// Which process a start is for: its job's namespace and its rank.
pub(crate) type Key = (String, u32);

/// A start carried out: the process's pid, or why it could not start.
pub(crate) type Done = (Key, std::io::Result<i32>);

/// The worker and the serving thread's ends of its channels.
pub(crate) struct Spawner {
    ask: Sender<(Key, Detached)>,
    done: Receiver<Done>,
    wake: std::sync::Arc<EventFd>,
}

impl Spawner {
    /// Start the worker. It lives as long as pdvm: the processes it starts
    /// die with the thread that cloned them (`PR_SET_PDEATHSIG`).
    pub(crate) fn start() -> std::io::Result<Spawner> {
        let wake = std::sync::Arc::new(EventFd::from_value_and_flags(
            0,
            EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC,
        )?);
        let (ask, work) = channel::<(Key, Detached)>();
        let work = std::sync::Arc::new(std::sync::Mutex::new(work));
        let (tell, done) = channel::<Done>();
        for _ in 0..workers() {
            let (work, tell, w) = (work.clone(), tell.clone(), wake.clone());
            std::thread::Builder::new()
                .name("pdvm-spawner".into())
                .spawn(move || {
                    // The lock is held only to take the next start.
                    let next = || work.lock().ok()?.recv().ok();
                    while let Some((key, d)) = next() {
                        // The result first, then the wake-up: a wake-up
                        // is never read before its result can be taken.
                        if tell.send((key, d.start())).is_err() {
                            break;
                        }
                        let _ = w.write(1);
                    }
                })?;
        }
        Ok(Spawner { ask, done, wake })
    }

    /// Have the worker start `d`, the process `key`.
    pub(crate) fn submit(&self, key: Key, d: Detached) -> std::io::Result<()> {
        self.ask
            .send((key, d))
            .map_err(|_| std::io::Error::other("the spawner thread is gone"))
    }

    /// The descriptor that turns readable when starts are done.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// Every start done since the last call.
    pub(crate) fn take_done(&self) -> Vec<Done> {
        let _ = self.wake.read();
        self.done.try_iter().collect()
    }
}
