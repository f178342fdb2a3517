//! What every launch of pspawn (one job, an array, stdin's tasks) checks
//! and adds before the spawn: on a DVM of this machine, that the programs
//! and working directories exist (`check_apps_locally`, `program_exists`,
//! which palloc uses for its command too); that the targets are honoured
//! and not another owner's (`check_target`); the output files made
//! (`create_output_files`); the job's extra info (`job_extras`); and what a
//! refused spawn tells the user (`spawn_failure`).

use crate::cli::exit::{AttrsPresent, Exit, Operation};
use crate::cli::request::{AppSpec, SpawnRequest, StdinTarget};
use crate::ops::spawn::{target_support, TargetSupport};
use crate::ops::Session;
use crate::proto::status::Status;

use crate::app::{Failure, Ui};

/// A refused spawn; a mapping failure gets a hint about slots, a missing
/// program is named.
pub(crate) fn spawn_failure(
    s: &Session,
    req: &SpawnRequest,
    attrs: &AttrsPresent,
    e: &crate::error::Error,
) -> Failure {
    if let Some(f) = super::hosts::unknown_host_failure(s, req, e) {
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
            .and_then(|a| crate::app::no_holder_hint(s, a))
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
/// owner this tool is not (exit 6, [`super::owner`]).
pub(crate) fn check_target(s: &Session, targets: &[String], ui: &Ui) -> Result<(), Failure> {
    match target_support(s.server_version()) {
        TargetSupport::Yes => super::owner::refuse_foreign(s, targets),
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

/// Whether the DVM runs its processes on this machine: it listens on a
/// loopback address (pdvm, a single-node PRRTE), so programs and working
/// directories can be checked here before anything is sent.
pub(crate) fn dvm_is_local(s: &Session) -> bool {
    s.conn()
        .target()
        .uri
        .socket_addr()
        .map(|a| a.ip().is_loopback())
        .unwrap_or(false)
}

/// The checks made here before a spawn to a DVM on this machine: each
/// app's program exists (exit 5, `PMIX_ERR_NOT_FOUND`, as the DVM would
/// answer) and its --wdir is a directory (exit 2, a bad value).
pub(crate) fn check_apps_locally(apps: &[AppSpec]) -> Result<(), Failure> {
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
        if !crate::app::launch::program_exists(&crate::app::launch::program_in_wdir(
            a,
            cwd.as_deref(),
        )) {
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

/// `-o/-e`: create (empty) the files whose names are known before the
/// spawn (no `%j`), so that one that cannot be created is refused before
/// anything runs (exit 2).
pub(crate) fn create_output_files(req: &SpawnRequest) -> Result<(), Failure> {
    let Some(files) = &req.output_files else {
        return Ok(());
    };
    crate::app::output_files::empty_known_files(files, &req.apps).map_err(|e| {
        Failure::with(
            Exit::Usage,
            None,
            format!("-o/-e: cannot create the output file: {e}; nothing was launched"),
        )
    })
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

/// Where pspawn's stdin goes: the rank its pushes name (every rank is the
/// wildcard; none when stdin cannot be read) and the `PMIX_STDIN_TGT`
/// info that tells the DVM.
pub(crate) fn stdin_target(want: StdinTarget) -> (Option<u32>, crate::codec::Info) {
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
