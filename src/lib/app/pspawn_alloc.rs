//! `pspawn -N COUNT`, as `srun -N` does. Outside any allocation, pspawn
//! reserves COUNT nodes for this job alone (a NEW request, inheritance
//! CHILD), runs the job there (`PMIX_SPAWN_TARGET`) and gives them back at
//! its end, whatever the end: the job's, a refused spawn, a signal. With
//! CHILD the DVM also releases them once pspawn and its job are gone, so a
//! pspawn killed outright leaves nothing reserved either. OpenPMIx defines
//! no `PMIX_SPAWN_ALLOC` (one spawn asking for its own allocation), so the
//! three steps are pspawn's. Inside an allocation, -N is the node count:
//! the job runs on the first COUNT nodes of it.

use crate::cli::exit::Exit;
use crate::cli::request::{AllocRequest, SpawnRequest};
use crate::codec::Info;
use crate::ops::alloc::{allocate, begin_allocate};
use crate::ops::Session;
use crate::proto::{keys, Directive, Inheritance, Status};
use std::time::{Duration, Instant};

use super::palloc::{await_answer, generated_request_id, granted_record, request_infos, Awaiting};
use super::{Failure, Ui};

/// A reservation made for one job, given back by [`JobAllocation::give_back`].
pub(crate) struct JobAllocation {
    /// Its allocation id.
    pub alloc_id: String,
}

/// Reserve `nodes` nodes for one job: waits while the request is queued
/// (a signal withdraws it), and refuses an empty grant (a DVM without a
/// scheduler) with exit 7 after giving it back.
pub(crate) fn reserve(s: &Session, nodes: u64, ui: &Ui) -> Result<JobAllocation, Failure> {
    let mut req = AllocRequest {
        directive: Directive::New,
        nodes: Some(nodes),
        request_id: Some(generated_request_id()),
        inherit: Some(Inheritance::Child),
        ..Default::default()
    };
    let mut reply = ask(s, &req, ui)?;
    if matches!(&reply, Err(e) if e.status == Status::ERR_NOT_SUPPORTED) {
        // A DVM that takes no inheritance rule: its default releases the
        // nodes when pspawn's namespace ends, which is as good here.
        ui.detail("the DVM refused inheritance CHILD; asking again without a rule");
        req.inherit = None;
        reply = ask(s, &req, ui)?;
    }
    let reply = reply.map_err(|e| refused(nodes, &e))?;
    let rec = granted_record(&req, &reply, s, false);
    if let Some(mut f) = super::palloc_empty::refuse_empty_grant(s, &req, &rec) {
        f.message = format!("pspawn -N {nodes} outside an allocation: {}", f.message);
        return Err(f);
    }
    ui.detail(&format!(
        "reserved allocation {} ({}) for this job",
        rec.alloc_id,
        rec.nodes.join(",")
    ));
    Ok(JobAllocation {
        alloc_id: rec.alloc_id,
    })
}

/// Send the NEW request and wait for its answer.
fn ask(
    s: &Session,
    req: &AllocRequest,
    ui: &Ui,
) -> Result<crate::error::Result<crate::ops::alloc::AllocReply>, Failure> {
    let infos = request_infos(req, s.server_version(), req.inherit.is_some());
    let tag = begin_allocate(s, Directive::New, &infos).map_err(|e| refused(0, &e))?;
    let mut none = None;
    let mut wait = Awaiting {
        holder: None,
        submitter: &mut none,
        spinner: None,
    };
    await_answer(s, req, tag, &mut wait, ui)
}

fn refused(nodes: u64, e: &crate::error::Error) -> Failure {
    if e.status == Status::ERR_OUT_OF_RESOURCE && e.kind == crate::error::ErrorKind::Refused {
        return Failure::with(
            Exit::Refused,
            Some(e.status),
            format!(
                "the DVM cannot reserve {nodes} node(s) for the job (PMIX_ERR_OUT_OF_RESOURCE): \
it has fewer nodes to grant (`pwatch --status --what scheduler` shows them); nothing was \
launched. Ask for fewer, or run without -N in the DVM's default pool"
            ),
        );
    }
    let mut f = Failure::from_error(
        &format!("reserving {nodes} node(s) for the job (pspawn -N outside an allocation)"),
        e,
    );
    f.message.push_str("; nothing was launched");
    f
}

impl JobAllocation {
    /// Give the reservation back (`PMIX_ALLOC_RELEASE`). A DVM that is gone
    /// took it with it; a refusal is said with the command to type.
    pub(crate) fn give_back(&self, s: &Session, ui: &Ui) {
        let release = [Info::new(keys::ALLOC_ID, self.alloc_id.as_str())];
        match allocate(s, Directive::Release, &release) {
            Ok(_) => ui.detail(&format!("gave back allocation {}", self.alloc_id)),
            Err(e) if e.status == Status::ERR_NOT_FOUND => {}
            Err(e) if e.kind == crate::error::ErrorKind::Refused => ui.warn(&format!(
                "giving back allocation {} was refused ({e}); `prelease {}` gives it back",
                self.alloc_id, self.alloc_id
            )),
            // The DVM is gone, and the reservation with it.
            Err(e) => ui.detail(&format!("allocation {} not given back: {e}", self.alloc_id)),
        }
    }
}

/// How long a spawn into a reservation just made for the job is tried
/// again while the DVM cannot map it (see [`launch_when_up`]).
const NODES_UP_WAIT: Duration = Duration::from_secs(60);
/// The first pause between those tries (doubled each time, up to 2 s).
const NODES_UP_PAUSE: Duration = Duration::from_millis(100);

/// Launch `req` into `own`, the reservation just made for it. PRRTE master
/// answers a grant before the granted nodes' daemons are up
/// (docs/conformance.md, P1): a spawn at once fails
/// `PMIX_ERR_JOB_FAILED_TO_MAP`. A job that fits the reservation's slots
/// but does not map is therefore tried again, backing off, for at most
/// [`NODES_UP_WAIT`]; one that does not fit fails at once.
pub(crate) fn launch_when_up(
    s: &Session,
    req: &SpawnRequest,
    own: &JobAllocation,
    ui: &Ui,
    launch: &dyn Fn() -> Result<i32, Failure>,
) -> Result<i32, Failure> {
    let until = Instant::now() + NODES_UP_WAIT;
    let mut pause = NODES_UP_PAUSE;
    loop {
        let r = launch();
        let unmapped = matches!(&r, Err(f) if f.status == Some(Status::ERR_JOB_FAILED_TO_MAP));
        if !unmapped || Instant::now() + pause >= until || !fits(s, req, &own.alloc_id) {
            return r;
        }
        ui.detail(&format!(
            "allocation {}'s nodes cannot take the job yet (PMIX_ERR_JOB_FAILED_TO_MAP): \
trying again in {} ms",
            own.alloc_id,
            pause.as_millis()
        ));
        if let Some(sig) = super::signals::sleep_until(Instant::now() + pause) {
            return Err(Failure::interrupted(&format!(
                "interrupted by {} before the job started",
                super::signals::name(sig)
            )));
        }
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Whether the job's processes fit the slots of reservation `id` as the
/// DVM lists them; true when it does not say.
fn fits(s: &Session, req: &SpawnRequest, id: &str) -> bool {
    let want: u64 = req.apps.iter().map(|a| u64::from(a.np)).sum::<u64>()
        * u64::from(req.cpus_per_proc.unwrap_or(1));
    let names = match crate::ops::status_query::reservations(s, Some(id)) {
        Ok(list) => list
            .into_iter()
            .find(|r| r.alloc_id == id)
            .map(|r| r.nodes)
            .unwrap_or_default(),
        Err(_) => return true,
    };
    let want_nodes = crate::ops::status_query::Want {
        nodes: true,
        ..Default::default()
    };
    let slots: u64 = match crate::ops::status_query::status(s, want_nodes).nodes {
        Some(Ok(nodes)) => nodes
            .iter()
            .filter(|n| names.contains(&n.name))
            .map(|n| u64::from(n.slots))
            .sum(),
        _ => return true,
    };
    slots == 0 || want <= slots
}

/// Inside an allocation, `-N COUNT` is the node count: the apps without
/// hosts of their own run on the first COUNT nodes of the targeted
/// reservations; more than they hold is refused.
pub(crate) fn restrict_to_nodes(
    s: &Session,
    req: &mut SpawnRequest,
    count: u64,
) -> Result<(), Failure> {
    let live = crate::ops::status_query::reservations(s, None).unwrap_or_default();
    let mut nodes: Vec<String> = Vec::new();
    for r in live.iter().filter(|r| req.targets.contains(&r.alloc_id)) {
        for n in &r.nodes {
            if !nodes.contains(n) {
                nodes.push(n.clone());
            }
        }
    }
    if nodes.is_empty() {
        // The DVM does not say which nodes: the allocation is the limit.
        return Ok(());
    }
    let want = usize::try_from(count).unwrap_or(usize::MAX);
    if want > nodes.len() {
        return Err(Failure::with(
            Exit::Refused,
            Some(Status::ERR_OUT_OF_RESOURCE),
            format!(
                "-N {count}: allocation {} holds {} node(s) ({}); nothing was launched. Ask for \
at most {}, or reserve more with `palloc --extend ID -N MORE`",
                req.targets.join(","),
                nodes.len(),
                nodes.join(","),
                nodes.len()
            ),
        ));
    }
    nodes.truncate(want);
    for a in req.apps.iter_mut().filter(|a| a.hosts.is_empty()) {
        a.hosts = nodes.clone();
    }
    Ok(())
}
