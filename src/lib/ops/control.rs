//! Job control (`PMIx_Job_control`): signal or terminate processes.

use crate::codec::{Info, Proc};
use crate::error::Result;

use super::session::{read_infos, read_status, Session};
use crate::codec::attrs::write_infos;
use crate::proto::status::Status;
use crate::proto::{cmd, keys};

/// Send job-control `directives` to `targets`.
pub fn job_control(s: &Session, targets: &[Proc], directives: &[Info]) -> Result<Vec<Info>> {
    s.check_infos(directives)?;
    let mut e = s.request(cmd::JOB_CONTROL)?;
    crate::codec::attrs::write_sized(&mut e, targets)?;
    write_infos(&mut e, directives)?;
    let reply = s.call(e)?;
    let mut d = s.decoder(&reply);
    read_status(&mut d)?;
    read_infos(&mut d)
}

/// Terminate every process of a job: `PMIX_JOB_CTRL_TERMINATE`, or where
/// the DVM supports that only for the whole DVM (PRRTE master answers
/// `PMIX_ERR_NOT_SUPPORTED` when it names targets), `PMIX_JOB_CTRL_KILL`
/// of the job's processes, which PRRTE carries out with its own
/// terminate-processes path.
pub fn terminate_job(s: &Session, nspace: &str) -> Result<()> {
    let all = Proc {
        nspace: nspace.to_string(),
        rank: crate::codec::RANK_WILDCARD,
    };
    let targets = std::slice::from_ref(&all);
    match job_control(s, targets, &[Info::new(keys::JOB_CTRL_TERMINATE, true)]) {
        Err(e) if e.status == Status::ERR_NOT_SUPPORTED => {
            job_control(s, targets, &[Info::new(keys::JOB_CTRL_KILL, true)]).map(|_| ())
        }
        other => other.map(|_| ()),
    }
}

/// Send a signal to every process of a job.
pub fn signal_job(s: &Session, nspace: &str, signal: i32) -> Result<()> {
    let all = Proc {
        nspace: nspace.to_string(),
        rank: crate::codec::RANK_WILDCARD,
    };
    job_control(
        s,
        &[all],
        &[Info::new(
            keys::JOB_CTRL_SIGNAL,
            crate::codec::Value::Int(signal),
        )],
    )
    .map(|_| ())
}
