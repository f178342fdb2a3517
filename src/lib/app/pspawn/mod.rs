//! `pspawn`: launch a (possibly MPMD) job, forward its output, return its status.

mod alloc;
mod array;
mod checks;
mod hosts;
mod job_lost;
mod lost_slots;
mod owner;
mod wait;

use std::time::Duration;

use crate::cli::exit::{AttrsPresent, Exit};
use crate::cli::request::SpawnRequest;
use crate::cli::PspawnArgs;
use crate::ops::job::JobEnd;
use crate::ops::job::JobOutput;
use crate::ops::run::{spawn_or_ended, Launched};
use crate::ops::spawn::{spawn, spawn_target, target_support, TargetSupport};
use crate::ops::Session;
use crate::proto::status::Status;
use crate::render::{ExitRecord, JobRecord};

use self::checks::{
    check_apps_locally, check_target, create_output_files, dvm_is_local, job_extras, spawn_failure,
    stdin_target,
};
use super::alloc_end::AllocEnd;
use super::launch::{self, Followed, OutputSink};
use super::{connect_for, finish, signals, Failure, Ui};
use crate::proto::keys;
use crate::proto::status::{JOB_CANCELLED, JOB_NODES_LOST};

/// Run pspawn; returns the exit code.
pub fn run(args: &PspawnArgs) -> i32 {
    let ui = Ui::new("pspawn", &args.output);
    let req = match args.request() {
        Ok(r) => r,
        Err(msg) => {
            return ui.fail(&Failure::with(Exit::Usage, None, msg));
        }
    };
    // --stdin-tasks speaks JSON lines: its results are for a program.
    let ui = Ui {
        json: ui.json || args.stdin_tasks.is_some(),
        ..ui
    };
    let ui = if args.parsable {
        // Only the namespace on stdout; errors still on stderr.
        Ui {
            level: ui.level.min(0),
            ..ui
        }
    } else {
        ui
    };
    let s = match connect_for(&args.connect, &ui, args.target.first().map(String::as_str)) {
        Ok(s) => s,
        Err(f) => return ui.fail(&f),
    };
    // A request id (`palloc --no-wait`) names the allocation granted for it.
    let mut req = req;
    if let Some(first) = req.targets.first_mut() {
        if let Some(a) = super::granted_for(&s, first) {
            ui.detail(&format!("request {first} was granted as allocation {a}"));
            *first = a;
        }
    }
    let launch = |s: &Session, req: &SpawnRequest, ui: &Ui| match (&args.array, args.stdin_tasks) {
        (Some(spec), _) => self::array::launch_array(s, req, spec, ui),
        (None, Some(n)) => self::array::launch_stdin_tasks(s, req, n as usize, ui),
        (None, None) => launch_and_wait(s, req, ui),
    };
    let r = with_nodes(&s, args.nodes, &mut req, &ui)
        .and_then(|own| launch_in(&s, &req, own, &ui, &launch));
    finish(s);
    match r {
        Ok(code) => code,
        Err(f) => ui.fail(&f),
    }
}

/// `-N COUNT`: inside an allocation, the job's nodes; outside any, a
/// reservation made for this job alone (returned, and made its target).
fn with_nodes(
    s: &Session,
    nodes: Option<u32>,
    req: &mut SpawnRequest,
    ui: &Ui,
) -> Result<Option<self::alloc::JobAllocation>, Failure> {
    let Some(n) = nodes else { return Ok(None) };
    if !req.targets.is_empty() {
        self::alloc::restrict_to_nodes(s, req, u64::from(n))?;
        return Ok(None);
    }
    // The job must be able to run in the reservation before one is made.
    if let TargetSupport::No(why) = target_support(s.server_version()) {
        return Err(Failure::with(
            Exit::NotSupported,
            Some(Status::ERR_NOT_SUPPORTED),
            format!(
                "pspawn -N {n} outside an allocation runs the job in nodes reserved for it, \
which needs PMIX_SPAWN_TARGET: {why} (PMIX_ERR_NOT_SUPPORTED); nothing was reserved or \
launched. Run without -N, or use a DVM with PMIx 7 or later (PRRTE master, pdvm)"
            ),
        ));
    }
    let own = self::alloc::reserve(s, u64::from(n), ui)?;
    req.targets = vec![own.alloc_id.clone()];
    Ok(Some(own))
}

/// Launch and follow the job; a reservation made for it is given back
/// at its end, however it ends.
fn launch_in(
    s: &Session,
    req: &SpawnRequest,
    own: Option<self::alloc::JobAllocation>,
    ui: &Ui,
    launch: &dyn Fn(&Session, &SpawnRequest, &Ui) -> Result<i32, Failure>,
) -> Result<i32, Failure> {
    let Some(own) = own else {
        return launch(s, req, ui);
    };
    let r = launch(s, req, ui);
    own.give_back(s, ui);
    r
}

fn targets_of(req: &SpawnRequest) -> Vec<String> {
    let mut t = req.targets.clone();
    if req.default_pool && !t.is_empty() {
        t.push(String::new());
    }
    t
}

/// What a job's end status says when the DVM could not start it (PRRTE
/// reports these as the job's status): the failure to report instead of a
/// bare status.
fn launch_status_failure(ns: &str, status: i32) -> Option<Failure> {
    let (exit, what) = match Status(status) {
        Status::ERR_JOB_EXE_NOT_FOUND => (Exit::NotFound, "its program was not found"),
        Status::ERR_JOB_APP_NOT_EXECUTABLE => (Exit::NotFound, "its program is not executable"),
        Status::ERR_JOB_WDIR_NOT_FOUND => {
            (Exit::Usage, "its working directory (--wdir) does not exist")
        }
        _ => return None,
    };
    Some(Failure::with(
        exit,
        Some(Status(status)),
        format!(
            "job {ns} could not start: {what} ({})",
            Status(status).name()
        ),
    ))
}

/// The sentence and exit 8 for a job the DVM stopped (SIGTERM/SIGKILL)
/// because the allocation it ran in ended, or `None` when the allocations
/// it targeted are still there.
fn allocation_end_failure(s: &Session, ns: &str, targets: &[String]) -> Option<Failure> {
    let live = crate::ops::status_query::reservations(s, None).ok()?;
    let gone: Vec<&str> = targets
        .iter()
        .filter(|t| !live.iter().any(|r| &r.alloc_id == *t))
        .map(String::as_str)
        .collect();
    if gone.is_empty() {
        return None;
    }
    Some(super::alloc_end::stopped_job(
        None,
        ns,
        &gone.join(", "),
        143,
    ))
}

/// Spawn the job of `req` and, unless detached, follow it to its end.
/// A spawn the DVM answered `PMIX_ERROR` for, although the job had already
/// run and ended (see [`crate::ops::run::spawn_or_ended`]): report that job
/// and its status.
fn ended_before_reply(end: &JobEnd, job: &mut JobRecord, ui: &Ui) -> i32 {
    job.nspace = end.nspace.clone();
    ui.record(job);
    ui.warn(&format!(
        "the DVM answered the spawn with PMIX_ERROR, but job {} had already run and ended with status {} \
(PRRTE answers so for a job that fails at once); reporting that job",
        end.nspace, end.exit_status
    ));
    let code = launch::job_exit(end).code();
    ui.record(&ExitRecord {
        exit_code: code,
        alloc_id: None,
        on_owner_exit: None,
    });
    code
}

/// `--detach`: no output forwarding (nobody stays to read it), but the
/// DVM still announces the job's end, so `pwatch --job NSPACE` can wait
/// for it. Into a reservation whose slots are busy it waits for them as
/// an attached job does. Prints the namespace.
fn detach(
    s: &Session,
    req: &SpawnRequest,
    apps: &[crate::codec::App],
    target: Option<crate::codec::Value>,
    attrs: &AttrsPresent,
    job: &mut JobRecord,
    ui: &Ui,
) -> Result<i32, Failure> {
    let mut info = vec![
        crate::codec::Info::new(crate::proto::keys::NOTIFY_COMPLETION, true),
        crate::codec::Info::new(crate::proto::keys::STDIN_TGT, "none"),
    ];
    info.extend(launch::placement_info(target, req.map_by.as_deref()));
    info.extend(job_extras(req));
    create_output_files(req)?;
    // A detached job waits for busy slots too: it is detached once it runs.
    let ns = when_slots_free(s, req, attrs, ui, &mut || spawn(s, &info, apps))?;
    crate::ops::tool_launches::mark(&ns);
    job.nspace = ns.clone();
    ui.record(job);
    ui.result(&ns);
    Ok(0)
}

/// The failure of a job whose allocation ended while it ran (`end`: the
/// allocation and how it ended, from `PMIX_EVENT_SESSION_END`, announced
/// before the job's end) and whose end says it was stopped
/// ([`JobEnd::looks_stopped`]; a job that ended by itself keeps its
/// status): 8 at a time limit or a release, or the node source's cause
/// (10 scancel or preemption, 1 NODE_FAIL).
fn ended_by_source(followed: &Followed, end: Option<&(String, AllocEnd)>) -> Option<Failure> {
    let Followed::Ended(job) = followed else {
        return None;
    };
    let (id, end) = end?;
    if !job.looks_stopped() {
        return None;
    }
    Some(super::alloc_end::stopped_job(
        Some(end),
        &job.nspace,
        id,
        job.exit_status,
    ))
}

/// Who cancels job `ns`, when `ev` is a `prelease` announcing so
/// ([`JOB_CANCELLED`]).
fn cancel_notice(ev: &crate::ops::events::Event, ns: &str) -> Option<String> {
    let said = |k: &str| ev.get(k).and_then(|v| v.as_str());
    (ev.status == JOB_CANCELLED && said(keys::NSPACE) == Some(ns)).then(|| {
        said(keys::EVENT_TEXT_MESSAGE)
            .unwrap_or("cancelled")
            .to_string()
    })
}

/// The failure of a job `prelease` cancelled while it ran (`who`, from its
/// notice): exit 143, as the SIGTERM that stops it gives on pdvm, also on
/// PRRTE master, which announces status 0 for the processes it killed. A
/// job whose end says it ended by itself keeps its status
/// ([`JobEnd::looks_stopped`]).
fn cancelled_by(followed: &Followed, who: Option<&str>) -> Option<Failure> {
    let (Followed::Ended(job), Some(who)) = (followed, who) else {
        return None;
    };
    job.looks_stopped().then(|| {
        Failure::with(
            Exit::Signaled(15),
            None,
            format!(
                "job {} was {who}: its processes were terminated",
                job.nspace
            ),
        )
    })
}

/// pspawn's exit code once job `ns` was followed: the job's own status
/// (said why when the DVM stopped it at its allocation's end, or never
/// announced its end), or the failure of a time-out or interruption.
fn followed_code(
    s: &Session,
    req: &SpawnRequest,
    ns: &str,
    followed: Followed,
    ui: &Ui,
) -> Result<i32, Failure> {
    let end = match followed {
        Followed::Ended(end) => end,
        Followed::TimedOut => {
            return Err(Failure::timed_out(&format!(
                "job {ns} reached its time limit (--timeout {}) and was terminated",
                crate::render::human::duration(req.timeout_secs.unwrap_or(0))
            )))
        }
        Followed::Interrupted(sig) => {
            return Err(Failure::interrupted(&format!(
                "interrupted by {}; job {ns} was terminated",
                signals::name(sig)
            )))
        }
    };
    if let Some(f) = launch_status_failure(ns, end.exit_status) {
        return Err(f);
    }
    // Stopped by the DVM (SIGTERM/SIGKILL): at its allocation's end?
    if matches!(end.exit_status, 137 | 143) && !req.targets.is_empty() {
        if let Some(f) = allocation_end_failure(s, ns, &req.targets) {
            return Err(f);
        }
    }
    let exit = launch::job_exit(&end);
    if let (false, Some(m)) = (end.announced, &end.message) {
        ui.note(m);
    }
    if exit != Exit::Success {
        let line = format!(
            "job {ns} ended with status {}{}{}",
            end.exit_status,
            end.term
                .map(|t| format!(" ({})", t.name()))
                .unwrap_or_default(),
            end.message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        );
        // The DVM's own words on why (an abort) are shown; the bare status,
        // and the DVM's text on a plain non-zero exit, only with -v.
        if end.announced && end.message.is_some() && !end.is_plain_exit() {
            ui.note(&line);
        } else {
            ui.detail(&line);
        }
    }
    Ok(exit.code())
}

/// Launch the job `req` describes and follow it to its end, forwarding its
/// output; pspawn's exit code.
pub fn launch_and_wait(s: &Session, req: &SpawnRequest, ui: &Ui) -> Result<i32, Failure> {
    if dvm_is_local(s) {
        check_apps_locally(&req.apps)?;
    }
    let mut apps: Vec<_> = req.apps.iter().map(launch::to_app).collect();
    let nprocs: u32 = req.apps.iter().map(|a| a.np).sum();
    let target = spawn_target(&req.targets, req.default_pool);
    // The pspawns the job runs mark what they launch (`tool_launches`):
    // this one follows the jobs the application spawns, not theirs.
    // A guard: the folder goes when this pspawn is done.
    let _marks = mark_launches(req, &mut apps);
    let attrs = AttrsPresent {
        spawn_target: target.is_some(),
        ..Default::default()
    };
    if target.is_some() {
        check_target(s, &req.targets, ui)?;
    }
    let mut job = JobRecord {
        nspace: String::new(),
        state: "launched".into(),
        nprocs,
        targets: targets_of(req),
        exit_code: None,
    };
    if req.detach {
        return detach(s, req, &apps, target, &attrs, &mut job, ui);
    }
    create_output_files(req)?;
    let registration = watch_ends(s, req)?;
    let mut info = launch::job_info(target, req.map_by.as_deref());
    info.extend(job_extras(req));
    let (stdin_rank, stdin_info) = stdin_target(req.stdin);
    info.push(stdin_info);
    let mut early: Option<OutputSink> = None;
    let launched = spawn_when_slots_free(s, req, (&info, &apps), &attrs, ui, &mut |o| {
        if let JobOutput::Output(c) = o {
            early
                .get_or_insert_with(|| new_sink(req, &c.source.nspace, ui))
                .chunk(c);
        }
    })?;
    let ns = match launched {
        Launched::Running(ns) => {
            crate::ops::tool_launches::mark(&ns);
            ns
        }
        Launched::Ended(end) => {
            // Ended before its spawn was answered: still this tool's.
            crate::ops::tool_launches::mark(&end.nspace);
            if let Some(mut k) = early {
                k.flush();
            }
            return Ok(ended_before_reply(&end, &mut job, ui));
        }
    };
    job.nspace = ns.clone();
    ui.record(&job);
    for lost in s.take_relaunched() {
        ui.detail(&format!(
            "the DVM lost the launch of job {lost} (the spawn was never answered, no process \
             started): stopped it and spawned again"
        ));
    }
    ui.detail(&format!("launched job {ns} ({nprocs} processes)"));
    // Output that came before the spawn's answer stays in the same sink.
    let sink = early
        .unwrap_or_else(|| new_sink(req, &ns, ui))
        .for_job(&ns, nprocs);
    let running = Running {
        s,
        req,
        ns: &ns,
        nprocs,
        registration,
        stdin_rank,
    };
    let code = running.follow_to_end(sink, ui)?;
    job.state = "ended".into();
    job.exit_code = Some(code);
    ui.record(&job);
    ui.record(&ExitRecord {
        exit_code: code,
        alloc_id: None,
        on_owner_exit: None,
    });
    Ok(code)
}

/// The folder of tool marks this pspawn's job inherits (`tool_launches`):
/// the pspawns the job runs mark what they launch, so this one follows the
/// jobs the application spawns, not theirs. None for a detached job.
fn mark_launches(
    req: &SpawnRequest,
    apps: &mut [crate::codec::App],
) -> Option<crate::ops::tool_launches::OwnDir> {
    let marks = (!req.detach)
        .then(crate::ops::tool_launches::own_dir)
        .flatten()
        .map(crate::ops::tool_launches::OwnDir);
    if let Some(crate::ops::tool_launches::OwnDir(dir)) = &marks {
        for a in apps {
            a.env.push(format!(
                "{}={}",
                crate::ops::tool_launches::ENV,
                crate::ops::tool_launches::env_value(dir)
            ));
        }
    }
    marks
}

/// Register for the job's end and, in an allocation, its end too: the
/// node source's cause (Slurm's scancel, TIMEOUT, NODE_FAIL) is pspawn's
/// when it stops the job; a `prelease JOB` of it (see `cancelled_by`); a
/// node of it that the node source took (psched's notice). The
/// registration's tag.
fn watch_ends(s: &Session, req: &SpawnRequest) -> Result<u32, Failure> {
    let more: &[Status] = if req.targets.is_empty() {
        &[JOB_CANCELLED]
    } else {
        &[JOB_CANCELLED, Status::EVENT_SESSION_END, JOB_NODES_LOST]
    };
    launch::register_job_end_and(s, more)
        .map_err(|e| Failure::from_error("cannot watch for job ends", &e))
}

/// Where job `ns`'s output goes: stdout/stderr (tagged, or as JSON
/// records), or the files `-o`/`-e` name.
fn new_sink(req: &SpawnRequest, ns: &str, ui: &Ui) -> OutputSink {
    let sink = OutputSink::new(ns, req.tag_output, ui.json);
    match &req.output_files {
        Some(f) => sink.with_files(super::output_files::FileSink::new(f, &req.apps)),
        None => sink,
    }
}

/// Spawn `job` (its infos and apps); into a reservation, busy slots are
/// waited for, as srun waits for its allocation's CPUs (see
/// `wait`). Output that comes before the answer goes to
/// `on_output`.
fn spawn_when_slots_free(
    s: &Session,
    req: &SpawnRequest,
    job: (&[crate::codec::Info], &[crate::codec::App]),
    attrs: &AttrsPresent,
    ui: &Ui,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Result<Launched, Failure> {
    when_slots_free(s, req, attrs, ui, &mut || {
        spawn_or_ended(s, job.0, job.1, on_output)
    })
}

/// Run `spawn` until it is not refused for busy slots of the reservation
/// it targets, waiting between tries (see `wait`); a busy answer that can
/// never change, or with `--immediate`, is given as it is.
fn when_slots_free<T>(
    s: &Session,
    req: &SpawnRequest,
    attrs: &AttrsPresent,
    ui: &Ui,
    spawn: &mut dyn FnMut() -> crate::error::Result<T>,
) -> Result<T, Failure> {
    let mut wait = self::wait::SlotWait::new();
    let mut replaced = false;
    loop {
        match spawn() {
            Err(e) if attrs.spawn_target && e.status == Status::ERR_JOB_FAILED_TO_MAP => {
                match wait.on_busy(s, req, ui) {
                    self::wait::Busy::Retry(p) => {
                        if let Some(sig) = self::wait::pause(s, p) {
                            return Err(Failure::interrupted(&format!(
                                "interrupted by {} while waiting for the allocation's slots; nothing was launched",
                                signals::name(sig)
                            )));
                        }
                    }
                    self::wait::Busy::Refuse => break Err(e),
                    self::wait::Busy::Never(why) => {
                        return Err(Failure::with(Exit::Refused, Some(e.status), why));
                    }
                    self::wait::Busy::Lost(why, nodes) => {
                        let never = |not: &str| {
                            let why = format!(
                                "allocation {} can never hold the job: {why} ({not}); nothing \
was launched. Ask for a new allocation",
                                req.targets.join(",")
                            );
                            Err(Failure::with(Exit::Refused, Some(e.status), why))
                        };
                        let target = match req.targets.as_slice() {
                            [one] if !replaced => one.as_str(),
                            [_] => return never("its replacement is lost too"),
                            _ => return never("a job over several allocations is not mended"),
                        };
                        if let Err(not) = self::lost_slots::replace(s, target, nodes) {
                            return never(&not);
                        }
                        ui.aside(&format!(
                            "{why}: asked the scheduler for {nodes} more node(s) for {target} in \
their place; waiting for them"
                        ));
                        replaced = true;
                        wait = self::wait::SlotWait::new();
                    }
                }
            }
            r => break r,
        }
    }
    .map_err(|e| spawn_failure(s, req, attrs, &e))
}

/// A launched job pspawn follows to its end.
struct Running<'a> {
    s: &'a Session,
    req: &'a SpawnRequest,
    ns: &'a str,
    nprocs: u32,
    /// The job-end event registration.
    registration: u32,
    /// The rank pspawn's stdin goes to, if any.
    stdin_rank: Option<u32>,
}

impl Running<'_> {
    /// Forward the job's output into `sink` and its stdin until it ends;
    /// its exit code, or why pspawn fails (cancelled, its allocation
    /// ended, output lost).
    fn follow_to_end(self, mut sink: OutputSink, ui: &Ui) -> Result<i32, Failure> {
        let (s, req, ns) = (self.s, self.req, self.ns);
        if let Some(why) = sink.lost() {
            launch::stop_job(s, ns);
            return Err(output_lost(ns, &why));
        }
        let mut stdin = self.stdin_rank.map(|rank| match rank {
            crate::codec::RANK_WILDCARD => launch::StdinPump::to_all(ns, self.nprocs),
            r => launch::StdinPump::new(ns, r),
        });
        let timeout = req.timeout_secs.map(Duration::from_secs);
        let mut alloc_end: Option<(String, AllocEnd)> = None;
        let mut cancelled: Option<String> = None;
        let mut lost: Option<String> = None;
        let followed = launch::follow(
            s,
            ns,
            Some(self.registration),
            stdin.as_mut(),
            timeout,
            &mut |o| match o {
                // Our reader is gone: the job's output cannot be delivered, so
                // the job is stopped (as a shell pipeline's SIGPIPE would).
                JobOutput::Output(c) if sink.chunk(c) => launch::stop_job(s, ns),
                JobOutput::Event(ev) => {
                    if let Some(who) = cancel_notice(ev, ns) {
                        cancelled = Some(who);
                    }
                    if let Some(what) = self::job_lost::notice(ev, ns) {
                        ui.detail(&what);
                        lost = Some(what);
                    }
                    if let Some(end) = allocation_end(req, ev) {
                        alloc_end = Some(end);
                    }
                }
                JobOutput::Output(_) => {}
            },
        )
        .map_err(|e| Failure::from_error(&format!("while job {ns} ran"), &e))?;
        sink.flush();
        if let Some(why) = sink.lost() {
            return Err(output_lost(ns, &why));
        }
        if let Some(why) = stdin.as_ref().and_then(|p| p.stopped_because()) {
            ui.detail(&format!("stdin not forwarded to the job: {why}"));
        }
        if let Some(f) = cancelled_by(&followed, cancelled.as_deref()) {
            return Err(f);
        }
        if let Some(f) = ended_by_source(&followed, alloc_end.as_ref()) {
            return Err(f);
        }
        if let Some(f) = self::job_lost::failure(&followed, lost.as_deref()) {
            return Err(f);
        }
        followed_code(s, req, ns, followed, ui)
    }
}

/// The end of one of the job's target allocations that event `ev`
/// announces, with the allocation's id.
fn allocation_end(
    req: &SpawnRequest,
    ev: &crate::ops::events::Event,
) -> Option<(String, AllocEnd)> {
    let now = super::now_secs();
    req.targets
        .iter()
        .find_map(|t| Some((t.clone(), AllocEnd::of_event(ev, t, now)?)))
}

/// The failure when job `nspace`'s output could not all be written (exit 1).
fn output_lost(nspace: &str, why: &str) -> Failure {
    Failure::other(format!(
        "job {nspace}: {why}; the job was stopped and its output is incomplete"
    ))
}
