//! The jobs a launched job spawns (`MPI_Comm_spawn`), followed as
//! `prterun` follows them: their output reaches the launcher, and the
//! launcher waits until the last of them ended, exiting with the first
//! non-zero status among them.
//!
//! Two kinds of DVM:
//!
//! - PRRTE master and pdvm say in every job-end event which spawn tree the
//!   job belonged to and how many jobs of it are left
//!   (`PMIX_SPAWN_TREE_ROOT`, `PMIX_SPAWN_TREE_ACTIVE`), and forward a
//!   spawned job's output to whoever receives its parent's (OpenPMIx
//!   master's server clones the parent's forwarding; pdvm routes it so).
//!   Nothing to do but count.
//! - PRRTE 3.0.x (an OpenPMIx 5 server) says neither: it gives the tool no
//!   event when an application spawns, forwards the spawned job's output
//!   to nobody (its server caches it), and sends the job's end to every
//!   tool without saying whose it was. The tree is then found by looking:
//!   every [`LOOK_EVERY`] the DVM's namespaces are listed, and each new one
//!   numbered after the launched job is asked its rank 0's
//!   `PMIX_PARENT_ID` (PRRTE 3.0 sets it for a job an application
//!   spawned); one whose parent is in the tree joins it, and its stdout and
//!   stderr are pulled (`PMIx_IOF_pull`: the server hands over what it
//!   cached, then forwards the rest). A spawned job that lived less than
//!   one look is missed.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::codec::{Proc, Value};
use crate::proto::{keys, Status};

use super::events::Event;
use super::job::{
    drain_output, job_end_of, numbered, pull_cached_output, withdraw_pull, JobEnd, JobOutput,
    TreeLeft, TRAILING_QUIET_V41,
};
use super::session::Session;

/// How often PRRTE 3.0's namespaces are looked at for spawned jobs.
pub const LOOK_EVERY: Duration = Duration::from_millis(250);
/// Longest one look waits for each of the DVM's answers.
const LOOK_WAIT: Duration = Duration::from_secs(2);
/// Looks a listed namespace may go without an answer on its parent (not
/// yet registered with the DVM's PMIx server, or a tool's) before it is
/// taken for a stranger's.
const PARENT_TRIES: u32 = 8;

/// First PMIx major version whose servers report spawn trees in job ends
/// and forward a spawned job's output themselves (OpenPMIx master, pdvm).
pub const TREE_MIN_MAJOR: u32 = 7;

/// A spawned job found by looking, still running.
struct Found {
    /// The server's id for our pull of its output.
    pull: Option<u64>,
    /// The last look did not list it.
    unlisted: bool,
}

/// The launched job and the jobs spawned from it, until the last ended.
pub struct SpawnTree {
    primary: String,
    /// Namespaces whose tree is ours: the launched job, and our own when
    /// we launched it as a tool on a direct connection (a palloc holder
    /// launches for many clients under one name).
    roots: Vec<String>,
    primary_end: Option<JobEnd>,
    /// The jobs of the tree that ended non-zero, in the order they
    /// ended; judged at the tree's end, when every tool inside has marked
    /// what it launched ([`SpawnTree::tool_launched`]).
    failures: Vec<JobEnd>,
    /// The jobs of our tree left, as the last end of it said.
    left: Option<u32>,
    /// PRRTE 3.0: find the tree by looking.
    look: bool,
    next_look: Instant,
    /// Namespaces of the tree (the launched job and those found).
    members: HashSet<String>,
    found: HashMap<String, Found>,
    /// Our pulls of the output of found jobs that ended.
    pulls: Vec<u64>,
    /// Namespaces known to be no member, and the looks others went
    /// unanswered.
    strangers: HashSet<String>,
    unanswered: HashMap<String, u32>,
    /// Where the tools run inside the job mark the jobs they launched
    /// (`super::tool_launches`).
    tool_marks: Option<std::path::PathBuf>,
    /// The members seen ending (a tool's job among them may be marked only
    /// after its end came).
    tool_ended: HashSet<String>,
}

impl SpawnTree {
    /// The tree of job `primary`, just launched over `s`.
    pub fn new(s: &Session, primary: &str) -> SpawnTree {
        let mut roots = vec![primary.to_string()];
        let direct_tool = s.conn().target().holder_of.is_none() && s.conn().identity().is_tool();
        if direct_tool {
            roots.push(s.me().0);
        }
        let major = s
            .server_version()
            .and_then(crate::proto::PmixVersion::parse)
            .map(|v| v.major);
        SpawnTree {
            primary: primary.to_string(),
            roots,
            primary_end: None,
            failures: Vec::new(),
            left: None,
            look: major.is_some_and(|m| m < TREE_MIN_MAJOR),
            next_look: Instant::now(),
            members: HashSet::from([primary.to_string()]),
            found: HashMap::new(),
            pulls: Vec::new(),
            strangers: HashSet::new(),
            unanswered: HashMap::new(),
            tool_marks: super::tool_launches::existing_own_dir(),
            tool_ended: HashSet::new(),
        }
    }

    /// Whether job `ns` was launched by a tool inside the job (its mark).
    fn tool_launched(&self, ns: &str) -> bool {
        self.tool_marks
            .as_ref()
            .is_some_and(|d| d.join(ns).exists())
    }

    /// The jobs tools launched inside the job that have not ended: the
    /// tree's count includes them, the launcher does not wait for them.
    fn tool_jobs_running(&self) -> u32 {
        let Some(d) = &self.tool_marks else {
            return 0;
        };
        let running = super::tool_launches::marked(d)
            .into_iter()
            .filter(|ns| !self.tool_ended.contains(ns))
            .count();
        u32::try_from(running).unwrap_or(u32::MAX)
    }

    /// Whether `ev` is the end of a job of this tree other than the
    /// launched one.
    pub fn is_member_end(&self, ev: &Event) -> bool {
        if ev.status != Status::EVENT_JOB_END {
            return false;
        }
        let Some(ns) = ev.affected_nspace() else {
            return false;
        };
        if ns == self.primary {
            return false;
        }
        self.members.contains(ns) || TreeLeft::of(ev).is_some_and(|t| self.ours(&t))
    }

    fn ours(&self, t: &TreeLeft) -> bool {
        self.roots.contains(&t.root)
    }

    /// A job of the tree other than the launched one ended (`ev`, which
    /// [`SpawnTree::is_member_end`] accepted).
    pub fn member_ended(&mut self, ev: &Event) {
        let Some(ns) = ev.affected_nspace().map(String::from) else {
            return;
        };
        let Some(end) = job_end_of(ev, &ns) else {
            return;
        };
        // Its pull stays until the tree ends: PRRTE 3.0 forwards output
        // after a job's end too.
        if let Some(f) = self.found.remove(&ns) {
            self.pulls.extend(f.pull);
        }
        // Every member's end counts here: a tool's job may be marked only
        // after its end came.
        self.tool_ended.insert(ns.clone());
        if self.tool_launched(&ns) {
            if let Some(t) = end.tree.as_ref().filter(|t| self.ours(t)) {
                self.left = Some(t.active);
            }
            return;
        }
        if never_ran(&end) {
            // Its spawner was told (a `pspawn` in a script gets the refusal
            // and exits with it): it is not the tree's failure.
            if let Some(t) = end.tree.as_ref().filter(|t| self.ours(t)) {
                self.left = Some(t.active);
            }
            return;
        }
        self.note(end);
    }

    /// The launched job ended.
    pub fn primary_ended(&mut self, end: JobEnd) {
        self.note(end.clone());
        self.primary_end = Some(end);
    }

    fn note(&mut self, end: JobEnd) {
        if let Some(t) = end.tree.as_ref().filter(|t| self.ours(t)) {
            self.left = Some(t.active);
        }
        if end.exit_status != 0 {
            self.failures.push(end);
        }
    }

    /// Whether the launched job has ended.
    pub fn primary_done(&self) -> bool {
        self.primary_end.is_some()
    }

    /// Whether every job of the tree has ended. On PRRTE 3.0 a last look
    /// is taken first, for jobs spawned since the one before.
    pub fn done(&mut self, s: &Session, on_output: &mut dyn FnMut(JobOutput<'_>)) -> bool {
        let tools = self.tool_jobs_running();
        if self.primary_end.is_none() || self.left.is_some_and(|n| n > tools) {
            return false;
        }
        if !self.look {
            return true;
        }
        if self.found.is_empty() {
            self.look_now(s);
        }
        if !self.found.is_empty() {
            return false;
        }
        // The output PRRTE 3.0 still forwards after the last end.
        if !self.pulls.is_empty() {
            drain_output(s, TRAILING_QUIET_V41, on_output);
        }
        true
    }

    /// The spawned jobs found by looking that still run.
    pub fn found(&self) -> Vec<String> {
        self.found.keys().cloned().collect()
    }

    /// When the next look is due (PRRTE 3.0), if any.
    pub fn due(&self) -> Option<Instant> {
        self.look.then_some(self.next_look)
    }

    /// Look for spawned jobs if a look is due.
    pub fn poll(&mut self, s: &Session) {
        if self.look && Instant::now() >= self.next_look {
            self.look_now(s);
        }
    }

    /// How the tree ended: the launched job's end, with the status of the
    /// first job of the tree that ended non-zero (prterun's rule).
    pub fn outcome(&mut self, s: &Session) -> Option<JobEnd> {
        let found = std::mem::take(&mut self.found).into_values();
        for id in found.filter_map(|f| f.pull).chain(self.pulls.drain(..)) {
            withdraw_pull(s, id);
        }
        let mut end = self.primary_end.take()?;
        // A job a tool inside launched may end before that tool has marked
        // it (its end can come before the tool reads its spawn's answer):
        // the marks are read now, once the launched job has ended.
        let failures = std::mem::take(&mut self.failures);
        let first = failures
            .into_iter()
            .find(|f| f.nspace == end.nspace || !self.tool_launched(&f.nspace));
        if let Some(f) = first.filter(|f| f.nspace != end.nspace) {
            if end.exit_status == 0 {
                end.exit_status = f.exit_status;
                end.term = f.term;
                end.exit_reported = f.exit_reported;
                end.message = Some(match f.message {
                    Some(m) => format!("its spawned job {} failed: {m}", f.nspace),
                    None => format!("its spawned job {} failed", f.nspace),
                });
            }
        }
        Some(end)
    }

    /// List the DVM's namespaces; a new one numbered after the launched
    /// job whose rank 0's parent is in the tree joins it (its output is
    /// pulled); a found job unlisted at two looks in a row has ended
    /// unannounced (it no longer holds the tree open).
    fn look_now(&mut self, s: &Session) {
        self.next_look = Instant::now() + LOOK_EVERY;
        let Ok(listed) = super::query::namespaces_within(s, LOOK_WAIT) else {
            return;
        };
        let Some((base, first)) = numbered(&self.primary) else {
            return;
        };
        let mut new: Vec<(u64, String)> = listed
            .iter()
            .filter(|ns| !self.members.contains(*ns) && !self.strangers.contains(*ns))
            .filter_map(|ns| match numbered(ns) {
                Some((b, n)) if b == base && n > first => Some((n, ns.clone())),
                _ => None,
            })
            .collect();
        // Parents are numbered before their children.
        new.sort();
        for (_, ns) in new {
            self.classify(s, &ns);
        }
        let gone: Vec<String> = self
            .found
            .iter_mut()
            .filter_map(|(ns, f)| {
                let unlisted = !listed.contains(ns);
                let twice = unlisted && f.unlisted;
                f.unlisted = unlisted;
                twice.then(|| ns.clone())
            })
            .collect();
        for ns in gone {
            if let Some(f) = self.found.remove(&ns) {
                self.pulls.extend(f.pull);
            }
        }
    }

    /// Ask the DVM for `ns`'s parent; a member's child joins the tree.
    fn classify(&mut self, s: &Session, ns: &str) {
        if self.tool_launched(ns) {
            // A tool's launch inside the job: that tool forwards its output.
            self.strangers.insert(ns.to_string());
            return;
        }
        let rank0 = Proc {
            nspace: ns.to_string(),
            rank: 0,
        };
        let parent = match super::get::get_now(s, &rank0, keys::PARENT_ID, LOOK_WAIT) {
            Ok(Some(Value::Proc(p))) => Some(p.nspace),
            _ => None,
        };
        match parent {
            Some(p) if self.members.contains(&p) => {
                self.members.insert(ns.to_string());
                let pull = pull_cached_output(s, ns);
                self.found.insert(
                    ns.to_string(),
                    Found {
                        pull,
                        unlisted: false,
                    },
                );
            }
            Some(_) => {
                self.strangers.insert(ns.to_string());
            }
            None => {
                let tries = self.unanswered.entry(ns.to_string()).or_insert(0);
                *tries += 1;
                if *tries >= PARENT_TRIES {
                    self.unanswered.remove(ns);
                    self.strangers.insert(ns.to_string());
                }
            }
        }
    }
}

impl Drop for SpawnTree {
    fn drop(&mut self) {
        if let Some(d) = &self.tool_marks {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A job that ended without its processes' own status: it could not be
/// mapped or launched (PRRTE master ends such a job with `PMIX_ERROR`, no
/// exit code), so whoever spawned it was refused and knows.
fn never_ran(end: &JobEnd) -> bool {
    let launch_failed = matches!(
        end.term,
        Some(Status::ERR_JOB_FAILED_TO_MAP) | Some(Status::ERR_JOB_FAILED_TO_LAUNCH)
    );
    launch_failed || (!end.exit_reported && end.exit_status < 0)
}
