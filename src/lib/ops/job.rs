//! Running a job to completion: register for its end, spawn it with output
//! forwarding, stream its output, and report its exit status.

use std::time::{Duration, Instant};

use crate::codec::{App, Info, Value};
use crate::conn::Unsolicited;
use crate::error::{Error, Result};
use crate::status::Status;

use super::events::{decode_notification, register, Event};
use super::iof::{decode_iof, IofChunk};
use super::keys;
use super::session::Session;
use super::spawn::{launcher_job_info, spawn};

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
}

/// Register for job-end events (call before spawning so no end is missed).
pub fn watch_job_ends(s: &Session) -> Result<()> {
    register(
        s,
        &[Status(keys::EVENT_JOB_END)],
        &[Info::new(keys::EVENT_HDLR_NAME, "pmix-tools-job-end")],
    )
}

/// Spawn `apps` (with extra job info) and follow the job until it ends,
/// handing output and other events to `on_output`. `timeout` bounds the whole
/// run; on time-out the job is terminated and `PMIX_ERR_TIMEOUT` returned.
pub fn run_job(
    s: &Session,
    extra_job_info: &[Info],
    apps: &[App],
    timeout: Option<Duration>,
    mut on_output: impl FnMut(JobOutput<'_>),
) -> Result<JobEnd> {
    watch_job_ends(s)?;
    let mut info = launcher_job_info();
    info.extend_from_slice(extra_job_info);
    let nspace = spawn(s, &info, apps)?;
    follow_job(s, &nspace, timeout, &mut on_output)
}

/// Follow an already-spawned job until its end event arrives.
pub fn follow_job(
    s: &Session,
    nspace: &str,
    timeout: Option<Duration>,
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Result<JobEnd> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let Some(msg) = s.conn().next_unsolicited_until(deadline) else {
            let _ = super::control::terminate_job(s, nspace);
            return Err(Error::new(
                Status::ERR_TIMEOUT,
                format!("job {nspace} did not finish in time; it was terminated"),
            ));
        };
        match msg {
            Unsolicited::Iof(bytes) => {
                if let Ok(chunk) = decode_iof(&mut s.decoder(&bytes)) {
                    on_output(JobOutput::Output(&chunk));
                }
            }
            Unsolicited::Notify(bytes) => {
                let Ok(ev) = decode_notification(&mut s.decoder(&bytes)) else {
                    continue;
                };
                if let Some(end) = job_end_of(&ev, nspace) {
                    drain_output(s, TRAILING_QUIET, on_output);
                    return Ok(end);
                }
                on_output(JobOutput::Event(&ev));
            }
            Unsolicited::Other(..) | Unsolicited::Wake => {}
            Unsolicited::Closed(e) => {
                return Err(Error::new(
                    e.status,
                    format!("lost the DVM while job {nspace} ran: {}", e.context),
                ))
            }
        }
    }
}

/// If `ev` is the end of job `nspace`, how it ended.
pub fn job_end_of(ev: &Event, nspace: &str) -> Option<JobEnd> {
    if ev.status != Status(keys::EVENT_JOB_END) || ev.affected_nspace() != Some(nspace) {
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
    })
}

/// Take the output that is queued behind a job's end event, then keep
/// taking it until the stream has been quiet for `quiet` (at most
/// [`TRAILING_MAX`]); events met meanwhile are passed on but do not count as
/// output. PRRTE and pdvm report a process terminated only once its output
/// streams have closed and been forwarded on the same ordered connection, so
/// [`TRAILING_QUIET`] (zero: only what is already queued) is enough for them.
pub fn drain_output(s: &Session, quiet: Duration, on_output: &mut dyn FnMut(JobOutput<'_>)) {
    let stop = Instant::now() + TRAILING_MAX;
    let mut quiet_until = Instant::now() + quiet;
    loop {
        let now = Instant::now();
        let wait = quiet_until.min(stop).saturating_duration_since(now);
        match s.conn().next_unsolicited(wait) {
            Some(Unsolicited::Iof(bytes)) => {
                if let Ok(chunk) = decode_iof(&mut s.decoder(&bytes)) {
                    on_output(JobOutput::Output(&chunk));
                }
                quiet_until = Instant::now() + quiet;
            }
            Some(Unsolicited::Notify(bytes)) => {
                if let Ok(ev) = decode_notification(&mut s.decoder(&bytes)) {
                    on_output(JobOutput::Event(&ev));
                }
            }
            Some(Unsolicited::Other(..)) | Some(Unsolicited::Wake) => {}
            Some(Unsolicited::Closed(_)) | None => return,
        }
        if Instant::now() >= stop {
            return;
        }
    }
}

/// How long the output stream must be quiet after a job's end (zero: take
/// only what is already queued).
pub const TRAILING_QUIET: Duration = Duration::ZERO;
/// Longest we keep taking trailing output after a job's end.
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
