//! PRRTE master answers a grant of a scheduler's nodes before their
//! daemons are up (docs/conformance.md, P1): a job sent into the
//! reservation at once fails `PMIX_ERR_JOB_FAILED_TO_MAP`. So palloc
//! returns a grant of counted nodes (`-N`) whose reply named no node only
//! once the daemons of its nodes have reported in (each node's
//! `PMIX_SERVER_URI` is answered) or, when one has not, a one-process probe
//! job (`true`) runs in it, trying again (bounded) while the DVM says it
//! cannot map: the id it prints is usable at once, as on pdvm or under
//! Slurm's `salloc`. A grant of nodes whose daemons are up (a scheduler's
//! warm nodes) costs a query per node, not a launch.

use std::time::{Duration, Instant};

use crate::cli::request::AllocAsk;
use crate::codec::Info;
use crate::ops::job::simple_app;
use crate::ops::run::run_job;
use crate::ops::spawn::spawn_target;
use crate::ops::Session;
use crate::proto::status::Status;
use crate::proto::{keys, Directive, PmixVersion};
use crate::render::AllocationRecord;

use super::grant_empty::GrantView;
use super::Failure;
use crate::cli::exit::Exit;

/// Longest palloc waits for a granted reservation to take a job.
pub(crate) const READY_WAIT: Duration = Duration::from_secs(30);
/// Pause between probes.
const PAUSE: Duration = Duration::from_millis(200);
/// Longest palloc asks the DVM for a grant's other nodes before it probes.
const LISTED_WAIT: Duration = Duration::from_secs(5);
/// First pause between two looks at a grant's nodes.
const LOOK_FIRST: Duration = Duration::from_millis(5);
/// Longest pause between two looks at a grant's nodes.
const LOOK_MAX: Duration = Duration::from_millis(100);
/// Longest one probe job may run.
const PROBE_LIMIT: Duration = Duration::from_secs(10);

/// Whether a grant needs the probe: NEW or EXTEND by a node count, and a
/// reply that named no node (PRRTE master with a scheduler; pdvm names them).
fn needs_probe(req: &AllocAsk, rec: &AllocationRecord) -> bool {
    req.attrs.num_nodes.is_some_and(|n| n > 0)
        && matches!(req.directive, Directive::New | Directive::Extend)
        && rec.nodes.is_empty()
        && !rec.alloc_id.is_empty()
}

/// Whether the DVM speaks PMIx 6.1 or later (PRRTE master is 7.0.0a1):
/// older ones grant no scheduler's nodes this way.
fn recent(s: &Session) -> bool {
    PmixVersion::of(s.server_version()) >= PmixVersion::new(6, 1)
}

/// Wait (at most [`READY_WAIT`]) until the reservation of `rec` takes a
/// job. Only a reservation a recent DVM lists with nodes is probed (an
/// empty one, PRRTE master without a scheduler, would never take one).
/// "Cannot map yet" waits; a probe the DVM cannot launch
/// (`PMIX_ERR_JOB_FAILED_TO_LAUNCH`: a granted node without a working
/// daemon) gives the allocation back and fails the grant, naming the
/// nodes; any other answer ends the wait and the grant is reported as it
/// is; so does a signal (left caught for the caller). palloc and `pspawn
/// -N` both wait here; `view` is the DVM's view of the reservation, shared
/// with the empty-grant check.
pub(crate) fn wait_usable(
    s: &Session,
    req: &AllocAsk,
    rec: &AllocationRecord,
    view: &GrantView<'_>,
) -> Result<(), Failure> {
    if !needs_probe(req, rec) || !recent(s) || view.holds_no_node() != Some(false) {
        return Ok(());
    }
    if all_daemons_up(s, req, view) || all_listed_soon(s, req, rec) {
        return Ok(());
    }
    let Some(target) = spawn_target(std::slice::from_ref(&rec.alloc_id), false) else {
        return Ok(());
    };
    // A NEW waits for all its nodes (psched adds a grant's nodes one a
    // grow): one process on each.
    let n = match req.directive {
        Directive::New => req.attrs.num_nodes.unwrap_or(1).clamp(1, 4096) as i32,
        _ => 1,
    };
    let info = [
        Info::new(keys::SPAWN_TARGET, target),
        Info::new(keys::MAPBY, "ppr:1:node"),
    ];
    let probe = [simple_app(&["true"], n)];
    let deadline = Instant::now() + READY_WAIT;
    loop {
        match run_job(s, &info, &probe, Some(PROBE_LIMIT), |_| {}) {
            Err(e) if e.status == Status::ERR_JOB_FAILED_TO_MAP && Instant::now() < deadline => {
                // A signal ends the wait; the caller sees it caught.
                if super::signals::caught_by(Instant::now() + PAUSE).is_some() {
                    return Ok(());
                }
            }
            Err(e) if e.status == Status::ERR_JOB_FAILED_TO_LAUNCH => {
                return Err(unusable(s, rec));
            }
            _ => return Ok(()),
        }
    }
}

/// Whether a NEW grant comes to list every node it asked for, each with
/// its daemon up, within [`LISTED_WAIT`]: psched adds a grant's nodes one
/// grow at a time, so the reservation is asked again (a query, no launch;
/// pauses from [`LOOK_FIRST`] doubling up to [`LOOK_MAX`]) instead of
/// probing and waiting [`PAUSE`] after each "cannot map yet" (issue 40.5:
/// most of `palloc -N 2 -- true`'s time). A signal ends the wait as
/// done (left caught for the caller, as the probe's wait does).
fn all_listed_soon(s: &Session, req: &AllocAsk, rec: &AllocationRecord) -> bool {
    let Some(want) = req.attrs.num_nodes.filter(|n| *n > 1) else {
        return false;
    };
    if req.directive != Directive::New {
        return false;
    }
    let deadline = Instant::now() + LISTED_WAIT;
    let mut pause = LOOK_FIRST;
    loop {
        let listed = crate::ops::status_query::reservations(s, Some(&rec.alloc_id))
            .ok()
            .and_then(|l| l.into_iter().find(|r| r.alloc_id == rec.alloc_id))
            .map(|r| r.nodes)
            .unwrap_or_default();
        if listed.len() >= want as usize
            && listed.iter().all(|n| crate::ops::query::daemon_up(s, n))
        {
            return true;
        }
        let next = Instant::now() + pause;
        if next >= deadline {
            return false;
        }
        if super::signals::caught_by(next).is_some() {
            return true;
        }
        pause = (pause * 2).min(LOOK_MAX);
    }
}

/// Whether a NEW grant already lists every node it asked for and each of
/// their daemons has reported in: no probe is needed. (psched adds a
/// grant's nodes one grow at a time, so a shorter list is not all of it;
/// an EXTEND's list mixes old and new nodes and is always probed.)
fn all_daemons_up(s: &Session, req: &AllocAsk, view: &GrantView<'_>) -> bool {
    let Some(nodes) = view.nodes() else {
        return false;
    };
    req.directive == Directive::New
        && req
            .attrs
            .num_nodes
            .is_some_and(|n| nodes.len() >= n as usize)
        && nodes.iter().all(|n| crate::ops::query::daemon_up(s, n))
}

/// The grant of `rec` cannot run a process: give it back and say which
/// nodes and why.
fn unusable(s: &Session, rec: &AllocationRecord) -> Failure {
    let nodes = crate::ops::status_query::reservations(s, Some(&rec.alloc_id))
        .ok()
        .and_then(|l| l.into_iter().find(|r| r.alloc_id == rec.alloc_id))
        .map(|r| r.nodes.join(","))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "its nodes".to_string());
    let back = super::grant_empty::give_back(s, &rec.alloc_id);
    Failure::with(
        Exit::Refused,
        Some(Status::ERR_JOB_FAILED_TO_LAUNCH),
        format!(
            "allocation {} was granted on {nodes}, but the DVM cannot start a process there (PMIX_ERR_JOB_FAILED_TO_LAUNCH: no working PRRTE daemon on {nodes}); {back} and nothing was run. With psched, `psched --status` lists nodes it holds back; restarting the DVM brings them back",
            rec.alloc_id
        ),
    )
}
