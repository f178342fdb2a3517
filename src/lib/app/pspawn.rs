//! `pspawn`: launch a (possibly MPMD) job, forward its output, return its status.

use std::time::Duration;

use crate::cli::exit::{AttrsPresent, Exit, Operation};
use crate::cli::request::{AppSpec, SpawnRequest, StdinTarget};
use crate::cli::PspawnArgs;
use crate::ops::job::JobEnd;
use crate::ops::job::JobOutput;
use crate::ops::run::{spawn_or_ended, Launched};
use crate::ops::spawn::{spawn, spawn_target, target_support, TargetSupport};
use crate::ops::Session;
use crate::proto::status::Status;
use crate::render::{ExitRecord, JobRecord};

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
        (Some(spec), _) => super::pspawn_array::launch_array(s, req, spec, ui),
        (None, Some(n)) => super::pspawn_array::launch_stdin_tasks(s, req, n as usize, ui),
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
) -> Result<Option<super::pspawn_alloc::JobAllocation>, Failure> {
    let Some(n) = nodes else { return Ok(None) };
    if !req.targets.is_empty() {
        super::pspawn_alloc::restrict_to_nodes(s, req, u64::from(n))?;
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
    let own = super::pspawn_alloc::reserve(s, u64::from(n), ui)?;
    req.targets = vec![own.alloc_id.clone()];
    Ok(Some(own))
}

/// Launch and follow the job; a reservation made for it is given back
/// at its end, however it ends.
fn launch_in(
    s: &Session,
    req: &SpawnRequest,
    own: Option<super::pspawn_alloc::JobAllocation>,
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

/// A refused spawn; a mapping failure gets a hint about slots, a missing
/// program is named.
pub(crate) fn spawn_failure(
    s: &Session,
    req: &SpawnRequest,
    attrs: &AttrsPresent,
    e: &crate::error::Error,
) -> Failure {
    if let Some(f) = super::pspawn_hosts::unknown_host_failure(s, req, e) {
        return f;
    }
    let mut f = Failure::refused(Operation::Spawn, attrs, e);
    let inherited = std::env::var("PMIX_ALLOC_ID")
        .ok()
        .filter(|a| !a.is_empty() && req.targets == [a.clone()]);
    // NOT_FOUND names the allocation or the program: the DVM's list says which.
    let ended = inherited.filter(|a| !allocation_is_live(s, a));
    if let (Status::ERR_NOT_FOUND, Some(a)) = (e.status, ended) {
        f.message = format!(
            "allocation {a} (PMIX_ALLOC_ID, from the environment) has ended: it was released or reached its time limit (PMIX_ERR_NOT_FOUND); nothing was launched. Run in another allocation with --target ID, or in the DVM's default pool with --default-pool"
        );
        return f;
    }
    let program_missing =
        !attrs.spawn_target || req.targets.iter().all(|t| allocation_is_live(s, t));
    if e.status == Status::ERR_NOT_FOUND && program_missing {
        let names: Vec<&str> = req.apps.iter().map(|a| a.program.as_str()).collect();
        f.message = format!(
            "program not found: the DVM cannot find {} (PMIX_ERR_NOT_FOUND); nothing was \
launched. Check the name, or give its path",
            names.join(", ")
        );
        return f;
    }
    if e.status == Status::ERR_NO_PERMISSIONS {
        if let Some(hint) = req
            .targets
            .first()
            .and_then(|a| super::no_holder_hint(s, a))
        {
            f.message.push_str(&hint);
        }
    }
    if e.status == Status::ERR_JOB_FAILED_TO_LAUNCH {
        f.message.push_str(
            ". Hint: the DVM could not start the processes; the usual causes are a program that \
is not installed on its nodes (or not executable) and a --wdir that does not exist there",
        );
    }
    if matches!(
        e.status,
        Status::ERR_JOB_FAILED_TO_MAP | Status::ERR_JOB_INSUFFICIENT_RESOURCES
    ) {
        f.message.push_str(
            ". Hint: the DVM has too few free slots for this job; run fewer processes, or allow \
more than one per core with --map-by :OVERSUBSCRIBE",
        );
    }
    f
}

/// Whether the DVM still lists allocation `id` (an unanswered query counts
/// as gone).
fn allocation_is_live(s: &Session, id: &str) -> bool {
    crate::ops::status_query::reservations(s, None)
        .is_ok_and(|live| live.iter().any(|r| r.alloc_id == id))
}

/// Refuse `--target` before anything runs when the DVM cannot honour
/// `PMIX_SPAWN_TARGET` (it would silently launch into its default pool):
/// exit 7, `PMIX_ERR_NOT_SUPPORTED`; or when psched holds a target for an
/// owner this tool is not (exit 6, [`super::pspawn_owner`]).
pub(crate) fn check_target(s: &Session, targets: &[String], ui: &Ui) -> Result<(), Failure> {
    match target_support(s.server_version()) {
        TargetSupport::Yes => super::pspawn_owner::refuse_foreign(s, targets),
        TargetSupport::Unknown => {
            ui.detail(
                "the DVM's PMIx version is unknown (bare --uri): cannot tell whether it honours \
--target",
            );
            Ok(())
        }
        TargetSupport::No(why) => Err(Failure::with(
            Exit::NotSupported,
            Some(Status::ERR_NOT_SUPPORTED),
            format!(
                "spawn targeting refused: {why} (PMIX_ERR_NOT_SUPPORTED, spec 001 §8.2.1.10); \
nothing was launched. Run without --target to use the default pool, or use a DVM with PMIx 7 \
or later (PRRTE master, pdvm)"
            ),
        )),
    }
}

fn targets_of(req: &SpawnRequest) -> Vec<String> {
    let mut t = req.targets.clone();
    if req.default_pool && !t.is_empty() {
        t.push(String::new());
    }
    t
}

/// Whether the DVM runs its processes on this machine: it listens on a
/// loopback address (pdvm, a single-node PRRTE), so programs and working
/// directories can be checked here before anything is sent.
pub fn dvm_is_local(s: &Session) -> bool {
    s.conn()
        .target()
        .uri
        .socket_addr()
        .map(|a| a.ip().is_loopback())
        .unwrap_or(false)
}

/// Whether `program` names an executable here: a path, or a name found on
/// PATH or next to this tool (where pdvm also looks).
pub fn program_exists(program: &str) -> bool {
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

/// The checks made here before a spawn to a DVM on this machine: each
/// app's program exists (exit 5, `PMIX_ERR_NOT_FOUND`, as the DVM would
/// answer) and its --wdir is a directory (exit 2, a bad value).
pub fn check_apps_locally(apps: &[AppSpec]) -> Result<(), Failure> {
    for a in apps {
        // A PATH of the app's own (-x) may find what ours does not.
        let ours = std::env::var("PATH").ok();
        if a.env
            .iter()
            .any(|e| e.name == "PATH" && e.value.is_some() && e.value != ours)
        {
            continue;
        }
        let cwd = a.wdir.as_ref().and_then(|w| {
            std::env::current_dir()
                .ok()
                .map(|h| h.join(w).display().to_string())
        });
        if !program_exists(&super::launch::program_in_wdir(a, cwd.as_deref())) {
            return Err(Failure::with(
                Exit::NotFound,
                Some(Status::ERR_NOT_FOUND),
                format!(
                    "program not found: `{}` is not {} (PMIX_ERR_NOT_FOUND); nothing was launched. \
Check the name, or give its path",
                    a.program,
                    if a.program.contains('/') {
                        "an executable file"
                    } else {
                        "on PATH"
                    }
                ),
            ));
        }
    }
    for a in apps {
        if let Some(w) = &a.wdir {
            let p = std::env::current_dir()
                .map(|h| h.join(w))
                .unwrap_or_else(|_| w.into());
            if !p.is_dir() {
                return Err(Failure::with(
                    Exit::Usage,
                    None,
                    format!(
                        "--wdir {w}: no such directory on this machine, where the DVM runs the \
job; nothing was launched"
                    ),
                ));
            }
        }
    }
    Ok(())
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

/// Whether our stdin can be read without being stopped: not a terminal,
/// or a terminal whose foreground process group is ours (a job put in the
/// background of an interactive shell would get SIGTTIN).
fn stdin_readable() -> bool {
    use std::io::IsTerminal;
    let stdin = std::io::stdin();
    if stdin_is_dev_null() {
        // Nothing to forward: the job gets no stdin pipe at all.
        return false;
    }
    if !stdin.is_terminal() {
        return true;
    }
    nix::unistd::tcgetpgrp(&stdin).is_ok_and(|fg| fg == nix::unistd::getpgrp())
}

/// Whether our stdin is `/dev/null` (or closed): there is no input to
/// forward, and the job is better off with its own end of file.
fn stdin_is_dev_null() -> bool {
    use nix::sys::stat::SFlag;
    use std::os::unix::fs::MetadataExt;
    let ours = match nix::sys::stat::fstat(0) {
        Ok(st) => st,
        Err(_) => return true,
    };
    std::fs::metadata("/dev/null").is_ok_and(|null| {
        ours.st_rdev == null.rdev()
            && (ours.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFCHR.bits()
    })
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
/// for it. Prints the namespace.
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
    let ns = spawn(s, &info, apps).map_err(|e| spawn_failure(s, req, attrs, &e))?;
    crate::ops::tool_launches::mark(&ns);
    job.nspace = ns.clone();
    ui.record(job);
    ui.result(&ns);
    Ok(0)
}

/// `-o/-e`: create (empty) the files whose names are known before the
/// spawn (no `%j`), so that one that cannot be created is refused before
/// anything runs (exit 2).
pub(crate) fn create_output_files(req: &SpawnRequest) -> Result<(), Failure> {
    let Some(files) = &req.output_files else {
        return Ok(());
    };
    super::output_files::empty_known_files(files, &req.apps).map_err(|e| {
        Failure::with(
            Exit::Usage,
            None,
            format!("-o/-e: cannot create the output file: {e}; nothing was launched"),
        )
    })
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
    let marks = (!req.detach)
        .then(crate::ops::tool_launches::own_dir)
        .flatten()
        .map(crate::ops::tool_launches::OwnDir);
    if let Some(crate::ops::tool_launches::OwnDir(dir)) = &marks {
        for a in &mut apps {
            a.env.push(format!(
                "{}={}",
                crate::ops::tool_launches::ENV,
                crate::ops::tool_launches::env_value(dir)
            ));
        }
    }
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
    // In an allocation, its end too: the node source's cause (Slurm's
    // scancel, TIMEOUT, NODE_FAIL) is pspawn's when it stops the job.
    // And a `prelease JOB` of it (see `cancelled_by`).
    // And a node of it that the node source took (psched's notice).
    let more: &[Status] = if req.targets.is_empty() {
        &[JOB_CANCELLED]
    } else {
        &[JOB_CANCELLED, Status::EVENT_SESSION_END, JOB_NODES_LOST]
    };
    let registration = launch::register_job_end_and(s, more)
        .map_err(|e| Failure::from_error("cannot watch for job ends", &e))?;
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
/// `pspawn_wait`). Output that comes before the answer goes to
/// `on_output`.
fn spawn_when_slots_free(
    s: &Session,
    req: &SpawnRequest,
    job: (&[crate::codec::Info], &[crate::codec::App]),
    attrs: &AttrsPresent,
    ui: &Ui,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Result<Launched, Failure> {
    let mut wait = super::pspawn_wait::SlotWait::new();
    loop {
        match spawn_or_ended(s, job.0, job.1, on_output) {
            Err(e) if attrs.spawn_target && e.status == Status::ERR_JOB_FAILED_TO_MAP => {
                match wait.on_busy(s, req, ui) {
                    super::pspawn_wait::Busy::Retry(p) => {
                        if let Some(sig) = super::pspawn_wait::pause(s, p) {
                            return Err(Failure::interrupted(&format!(
                                "interrupted by {} while waiting for the allocation's slots; nothing was launched",
                                signals::name(sig)
                            )));
                        }
                    }
                    super::pspawn_wait::Busy::Refuse => break Err(e),
                    super::pspawn_wait::Busy::Never(why) => {
                        return Err(Failure::with(Exit::Refused, Some(e.status), why));
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
                    if let Some(what) = super::job_lost::notice(ev, ns) {
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
        if let Some(f) = super::job_lost::failure(&followed, lost.as_deref()) {
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

/// Where pspawn's stdin goes: the rank its pushes name (every rank is the
/// wildcard; none when stdin cannot be read) and the `PMIX_STDIN_TGT`
/// info that tells the DVM.
fn stdin_target(want: StdinTarget) -> (Option<u32>, crate::codec::Info) {
    let rank = match want {
        StdinTarget::Rank(r) if stdin_readable() => Some(r),
        StdinTarget::All if stdin_readable() => Some(crate::codec::RANK_WILDCARD),
        _ => None,
    };
    let word = match (want, rank) {
        (_, None) => "none".to_string(),
        (StdinTarget::All, Some(_)) => "all".to_string(),
        (_, Some(r)) => r.to_string(),
    };
    (
        rank,
        crate::codec::Info::new(crate::proto::keys::STDIN_TGT, word),
    )
}

/// The job info pspawn adds to the placement: CPUs per process
/// (`PMIX_CPUS_PER_PROC`) and the job's name (`pdvm.job.name`).
pub(crate) fn job_extras(req: &SpawnRequest) -> Vec<crate::codec::Info> {
    let mut info = Vec::new();
    if let Some(n) = req.cpus_per_proc {
        info.push(crate::codec::Info::new(
            crate::proto::keys::CPUS_PER_PROC,
            crate::codec::Value::Uint32(n),
        ));
    }
    if let Some(n) = &req.job_name {
        info.push(crate::codec::Info::new(
            crate::proto::keys::JOB_NAME,
            n.as_str(),
        ));
    }
    info
}

/// The failure when job `nspace`'s output could not all be written (exit 1).
fn output_lost(nspace: &str, why: &str) -> Failure {
    Failure::other(format!(
        "job {nspace}: {why}; the job was stopped and its output is incomplete"
    ))
}
