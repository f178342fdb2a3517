//! psched's watchdog (issue 46.2): a small process psched on Slurm starts
//! beside itself, which ends the Slurm jobs of allocations that end while
//! psched is down. Without it such a job ran on, its nodes idle, until
//! psched came back or Slurm's time limit (60 minutes by default).
//!
//! It is the same program (`psched`, same flags) started with
//! [`ENV`] naming the psched it watches, in a process group of its own, so
//! a `kill -9` of psched or a Ctrl-C in its terminal leaves it running.
//! While that psched lives it waits on the psched's pid descriptor and on
//! the ledger's directory (inotify: the ledger gone, another psched's pid
//! file written), looking at nothing until one of them wakes it (without
//! inotify, a look a second). Once psched is gone it reads psched's ledger
//! every second
//! and, for every grant whose holding ends hand its nodes back (NONE,
//! CHILD: palloc's own rule), `scancel`s the grant's Slurm jobs when
//! - the DVM psched served no longer lists the allocation in two looks
//!   in a row (its holder ended: palloc exited or was killed, the DVM
//!   ended the reservation), asked as an ordinary tool
//!   (`PMIX_QUERY_ALLOC_IDS`), or
//! - its time limit (psched's, in the ledger) has passed;
//!
//! and the jobs of requests still queued (which the next psched withdraws
//! anyway, their requesters send them again). Grants kept for the DVM
//! (DEFAULT) stay, as psched keeps them. The watchdog never writes the
//! ledger: the psched that comes back finds those jobs gone and ends what
//! is left, as when Slurm ends a job. It leaves when another psched serves
//! the ledger (that one started its own watchdog), when nothing it could
//! end is left, or when the ledger is gone.

use std::collections::BTreeSet;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use crate::conn::{discover, Connection, Identity};
use crate::error::Result;

use super::ledger::Ledger;
use super::{now_ms, Config};

/// The variable naming the psched a watchdog watches (its pid); set, the
/// program is that psched's watchdog.
pub const ENV: &str = "PSCHED_WATCHDOG_OF";
/// How often the watchdog looks.
pub const PERIOD: Duration = Duration::from_secs(1);
/// How long a look at the DVM may take.
const ASK: Duration = Duration::from_secs(5);

/// Where psched says which process serves `ledger` now.
pub fn pid_file(ledger: &Path) -> PathBuf {
    let mut name = ledger.file_name().unwrap_or_default().to_os_string();
    name.push(".psched.pid");
    ledger.with_file_name(name)
}

/// The pid [`ENV`] names, when this program is a watchdog.
pub fn asked() -> Option<i32> {
    std::env::var(ENV).ok()?.parse().ok()
}

/// psched on Slurm starts: it says it serves `ledger` now and starts its
/// watchdog (the same program and flags, [`ENV`] naming it). A watchdog
/// that cannot start is said in the log; psched goes on without one.
pub fn start(ledger: &Path) {
    let me = std::process::id();
    if let Err(e) = super::files::replace(&pid_file(ledger), format!("{me}\n").as_bytes(), 0o600) {
        say!(
            "psched: no watchdog: cannot write {}: {e}",
            pid_file(ledger).display()
        );
        return;
    }
    let spawned = std::env::current_exe().and_then(|exe| {
        use std::os::unix::process::CommandExt;
        std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(ENV, me.to_string())
            .stdin(std::process::Stdio::null())
            .process_group(0)
            .spawn()
    });
    match spawned {
        Ok(c) => say!("psched: watchdog {} started (ends Slurm jobs of allocations that end while psched is down)", c.id()),
        Err(e) => say!("psched: no watchdog: {e}"),
    }
}

/// Why the watchdog ends a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The DVM no longer lists the allocation: its holder ended.
    HolderGone,
    /// The palloc holding it has ended (its name in the holder registry is
    /// no longer held).
    HolderLeft,
    /// The allocation's time limit passed.
    Expired,
    /// No grant holds the job (a request that was queued).
    NoGrant,
}

impl Why {
    /// The words for psched's log.
    pub fn words(self) -> &'static str {
        match self {
            Why::HolderGone => "its allocation ended (the DVM no longer lists it)",
            Why::HolderLeft => "the palloc holding it has ended",
            Why::Expired => "its allocation's time limit passed",
            Why::NoGrant => "no grant holds it (a request that was queued)",
        }
    }
}

/// One look's decisions: the jobs to end now (with the allocation and
/// why), the allocations seen missing for the first time, and whether
/// anything is left to watch.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Look {
    /// (allocation or "-", job, why).
    pub end: Vec<(String, u64, Why)>,
    /// Allocations the DVM did not list this time (ended on the next).
    pub missing: BTreeSet<String>,
    /// Jobs still watched after this look.
    pub watched: usize,
}

/// Decide over `l` at `now`: `live` is what the DVM listed (none: not
/// asked), `missing` what it did not list the look before, `left` the
/// allocations whose holding palloc is known to have ended, `done` the
/// jobs already ended.
pub fn look(
    l: &Ledger,
    live: Option<&[String]>,
    missing: &BTreeSet<String>,
    left: &BTreeSet<String>,
    done: &BTreeSet<u64>,
    now: u64,
) -> Look {
    let mut out = Look::default();
    for g in &l.grants {
        let returns = g
            .inherit
            .unwrap_or(crate::proto::Inheritance::Default)
            .returns_to_scheduler();
        let jobs: Vec<u64> = g
            .slurm_jobs
            .iter()
            .copied()
            .filter(|j| !done.contains(j) && !l.retained_jobs.contains(j))
            .collect();
        if !returns || jobs.is_empty() {
            continue;
        }
        let why = if g.expires_at_ms.is_some_and(|e| e <= now) {
            Some(Why::Expired)
        } else if left.contains(&g.alloc_id) {
            Some(Why::HolderLeft)
        } else {
            match live {
                Some(ids) if !ids.contains(&g.alloc_id) => {
                    if missing.contains(&g.alloc_id) {
                        Some(Why::HolderGone)
                    } else {
                        out.missing.insert(g.alloc_id.clone());
                        None
                    }
                }
                _ => None,
            }
        };
        match why {
            Some(w) => out
                .end
                .extend(jobs.iter().map(|j| (g.alloc_id.clone(), *j, w))),
            None => out.watched += jobs.len(),
        }
    }
    let queued = l.slurm_withdraw.iter().filter(|j| !done.contains(j));
    out.end
        .extend(queued.map(|j| ("-".to_string(), *j, Why::NoGrant)));
    out
}

/// The watchdog of psched `of`: see the module documentation.
pub fn run(cfg: &Config, of: i32) -> Result<()> {
    let pid = nix::unistd::Pid::from_raw(of);
    let Ok(psched) = crate::conn::pidfd::open(pid) else {
        return Ok(());
    };
    let mut w = Watch {
        cfg,
        of,
        conn: None,
        missing: BTreeSet::new(),
        done: BTreeSet::new(),
        said_down: false,
        said: None,
        held: BTreeSet::new(),
    };
    let beside = watch_beside(&cfg.ledger);
    loop {
        // Waiting on psched's end and the ledger's directory while psched
        // lives; a look a second once it is gone, unless another psched
        // serves the ledger now.
        if !cfg.ledger.exists() || another_serves(&cfg.ledger, of) {
            return Ok(());
        }
        if ended(&psched, beside.as_ref()) {
            if !w.said_down {
                say!("psched watchdog: psched {of} is gone; watching its Slurm jobs");
                w.said_down = true;
            }
            if !w.turn()? {
                return Ok(());
            }
            let next = std::time::Instant::now() + PERIOD;
            super::wait::until(next, super::wait::Why::WatchdogLook);
        }
    }
}

/// An inotify watch on the directory of `ledger` for what ends the
/// watchdog while psched lives: the ledger removed or renamed away,
/// another psched's pid file written (psched's own ledger writes wake it
/// too, for one look). `None` where inotify is missing.
fn watch_beside(ledger: &Path) -> Option<Inotify> {
    let i = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
    let what = AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_DELETE_SELF;
    i.add_watch(&super::files::dir_of(ledger), what).ok()?;
    Some(i)
}

/// Whether the process behind `fd` has ended: a wait on it and on
/// `beside` (what was seen there is drained, for the caller's look), or,
/// without `beside`, on it for a [`PERIOD`] at most.
fn ended(fd: &OwnedFd, beside: Option<&Inotify>) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = vec![PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    fds.extend(beside.map(|i| PollFd::new(i.as_fd(), PollFlags::POLLIN)));
    let timeout = match beside {
        Some(_) => PollTimeout::NONE,
        None => PollTimeout::try_from(PERIOD).unwrap_or(PollTimeout::MAX),
    };
    if !matches!(poll(&mut fds, timeout), Ok(n) if n > 0) {
        return false;
    }
    let gone = fds[0].revents().is_some_and(|r| !r.is_empty());
    if let Some(i) = beside {
        while i.read_events().is_ok_and(|e| !e.is_empty()) {}
    }
    gone
}

/// Whether a psched other than `of`, alive, says it serves `ledger`.
fn another_serves(ledger: &Path, of: i32) -> bool {
    let Ok((body, _)) = super::files::read(&pid_file(ledger), 64) else {
        return false;
    };
    let Some(p) = String::from_utf8_lossy(&body).trim().parse::<i32>().ok() else {
        return false;
    };
    p != of && nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None).is_ok()
}

/// What the watchdog keeps between looks.
struct Watch<'a> {
    cfg: &'a Config,
    of: i32,
    conn: Option<Connection>,
    missing: BTreeSet<String>,
    done: BTreeSet<u64>,
    said_down: bool,
    /// The last trouble said (each once in a row).
    said: Option<String>,
    /// Allocations whose holding palloc was seen alive.
    held: BTreeSet<String>,
}

impl Watch<'_> {
    /// One look; false when nothing is left to watch.
    fn turn(&mut self) -> Result<bool> {
        let l = match Ledger::load(&self.cfg.ledger) {
            Ok(l) => l,
            Err(_) => return Ok(false),
        };
        let live = self.live(&l);
        let left = self.left(&l);
        let d = look(
            &l,
            live.as_deref(),
            &self.missing,
            &left,
            &self.done,
            now_ms(),
        );
        for (alloc, job, why) in &d.end {
            match super::slurm::ctl::cancel(*job) {
                Ok(()) => say!(
                    "psched watchdog: cancelled Slurm job {job} of {alloc} while psched {} is down: {}",
                    self.of,
                    why.words()
                ),
                // Slurm is not answering: the next look tries again.
                Err(super::slurm::ctl::Failure::Unreachable(w)) => {
                    say!("psched watchdog: scancel {job} of {alloc}: Slurm unreachable ({w})");
                    continue;
                }
                Err(super::slurm::ctl::Failure::Refused(w)) => {
                    say!("psched watchdog: scancel {job} of {alloc} refused: {w}")
                }
            }
            self.done.insert(*job);
        }
        self.missing = d.missing;
        Ok(d.watched > 0)
    }

    /// The allocations the DVM psched served lists now (none when it
    /// cannot be asked, or is another DVM).
    fn live(&mut self, l: &Ledger) -> Option<Vec<String>> {
        if self.conn.is_none() {
            match attach(self.cfg) {
                Ok(c) => self.conn = Some(c),
                Err(e) => {
                    self.say(&format!(
                        "cannot ask the DVM ({e}): only time limits end jobs"
                    ));
                    return None;
                }
            }
        }
        let c = self.conn.as_ref()?;
        if l.dvm.as_deref() != Some(c.server().0) {
            self.say(&format!(
                "the DVM is {} now, not psched's {}: only time limits end jobs",
                c.server().0,
                l.dvm.as_deref().unwrap_or("(none)")
            ));
            self.conn = None;
            return None;
        }
        let q = super::wire::query_alloc_ids(c.wire()).ok()?;
        match c.request(&q, ASK) {
            Ok(a) => {
                let live = super::wire::alloc_ids_answer(c.wire(), &a);
                if live.is_none() {
                    self.say("the DVM did not list its allocations: only time limits end jobs");
                }
                live
            }
            Err(e) => {
                self.say(&format!(
                    "cannot ask the DVM ({e}): only time limits end jobs"
                ));
                self.conn = None;
                None
            }
        }
    }

    /// The allocations whose holding palloc has ended: its name in the
    /// holder registry (of psched's user, on this DVM) is there and free,
    /// or gone after the watchdog saw it held. PRRTE master may not notice
    /// a palloc killed soon after its grant (docs/conformance.md D10): its
    /// reservation stays listed, so the DVM's list alone does not tell.
    fn left(&mut self, l: &Ledger) -> BTreeSet<String> {
        let server = match &self.conn {
            Some(c) => c.target().uri.nspace.clone(),
            None => match &l.dvm {
                Some(d) => d.clone(),
                None => return BTreeSet::new(),
            },
        };
        let mut left = BTreeSet::new();
        for g in &l.grants {
            match crate::conn::registry::holder_alive(&server, &g.alloc_id) {
                Some(true) => {
                    self.held.insert(g.alloc_id.clone());
                }
                Some(false) => {
                    left.insert(g.alloc_id.clone());
                }
                None if self.held.contains(&g.alloc_id) => {
                    left.insert(g.alloc_id.clone());
                }
                None => {}
            }
        }
        left
    }

    /// Say `what` in psched's log, once in a row.
    fn say(&mut self, what: &str) {
        if self.said.as_deref() != Some(what) {
            say!("psched watchdog: {what}");
            self.said = Some(what.to_string());
        }
    }
}

/// Attach to the DVM as an ordinary tool (psched's connection flags).
fn attach(cfg: &Config) -> Result<Connection> {
    let mut target = discover::discover(&cfg.connect, &discover::ProcessEnv)?;
    target.identity = Identity::Tool;
    Connection::open(target, ASK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Inheritance;
    use crate::psched::ledger::Grant;

    fn grant(id: &str, job: u64, inherit: Inheritance, expires: Option<u64>) -> Grant {
        Grant {
            expires_at_ms: expires,
            queue: "batch".into(),
            inherit: Some(inherit),
            slurm_jobs: vec![job],
            ..Grant::bare(id, &["n1"])
        }
    }

    #[test]
    fn a_grant_the_dvm_stops_listing_is_ended_on_the_second_look() {
        let l = Ledger {
            grants: vec![
                grant("slurm.1", 11, Inheritance::Child, Some(10_000)),
                grant("slurm.2", 12, Inheritance::Child, Some(10_000)),
            ],
            ..Ledger::default()
        };
        let live = vec!["slurm.2".to_string()];
        let none: BTreeSet<String> = BTreeSet::new();
        let no_jobs: BTreeSet<u64> = BTreeSet::new();
        let first = look(&l, Some(&live), &none, &none, &no_jobs, 0);
        assert!(first.end.is_empty());
        assert_eq!(first.watched, 2);
        let second = look(&l, Some(&live), &first.missing, &none, &no_jobs, 1000);
        assert_eq!(second.end, vec![("slurm.1".into(), 11, Why::HolderGone)]);
        assert_eq!(second.watched, 1);
        // Not asked (the DVM cannot be reached): nothing is ended.
        assert!(look(&l, None, &first.missing, &none, &no_jobs, 1000)
            .end
            .is_empty());
        // Its palloc has ended: at once, whatever the DVM lists.
        let left: BTreeSet<String> = ["slurm.2".to_string()].into();
        let d = look(&l, None, &none, &left, &no_jobs, 1000);
        assert_eq!(d.end, vec![("slurm.2".into(), 12, Why::HolderLeft)]);
    }

    #[test]
    fn an_expired_grant_and_queued_jobs_are_ended_a_kept_one_is_not() {
        let mut l = Ledger {
            grants: vec![
                grant("slurm.1", 11, Inheritance::None, Some(500)),
                grant("slurm.2", 12, Inheritance::Default, Some(500)),
            ],
            slurm_withdraw: vec![13],
            ..Ledger::default()
        };
        let none: BTreeSet<String> = BTreeSet::new();
        let no_jobs: BTreeSet<u64> = BTreeSet::new();
        let d = look(&l, None, &none, &none, &no_jobs, 1000);
        assert_eq!(
            d.end,
            vec![
                ("slurm.1".into(), 11, Why::Expired),
                ("-".into(), 13, Why::NoGrant)
            ]
        );
        assert_eq!(d.watched, 0, "DEFAULT keeps its job for the DVM");
        let done: BTreeSet<u64> = [11, 13].into();
        assert!(look(&l, None, &none, &none, &done, 1000).end.is_empty());
        l.retained_jobs = vec![11];
        l.slurm_withdraw.clear();
        assert!(look(&l, None, &none, &none, &no_jobs, 1000).end.is_empty());
    }
}
