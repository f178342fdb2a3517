//! `pspawn --array SPEC`: the app run once per index over one connection,
//! at most `%N` tasks in flight. Each task is one PMIx spawn; one wait
//! covers the connection and the signal pipe, and routes every output
//! chunk and job end to its task by namespace. A task's output is whole
//! once a barrier query sent after its end is answered (what the DVM sent
//! before the answer is all of it); one barrier at a time closes every
//! task ended before it, and no task waits for another. SIGINT/SIGTERM (or
//! `--timeout`) stops every task in flight and launches no more.

mod ends;
mod orphans;
mod stdin_tasks;
mod tasks;
mod trailing;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cli::array_spec::ArraySpec;
use crate::cli::exit::{AttrsPresent, Exit};
use crate::cli::request::SpawnRequest;
use crate::codec::{App, Info};
use crate::conn::{Event as Wake, Unsolicited};
use crate::ops::events::decode_notification;
use crate::ops::iof::decode_iof;
use crate::ops::job::{job_end_of, END_CHECK_FIRST, END_CHECK_MAX};
use crate::ops::spawn::{spawn, spawn_target};
use crate::ops::Session;
use crate::proto::status::Status;
use crate::render::ExitRecord;

use self::orphans::Orphans;
use self::tasks::{Next, Results, Running, Source};
use crate::app::launch::{self, OutputSink, STOP_GRACE};
use crate::app::{signals, Failure, Ui};

/// Why the array stopped launching before its last task.
enum Stop {
    /// A signal: every task in flight was stopped.
    Signal(i32),
    /// `--timeout` passed: the same.
    Timeout,
    /// A spawn was refused: the tasks in flight finish.
    Refused(Failure),
}

/// A task's state: running, or ended and waiting for its output's barrier.
struct Task {
    run: Running,
    ended: Option<i32>,
    /// Its place in launch order: a barrier sent after it may judge it.
    seq: u64,
    /// The last barrier's answer did not list it (nor had its end come).
    unlisted: bool,
    /// At the last sweep the DVM still listed it, but its processes had
    /// all finished.
    finished: bool,
    /// The pull of its output the DVM cached, to withdraw once it is over
    /// (a task matched with its job after a `PMIX_ERROR` answer).
    pull: Option<u64>,
    /// What launched it, to launch it again (see [`Array::relaunch`]).
    next: Option<Next>,
    /// Its barrier was answered by a server that forwards output even
    /// after that (PRRTE 3.0, wire `v41`): it is over once its output has
    /// been quiet for a while ([`Trailing`]).
    trailing: Option<trailing::Trailing>,
    /// The scheduler's notice that a node it ran on was taken away
    /// (psched: `JOB_NODES_LOST`): it ends as failed, saying so.
    lost: Option<String>,
}

impl Task {
    /// A task just seen running (launched `seq`-th): its output pull, if
    /// one is under way, and how to launch it again.
    fn started(run: Running, seq: u64, pull: Option<u64>, next: Option<Next>) -> Task {
        Task {
            run,
            ended: None,
            seq,
            unlisted: false,
            finished: false,
            pull,
            next,
            trailing: None,
            lost: None,
        }
    }
}

/// How often a task PRRTE ended unrun is launched again.
const MAX_RELAUNCH: u32 = 3;

/// Unsolicited messages waiting beyond which no task is launched until the
/// wait has taken them (an eighth of the connection's queue).
const FILL_BACKLOG: usize = crate::conn::client::MAX_QUEUED / 8;

/// A barrier query in flight: its tag, the tasks it closes, and how many
/// tasks had been launched when it was sent.
struct Barrier {
    tag: u32,
    closes: Vec<String>,
    launched: u64,
    /// Sent because no task ended for a while: its answer also has the
    /// processes of the tasks it lists looked at.
    sweep: bool,
}

/// When to ask the DVM about tasks whose end has not come: after
/// [`END_CHECK_FIRST`] without any task ending, the gap doubling up to
/// [`END_CHECK_MAX`] (as one pspawn follows one job).
struct Sweep {
    next: Instant,
    gap: Duration,
}

impl Sweep {
    fn new() -> Sweep {
        Sweep {
            next: Instant::now() + END_CHECK_FIRST,
            gap: END_CHECK_FIRST,
        }
    }

    /// A task ended: the DVM is announcing ends; start over.
    fn reset(&mut self) {
        *self = Sweep::new();
    }

    /// Due now: the next one waits twice as long.
    fn take_due(&mut self) -> bool {
        if Instant::now() < self.next {
            return false;
        }
        self.gap = (self.gap * 2).min(END_CHECK_MAX);
        self.next = Instant::now() + self.gap;
        true
    }
}

/// The array while it runs.
struct Array<'a> {
    s: &'a Session,
    req: &'a SpawnRequest,
    source: Source<'a>,
    limit: usize,
    ui: &'a Ui,
    info: Vec<Info>,
    base: Vec<App>,
    nprocs: u32,
    attrs: AttrsPresent,
    alive: usize,
    /// The DVM's slots are busy: launch again only after a task ends.
    busy: bool,
    tasks: HashMap<String, Task>,
    /// The output barrier in flight.
    barrier: Option<Barrier>,
    /// Tasks launched so far.
    launched: u64,
    /// The check for ends the DVM did not announce.
    sweep: Sweep,
    /// Tasks ended since that barrier was sent: the next one closes them.
    waiting: Vec<String>,
    results: Results,
    stop: Option<(Stop, Instant)>,
    /// Tasks in flight when a signal or the time-out stopped them.
    stopped: usize,
    killed: bool,
    registration: Option<u32>,
    /// Tasks answered `PMIX_ERROR`, waiting for their job's end.
    orphans: Orphans,
    /// Tasks to launch again before the next new one.
    again: std::collections::VecDeque<Next>,
}

/// Run the array `spec` of the job `req` describes; pspawn's exit code.
pub(crate) fn launch_array(
    s: &Session,
    req: &SpawnRequest,
    spec: &ArraySpec,
    ui: &Ui,
) -> Result<i32, Failure> {
    run_tasks(s, req, Source::Indices(spec, 0), spec.in_flight(), ui)
}

/// `--stdin-tasks`: the tasks of stdin's lines, at most `limit` at once,
/// `req`'s app the template of each; pspawn's exit code.
pub(crate) fn launch_stdin_tasks(
    s: &Session,
    req: &SpawnRequest,
    limit: usize,
    ui: &Ui,
) -> Result<i32, Failure> {
    let source = Source::Stdin(self::stdin_tasks::StdinTasks::default());
    run_tasks(s, req, source, limit.max(1), ui)
}

/// Run the tasks of `source`, at most `limit` at once.
fn run_tasks(
    s: &Session,
    req: &SpawnRequest,
    source: Source<'_>,
    limit: usize,
    ui: &Ui,
) -> Result<i32, Failure> {
    if crate::app::pspawn::checks::dvm_is_local(s) {
        crate::app::pspawn::checks::check_apps_locally(&req.apps)?;
    }
    let target = spawn_target(&req.targets, req.default_pool);
    let attrs = AttrsPresent {
        spawn_target: target.is_some(),
        ..Default::default()
    };
    if target.is_some() {
        crate::app::pspawn::checks::check_target(s, &req.targets, ui)?;
    }
    crate::app::pspawn::checks::create_output_files(&without_index(req))?;
    // In an allocation, also psched's notice of a node taken away.
    let more: &[Status] = if target.is_some() {
        &[crate::proto::status::JOB_NODES_LOST]
    } else {
        &[]
    };
    let registration = launch::register_job_end_and(s, more)
        .map_err(|e| Failure::from_error("cannot watch for job ends", &e))?;
    let mut info = launch::job_info(target, req.map_by.as_deref());
    info.extend(crate::app::pspawn::checks::job_extras(req));
    info.push(Info::new(crate::proto::keys::STDIN_TGT, "none"));
    let mut a = Array {
        s,
        req,
        source,
        limit,
        ui,
        info,
        base: req.apps.iter().map(launch::to_app).collect(),
        nprocs: req.apps.iter().map(|a| a.np).sum(),
        attrs,
        alive: 0,
        busy: false,
        tasks: HashMap::new(),
        barrier: None,
        launched: 0,
        sweep: Sweep::new(),
        waiting: Vec::new(),
        results: Results::default(),
        stop: None,
        stopped: 0,
        killed: false,
        registration: Some(registration),
        orphans: Orphans::default(),
        again: Default::default(),
    };
    a.run()?;
    a.finish()
}

/// The request with no `-o/-e` files when they name `%a` (each task's are
/// created as it starts).
fn without_index(req: &SpawnRequest) -> SpawnRequest {
    let mut r = req.clone();
    if r.output_files.as_ref().is_some_and(|f| f.names_index()) {
        r.output_files = None;
    }
    r
}

impl Array<'_> {
    /// Launch and follow until every task ended (or the array was stopped
    /// and its tasks in flight are gone).
    fn run(&mut self) -> Result<(), Failure> {
        let deadline = self
            .req
            .timeout_secs
            .map(|t| Instant::now() + Duration::from_secs(t));
        let sig = signals::fd();
        loop {
            if self.stop.is_none() {
                self.check_stop(deadline);
            }
            if self.stop.is_none() {
                self.fill()?;
            }
            self.expire_orphans(false);
            self.finish_quiet();
            let launched_all = (self.source.done() && self.again.is_empty()) || self.stop.is_some();
            if launched_all && self.tasks.is_empty() && self.orphans.is_empty() {
                return Ok(());
            }
            let Some(wake) = self.grace(deadline) else {
                return Ok(());
            };
            if self.alive > 0 && self.barrier.is_none() && self.sweep.take_due() {
                self.send_barrier(true);
            }
            let wake = match wake {
                Some(w) if self.alive == 0 || w < self.sweep.next => Some(w),
                _ if self.alive > 0 => Some(self.sweep.next),
                w => w,
            };
            let wake = [wake, self.orphans.next_expiry(), self.next_quiet()]
                .into_iter()
                .flatten()
                .min();
            let input = match &self.source {
                Source::Stdin(t) if self.stop.is_none() => t.fd(),
                _ => None,
            };
            let extras: Vec<_> = sig.into_iter().chain(input).collect();
            match self.s.conn().wait(&extras, wake) {
                Wake::Ready(0) if sig.is_some() => signals::drain(),
                Wake::Ready(_) => {
                    if let Source::Stdin(t) = &mut self.source {
                        t.on_readable();
                    }
                }
                Wake::Reply(tag) => self.on_reply(tag)?,
                Wake::Message(m) => self.on_message(m)?,
                Wake::Deadline => self.expire_orphans(true),
            }
        }
    }

    /// A signal or the time-out: stop every task in flight.
    fn check_stop(&mut self, deadline: Option<Instant>) {
        let why = match (signals::caught(), deadline) {
            (Some(sig), _) => Stop::Signal(sig),
            (None, Some(d)) if Instant::now() >= d => Stop::Timeout,
            _ => return,
        };
        for (ns, t) in &self.tasks {
            if t.ended.is_none() {
                launch::stop_job(self.s, ns);
            }
        }
        self.stopped = self.alive;
        self.stop = Some((why, Instant::now()));
    }

    /// The next wake-up; after a stop, the kill past [`STOP_GRACE`], and
    /// `None` once three grace periods passed (the tasks are given up on).
    fn grace(&mut self, deadline: Option<Instant>) -> Option<Option<Instant>> {
        let Some((Stop::Signal(_) | Stop::Timeout, at)) = &self.stop else {
            return Some(deadline);
        };
        let at = *at;
        let now = Instant::now();
        if !self.killed && now >= at + STOP_GRACE {
            for (ns, t) in &self.tasks {
                if t.ended.is_none() {
                    launch::kill_job(self.s, ns);
                }
            }
            self.killed = true;
        }
        if now >= at + STOP_GRACE * 3 {
            return None;
        }
        Some(Some(if self.killed {
            at + STOP_GRACE * 3
        } else {
            at + STOP_GRACE
        }))
    }

    /// Launch tasks while fewer than the limit are in flight and the
    /// messages already received (their ends, their output) are few: an
    /// array without `%N` whose tasks end as fast as they start would
    /// otherwise launch on and on, their ends filling the connection's
    /// queue until no reply could be read; the wait takes them first.
    fn fill(&mut self) -> Result<(), Failure> {
        while !self.busy
            && self.stop.is_none()
            && self.alive < self.limit
            && self.s.conn().backlog() < FILL_BACKLOG
        {
            if let Some(next) = self.again.pop_front() {
                self.launch(next, false)?;
                continue;
            }
            let Some(next) = self.source.next(&self.base, &self.req.apps) else {
                break;
            };
            self.launch(next, true)?;
        }
        Ok(())
    }

    /// Spawn task `index`: `fresh` from the source (which then moves on),
    /// or launched again. Busy slots with tasks in flight wait for one to
    /// end; any other refusal stops the array.
    fn launch(&mut self, next: Next, fresh: bool) -> Result<(), Failure> {
        let Next {
            index,
            apps,
            id,
            tries,
        } = next;
        let apps = match apps {
            Ok(a) => a,
            Err(why) => {
                say!("pspawn: input line {index}: {why}");
                let rec = self.results.ended_as(index, id, "", 2);
                self.ui.record(rec);
                self.taken(fresh);
                return Ok(());
            }
        };
        match spawn(self.s, &self.info, &apps) {
            Ok(ns) => {
                let again = Next {
                    index,
                    apps: Ok(apps),
                    id,
                    tries,
                };
                return self.running(ns, again, fresh);
            }
            Err(e) if e.status == Status::ERR_JOB_FAILED_TO_MAP && self.alive > 0 => {
                self.busy = true;
                if !fresh {
                    self.again.push_front(Next {
                        index,
                        apps: Ok(apps),
                        id,
                        tries,
                    });
                }
            }
            Err(e) if e.status == Status::ERROR => {
                // PRRTE answers the generic PMIX_ERROR for a job that failed
                // before the reply: a failed task, not a refused array. Its
                // end and output are still to come (see `orphans`).
                let (me, _) = self.s.me();
                let after = crate::ops::job::numbered(&me).map_or(0, |(_, n)| n);
                self.orphans
                    .add(index, id, after.max(self.s.last_launched()));
                self.taken(fresh);
            }
            // Refused here, before sending (a request over the size a DVM
            // takes): that task's own failure, whatever the source.
            Err(e) if e.kind == crate::error::ErrorKind::Local => {
                let what = match self.source {
                    Source::Stdin(_) => "input line",
                    _ => "array task",
                };
                say!("pspawn: {what} {index} was not launched: {}", e.context);
                let rec = self.results.ended_as(index, id, "", Exit::Usage.code());
                self.ui.record(rec);
                self.taken(fresh);
            }
            Err(e) => self.refused(index, id, &apps, &e, fresh),
        }
        Ok(())
    }

    /// Task `again.index` runs as job `ns`: followed from now on (`again`
    /// launches it anew should its launch be lost).
    fn running(&mut self, ns: String, again: Next, fresh: bool) -> Result<(), Failure> {
        let index = again.index;
        let sink = self.sink(index).for_job(&ns, self.nprocs);
        if let Some(why) = sink.lost() {
            launch::stop_job(self.s, &ns);
            return Err(Failure::other(format!("array task {index}: {why}")));
        }
        let run = Running {
            index,
            id: again.id.clone(),
            sink,
        };
        self.launched += 1;
        let task = Task::started(run, self.launched, None, Some(again));
        self.orphans.launched(&ns);
        self.tasks.insert(ns, task);
        self.alive += 1;
        self.taken(fresh);
        Ok(())
    }

    /// The DVM refused task `index` (`e`): with `--stdin-tasks` that
    /// line's own failure (each line names its own program), else the
    /// array stops.
    fn refused(
        &mut self,
        index: u32,
        id: Option<serde_json::Value>,
        apps: &[App],
        e: &crate::error::Error,
        fresh: bool,
    ) {
        let f = crate::app::pspawn::checks::spawn_failure(self.s, self.req, &self.attrs, e);
        if let Source::Stdin(_) = self.source {
            let names: Vec<&str> = apps.iter().map(|a| a.cmd.as_str()).collect();
            say!(
                "pspawn: input line {index} was not launched: the DVM refused `{}` ({})",
                names.join(" : "),
                e.status.name()
            );
            let rec = self.results.ended_as(index, id, "", f.exit.code());
            self.ui.record(rec);
            self.taken(fresh);
            return;
        }
        let f = Failure {
            message: format!("array task {index} was not launched: {}", f.message),
            ..f
        };
        self.stop = Some((Stop::Refused(f), Instant::now()));
    }

    /// A task was taken (launched, or ended without running): a `fresh`
    /// one's source moves on; a relaunched one is not the source's.
    fn taken(&mut self, fresh: bool) {
        if fresh {
            self.source.advance();
        }
    }

    /// The output sink of task `index`.
    fn sink(&self, index: u32) -> OutputSink {
        let sink = OutputSink::new("", self.req.tag_output, self.ui.json).for_task(index);
        match &self.req.output_files {
            Some(f) => sink.with_files(crate::app::output_files::FileSink::new(
                &f.for_array(&self.s.me().0).for_task(index),
                &self.req.apps,
            )),
            None => sink,
        }
    }

    /// A reply: the end registration's, or a task's output barrier.
    fn on_reply(&mut self, tag: u32) -> Result<(), Failure> {
        if Some(tag) == self.registration {
            self.registration = None;
            let reply = self.s.conn().take_reply(tag);
            let st = reply
                .map(|r| r.and_then(|b| self.s.decoder(&b).unpack_one::<Status>()))
                .transpose()
                .map_err(|e| Failure::from_error("cannot watch for job ends", &e))?;
            if let Some(st) = st.filter(|st| !st.is_success()) {
                let e = crate::error::Error::new(st, "the DVM refused to report job ends");
                return Err(Failure::from_error("cannot watch for job ends", &e));
            }
            return Ok(());
        }
        let Some(b) = self.barrier.take_if(|b| b.tag == tag) else {
            return Ok(());
        };
        let reply = self.s.conn().take_reply(tag);
        // What arrived before the answer may still be queued behind it.
        while let Some(m) = self.s.conn().next_unsolicited(Duration::ZERO) {
            self.on_message(m)?;
        }
        for ns in b.closes {
            self.close_task(&ns);
        }
        if let Some(Ok(bytes)) = reply {
            if let Ok(listed) = crate::ops::query::barrier_namespaces(self.s, &bytes) {
                self.judge_unlisted(&listed, b.launched);
                if b.sweep {
                    self.judge_listed(&listed, b.launched);
                }
            }
        }
        self.send_barrier(false);
        Ok(())
    }

    /// An unsolicited message: a task's output or end.
    fn on_message(&mut self, m: Unsolicited) -> Result<(), Failure> {
        match m {
            Unsolicited::Iof(bytes) => {
                let Ok(c) = decode_iof(&mut self.s.decoder(&bytes)) else {
                    return Ok(());
                };
                let Some(t) = self.tasks.get_mut(&c.source.nspace) else {
                    self.orphans.keep_output(&c);
                    return Ok(());
                };
                if t.run.sink.chunk(&c) {
                    let e = t.run.sink.lost().unwrap_or_default();
                    return Err(Failure::other(format!("array task {}: {e}", t.run.index)));
                }
                if let Some(tr) = &mut t.trailing {
                    tr.heard();
                }
            }
            Unsolicited::Notify(bytes) => {
                if let Ok(ev) = decode_notification(&mut self.s.decoder(&bytes)) {
                    self.on_event(&ev);
                }
            }
            Unsolicited::Other(..) => {}
            Unsolicited::Closed(e) => return Err(self.lost(&e)),
        }
        Ok(())
    }

    /// A task's job ended: it no longer counts as in flight; its output
    /// is complete once the next barrier is answered.
    fn on_event(&mut self, ev: &crate::ops::events::Event) {
        if ev.status == crate::proto::status::JOB_NODES_LOST {
            return self.node_lost(ev);
        }
        let Some(ns) = ev.affected_nspace().map(String::from) else {
            return;
        };
        let Some(end) = job_end_of(ev, &ns) else {
            return;
        };
        let unrun = crate::ops::job::ended_unrun(ev);
        let Some(t) = self.tasks.get_mut(&ns) else {
            if !unrun {
                self.adopt(&ns, launch::job_exit(&end).code());
            }
            return;
        };
        if t.ended.is_some() {
            return;
        }
        self.sweep.reset();
        let why = "the DVM ended its job with PMIX_ERROR and no exit status before it ran \
(PRRTE ends so a job launched as another fails)";
        if unrun && self.relaunch(&ns, why) {
            return;
        }
        self.task_ended(&ns, launch::job_exit(&end).code());
    }

    /// psched's notice that a node was taken away under a task's job: the
    /// task ends as failed when its job ends (PRRTE master announces
    /// status 0 for the processes psched then kills).
    fn node_lost(&mut self, ev: &crate::ops::events::Event) {
        let Some(ns) = ev.get(crate::proto::keys::NSPACE).and_then(|v| v.as_str()) else {
            return;
        };
        let Some(t) = self.tasks.get_mut(ns) else {
            return;
        };
        if let Some(what) = super::job_lost::notice(ev, ns) {
            self.ui
                .detail(&format!("array task {}: {what}", t.run.index));
            t.lost = Some(what);
        }
    }

    /// Task `ns` ended with `code`: it no longer counts as in flight. A
    /// task that lost a node to the scheduler's node source failed
    /// ([`Self::node_lost`]), whatever its code.
    fn task_ended(&mut self, ns: &str, code: i32) {
        let Some(t) = self.tasks.get_mut(ns) else {
            return;
        };
        let code = match &t.lost {
            Some(what) => {
                if self.ui.level > -2 {
                    say!(
                        "pspawn: array task {}: job {ns} was stopped (status {code}): {what}",
                        t.run.index
                    );
                }
                crate::cli::exit::Exit::Other.code()
            }
            None => code,
        };
        t.ended = Some(code);
        self.alive -= 1;
        self.busy = false;
        self.pull_cached(ns);
        self.waiting.push(ns.to_string());
        self.send_barrier(false);
    }

    /// Unless one is in flight, send the barrier that closes the tasks
    /// ended so far: one query answers for every task ended before it
    /// (the DVM answers after what it sent before), so a busy array sends
    /// far fewer than one per task.
    /// A `sweep` is sent even with no task to close: its answer is how
    /// ends the DVM did not announce are found.
    fn send_barrier(&mut self, sweep: bool) {
        if self.barrier.is_some() || (self.waiting.is_empty() && !sweep) {
            return;
        }
        let ended = std::mem::take(&mut self.waiting);
        match crate::ops::query::begin_barrier(self.s) {
            Ok(tag) => {
                self.barrier = Some(Barrier {
                    tag,
                    closes: ended,
                    launched: self.launched,
                    sweep,
                })
            }
            Err(_) => {
                for ns in ended {
                    self.finish_task(&ns);
                }
            }
        }
    }

    /// Task `ns` is over: its output flushed, its result recorded.
    fn finish_task(&mut self, ns: &str) {
        let Some(mut t) = self.tasks.remove(ns) else {
            return;
        };
        t.run.sink.flush();
        if let Some(id) = t.pull {
            crate::ops::job::withdraw_pull(self.s, id);
        }
        let code = t.ended.unwrap_or(1);
        if code != 0 {
            self.ui.detail(&format!(
                "array task {} (job {ns}) ended with status {code}",
                t.run.index
            ));
        }
        let rec = self.results.ended_as(t.run.index, t.run.id, ns, code);
        self.ui.record(rec);
    }

    /// The connection closed while the array ran: every task in flight
    /// gets its record (its own status when its end had come, else 3, the
    /// connection's class), and those still running are stopped over a
    /// fresh connection when the DVM still answers, so that none is left
    /// running unseen; "lost the DVM" only when it does not answer.
    fn lost(&mut self, e: &crate::error::Error) -> Failure {
        let running: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.ended.is_none())
            .map(|(ns, _)| ns.clone())
            .collect();
        let target = self.s.conn().target().clone();
        let fresh = crate::conn::Connection::open(target, crate::conn::client::handshake_timeout())
            .map(Session::from_connection);
        let stopped = fresh.as_ref().map_or(0, |f| {
            running
                .iter()
                .filter(|ns| crate::ops::control::terminate_job(f, ns).is_ok())
                .count()
        });
        let all: Vec<String> = self.tasks.keys().cloned().collect();
        for ns in all {
            if let Some(t) = self.tasks.get_mut(&ns) {
                t.ended.get_or_insert(Exit::CannotConnect.code());
            }
            self.finish_task(&ns);
        }
        let unlaunched = self.source.unlaunched();
        let message = match fresh {
            Ok(_) => format!(
                "the connection to the DVM closed ({}) although the DVM still answers: {stopped} \
of the {} tasks still running were stopped (their records say 3), {unlaunched} never launched",
                e.context,
                running.len()
            ),
            Err(_) => format!(
                "lost the DVM ({}): the {} tasks still running could not be stopped and their \
end is unknown (their records say 3); {unlaunched} never launched",
                e.context,
                running.len()
            ),
        };
        Failure::with(Exit::CannotConnect, Some(e.status), message)
    }

    /// The exit code, with the summary of failed tasks on stderr.
    fn finish(self) -> Result<i32, Failure> {
        let total = self.source.total();
        let summary = self.results.summary(total);
        let stop = self.stop.map(|(s, _)| s);
        let unlaunched = self.source.unlaunched();
        let left = self.stopped;
        let outcome = match stop {
            Some(Stop::Signal(sig)) => Err(Failure::interrupted(&format!(
                "interrupted by {}: {left} tasks in flight were terminated, {unlaunched} never launched",
                signals::name(sig)
            ))),
            Some(Stop::Timeout) => Err(Failure::timed_out(&format!(
                "the array reached its time limit (--timeout): its tasks in flight were \
terminated ({left} of them), {unlaunched} never launched"
            ))),
            Some(Stop::Refused(f)) => Err(f),
            None => Ok(self.results.exit(total)),
        };
        if let Some(line) = summary {
            if self.ui.level > -2 {
                say!("pspawn: {line}");
            }
        }
        let exit = outcome?;
        self.ui.record(&ExitRecord {
            exit_code: exit.code(),
            alloc_id: None,
            on_owner_exit: None,
        });
        Ok(exit.code())
    }
}
