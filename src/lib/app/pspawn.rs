//! `pspawn`: launch a (possibly MPMD) job, forward its output, return its status.

use std::time::Duration;

use crate::cli::exit::{AttrsPresent, Exit, Operation};
use crate::cli::request::SpawnRequest;
use crate::cli::PspawnArgs;
use crate::ops::job::JobOutput;
use crate::ops::spawn::{spawn, spawn_target, target_support, TargetSupport};
use crate::ops::Session;
use crate::render::{ExitRecord, JobRecord};
use crate::status::Status;

use super::launch::{self, Followed, OutputSink};
use super::{connect_for, finish, signals, Failure, Ui};

/// Run pspawn; returns the exit code.
pub fn run(args: &PspawnArgs) -> i32 {
    let ui = Ui::new("pspawn", &args.output);
    let req = match args.request() {
        Ok(r) => r,
        Err(msg) => {
            return ui.fail(&Failure::with(Exit::Usage, None, msg));
        }
    };
    signals::install();
    let s = match connect_for(&args.connect, &ui, args.target.first().map(String::as_str)) {
        Ok(s) => s,
        Err(f) => return ui.fail(&f),
    };
    let r = launch_and_wait(&s, &req, &ui);
    finish(s);
    match r {
        Ok(code) => code,
        Err(f) => ui.fail(&f),
    }
}

/// A refused spawn; a mapping failure gets a hint about slots.
fn spawn_failure(attrs: &AttrsPresent, e: &crate::error::Error) -> Failure {
    let mut f = Failure::refused(Operation::Spawn, attrs, e);
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

/// Refuse `--target` before anything runs when the DVM cannot honour
/// `PMIX_SPAWN_TARGET` (it would silently launch into its default pool):
/// exit 7, `PMIX_ERR_NOT_SUPPORTED`.
fn refuse_unsupported_target(s: &Session, ui: &Ui) -> Result<(), Failure> {
    match target_support(s.server_version()) {
        TargetSupport::Yes => Ok(()),
        TargetSupport::Unknown => {
            ui.detail(
                "the DVM's PMIx version is unknown (bare --uri): cannot tell whether it honours \
--target",
            );
            Ok(())
        }
        TargetSupport::No(why) => Err(Failure::with(
            Exit::NotSupported,
            Some(Status::ERR_NOT_SUPPORTED.name()),
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

/// Spawn the job of `req` and, unless detached, follow it to its end.
pub fn launch_and_wait(s: &Session, req: &SpawnRequest, ui: &Ui) -> Result<i32, Failure> {
    let apps: Vec<_> = req.apps.iter().map(launch::to_app).collect();
    let nprocs: u32 = req.apps.iter().map(|a| a.np).sum();
    let target = spawn_target(&req.targets, req.default_pool);
    let attrs = AttrsPresent {
        spawn_target: target.is_some(),
        ..Default::default()
    };
    if target.is_some() {
        refuse_unsupported_target(s, ui)?;
    }
    let mut job = JobRecord {
        nspace: String::new(),
        state: "launched".into(),
        nprocs,
        targets: targets_of(req),
        exit_code: None,
    };
    if req.detach {
        // No output forwarding (nobody stays to read it), but the DVM still
        // announces the job's end, so `pwatch --job NSPACE` can wait for it.
        let mut info = vec![crate::codec::Info::new(
            crate::ops::keys::NOTIFY_COMPLETION,
            true,
        )];
        info.extend(launch::placement_info(target, req.map_by.as_deref()));
        let ns =
            spawn(s, &info, &apps).map_err(|e| Failure::refused(Operation::Spawn, &attrs, &e))?;
        job.nspace = ns.clone();
        ui.record(&job);
        ui.result(&ns);
        return Ok(0);
    }
    launch::register_job_end(s)
        .map_err(|e| Failure::from_error("cannot watch for job ends", &e))?;
    let info = launch::job_info(target, req.map_by.as_deref());
    let ns = spawn(s, &info, &apps).map_err(|e| spawn_failure(&attrs, &e))?;
    job.nspace = ns.clone();
    ui.record(&job);
    ui.detail(&format!("launched job {ns} ({nprocs} processes)"));
    let mut sink = OutputSink::new(&ns, req.tag_output, ui.json);
    let timeout = req.timeout_secs.map(Duration::from_secs);
    let followed = launch::follow(s, &ns, timeout, &mut |o| {
        if let JobOutput::Output(c) = o {
            sink.chunk(c)
        }
    })
    .map_err(|e| Failure::from_error(&format!("while job {ns} ran"), &e))?;
    sink.flush();
    let code = match followed {
        Followed::Ended(end) => {
            let exit = launch::job_exit(&end);
            if !end.announced {
                if let Some(m) = &end.message {
                    ui.warn(m);
                }
            }
            if exit != Exit::Success {
                ui.detail(&format!(
                    "job {ns} ended with status {}{}",
                    end.exit_status,
                    end.message.map(|m| format!(": {m}")).unwrap_or_default()
                ));
            }
            exit.code()
        }
        Followed::TimedOut => {
            return Err(Failure::timed_out(&format!(
                "job {ns} did not finish within {}s; it was terminated",
                req.timeout_secs.unwrap_or(0)
            )))
        }
        Followed::Interrupted(sig) => {
            return Err(Failure::interrupted(&format!(
                "interrupted by {}; job {ns} was terminated",
                signals::name(sig)
            )))
        }
    };
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
