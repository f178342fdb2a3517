//! Launching a job and following it to its end: the spawn (never
//! launching a job twice when the DVM answers a generic error for a job
//! that already ran) over [`super::job`]'s following.

use std::time::Duration;

use crate::codec::{App, Info};
use crate::error::Result;
use crate::proto::Status;

use super::job::{
    ended_before_reply, follow_job, watch_job_ends, JobEnd, JobOutput, ENDED_BEFORE_REPLY_WAIT,
};
use super::session::Session;
use super::spawn::{launcher_job_info, spawn};

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
    match spawn_or_ended(s, &info, apps, &mut on_output)? {
        Launched::Running(nspace) => follow_job(s, &nspace, timeout, &mut on_output),
        Launched::Ended(end) => Ok(end),
    }
}

/// What a spawn led to.
#[derive(Debug)]
pub enum Launched {
    /// The job runs: its namespace.
    Running(String),
    /// The DVM answered `PMIX_ERROR`, but the job had already run and ended
    /// (see [`super::job::ended_before_reply`]); its output went to `on_output`.
    Ended(JobEnd),
}

/// Spawn, never launching a job twice: a generic `PMIX_ERROR` may come for
/// a job that already ran and failed before the reply (PRRTE 3.0 and
/// master), so its end is looked for first ([`ENDED_BEFORE_REPLY_WAIT`])
/// and reported instead of a refusal; only when none shows up is the request
/// retried, and only on a DVM that also refuses spawns transiently
/// ([`super::spawn::transient_retries`]).
pub fn spawn_or_ended(
    s: &Session,
    job_info: &[Info],
    apps: &[App],
    on_output: &mut dyn FnMut(JobOutput<'_>),
) -> Result<Launched> {
    let (me, _) = s.me();
    let mut pause = super::spawn::TRANSIENT_BACKOFF;
    let mut tries = 0;
    loop {
        match spawn(s, job_info, apps) {
            Ok(ns) => return Ok(Launched::Running(ns)),
            Err(e) if e.status == Status::ERROR => {
                if let Some(end) = ended_before_reply(s, &me, ENDED_BEFORE_REPLY_WAIT, on_output) {
                    return Ok(Launched::Ended(end));
                }
                if tries >= super::spawn::transient_retries(s) {
                    return Err(e);
                }
                tries += 1;
                super::wait::until(
                    std::time::Instant::now() + pause,
                    super::wait::Why::SpawnRetry,
                );
                pause *= 2;
            }
            Err(e) => return Err(e),
        }
    }
}
