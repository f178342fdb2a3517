//! Running a job to completion: register for its end, spawn it with output
//! forwarding, stream its output, and report its exit status.

use std::time::{Duration, Instant};

use crate::codec::{App, Info, ProcInfo, Value};
use crate::conn::Unsolicited;
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::events::{decode_notification, register, Event};
use super::iof::{decode_iof, IofChunk};
use super::session::Session;
use crate::proto::keys;

/// What a running job produced, as it happens.
pub enum JobOutput<'a> {
    /// A chunk of forwarded stdout/stderr.
    Output(&'a IofChunk),
    /// An event that is not this job's end (e.g. a timeout warning).
    Event(&'a Event),
}

/// How a job ended.
#[derive(Clone, Debug, serde::Serialize)]
pub struct JobEnd {
    /// The job's namespace.
    pub nspace: String,
    /// The job's exit status as the DVM reported it (0 = success).
    pub exit_status: i32,
    /// Any text the DVM attached.
    pub message: Option<String>,
    /// `true` when the DVM announced the end (`PMIX_EVENT_JOB_END`); `false`
    /// when it never did and [`EndCheck`] found the job gone: then
    /// `exit_status` is only the best known (see [`EndCheck`]).
    pub announced: bool,
    /// The announcement carried a process exit code (`PMIX_EXIT_CODE`):
    /// pdvm's always does; PRRTE master's does for a job whose processes
    /// ended by themselves, not for one it killed (a session's end, a job
    /// control), which it announces with status 0.
    pub exit_reported: bool,
    /// The termination status the DVM gave (`PMIX_JOB_TERM_STATUS`), when
    /// it was one of PMIx's statuses.
    pub term: Option<Status>,
    /// The spawn tree the DVM said the job belonged to, when it said
    /// (`PMIX_SPAWN_TREE_ROOT`, `PMIX_SPAWN_TREE_ACTIVE`: PRRTE master and
    /// pdvm): see `ops::spawn_tree`.
    #[serde(skip)]
    pub tree: Option<TreeLeft>,
}

/// What a job-end event said of the spawn tree of the job that ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeLeft {
    /// `PMIX_SPAWN_TREE_ROOT`: the tree's root namespace.
    pub root: String,
    /// `PMIX_SPAWN_TREE_ACTIVE`: its jobs yet to end.
    pub active: u32,
}

impl TreeLeft {
    /// The tree `ev` names, when it names one.
    pub fn of(ev: &Event) -> Option<TreeLeft> {
        let root = ev.get(keys::SPAWN_TREE_ROOT)?.as_str()?.to_string();
        let active = ev.get(keys::SPAWN_TREE_ACTIVE)?.as_u64()?;
        Some(TreeLeft {
            root,
            active: u32::try_from(active).unwrap_or(u32::MAX),
        })
    }
}

impl JobEnd {
    /// Whether the job was stopped rather than ending by itself, as far as
    /// its end tells: killed by SIGTERM or SIGKILL (143, 137: pdvm), or
    /// status 0 with no process exit code (PRRTE master's end of a job it
    /// killed). Used only once the DVM said why it might have stopped it.
    pub fn looks_stopped(&self) -> bool {
        matches!(self.exit_status, 137 | 143) || (self.exit_status == 0 && !self.exit_reported)
    }

    /// Whether the job ended only because a process exited non-zero by
    /// itself: the process exit code reported with an unspecific or
    /// non-zero-exit termination status (PRRTE master sends `PMIX_ERROR`,
    /// and `PMIX_ERR_JOB_ABORTED` or `…_BY_SIG` for an abort or a signal).
    /// Its exit status says all, so the DVM's text on it (PRRTE's
    /// "exited with non-zero status" box) is no news to the user, as on
    /// pdvm, which sends none.
    pub fn is_plain_exit(&self) -> bool {
        self.exit_reported
            && matches!(
                self.term,
                Some(Status::ERROR | Status::ERR_JOB_NON_ZERO_TERM | Status::ERR_EXIT_NONZERO_TERM)
            )
    }
}

/// Register for job-end events (call before spawning so no end is missed).
pub fn watch_job_ends(s: &Session) -> Result<()> {
    register(
        s,
        &[Status::EVENT_JOB_END],
        &[Info::new(keys::EVENT_HDLR_NAME, "pmix-tools-job-end")],
    )
}

/// Follow an already-spawned job until its end event arrives, or until
/// [`EndCheck`] finds it gone without one.
pub fn follow_job(
    s: &Session,
    nspace: &str,
    timeout: Option<Duration>,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Result<JobEnd> {
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut check = EndCheck::new(nspace);
    loop {
        let wake = match deadline {
            Some(d) => d.min(check.due()),
            None => check.due(),
        };
        let Some(msg) = s.conn().next_unsolicited_until(Some(wake)) else {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                let _ = super::control::terminate_job(s, nspace);
                return Err(Error::new(
                    Status::ERR_TIMEOUT,
                    format!("job {nspace} did not finish in time; it was terminated"),
                ));
            }
            if let Some(end) = check.poll(s, on_output)? {
                return Ok(end);
            }
            continue;
        };
        if let Some(r) = follow_message(s, nspace, msg, &mut check, on_output) {
            return r;
        }
    }
}

/// One message received while following job `nspace`: output (which
/// `check` hears) and other events go to `on_output`; the job's end, with
/// the output queued behind it, is `Some(Ok(end))`; a closed connection is
/// `Some(Err(..))`; anything else is `None`.
pub fn follow_message(
    s: &Session,
    nspace: &str,
    msg: Unsolicited,
    check: &mut EndCheck,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Option<Result<JobEnd>> {
    match msg {
        Unsolicited::Iof(bytes) => {
            if let Ok(chunk) = decode_iof(&mut s.decoder(&bytes)) {
                check.heard(&chunk);
                on_output(JobOutput::Output(&chunk));
            }
            None
        }
        Unsolicited::Notify(bytes) => {
            let ev = decode_notification(&mut s.decoder(&bytes)).ok()?;
            if let Some(end) = job_end_of(&ev, nspace) {
                // PRRTE 3.0 (v41) may have cached output it never forwarded.
                if s.wire() == crate::codec::WireVersion::V41 {
                    drain_job_output(s, nspace, TRAILING_QUIET_V41, on_output);
                } else {
                    drain_output(s, TRAILING_QUIET_V41, on_output);
                }
                return Some(Ok(end));
            }
            on_output(JobOutput::Event(&ev));
            None
        }
        Unsolicited::Other(..) => None,
        Unsolicited::Closed(e) => Some(Err(Error::new(
            e.status,
            format!("lost the DVM while job {nspace} ran: {}", e.context),
        ))),
    }
}

/// How long a spawn answered `PMIX_ERROR` waits for the end of a job that
/// already ran before the refusal is believed.
pub const ENDED_BEFORE_REPLY_WAIT: Duration = Duration::from_millis(500);

/// The end of a job whose spawn the DVM answered with the generic
/// `PMIX_ERROR` although the job had already run: PRRTE master does so when
/// the job fails before the reply is sent, and the reply then names no
/// namespace. Its output and end still come to the launcher, which asked for
/// both. Waits at most `wait` for the first end of a namespace numbered after
/// `me` and after every job this session launched (PRRTE numbers namespaces
/// `BASE@N` in order, so the replayed ends of older jobs do not qualify),
/// passes that job's output to `on_output`, and
/// returns how it ended. Another tool's job started at the same moment could
/// be taken for it; the caller says so.
pub fn ended_before_reply(
    s: &Session,
    me: &str,
    wait: Duration,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Option<JobEnd> {
    let (base, mine) = numbered(me)?;
    // Ends replayed to a new registration are of older jobs: this session's
    // earlier ones included.
    let mine = mine.max(s.last_launched());
    let deadline = Instant::now() + wait;
    let mut output: Vec<IofChunk> = Vec::new();
    while let Some(msg) = s.conn().next_unsolicited_until(Some(deadline)) {
        match msg {
            Unsolicited::Iof(bytes) => {
                if let Ok(chunk) = decode_iof(&mut s.decoder(&bytes)) {
                    output.push(chunk);
                }
            }
            Unsolicited::Notify(bytes) => {
                let Ok(ev) = decode_notification(&mut s.decoder(&bytes)) else {
                    continue;
                };
                let Some(ns) = ev.affected_nspace().map(String::from) else {
                    continue;
                };
                let later = numbered(&ns).is_some_and(|(b, n)| b == base && n > mine);
                // Not the end PRRTE master gives a job it never ran (one it
                // could not map: an earlier try of this spawn, say).
                let ran = !ended_unrun(&ev);
                if let (true, true, Some(end)) = (later, ran, job_end_of(&ev, &ns)) {
                    for c in output.iter().filter(|c| c.source.nspace == ns) {
                        on_output(JobOutput::Output(c));
                    }
                    drain_job_output(s, &ns, ENDED_OUTPUT_QUIET_V41, on_output);
                    return Some(end);
                }
            }
            Unsolicited::Closed(_) => return None,
            Unsolicited::Other(..) => {}
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    None
}

/// A PRRTE namespace `BASE@N` as its base and number (PRRTE numbers the
/// jobs of one DVM in launch order).
pub fn numbered(nspace: &str) -> Option<(&str, u64)> {
    let (base, n) = nspace.rsplit_once('@')?;
    Some((base, n.parse().ok()?))
}

/// Take the rest of job `nspace`'s output after its end ([`drain_output`]),
/// first asking for what the DVM may still hold of it. A DVM forwards a
/// job's output to its launcher once the spawn succeeded; a job that ended
/// before the spawn was answered (PRRTE answers `PMIX_ERROR` then), or
/// before PRRTE 3.0 set up its forwarding (it then forwards nothing, and
/// may announce no end either), had its output kept in the PMIx server's
/// cache, never sent. Pulling that namespace's stdout and stderr makes the
/// server hand over what it cached, right behind its answer to the pull, so
/// the barrier of [`drain_output`] sees it; the pull is withdrawn after.
/// A cache entry is dropped once forwarded, so nothing comes twice.
pub fn drain_job_output(
    s: &Session,
    nspace: &str,
    quiet_v41: Duration,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) {
    let pulled = pull_cached_output(s, nspace);
    drain_output(s, quiet_v41, on_output);
    if let Some(id) = pulled {
        if let Ok(payload) = super::iof::dereg_payload(s.wire(), id) {
            await_briefly(s, &payload);
        }
    }
}

/// Send the pull of [`drain_job_output`]: the output the server cached of
/// `nspace` comes right behind its answer. The server's id for the pull
/// when it was granted, for [`withdraw_pull`] once that output is taken.
pub fn pull_cached_output(s: &Session, nspace: &str) -> Option<u64> {
    let all = crate::codec::Proc {
        nspace: nspace.to_string(),
        rank: crate::codec::RANK_WILDCARD,
    };
    let channels = super::iof::CHANNEL_STDOUT | super::iof::CHANNEL_STDERR;
    let payload = super::iof::pull_payload(s.wire(), &[all], channels).ok()?;
    let reply = await_briefly(s, &payload)?;
    let mut d = s.decoder(&reply);
    let st: Status = d.unpack_one().ok()?;
    let crate::codec::Size(id) = d.unpack_one().ok()?;
    st.is_success().then_some(id)
}

/// Withdraw the pull `id` of [`pull_cached_output`], not waiting for the
/// answer.
pub fn withdraw_pull(s: &Session, id: u64) {
    if let Ok(payload) = super::iof::dereg_payload(s.wire(), id) {
        if let Ok(tag) = s.conn().begin(&payload) {
            s.conn().forget(tag);
        }
    }
}

/// Send `payload` and wait at most [`TRAILING_MAX`] for its answer.
fn await_briefly(s: &Session, payload: &[u8]) -> Option<Vec<u8>> {
    let tag = s.conn().begin(payload).ok()?;
    let stop = Instant::now() + TRAILING_MAX;
    match s.conn().await_reply(tag, &[], Some(stop)) {
        Ok(Some(r)) => Some(r),
        _ => {
            s.conn().forget(tag);
            None
        }
    }
}

/// If `ev` is the end of job `nspace`, how it ended.
pub fn job_end_of(ev: &Event, nspace: &str) -> Option<JobEnd> {
    if ev.status != Status::EVENT_JOB_END || ev.affected_nspace() != Some(nspace) {
        return None;
    }
    let status = match ev.get(keys::JOB_TERM_STATUS) {
        Some(Value::Status(st)) => st.0,
        Some(v) => v.as_i64().unwrap_or(0) as i32,
        None => 0,
    };
    let exit = match ev.get(keys::EXIT_CODE).and_then(Value::as_i64) {
        Some(code) if code != 0 => code as i32,
        _ => status,
    };
    Some(JobEnd {
        nspace: nspace.to_string(),
        exit_status: exit,
        message: ev
            .get(keys::EVENT_TEXT_MESSAGE)
            .and_then(Value::as_str)
            .map(String::from),
        announced: true,
        exit_reported: ev.get(keys::EXIT_CODE).is_some(),
        term: match ev.get(keys::JOB_TERM_STATUS) {
            Some(Value::Status(st)) => Some(*st),
            _ => None,
        },
        tree: TreeLeft::of(ev),
    })
}

/// Whether a job-end event is the end PRRTE master gives a job it never
/// ran: the bare `PMIX_ERROR` as its status and no process exit code (a job
/// it could not map, or one it ended because another job failed as it
/// started). PRRTE master reports a process exit code in the end of every
/// job that ran; PRRTE 3.0.14 never does, and its status then is the
/// job's own.
pub fn ended_unrun(ev: &Event) -> bool {
    let status = match ev.get(keys::JOB_TERM_STATUS) {
        Some(Value::Status(st)) => *st,
        _ => return false,
    };
    status == Status::ERROR && ev.get(keys::EXIT_CODE).is_none()
}

/// How long a followed job may stay silent (no end event, no output)
/// before [`EndCheck`] first asks the DVM whether it still runs.
pub const END_CHECK_FIRST: Duration = Duration::from_secs(1);
/// Longest gap between two such questions (the gap doubles from
/// [`END_CHECK_FIRST`] up to this): a job whose end event is lost is
/// noticed at most this long (plus one query) after it ended.
pub const END_CHECK_MAX: Duration = Duration::from_secs(16);

/// How long after a check found the job gone from the DVM's list the next
/// one asks again: PRRTE master drops a job from that list before its end
/// event reaches the tool (behind a relaying palloc, seconds before when
/// many steps wait), so the job counts as ended unannounced only when it
/// is still gone, and still unannounced, at this second question.
pub const END_CHECK_CONFIRM: Duration = Duration::from_secs(3);

/// How long one check waits for its answer: a DVM busy launching may leave
/// a query unanswered for a while (PRRTE master does), and the job's own
/// end event must not wait behind it; an unanswered check is asked again
/// later.
pub const END_CHECK_WAIT: Duration = Duration::from_secs(2);

use crate::proto::proc_state::{ERROR as PROC_STATE_ERROR, TERMINATED as PROC_STATE_TERMINATED};

/// The fallback for a job-end event that never comes (PRRTE 3.0.14 loses
/// one now and then, leaving a follower waiting for ever): when the job has
/// been silent past a deadline, ask the DVM about it — first after
/// [`END_CHECK_FIRST`], then with the gap doubling up to [`END_CHECK_MAX`].
/// No question is asked while the job's end event or output keeps coming.
///
/// The job counts as ended when `PMIX_QUERY_NAMESPACES` no longer lists it
/// at two questions in a row, the second [`END_CHECK_CONFIRM`] after the
/// first (PRRTE lists only live jobs and tools, and drops one before its
/// end event arrives), or when, at two checks in a row,
/// `PMIX_QUERY_PROC_TABLE` shows every process terminated, or running with
/// no pid (PRRTE master loses a launch now and then), or — for a
/// process on this host — its pid gone (PRRTE 3.0.14 sometimes misses a
/// child's exit and shows it running for ever; a process on another host
/// is then only ended by `--timeout` or a signal; when every such process
/// is gone, the job is also stopped in the DVM so it frees their slots).
/// Its exit status is then the best known:
/// `1` when any process was ever seen in an abnormal state (aborted, killed,
/// failed to start, non-zero exit), else `0`; the [`JobEnd`] says it was
/// not announced and carries a message saying so.
///
/// A DVM that answers none of the checks for longer than the session's
/// request deadline has stopped working (PRRTE master can wedge so, see
/// docs/conformance.md D5): [`EndCheck::poll`] then fails with a time-out
/// saying so, rather than leave the follower waiting for ever.
pub struct EndCheck {
    nspace: String,
    next: Instant,
    gap: Duration,
    failed_seen: bool,
    finished_before: bool,
    /// The last check found the job gone from the DVM's list.
    gone_before: bool,
    release: bool,
    /// Since when every check went unanswered (none answered since).
    silent_since: Option<Instant>,
    unanswered: u32,
}

impl EndCheck {
    /// A check for job `nspace`, first due [`END_CHECK_FIRST`] from now.
    pub fn new(nspace: &str) -> EndCheck {
        EndCheck {
            nspace: nspace.to_string(),
            next: Instant::now() + END_CHECK_FIRST,
            gap: END_CHECK_FIRST,
            failed_seen: false,
            finished_before: false,
            gone_before: false,
            release: false,
            silent_since: None,
            unanswered: 0,
        }
    }

    /// When the next question is due.
    pub fn due(&self) -> Instant {
        self.next
    }

    /// Output of the job arrived: it is alive, so the next question waits
    /// one more gap.
    pub fn heard(&mut self, chunk: &IofChunk) {
        if chunk.source.nspace == self.nspace {
            self.next = Instant::now() + self.gap;
        }
    }

    /// If the question is due, ask it; `Some` when the job is known to have
    /// ended. What is already queued on the connection is taken first (an
    /// end event racing the answer wins, and is returned as announced). A
    /// time-out error when the DVM has answered no check for longer than
    /// the session's request deadline.
    pub fn poll(
        &mut self,
        s: &Session,
        on_output: &mut dyn FnMut(JobOutput<'_>),
    ) -> Result<Option<JobEnd>> {
        if Instant::now() < self.next {
            return Ok(None);
        }
        let ended = self.ask(s);
        self.gap = (self.gap * 2).min(END_CHECK_MAX);
        let gap = if self.gone_before && !ended {
            END_CHECK_CONFIRM
        } else {
            self.gap
        };
        self.next = Instant::now() + gap;
        if let Some(since) = self.silent_since {
            if since.elapsed() >= s.timeout() {
                return Err(Error::new(
                    Status::ERR_TIMEOUT,
                    format!(
                        "the DVM stopped answering ({} checks on job {} unanswered over {} s); \
the job's end is unknown",
                        self.unanswered,
                        self.nspace,
                        since.elapsed().as_secs()
                    ),
                ));
            }
        }
        if !ended {
            return Ok(None);
        }
        if let Some(end) = take_queued(s, self, on_output) {
            return Ok(Some(end));
        }
        // A job whose end went unannounced may have ended before the DVM
        // began forwarding its output to us: what it cached is pulled.
        drain_job_output(s, &self.nspace, TRAILING_QUIET_V41, on_output);
        if self.release {
            // The DVM still holds the job's slots. Only when every missed
            // pid is gone, so no other process can be hit.
            drop_finished_job(s, &self.nspace);
        }
        let code = i32::from(self.failed_seen);
        Ok(Some(JobEnd {
            nspace: self.nspace.clone(),
            exit_status: code,
            message: Some(format!(
                "the DVM never announced the end of job {}; it is no longer running; its exit \
status is unknown: {}",
                self.nspace,
                if self.failed_seen {
                    "a process was seen ending abnormally, reported as 1"
                } else {
                    "no process was seen failing, reported as outcome unknown (exit 9)"
                }
            )),
            announced: false,
            exit_reported: false,
            term: None,
            tree: None,
        }))
    }

    /// Whether the job has ended: gone from the DVM's namespaces, or (seen
    /// at two checks in a row, so an end event racing the first one still
    /// wins) all its processes finished while the DVM still lists it.
    fn ask(&mut self, s: &Session) -> bool {
        match super::query::namespaces_within(s, END_CHECK_WAIT) {
            Ok(list) => {
                self.silent_since = None;
                self.unanswered = 0;
                if !list.contains(&self.nspace) {
                    // Gone at two questions in a row ([`END_CHECK_CONFIRM`]).
                    return std::mem::replace(&mut self.gone_before, true);
                }
                self.gone_before = false;
            }
            // No answer: cannot tell; ask again later.
            Err(e) if e.kind == crate::error::ErrorKind::TimedOut => {
                self.silent_since.get_or_insert_with(Instant::now);
                self.unanswered += 1;
                return false;
            }
            // Cannot tell; ask again later.
            Err(_) => return false,
        }
        let finished = match processes_of(s, &self.nspace) {
            Some(seen) => {
                self.failed_seen |= seen.failed;
                self.release = seen.release;
                seen.finished
            }
            None => false,
        };
        let ended = finished && self.finished_before;
        self.finished_before = finished;
        ended
    }
}

/// What the DVM's process table, and this host, say of a job's processes.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessesSeen {
    /// Every process has finished: the DVM says so, or, for one it still
    /// shows running on this host, its pid is gone or reused.
    pub finished: bool,
    /// A process was seen in an abnormal state.
    pub failed: bool,
    /// Only pids gone (none reused) are missed: the DVM may be asked to
    /// drop the job and free its slots without hitting another process.
    pub release: bool,
    /// Every process of the job is shown running with no pid: its launch
    /// was lost, and none started (PRRTE master, now and then, as jobs
    /// fail around it).
    pub unstarted: bool,
}

/// Ask the DVM for job `nspace`'s process table (at most [`END_CHECK_WAIT`])
/// and look at this host's processes it still shows running; `None` when it
/// did not answer, or listed none. PRRTE (3.0.14, and master under load)
/// now and then misses a child's exit and shows its job running for ever.
pub fn processes_of(s: &Session, nspace: &str) -> Option<ProcessesSeen> {
    let procs = super::query::proc_table_within(s, nspace, END_CHECK_WAIT).ok()?;
    if procs.is_empty() {
        return None;
    }
    // What this host knows of each process the DVM shows running; a
    // process shown running with no pid is `Unstarted` whatever the host.
    let missed: Vec<Local> = procs
        .iter()
        .filter(|p| p.state < PROC_STATE_TERMINATED)
        .map(|p| local_state(p, nspace))
        .collect();
    Some(ProcessesSeen {
        finished: missed.iter().all(|l| *l != Local::Alive),
        failed: procs.iter().any(|p| p.state >= PROC_STATE_ERROR),
        release: !missed.is_empty() && missed.iter().all(|l| *l == Local::Exited),
        // None terminated, and every one shown running with no pid.
        unstarted: missed.len() == procs.len() && missed.iter().all(|l| *l == Local::Unstarted),
    })
}

/// Have the DVM drop job `nspace`, whose processes are all gone, so it
/// frees their slots (PRRTE 3.0 refuses TERMINATE, keeps the job after a
/// signal, and drops it on KILL).
pub fn drop_finished_job(s: &Session, nspace: &str) {
    if super::control::terminate_job(s, nspace).is_err() {
        let all = crate::codec::Proc {
            nspace: nspace.to_string(),
            rank: crate::codec::RANK_WILDCARD,
        };
        let _ = super::control::job_control(s, &[all], &[Info::new(keys::JOB_CTRL_KILL, true)]);
    }
}

/// What this host knows of a process the DVM says still runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Local {
    /// Running, or not ours to tell (another host, not inspectable).
    Alive,
    /// Its pid is gone (or a zombie): it has exited.
    Exited,
    /// Its pid now belongs to another program (its environment lacks
    /// `PMIX_NAMESPACE=nspace`): it has exited.
    Reused,
    /// Shown running with no pid (on any host): a DVM reports a process's
    /// pid as it reports it running, so its launch was lost.
    Unstarted,
}

/// Whether process `p` of job `nspace`, which the DVM says still runs, has
/// in fact exited. PRRTE 3.0.14 now and then misses a local child's exit
/// and shows it running for ever (seen on this project's machines with
/// `/bin/true`, about 2 runs in 1000).
fn local_state(p: &ProcInfo, nspace: &str) -> Local {
    // Whatever its host: a DVM reports a process running with its pid.
    if p.pid == 0 && p.state == crate::proto::proc_state::RUNNING {
        return Local::Unstarted;
    }
    if p.pid == 0 || !on_this_host(p.hostname.as_deref()) {
        return Local::Alive;
    }
    let dir = std::path::PathBuf::from(format!("/proc/{}", p.pid));
    let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
        // No such pid, if this host has a /proc at all.
        return if std::path::Path::new("/proc/self").exists() {
            Local::Exited
        } else {
            Local::Alive
        };
    };
    // The state letter follows the parenthesised command name.
    if let Some(state) = stat
        .rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().next())
    {
        if state == "Z" || state == "X" {
            return Local::Exited;
        }
    }
    match std::fs::read(dir.join("environ")) {
        Ok(env) => {
            let want = format!("PMIX_NAMESPACE={nspace}");
            if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
                Local::Alive
            } else {
                Local::Reused
            }
        }
        Err(_) => Local::Alive,
    }
}

/// Whether `host` names this machine (full or short name).
fn on_this_host(host: Option<&str>) -> bool {
    let Some(host) = host else {
        return false;
    };
    let Ok(me) = std::fs::read_to_string("/proc/sys/kernel/hostname") else {
        return false;
    };
    let me = me.trim();
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_string();
    !me.is_empty() && (host == me || short(host) == short(me))
}

/// Take what is already queued on the connection (see [`follow_message`]);
/// the end of the checked job, if among it, is returned.
fn take_queued(
    s: &Session,
    check: &mut EndCheck,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Option<JobEnd> {
    let nspace = check.nspace.clone();
    while let Some(msg) = s.conn().next_unsolicited(Duration::ZERO) {
        match follow_message(s, &nspace, msg, check, on_output) {
            Some(Ok(end)) => return Some(end),
            Some(Err(_)) => return None,
            None => {}
        }
    }
    None
}

/// Take the output that is queued behind a job's end event, and the output
/// the DVM still forwards after it. A barrier query is sent now; since the
/// DVM handles it after the work already queued on its side, everything
/// that arrives before its answer is taken (waiting at most
/// [`TRAILING_MAX`] for a DVM that does not answer). That is all pdvm and
/// PRRTE master need. PRRTE 3.0 (a `v41` server) forwards some output
/// even after that, with no end-of-stream marker to wait for, so from a
/// `v41` server output is then taken until it has been quiet for
/// `quiet_v41` (at most [`TRAILING_MAX`] in all). Events met meanwhile are
/// passed on too.
pub fn drain_output(s: &Session, quiet_v41: Duration, on_output: &mut dyn FnMut(JobOutput<'_>)) {
    let stop = Instant::now() + TRAILING_MAX;
    let barrier = super::query::begin_barrier(s).ok();
    take_all_queued(s, on_output);
    if let Some(b) = barrier {
        match s.conn().await_reply(b, &[], Some(stop)) {
            Ok(Some(_)) => {}
            _ => s.conn().forget(b),
        }
        take_all_queued(s, on_output);
    }
    if s.wire() != crate::codec::WireVersion::V41 {
        return;
    }
    loop {
        let quiet_until = (Instant::now() + quiet_v41).min(stop);
        match s.conn().next_unsolicited_until(Some(quiet_until)) {
            Some(Unsolicited::Iof(bytes)) => {
                if let Ok(chunk) = decode_iof(&mut s.decoder(&bytes)) {
                    on_output(JobOutput::Output(&chunk));
                }
            }
            Some(Unsolicited::Notify(bytes)) => {
                if let Ok(ev) = decode_notification(&mut s.decoder(&bytes)) {
                    on_output(JobOutput::Event(&ev));
                }
            }
            Some(Unsolicited::Other(..)) => {}
            Some(Unsolicited::Closed(_)) | None => return,
        }
        if Instant::now() >= stop {
            return;
        }
    }
}

/// How long output from a `v41` server (PRRTE 3.0) must be quiet after a
/// job's end (and the barrier) before it is taken as complete.
pub const TRAILING_QUIET_V41: Duration = Duration::from_millis(20);
/// The same for the end of a job found by [`ended_before_reply`].
const ENDED_OUTPUT_QUIET_V41: Duration = Duration::from_millis(50);

/// Pass on every output chunk and event already queued on the connection.
fn take_all_queued(s: &Session, on_output: &mut dyn FnMut(JobOutput<'_>)) {
    while let Some(msg) = s.conn().next_unsolicited(Duration::ZERO) {
        match msg {
            Unsolicited::Iof(bytes) => {
                if let Ok(chunk) = decode_iof(&mut s.decoder(&bytes)) {
                    on_output(JobOutput::Output(&chunk));
                }
            }
            Unsolicited::Notify(bytes) => {
                if let Ok(ev) = decode_notification(&mut s.decoder(&bytes)) {
                    on_output(JobOutput::Event(&ev));
                }
            }
            Unsolicited::Other(..) => {}
            Unsolicited::Closed(_) => return,
        }
    }
}

/// Longest we wait for the DVM's answer to the barrier after a job's end.
pub const TRAILING_MAX: Duration = Duration::from_millis(500);

/// One app: `argv[0]` with arguments, `np` copies.
pub fn simple_app(argv: &[&str], np: i32) -> App {
    App {
        cmd: argv.first().map(|s| s.to_string()).unwrap_or_default(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: vec![],
        cwd: std::env::current_dir()
            .ok()
            .map(|p| p.display().to_string()),
        maxprocs: np,
        info: vec![],
    }
}
