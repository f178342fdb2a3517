//! `prelease`: RELEASE (whole or partial), REQ_CANCEL, REAQUIRE.

use crate::cli::exit::{AttrsPresent, Operation};
use crate::cli::request::ReleaseRequest;
use crate::cli::PreleaseArgs;
use crate::codec::Info;
use crate::conn::Identity;
use crate::ops::alloc::allocate;
use crate::ops::Session;
use crate::proto::keys;
use crate::proto::Directive;
use crate::render::ReleaseRecord;

use super::{connect_for, finish, Failure, Ui};

/// Run prelease; returns the exit code (the first failure's). An id that
/// is no allocation may name a request or a job (see [`other_meaning`]).
pub fn run(args: &PreleaseArgs) -> i32 {
    let ui = Ui::new("prelease", &args.output);
    if let Some(sig) = args.signal {
        return signal_jobs(args, sig, &ui);
    }
    let requests = args.requests();
    let mut first_failure = 0;
    let mut records = Vec::new();
    // Each id is acted on through whatever holds it: a held allocation is
    // found by its id, a queued request (held by a detached `palloc
    // --no-wait`) by its request id; several ids may be held by several
    // pallocs.
    for req in requests {
        let alloc = req.alloc_id.clone().or_else(|| req.request_id.clone());
        let (code, rec) = match connect_for(&args.connect, &ui, alloc.as_deref()) {
            Ok(s) => {
                // A request id names the allocation granted for it.
                let mut req = req;
                if let Some(a) = alloc.as_deref().and_then(|id| super::granted_for(&s, id)) {
                    // A cancel of a request already granted ends what was
                    // granted, as scancel ends a running job (a batch
                    // script is stopped by its palloc).
                    if req.directive == Directive::ReqCancel {
                        ui.note(&format!(
                            "request {} was already granted as {a}: releasing {a}",
                            alloc.as_deref().unwrap_or_default()
                        ));
                        req.directive = Directive::Release;
                    }
                    if req.directive == Directive::Release {
                        req.alloc_id = Some(a);
                        req.request_id = None;
                    }
                }
                let r = one(&s, &req, &ui, &args.connect);
                finish(s);
                r
            }
            Err(f) => {
                let code = ui.fail(&f);
                (code, failed_record(&req, &f))
            }
        };
        records.push(rec);
        if first_failure == 0 {
            first_failure = code;
        }
    }
    // One JSON document: the release record, or for several ids one
    // `releases` object listing them.
    match records.as_slice() {
        [one] => ui.record(one),
        many => ui.record(&serde_json::json!({
            "type": "releases",
            "results": many,
            "exit_code": first_failure,
        })),
    }
    first_failure
}

/// The attributes of one release-family request.
pub fn release_infos(req: &ReleaseRequest) -> Vec<Info> {
    let mut v = Vec::new();
    if let Some(a) = &req.alloc_id {
        v.push(Info::new(keys::ALLOC_ID, a.as_str()));
    }
    if let Some(r) = &req.request_id {
        v.push(Info::new(keys::ALLOC_REQ_ID, r.as_str()));
    }
    if let Some(n) = req.nodes {
        v.push(Info::new(keys::ALLOC_NUM_NODES, n));
    }
    if !req.nodelist.is_empty() {
        v.push(Info::new(keys::ALLOC_NODE_LIST, req.nodelist.join(",")));
    }
    v
}

/// What else `id` may name when it is no allocation: a queued request
/// (withdrawn), a granted request's id (its allocation released), a live
/// job (terminated). The sentence saying what was done, if anything.
fn other_meaning(s: &Session, id: &str) -> Option<String> {
    let by_req = [Info::new(keys::ALLOC_REQ_ID, id)];
    if allocate(s, Directive::ReqCancel, &by_req).is_ok() {
        super::batch_records::cancelled(&s.conn().target().uri.nspace, id);
        return Some(format!("cancelled queued request {id}"));
    }
    if let Ok(r) = allocate(s, Directive::Release, &by_req) {
        let a = r.alloc_id.unwrap_or_default();
        return Some(format!("released {a} (request {id})"));
    }
    let live = crate::ops::query::namespaces(s).ok()?;
    if live.iter().any(|n| n == id) && cancel_job(s, id).is_ok() {
        return Some(format!(
            "cancelled job {id} (its processes were terminated)"
        ));
    }
    None
}

/// A whole RELEASE sent through the palloc holding the allocation, whose
/// connection closed before the answer came: that palloc ends with its
/// allocation and may go before passing the answer on. Whether the DVM,
/// asked directly, no longer lists the allocation (then it was released).
fn released_meanwhile(
    s: &Session,
    e: &crate::error::Error,
    req: &ReleaseRequest,
    id: &str,
    connect: &crate::cli::ConnectArgs,
    ui: &Ui,
) -> bool {
    let through_holder = s.conn().target().holder_of.is_some();
    let whole = req.nodelist.is_empty() && req.nodes.is_none();
    if e.kind != crate::error::ErrorKind::Connection
        || !through_holder
        || !whole
        || req.directive != Directive::Release
    {
        return false;
    }
    let Ok(direct) = crate::ops::Session::connect(&connect.to_options()) else {
        return false;
    };
    let gone = crate::ops::status_query::reservations(&direct, None)
        .is_ok_and(|list| !list.iter().any(|r| r.alloc_id == id));
    let _ = direct.finalize();
    if gone {
        ui.detail(&format!(
            "the palloc holding {id} ended before passing the DVM's answer on; the DVM no \
longer lists {id}: released"
        ));
    }
    gone
}

/// Whether the DVM lists `id` among its allocations ("none found" is no;
/// no answer is taken as yes, so a refusal stands as the DVM gave it).
fn names_allocation(s: &Session, id: &str) -> bool {
    match crate::ops::status_query::reservations(s, None) {
        Ok(list) => list.iter().any(|r| r.alloc_id == id),
        Err(e) => e.status != crate::proto::status::Status::ERR_NOT_FOUND,
    }
}

/// Terminate job `id`, announced first ([`crate::proto::status::JOB_CANCELLED`])
/// so that a pspawn following it says it was cancelled whatever status the
/// DVM then gives (a DVM that relays no tool's event loses only that).
fn cancel_job(s: &Session, id: &str) -> crate::error::Result<()> {
    let (me, _) = s.me();
    let notice = [
        Info::new(keys::NSPACE, id),
        Info::new(
            keys::EVENT_TEXT_MESSAGE,
            format!("cancelled by prelease (tool {me})").as_str(),
        ),
    ];
    let _ = crate::ops::events::notify_all(s, crate::proto::status::JOB_CANCELLED, &notice);
    crate::ops::control::terminate_job(s, id)
}

/// What the DVM says of an id that is no allocation, request or running
/// job, as a job.
enum JobNote {
    /// A job it still lists as ended: the sentence saying so.
    Ended(String),
    /// No job it lists (never one, or ended and no longer kept).
    Unknown,
}

/// [`JobNote`] for `id`, from the DVM's job table (pdvm keeps the last
/// jobs that ended, `pdvm --job-history`).
fn no_job_note(s: &Session, id: &str) -> JobNote {
    let jobs = crate::ops::status_query::jobs(s).unwrap_or_default();
    match jobs.iter().find(|j| j.nspace == id) {
        Some(j) => JobNote::Ended(match j.exit_status {
            Some(c) => format!("job {id} has already ended (exit status {c}): nothing to release"),
            None => format!("job {id} is no longer running: nothing to release"),
        }),
        None => JobNote::Unknown,
    }
}

/// `--signal SIG JOB…`: the signal to every process of each job; the exit
/// code of the first failure.
fn signal_jobs(args: &PreleaseArgs, sig: nix::sys::signal::Signal, ui: &Ui) -> i32 {
    let s = match super::connect(&args.connect, ui) {
        Ok(s) => s,
        Err(f) => return ui.fail(&f),
    };
    let mut first_failure = 0;
    for job in &args.alloc_ids {
        let all = crate::codec::Proc {
            nspace: job.clone(),
            rank: crate::codec::RANK_WILDCARD,
        };
        let directive = Info::new(keys::JOB_CTRL_SIGNAL, crate::codec::Value::Int(sig as i32));
        match crate::ops::control::job_control(&s, &[all], &[directive]) {
            Ok(_) => ui.note(&format!("sent {} to job {job}", sig.as_str())),
            Err(e) => {
                let f = Failure::from_error(&format!("cannot signal job {job}"), &e);
                let code = ui.fail(&f);
                if first_failure == 0 {
                    first_failure = code;
                }
            }
        }
    }
    finish(s);
    first_failure
}

/// The record of a request that could not be sent (`f` says why).
fn failed_record(req: &ReleaseRequest, f: &Failure) -> ReleaseRecord {
    ReleaseRecord {
        directive: "release".into(),
        alloc_id: req.alloc_id.clone(),
        request_id: req.request_id.clone(),
        status: f.status.map(|s| s.name().to_string()).unwrap_or_default(),
        exit_code: f.exit.code(),
        rule: f.rule.clone(),
    }
}

fn one(
    s: &Session,
    req: &ReleaseRequest,
    ui: &Ui,
    connect: &crate::cli::ConnectArgs,
) -> (i32, ReleaseRecord) {
    let (op, word, done) = match req.directive {
        Directive::ReqCancel => (Operation::Cancel, "cancel", "cancelled request"),
        Directive::Reaquire => (Operation::Reacquire, "reacquire", "reacquired"),
        _ => (Operation::Release, "release", "released"),
    };
    let what = req
        .alloc_id
        .clone()
        .or_else(|| req.request_id.as_ref().map(|r| format!("request {r}")))
        .unwrap_or_default();
    let mut rec = ReleaseRecord {
        directive: word.into(),
        alloc_id: req.alloc_id.clone(),
        request_id: req.request_id.clone(),
        status: "PMIX_SUCCESS".into(),
        exit_code: 0,
        rule: None,
    };
    if let Some(code) = scheduler_down(s, req, &what, ui) {
        rec.status = "PMIX_ERR_UNREACH".into();
        rec.exit_code = code;
        return (code, rec);
    }
    let mut answer = allocate(s, req.directive, &release_infos(req));
    if let (Err(e), Some(id)) = (&answer, &req.alloc_id) {
        if released_meanwhile(s, e, req, id, connect, ui) {
            answer = Ok(crate::ops::alloc::AllocReply {
                directive: "release",
                alloc_id: Some(id.clone()),
                request_id: None,
                info: Vec::new(),
            });
        }
    }
    // `prelease ID` where ID is no allocation, as scancel takes any id: a
    // request still queued (a submitted `palloc --no-wait`) is withdrawn, a
    // granted one named by its request id released, a job cancelled.
    let mut no_job = None;
    if let (Err(e), Some(id), Directive::Release) = (&answer, &req.alloc_id, req.directive) {
        let whole = req.nodelist.is_empty() && req.nodes.is_none();
        // Through a palloc holder, an id that is not its allocation is
        // refused as not the holder's (no permission) before anyone asks
        // whether it names a job the caller started.
        use crate::proto::status::Status;
        let not_an_allocation = e.status == Status::ERR_NOT_FOUND
            || (e.status == Status::ERR_NO_PERMISSIONS && !names_allocation(s, id));
        if not_an_allocation && whole {
            if let Some(done) = other_meaning(s, id) {
                ui.note(&done);
                rec.directive = "cancel".into();
                return (0, rec);
            }
            no_job = Some(no_job_note(s, id));
        }
    }
    match answer {
        Ok(_) => {
            let partial = if req.nodes.is_some() || !req.nodelist.is_empty() {
                " (partial)"
            } else {
                ""
            };
            let what = if req.directive == Directive::ReqCancel {
                let id = req.request_id.clone().unwrap_or_default();
                super::batch_records::cancelled(&s.conn().target().uri.nspace, &id);
                id
            } else {
                what
            };
            ui.note(&format!("{done} {what}{partial}"));
            (0, rec)
        }
        Err(e) => refused(s, req, op, &what, no_job, &e, ui, rec),
    }
}

/// A scheduler known to be down (killed) would leave a cancel or release
/// unanswered until it returns: say so now, nothing sent (the exit code).
fn scheduler_down(s: &Session, req: &ReleaseRequest, what: &str, ui: &Ui) -> Option<i32> {
    if !matches!(req.directive, Directive::ReqCancel | Directive::Release) {
        return None;
    }
    let why = super::sched_down::scheduler_down(s)?;
    let after = if req.directive == Directive::ReqCancel {
        "once psched is back the queued palloc sends its request again and `prelease --cancel` works; stopping that palloc (Ctrl-C) ends it now"
    } else {
        "try again once psched is back (its ledger keeps the allocation)"
    };
    let f = Failure::with(
        crate::cli::exit::Exit::CannotConnect,
        Some(crate::proto::status::Status::ERR_UNREACH),
        format!("{what}: nothing sent: {why}; {after}"),
    );
    Some(ui.fail(&f))
}

/// The DVM refused `req` (`e`): the message (with what a job of that name
/// did, `no_job`, and a holder's hint), said unless quiet; the exit code
/// and the record.
#[allow(clippy::too_many_arguments)]
fn refused(
    s: &Session,
    req: &ReleaseRequest,
    op: Operation,
    what: &str,
    no_job: Option<JobNote>,
    e: &crate::error::Error,
    ui: &Ui,
    mut rec: ReleaseRecord,
) -> (i32, ReleaseRecord) {
    let attrs = AttrsPresent {
        from_application: matches!(s.conn().identity(), Identity::Client { .. }),
        alloc_id: req.alloc_id.is_some(),
        req_id: req.request_id.is_some(),
        ..Default::default()
    };
    let mut f = Failure::refused(op, &attrs, e);
    f.message = match no_job {
        Some(JobNote::Ended(note)) => format!("{what}: {note}"),
        Some(JobNote::Unknown) => format!(
            "{what}: {}. No job of that name runs either (an ended job is listed \
             by `pwatch --status --all` while the DVM keeps it)",
            f.message
        ),
        None => format!("{what}: {}", f.message),
    };
    if e.status == crate::proto::status::Status::ERR_NO_PERMISSIONS {
        let alloc = req.alloc_id.as_deref().or(req.request_id.as_deref());
        if let Some(hint) = alloc.and_then(|a| super::no_holder_hint(s, a)) {
            f.message.push_str(&hint);
        }
    }
    rec.status = f.status.map(|s| s.name().to_string()).unwrap_or_default();
    rec.exit_code = f.exit.code();
    rec.rule = f.rule.clone();
    if ui.level > -2 {
        say!("prelease: {}", f.message);
    }
    (f.exit.code(), rec)
}
