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
use crate::cli::request::{AllocAsk, SpawnRequest};
use crate::codec::Info;
use crate::ops::alloc::{allocate, begin_allocate};
use crate::ops::Session;
use crate::proto::{keys, AllocAttrs, Directive, Inheritance, Status};

use crate::app::alloc_wait::{await_answer, granted_record, request_infos, Awaiting};
use crate::app::requester::generated_request_id;
use crate::app::{Failure, Ui};

/// A reservation made for one job, given back by [`JobAllocation::give_back`].
pub(crate) struct JobAllocation {
    /// Its allocation id.
    pub alloc_id: String,
}

/// Reserve `nodes` nodes for one job: waits while the request is queued
/// (a signal withdraws it), and refuses an empty grant (a DVM without a
/// scheduler) with exit 7 after giving it back.
pub(crate) fn reserve(s: &Session, nodes: u64, ui: &Ui) -> Result<JobAllocation, Failure> {
    let mut req = AllocAsk {
        directive: Directive::New,
        attrs: AllocAttrs {
            num_nodes: Some(u32::try_from(nodes).unwrap_or(u32::MAX)),
            req_id: Some(generated_request_id()),
            inherit: Some(Inheritance::Child.into()),
            ..Default::default()
        },
    };
    // A restarted psched says it lost a request the psched before it had
    // queued: hear it, to send the request again.
    if let Err(e) = crate::ops::events::register(
        s,
        &[crate::proto::status::REQUEST_LOST],
        &[Info::new(keys::EVENT_HDLR_NAME, "pspawn-request-lost")],
    ) {
        ui.detail(&format!("cannot register for the scheduler's notices: {e}"));
    }
    let mut reply = ask(s, &req, ui)?;
    if matches!(&reply, Err(e) if e.status == Status::ERR_NOT_SUPPORTED) {
        // A DVM that takes no inheritance rule: its default releases the
        // nodes when pspawn's namespace ends, which is as good here.
        ui.detail("the DVM refused inheritance CHILD; asking again without a rule");
        req.attrs.inherit = None;
        reply = ask(s, &req, ui)?;
    }
    let reply = reply.map_err(|e| refused(nodes, &e))?;
    let rec = granted_record(&req, &reply, s, false);
    let view = crate::app::grant_empty::GrantView::new(s, &rec.alloc_id);
    if let Some(mut f) = crate::app::grant_empty::refuse_empty_grant(s, &req, &rec, &view) {
        f.message = format!("pspawn -N {nodes} outside an allocation: {}", f.message);
        return Err(f);
    }
    ui.detail(&format!(
        "reserved allocation {} ({}) for this job",
        rec.alloc_id,
        rec.nodes.join(",")
    ));
    let own = JobAllocation {
        alloc_id: rec.alloc_id.clone(),
    };
    // As palloc does: PRRTE master answers before the granted nodes can
    // take a job (P1); wait until they can.
    crate::app::grant_ready::wait_usable(s, &req, &rec, &view)?;
    if let Some(sig) = crate::app::signals::caught() {
        own.give_back(s, ui);
        return Err(Failure::interrupted(&format!(
            "interrupted by {} before the job started",
            crate::app::signals::name(sig)
        )));
    }
    Ok(own)
}

/// Send the NEW request and wait for its answer.
fn ask(
    s: &Session,
    req: &AllocAsk,
    ui: &Ui,
) -> Result<crate::error::Result<crate::ops::alloc::AllocReply>, Failure> {
    let infos = request_infos(req, s.server_version(), req.attrs.inheritance().is_some());
    let tag = begin_allocate(s, Directive::New, &infos).map_err(|e| refused(0, &e))?;
    let mut none = None;
    let mut wait = Awaiting {
        holder: None,
        submitter: &mut none,
        spinner: None,
        infos: &infos,
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
    // A scheduler that answers knows which of them are still granted
    // (PRRTE master keeps listing a node its node source took away).
    let mut left: Vec<String> = Vec::new();
    if let Some(held) = crate::app::status_sched::held_nodes(s, &req.targets) {
        left = nodes
            .iter()
            .filter(|n| !held.contains(n))
            .cloned()
            .collect();
        nodes.retain(|n| held.contains(n));
    }
    let want = usize::try_from(count).unwrap_or(usize::MAX);
    if want > nodes.len() {
        let gone = if left.is_empty() {
            String::new()
        } else {
            format!(
                " since {} left it (taken away by the scheduler's node source, or given back)",
                left.join(",")
            )
        };
        return Err(Failure::with(
            Exit::Refused,
            Some(Status::ERR_OUT_OF_RESOURCE),
            format!(
                "-N {count}: allocation {} holds {} node(s) ({}){gone}; nothing was launched. \
Ask for at most {}, or reserve more with `palloc --extend ID -N MORE`",
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
