//! Spawning jobs (`PMIx_Spawn`), with reservation targeting.

use std::time::Duration;

use crate::codec::{App, DataArray, Info, Value};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::lost_launch::{LostLaunch, LOOK_EVERY, RESENDS};
use super::session::Session;
use crate::codec::spawn_message::SpawnMessage;
use crate::proto::{cmd, keys};

/// Build the `PMIX_SPAWN_TARGET` value: a string for one allocation id, an
/// array of strings for several; `default_pool` adds the invalid-namespace
/// entry (an empty string) meaning "and the default session".
pub fn spawn_target(ids: &[String], default_pool: bool) -> Option<Value> {
    let mut all: Vec<String> = ids.to_vec();
    if default_pool && !all.is_empty() {
        all.push(String::new());
    }
    match all.len() {
        0 => None,
        1 => Some(Value::from(all.remove(0))),
        _ => Some(Value::DataArray(DataArray::strings(all))),
    }
}

/// Whether the connected DVM honours `PMIX_SPAWN_TARGET`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetSupport {
    /// It does (PMIx 7 and later: PRRTE master, pdvm).
    Yes,
    /// It does not; the text says why (the server's version).
    No(String),
    /// Its version is unknown (a bare `--uri URI`): we cannot tell.
    Unknown,
}

/// Decide, from the server's PMIx version, whether it honours
/// `PMIX_SPAWN_TARGET`: the attribute first appears in OpenPMIx 7
/// (PRRTE master); an older server (PRRTE 3.0.14 with OpenPMIx 5.0.11,
/// OpenPMIx 4.x/5.x/6.x) does not know it, and PRRTE then launches the job
/// in the default pool as if no target had been given.
///
/// The version, not an attribute-support query, decides: PRRTE 3.0.14
/// answers `PMIX_QUERY_ATTRIBUTE_SUPPORT` for `PMIx_Spawn` with nothing at
/// all (it registers no host attributes), so a query cannot tell "lacks
/// it" from "does not say". It is the same version that picks the wire
/// version ([`crate::conn::wire_for_version`]). pdvm announces 7.0.0 in both
/// modes: under `--pmix-compat` it plays a DVM that ignores the attribute
/// without saying so (spec §8.2.1.10), and is left to do so.
pub fn target_support(server_version: Option<&str>) -> TargetSupport {
    let Some(v) = server_version else {
        return TargetSupport::Unknown;
    };
    match pmix_major(v) {
        Some(m) if m >= TARGET_MIN_MAJOR => TargetSupport::Yes,
        Some(_) => TargetSupport::No(format!(
            "the DVM runs PMIx {v}, which has no PMIX_SPAWN_TARGET (it first appears in PMIx \
{TARGET_MIN_MAJOR}); it would launch the job in its default pool instead"
        )),
        None => TargetSupport::Unknown,
    }
}

/// The major number of a PMIx version string (`v5.0.11rc1` → 5).
fn pmix_major(v: &str) -> Option<u32> {
    crate::proto::PmixVersion::parse(v).map(|p| p.major)
}

/// Last PMIx major version whose servers (PRRTE 3.0.x) refuse a spawn
/// transiently with the generic `PMIX_ERROR`.
const TRANSIENT_MAX_MAJOR: u32 = 5;

/// First PMIx major version whose servers honour `PMIX_SPAWN_TARGET`.
pub const TARGET_MIN_MAJOR: u32 = 7;

/// How often a spawn refused with the generic `PMIX_ERROR` is tried again.
pub const TRANSIENT_RETRIES: u32 = 4;
/// Pause before the first retry (doubled each time).
pub const TRANSIENT_BACKOFF: Duration = Duration::from_millis(10);

/// Spawn `apps` with job-level `job_info`; returns the new job's namespace.
/// One request: a generic `PMIX_ERROR` is returned as is (see
/// [`transient_retries`] for what a caller may do about it).
pub fn spawn(s: &Session, job_info: &[Info], apps: &[App]) -> Result<String> {
    if apps.is_empty() {
        return Err(Error::new(
            Status::ERR_BAD_PARAM,
            "nothing to spawn: no application given",
        ));
    }
    s.check_infos(job_info)?;
    for a in apps {
        s.check_infos(&a.info)?;
    }
    spawn_once(s, job_info, apps)
}

/// How often a spawn refused with the generic `PMIX_ERROR` may be tried
/// again on this DVM: [`TRANSIENT_RETRIES`] on PRRTE 3.0.x (PMIx 5 or
/// older), which refuses a spawn sent just after another job's end that
/// way; none on newer or unknown DVMs. The caller must first rule out that
/// the job already ran (both answer `PMIX_ERROR` for a job that failed
/// before the reply): see [`super::job::ended_before_reply`].
pub fn transient_retries(s: &Session) -> u32 {
    match s.server_version().and_then(pmix_major) {
        Some(m) if m <= TRANSIENT_MAX_MAJOR => TRANSIENT_RETRIES,
        _ => 0,
    }
}

/// One spawn request, sent again (at most [`RESENDS`] times) when the DVM
/// lost its launch and will never answer it ([`super::lost_launch`]): the
/// lost job, never started, is stopped first.
fn spawn_once(s: &Session, job_info: &[Info], apps: &[App]) -> Result<String> {
    let mut e = s.request(cmd::SPAWN)?;
    SpawnMessage::new(job_info, apps).encode_body(&mut e)?;
    let mut lost = LostLaunch::new(s, job_info, apps);
    let mut resends = 0;
    let reply = loop {
        let mut gone: Option<String> = None;
        let mut quiet = || {
            if resends >= RESENDS {
                return false;
            }
            gone = lost.as_mut().and_then(|l| l.look(s));
            gone.is_some()
        };
        if let Some(reply) = s.call_watching(&e, LOOK_EVERY, &mut quiet)? {
            break reply;
        }
        if let Some(ns) = gone {
            // PRRTE master keeps listing it; it never ran and never will.
            let _ = super::control::terminate_job(s, &ns);
            s.relaunched(&ns);
        }
        resends += 1;
    };
    let mut d = s.decoder(&reply);
    let st: Status = d.unpack_one()?;
    if !st.is_success() {
        return Err(Error::refused(st, "spawn"));
    }
    let nspace: String = d.unpack_one()?;
    s.launched(&nspace);
    Ok(nspace)
}

/// The job info a launcher normally sends: forward stdout and stderr to us
/// and tell us when the job completes.
pub fn launcher_job_info() -> Vec<Info> {
    vec![
        Info::new(keys::FWD_STDOUT, true),
        Info::new(keys::FWD_STDERR, true),
        Info::new(keys::NOTIFY_COMPLETION, true),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_support_follows_the_pmix_major_version() {
        assert_eq!(target_support(Some("7.0.0")), TargetSupport::Yes);
        assert_eq!(target_support(Some("v7.0.0a1")), TargetSupport::Yes);
        assert_eq!(target_support(Some("8.1")), TargetSupport::Yes);
        for old in ["v5.0.11rc1", "5.0.11", "4.2.2", "v6.1.0"] {
            match target_support(Some(old)) {
                TargetSupport::No(why) => assert!(why.contains(old), "{why}"),
                other => panic!("{old}: {other:?}"),
            }
        }
        assert_eq!(target_support(None), TargetSupport::Unknown);
        assert_eq!(target_support(Some("unknown")), TargetSupport::Unknown);
    }
}
