//! Launching a job from the command line's apps and following it: the
//! apps and job info PRRTE understands, output forwarded line by line
//! (optionally tagged with the rank, or as JSON `output` objects), other
//! events handed to the caller, and SIGINT/SIGTERM or `--timeout`
//! terminating the job.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::cli::exit::Exit;
use crate::cli::request::AppSpec;
use crate::codec::{App, Info, Value};
use crate::conn::Event as Wake;
use crate::error::Error;
use crate::error::Result;
use crate::ops::events::Event;
use crate::ops::iof::IofChunk;
use crate::ops::job::{follow_message, EndCheck, JobEnd, JobOutput};
use crate::ops::spawn_tree::SpawnTree;
use crate::ops::{control, Session};
use crate::proto::keys;
use crate::proto::status::Status;
use crate::render::OutputRecord;

use super::signals;

/// The PMIx app for one command-line app: argv, `VAR=VAL` environment
/// (a bare `VAR` forwards our value, or nothing when we have none), the
/// working directory (absolute; ours by default), `PMIX_WDIR` and
/// `PMIX_HOST` per app.
pub(crate) fn to_app(spec: &AppSpec) -> App {
    let mut env = Vec::new();
    for e in &spec.env {
        match &e.value {
            Some(v) => env.push(format!("{}={v}", e.name)),
            None => {
                if let Ok(v) = std::env::var(&e.name) {
                    env.push(format!("{}={v}", e.name));
                }
            }
        }
    }
    let here = std::env::current_dir().ok();
    let cwd = match &spec.wdir {
        Some(w) if std::path::Path::new(w).is_absolute() => Some(w.clone()),
        Some(w) => Some(match &here {
            Some(h) => h.join(w).display().to_string(),
            None => w.clone(),
        }),
        None => here.map(|h| h.display().to_string()),
    };
    let mut info = Vec::new();
    if spec.wdir.is_some() {
        if let Some(c) = &cwd {
            info.push(Info::new(keys::WDIR, c.as_str()));
        }
    }
    if !spec.hosts.is_empty() {
        info.push(Info::new(keys::HOST, spec.hosts.join(",")));
    }
    if spec.env_only {
        info.push(Info::new(keys::ENV_NONE, true));
    }
    let mut argv = vec![spec.program.clone()];
    argv.extend(spec.args.iter().cloned());
    App {
        cmd: program_in_wdir(spec, cwd.as_deref()),
        argv,
        env,
        cwd,
        maxprocs: i32::try_from(spec.np).unwrap_or(i32::MAX),
        info,
    }
}

/// The program to run: a relative path such as `./run.sh` is found in the
/// app's --wdir (as srun --chdir and prun --wdir do), so it is made absolute
/// there; a bare name or an absolute path is left as is.
pub(crate) fn program_in_wdir(spec: &AppSpec, cwd: Option<&str>) -> String {
    program_in(&spec.program, spec.wdir.is_some(), cwd)
}

/// [`program_in_wdir`] for `program`, with `wdir_given` when the app names
/// its directory (`cwd`, resolved).
pub(crate) fn program_in(program: &str, wdir_given: bool, cwd: Option<&str>) -> String {
    let p = std::path::Path::new(program);
    match cwd {
        Some(c) if wdir_given && program.contains('/') && p.is_relative() => {
            std::path::Path::new(c).join(p).display().to_string()
        }
        _ => program.to_string(),
    }
}

/// The exit class of a job's status: 0..=255 as is; a PMIx error status
/// (negative) counts as a failure (1) unless it names a signal.
pub(crate) fn job_exit(end: &JobEnd) -> Exit {
    match end.exit_status {
        // Success is never assumed: an end the DVM did not announce, with
        // no process seen failing, is unknown.
        0 if !end.announced => Exit::OutcomeUnknown,
        0 => Exit::Success,
        c @ 1..=255 => Exit::Command(c),
        _ => Exit::Command(1),
    }
}

/// Writes forwarded output: raw bytes to our stdout/stderr, or, when lines
/// must be tagged or rendered as JSON, line by line with per-stream buffers.
pub(crate) struct OutputSink {
    nspace: String,
    tag: bool,
    json: bool,
    /// Unterminated lines by source (namespace, rank) and stream: PRRTE
    /// master also forwards the output of jobs the job spawned.
    partial: HashMap<LineKey, Vec<u8>>,
    /// Why output could not be written, with the bytes lost since.
    lost: Option<(String, u64)>,
    /// `pspawn -o/-e`: the files output goes to instead.
    files: Option<super::output_files::FileSink>,
    /// `pspawn --array`: the task's index, which tags its lines.
    task: Option<u32>,
    /// The job's process count (known once it runs).
    nprocs: u32,
}

/// Whose line: namespace, rank, and whether it is stderr.
type LineKey = (String, u32, bool);

/// Most bytes kept for an unterminated line before it is written anyway.
const MAX_PARTIAL: usize = 1 << 20;

impl OutputSink {
    /// A sink for job `nspace`.
    pub(crate) fn new(nspace: &str, tag: bool, json: bool) -> OutputSink {
        OutputSink {
            nspace: nspace.to_string(),
            tag,
            json,
            partial: HashMap::new(),
            lost: None,
            files: None,
            task: None,
            nprocs: 0,
        }
    }

    /// The same sink for array task `index`: a tagged line shows `[index]`
    /// (`[index.rank]` when the task has several processes).
    pub(crate) fn for_task(mut self, index: u32) -> OutputSink {
        self.task = Some(index);
        self
    }

    /// The same sink writing into the files of `pspawn -o/-e` instead.
    pub(crate) fn with_files(mut self, files: super::output_files::FileSink) -> OutputSink {
        self.files = Some(files);
        self
    }

    /// The same sink (its buffered lines kept) for job `nspace`, its files
    /// for each of the job's `nprocs` ranks created now.
    pub(crate) fn for_job(mut self, nspace: &str, nprocs: u32) -> OutputSink {
        self.nspace = nspace.to_string();
        self.nprocs = nprocs;
        if let Some(Err(e)) = self.files.as_mut().map(|f| f.open_all(nspace, nprocs)) {
            self.lost = Some((format!("opening an output file (-o/-e) failed: {e}"), 0));
        }
        self
    }

    /// Take one chunk. Returns true when this chunk is the first that could
    /// not be written (our stdout or stderr is closed: its reader is gone).
    pub(crate) fn chunk(&mut self, c: &IofChunk) -> bool {
        if let Some((_, n)) = &mut self.lost {
            *n += c.data.len() as u64;
            return false;
        }
        let err = c.is_stderr();
        let written = if let Some(f) = &mut self.files {
            f.chunk(&self.nspace, c)
        } else if !self.tag && !self.json {
            if err {
                let mut e = std::io::stderr().lock();
                e.write_all(&c.data).and_then(|_| e.flush())
            } else {
                let mut o = std::io::stdout().lock();
                o.write_all(&c.data).and_then(|_| o.flush())
            }
        } else {
            self.lines(c)
        };
        match written {
            Ok(()) => false,
            Err(e) => {
                let stream = match (&self.files, err) {
                    (Some(_), _) => "an output file (-o/-e)",
                    (None, true) => "stderr",
                    (None, false) => "stdout",
                };
                self.lost = Some((format!("writing to {stream} failed: {e}"), 0));
                true
            }
        }
    }

    /// Why the job's output could not all be delivered, if it could not:
    /// the sentence a person reads.
    pub(crate) fn lost(&self) -> Option<String> {
        self.lost.as_ref().map(|(why, n)| {
            format!(
                "the job's output could not be delivered ({why}); {n} more bytes were discarded"
            )
        })
    }

    fn lines(&mut self, c: &IofChunk) -> std::io::Result<()> {
        // A chunk names its writer; one without a namespace is our job's.
        let ns = if c.source.nspace.is_empty() {
            self.nspace.clone()
        } else {
            c.source.nspace.clone()
        };
        let key = (ns, c.source.rank, c.is_stderr());
        let mut buf = self.partial.remove(&key).unwrap_or_default();
        buf.extend_from_slice(&c.data);
        let mut start = 0;
        while let Some(pos) = buf[start..].iter().position(|b| *b == b'\n') {
            self.line(&key, &buf[start..start + pos])?;
            start += pos + 1;
        }
        let rest = buf.split_off(start);
        if rest.len() > MAX_PARTIAL {
            self.line(&key, &rest)?;
        } else if !rest.is_empty() {
            self.partial.insert(key, rest);
        }
        Ok(())
    }

    /// One line of `(namespace, rank, stderr?)`: tagged `[RANK]` for our
    /// job's processes, `[NSPACE.RANK]` for a job it spawned.
    fn line(&self, (ns, rank, err): &LineKey, bytes: &[u8]) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(bytes);
        let tag = match (self.task, *ns == self.nspace) {
            (Some(i), true) if self.nprocs <= 1 => format!("[{i}]"),
            (Some(i), true) => format!("[{i}.{rank}]"),
            (None, true) => format!("[{rank}]"),
            (_, false) => format!("[{ns}.{rank}]"),
        };
        if self.json {
            let rec = OutputRecord {
                nspace: ns.clone(),
                rank: *rank,
                stream: if *err { "stderr" } else { "stdout" }.into(),
                line: text.into_owned(),
                index: self.task.filter(|_| *ns == self.nspace),
            };
            let mut o = std::io::stdout().lock();
            crate::render::json::write_line(&mut o, &rec)?;
            o.flush()
        } else if *err {
            let mut e = std::io::stderr().lock();
            writeln!(e, "{tag} {text}")
        } else {
            let mut o = std::io::stdout().lock();
            writeln!(o, "{tag} {text}")?;
            o.flush()
        }
    }

    /// Write any unterminated lines still buffered.
    pub(crate) fn flush(&mut self) {
        if let (Some(f), None) = (&mut self.files, &self.lost) {
            if let Err(e) = f.flush() {
                self.lost = Some((format!("writing an output file (-o/-e) failed: {e}"), 0));
            }
        }
        let mut keys: Vec<LineKey> = self.partial.keys().cloned().collect();
        keys.sort_unstable();
        for k in keys {
            if let Some(rest) = self.partial.remove(&k) {
                if self.lost.is_none() {
                    if let Err(e) = self.line(&k, &rest) {
                        self.lost = Some((format!("writing output failed: {e}"), 0));
                    }
                }
            }
        }
    }
}

/// How following a job ended, besides its own end.
pub(crate) enum Followed {
    /// The job ended.
    Ended(JobEnd),
    /// `timeout` passed; the job was terminated.
    TimedOut,
    /// A signal arrived; the job was terminated (or its end awaited).
    Interrupted(i32),
}

/// Ask the DVM to stop job `nspace`: `PMIX_JOB_CTRL_TERMINATE`, and where
/// the DVM does not support that (PRRTE 3.0 answers
/// `PMIX_ERR_NOT_SUPPORTED`), SIGTERM to every process.
pub(crate) fn stop_job(s: &Session, nspace: &str) {
    if control::terminate_job(s, nspace).is_err() {
        let _ = control::signal_job(s, nspace, nix::sys::signal::Signal::SIGTERM as i32);
    }
}

/// Last resort after [`stop_job`]: `PMIX_JOB_CTRL_KILL`.
pub(crate) fn kill_job(s: &Session, nspace: &str) {
    let all = crate::codec::Proc {
        nspace: nspace.to_string(),
        rank: crate::codec::RANK_WILDCARD,
    };
    let _ = control::job_control(s, &[all], &[Info::new(keys::JOB_CTRL_KILL, true)]);
}

/// How long a stopped job may take to end before it is killed.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why following stopped before the job's own end.
#[derive(Clone, Copy)]
enum StopReason {
    Timeout,
    Signal(i32),
}

/// Forwards our stdin to one rank of a job from [`follow`]'s wait: stdin
/// is one more descriptor of that wait; each read (at most 16 KiB) becomes
/// one IOF push, and stdin is not read again until the DVM has answered it
/// (the DVM paces us); end of input becomes an empty push, which closes the
/// rank's stdin. A DVM that refuses a push leaves the job without further
/// input (said with -v).
pub(crate) struct StdinPump {
    targets: Vec<crate::codec::Proc>,
    pending: Option<u32>,
    sent_end: bool,
    done: bool,
    why_stopped: Option<String>,
}

/// Largest read forwarded in one push.
const STDIN_CHUNK: usize = 16 * 1024;

impl StdinPump {
    /// Forward to `rank` of job `nspace`.
    pub(crate) fn new(nspace: &str, rank: u32) -> StdinPump {
        StdinPump {
            targets: vec![crate::codec::Proc {
                nspace: nspace.to_string(),
                rank,
            }],
            pending: None,
            sent_end: false,
            done: false,
            why_stopped: None,
        }
    }

    /// Forward to every rank of job `nspace` (`--stdin all`): each push
    /// names ranks 0 to `nprocs - 1`, since PRRTE 3.0 feeds no rank of a
    /// push addressed to the wildcard.
    pub(crate) fn to_all(nspace: &str, nprocs: u32) -> StdinPump {
        let mut p = StdinPump::new(nspace, 0);
        p.targets = (0..nprocs)
            .map(|rank| crate::codec::Proc {
                nspace: nspace.to_string(),
                rank,
            })
            .collect();
        p
    }

    /// Our stdin, while it is to be read now (no push awaiting its answer).
    fn fd(&self) -> Option<std::os::fd::BorrowedFd<'static>> {
        if self.done || self.pending.is_some() || self.sent_end {
            return None;
        }
        Some(stdin_fd())
    }

    /// Stdin is readable: read once and push what came.
    fn on_readable(&mut self, s: &Session) {
        let mut buf = vec![0u8; STDIN_CHUNK];
        let Some(n) = read_stdin(&mut buf) else {
            return;
        };
        let payload = crate::ops::iof::push_payload(s.wire(), &self.targets, &buf[..n]);
        match payload.and_then(|p| s.conn().begin(&p)) {
            Ok(tag) => {
                self.pending = Some(tag);
                self.sent_end = n == 0;
            }
            Err(e) => self.stop(format!("{e}")),
        }
    }

    /// The answer to a push; false when `tag` is not ours.
    fn on_reply(&mut self, tag: u32, s: &Session) -> bool {
        if self.pending != Some(tag) {
            return false;
        }
        self.pending = None;
        let status = match s.conn().take_reply(tag) {
            Some(Ok(bytes)) => s.decoder(&bytes).unpack_one::<Status>(),
            Some(Err(e)) => Err(e),
            None => return true,
        };
        match status {
            Ok(st) if crate::ops::iof::push_accepted(st) => {
                if self.sent_end {
                    self.done = true;
                }
            }
            Ok(st) => self.stop(format!("the DVM refused the job's input ({})", st.name())),
            Err(e) => self.stop(format!("{e}")),
        }
        true
    }

    fn stop(&mut self, why: String) {
        self.done = true;
        self.why_stopped = Some(why);
    }

    /// Why forwarding stopped before the end of input, if it did.
    pub(crate) fn stopped_because(&self) -> Option<&str> {
        self.why_stopped.as_deref()
    }
}

/// Register for job-end events without waiting for the answer: returns
/// the registration's pending-reply tag, which [`follow`] checks when the
/// reply comes. The DVM handles one connection's requests in order, so a
/// spawn sent next cannot end unseen; not waiting saves a round trip whose
/// small reply a server without `TCP_NODELAY` may hold back for our delayed
/// ACK (tens of milliseconds with PRRTE 3.0). The events of `more` codes
/// come in the same registration (pspawn in an allocation: its end,
/// `PMIX_EVENT_SESSION_END`, psched's notice of a node taken away).
pub(crate) fn register_job_end_and(s: &Session, more: &[Status]) -> Result<u32> {
    let mut codes = vec![Status::EVENT_JOB_END];
    codes.extend_from_slice(more);
    let mut e = s.request(crate::proto::cmd::REGEVENTS)?;
    e.pack_one(&crate::codec::Size(codes.len() as u64))?;
    e.pack(&codes)?;
    crate::codec::attrs::write_infos(
        &mut e,
        &[Info::new(keys::EVENT_HDLR_NAME, "pmix-tools-job-end")],
    )?;
    s.conn().begin(e.bytes())
}

/// Follow job `nspace` until it ends, `timeout` passes or SIGINT/SIGTERM
/// arrives; in the last two cases the job is stopped ([`stop_job`], then
/// [`kill_job`] after [`STOP_GRACE`]) and its end awaited (at most three
/// grace periods). Output and other events go to `on_output`.
/// `registration`: the tag of a [`register_job_end_and`] whose reply is still
/// to be checked; `stdin`: our input, forwarded to the job meanwhile.
///
/// One wait covers the connection, the signal self-pipe and the next
/// deadline (the time-out, a grace period, or the [`EndCheck`]'s next
/// question). The job's end is its `PMIX_EVENT_JOB_END`; when that does not
/// come, the [`EndCheck`] asks the DVM about the job once it has been
/// silent past a deadline (backing off, bounded), so a lost event cannot
/// hang us: the job then ends with the best status known
/// ([`JobEnd::announced`] false).
pub(crate) fn follow(
    s: &Session,
    nspace: &str,
    registration: Option<u32>,
    mut stdin: Option<&mut StdinPump>,
    timeout: Option<Duration>,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Result<Followed> {
    let mut f = Follow {
        s,
        nspace,
        deadline: timeout.map(|t| Instant::now() + t),
        stopped: None,
        killed: false,
        check: EndCheck::new(nspace),
        tree: SpawnTree::new(s, nspace),
    };
    // The ends of other jobs are held back from `on_output` (which has no
    // use for them) and handed to the tree: a drain of queued output may
    // meet them anywhere.
    let held: RefCell<Vec<Event>> = RefCell::new(Vec::new());
    let mut pass = |o: JobOutput<'_>| match o {
        JobOutput::Event(ev)
            if ev.status == Status::EVENT_JOB_END && ev.affected_nspace() != Some(nspace) =>
        {
            held.borrow_mut().push(ev.clone())
        }
        other => on_output(other),
    };
    let on_output: &mut dyn FnMut(JobOutput<'_>) = &mut pass;
    let sig = signals::fd();
    loop {
        f.take_held(&held);
        if f.tree.primary_done() && f.stopped.is_none() && f.tree.done(s, on_output) {
            return Ok(outcome(None, f.tree.outcome(s)));
        }
        let wake = match f.next_wake() {
            Ok(wake) => wake,
            Err(Some(done)) => return Ok(done),
            Err(None) => continue,
        };
        // Due only after a silent deadline; otherwise returns at once.
        if !f.tree.primary_done() {
            if let Some(end) = f.check.poll(s, on_output)? {
                if let Some(done) = f.job_ended(&held, end, on_output) {
                    return Ok(done);
                }
            }
        }
        f.tree.poll(s);
        let input = stdin.as_ref().and_then(|p| p.fd());
        let extras: Vec<_> = sig.into_iter().chain(input).collect();
        match s.conn().wait(&extras, Some(wake)) {
            Wake::Ready(i) => {
                if sig.is_some() && i == 0 {
                    signals::drain();
                } else if let Some(p) = stdin.as_deref_mut() {
                    p.on_readable(s);
                }
            }
            Wake::Reply(tag) if stdin.as_deref_mut().is_some_and(|p| p.on_reply(tag, s)) => {}
            Wake::Reply(tag) if Some(tag) == registration => registered(s, tag)?,
            Wake::Reply(_) | Wake::Deadline => {}
            Wake::Message(msg) => match follow_message(s, nspace, msg, &mut f.check, on_output) {
                Some(Ok(end)) => {
                    if let Some(done) = f.job_ended(&held, end, on_output) {
                        return Ok(done);
                    }
                }
                Some(Err(e)) => return Err(e),
                None => {}
            },
        }
    }
}

/// What following a job ended with: why it was stopped, else its end.
fn outcome(why: Option<StopReason>, end: Option<JobEnd>) -> Followed {
    match (why, end) {
        (Some(StopReason::Timeout), _) => Followed::TimedOut,
        (Some(StopReason::Signal(sig)), _) => Followed::Interrupted(sig),
        (None, Some(end)) => Followed::Ended(end),
        (None, None) => Followed::TimedOut,
    }
}

/// The reply to the job-end registration on `tag`: a refusal is an error.
fn registered(s: &Session, tag: u32) -> Result<()> {
    if let Some(reply) = s.conn().take_reply(tag) {
        let st: Status = s.decoder(&reply?).unpack_one()?;
        if !st.is_success() {
            return Err(Error::new(st, "the DVM refused to report the job's end"));
        }
    }
    Ok(())
}

/// A job being followed ([`follow`]): its deadline, its stop once asked
/// (a signal or the time-out), the check for a lost end, and the jobs it
/// spawned.
struct Follow<'a> {
    s: &'a Session,
    nspace: &'a str,
    deadline: Option<Instant>,
    /// When and why the job was told to stop.
    stopped: Option<(Instant, StopReason)>,
    /// Whether it was killed after [`STOP_GRACE`].
    killed: bool,
    check: EndCheck,
    tree: SpawnTree,
}

impl Follow<'_> {
    /// The ends of the tree's jobs met among other output.
    fn take_held(&mut self, held: &RefCell<Vec<Event>>) {
        for ev in held.take() {
            if self.tree.is_member_end(&ev) {
                self.tree.member_ended(&ev);
            }
        }
    }

    /// When to wake next; or, with the job stopped by a signal or the
    /// time-out, how following ends (`Err(Some(..))`), or that the stop
    /// was just sent (`Err(None)`: look again).
    fn next_wake(&mut self) -> std::result::Result<Instant, Option<Followed>> {
        let now = Instant::now();
        // Once the job ended, only the jobs it spawned are awaited.
        let mut wake = match (self.tree.primary_done(), self.tree.due()) {
            (false, Some(t)) => self.check.due().min(t),
            (false, None) => self.check.due(),
            (true, Some(t)) => t,
            // Signals wake the wait through their pipe: only without one
            // does it look at them on a tick.
            (true, None) if signals::fd().is_some() => now + END_WAIT_IDLE,
            (true, None) => now + END_WAIT_TICK,
        };
        let Some((at, why)) = self.stopped else {
            let why = match (signals::caught(), self.deadline) {
                (Some(sig), _) => Some(StopReason::Signal(sig)),
                (None, Some(d)) if now >= d => Some(StopReason::Timeout),
                _ => None,
            };
            let Some(why) = why else {
                return Ok(self.deadline.map_or(wake, |d| wake.min(d)));
            };
            if self.tree.primary_done() {
                for ns in self.tree.found() {
                    stop_job(self.s, &ns);
                }
                return Err(Some(outcome(Some(why), None)));
            }
            stop_job(self.s, self.nspace);
            self.stopped = Some((now, why));
            return Err(None);
        };
        if !self.killed && now >= at + STOP_GRACE {
            kill_job(self.s, self.nspace);
            self.killed = true;
        }
        if now >= at + STOP_GRACE * 3 {
            return Err(Some(outcome(Some(why), None)));
        }
        if !self.killed {
            wake = wake.min(at + STOP_GRACE);
        }
        Ok(wake.min(at + STOP_GRACE * 3))
    }

    /// The launched job ended (`end`): how following ends, or `None`
    /// while jobs it spawned still run.
    fn job_ended(
        &mut self,
        held: &RefCell<Vec<Event>>,
        end: JobEnd,
        on_output: &mut dyn FnMut(JobOutput<'_>),
    ) -> Option<Followed> {
        let stopping = self.stopped.is_some();
        let done = tree_end(self.s, &mut self.tree, held, stopping, end, on_output)?;
        Some(outcome(self.stopped.map(|(_, w)| w), Some(done)))
    }
}

/// How long the wait for the jobs a job spawned sleeps at most between two
/// looks at signals when no signal pipe wakes it (their ends come as
/// events).
const END_WAIT_TICK: Duration = Duration::from_secs(1);
/// The longest such wait when the signal pipe wakes it: nothing else is
/// due then (the jobs' ends and signals are events).
const END_WAIT_IDLE: Duration = Duration::from_secs(60);

/// The launched job of `tree` ended (`end`): how the whole tree ended when
/// nothing of it is left (or the job was being stopped), `None` while jobs
/// it spawned still run.
fn tree_end(
    s: &Session,
    tree: &mut SpawnTree,
    held: &RefCell<Vec<Event>>,
    stopping: bool,
    end: JobEnd,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Option<JobEnd> {
    if stopping {
        return Some(end);
    }
    tree.primary_ended(end);
    // Ends met while its output was drained count first.
    for ev in held.take() {
        if tree.is_member_end(&ev) {
            tree.member_ended(&ev);
        }
    }
    if !tree.done(s, on_output) {
        return None;
    }
    tree.outcome(s)
}

/// Job info for a spawn: the launcher's (forward output, notify
/// completion) and [`placement_info`].
pub(crate) fn job_info(target: Option<Value>, map_by: Option<&str>) -> Vec<Info> {
    let mut info = crate::ops::spawn::launcher_job_info();
    info.extend(placement_info(target, map_by));
    info
}

/// Where the job may run: `PMIX_SPAWN_TARGET` when given, `PMIX_MAPBY`,
/// and no core binding when the mapping oversubscribes (as mpirun does).
pub(crate) fn placement_info(target: Option<Value>, map_by: Option<&str>) -> Vec<Info> {
    let mut info = Vec::new();
    if let Some(t) = target {
        info.push(Info::new(keys::SPAWN_TARGET, t));
    }
    if let Some(m) = map_by {
        info.push(Info::new(keys::MAPBY, m));
        if m.to_ascii_uppercase().contains("OVERSUBSCRIBE") {
            info.push(Info::new(BINDTO, "none"));
        }
    }
    info
}

/// Our stdin (descriptor 0), to wait on.
pub(crate) fn stdin_fd() -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: descriptor 0 stays open for the life of the process.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(0) }
}

/// One read of stdin, retried on EINTR: the bytes read (0 at its end or on
/// an error), or `None` when nothing is there yet (EAGAIN).
pub(crate) fn read_stdin(buf: &mut [u8]) -> Option<usize> {
    loop {
        match nix::unistd::read(0, buf) {
            Ok(n) => return Some(n),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(nix::errno::Errno::EAGAIN) => return None,
            Err(_) => return Some(0),
        }
    }
}

/// `PMIX_BINDTO`: the binding policy of a job.
pub(crate) use crate::proto::keys::BINDTO;

/// Whether `ev` is a job-end or timeout-warning of interest while a job runs.
pub(crate) fn is_warning(ev: &Event) -> bool {
    ev.status == Status::ALLOC_TIMEOUT_WARNING
}

/// Whether `program` names an executable here: a path, or a name found on
/// PATH or next to this tool (where pdvm also looks).
pub(crate) fn program_exists(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &std::path::Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        return is_exec(std::path::Path::new(program));
    }
    let mut dirs: Vec<std::path::PathBuf> = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(std::path::Path::to_path_buf))
        .into_iter()
        .collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.iter().any(|d| is_exec(&d.join(program)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse::EnvSpec;

    #[test]
    fn app_from_spec() {
        std::env::set_var("PMT_LAUNCH_TEST_VAR", "v1");
        let spec = AppSpec {
            np: 3,
            program: "prog".into(),
            args: vec!["a".into(), "b".into()],
            env: vec![
                EnvSpec {
                    name: "X".into(),
                    value: Some("1".into()),
                },
                EnvSpec {
                    name: "PMT_LAUNCH_TEST_VAR".into(),
                    value: None,
                },
                EnvSpec {
                    name: "PMT_SURELY_UNSET_VAR".into(),
                    value: None,
                },
            ],
            wdir: Some("/tmp".into()),
            hosts: vec!["n1".into(), "n2".into()],
            env_only: false,
        };
        let app = to_app(&spec);
        assert_eq!(app.argv, ["prog", "a", "b"]);
        assert_eq!(app.maxprocs, 3);
        assert_eq!(app.env, ["X=1", "PMT_LAUNCH_TEST_VAR=v1"]);
        assert_eq!(app.cwd.as_deref(), Some("/tmp"));
        let host = app.info.iter().find(|i| i.key == keys::HOST).unwrap();
        assert_eq!(host.value.as_str(), Some("n1,n2"));
    }
}
