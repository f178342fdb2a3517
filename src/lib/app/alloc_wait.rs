//! An allocation request sent and its answer awaited, for palloc and for
//! `pspawn -N` alike: the request's infos, the one wait (the DVM, signals,
//! the holder, a detached palloc's submitter), the scheduler's reason while
//! it is queued, a Ctrl-C's withdrawal, the grant's record, the holder that
//! shares it and the release after.

use std::os::fd::{BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use crate::cli::exit::Operation;
use crate::cli::palloc::disposition_on_exit;
use crate::cli::request::AllocAsk;
use crate::codec::{Info, Value};
use crate::conn::client::{Event, Watched};
use crate::conn::frame::{TAG_IOF, TAG_NOTIFY};
use crate::conn::holder::{HeldBy, Holder};
use crate::conn::Unsolicited;
use crate::ops::alloc::{allocate, begin_allocate, decode_alloc_reply, AllocReply};
use crate::ops::events::decode_notification;
use crate::ops::Session;
use crate::proto::keys;
use crate::proto::status::Status;
use crate::proto::{AllocAttrs, Directive, Inheritance};
use crate::render::AllocationRecord;
use nix::sys::signal::Signal;

use super::alloc_end::AllocEnd;
use super::events::EventFields;
use super::launch;
use super::submit_pipe::Submitter;
use super::{now_secs, signals, Failure, Ui};

/// How long the cancel of a queued request may take to be answered.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// The attributes of `req` for a server speaking `server_version`; the
/// inheritance is left out when `send_inheritance` is false.
pub(super) fn request_infos(
    req: &AllocAsk,
    server_version: Option<&str>,
    send_inheritance: bool,
) -> Vec<Info> {
    if send_inheritance || req.attrs.inherit.is_none() {
        return req.attrs.to_infos(server_version);
    }
    let mut attrs = req.attrs.clone();
    attrs.inherit = None;
    attrs.to_infos(server_version)
}

/// Ctrl-C while the request is queued: withdraw it, then exit 130.
fn cancel_queued(s: &Session, req: &AllocAsk, sig: i32, tag: u32, ui: &Ui) -> Failure {
    withdraw(
        s,
        req,
        tag,
        &format!("interrupted by {}", signals::name(sig)),
        ui,
    )
}

/// Withdraw queued request `tag` because of `name` (what ended the wait).
fn withdraw(s: &Session, req: &AllocAsk, tag: u32, name: &str, ui: &Ui) -> Failure {
    s.conn().forget(tag);
    let Some(id) = &req.attrs.req_id else {
        return Failure::interrupted(&format!("{name} while the request was queued"));
    };
    let cancel = [Info::new(keys::ALLOC_REQ_ID, id.as_str())];
    let answer = begin_allocate(s, Directive::ReqCancel, &cancel).and_then(|t| {
        match s
            .conn()
            .await_reply(t, &[], Some(Instant::now() + CANCEL_WAIT))?
        {
            Some(bytes) => decode_alloc_reply(s, Directive::ReqCancel, &bytes).map(Some),
            None => Ok(None),
        }
    });
    match answer {
        Ok(Some(_)) => Failure::interrupted(&format!(
            "{name}: cancelled queued request {id} (PMIX_ALLOC_REQ_CANCEL)"
        )),
        Err(e) => {
            ui.detail(&format!("cancel of {id} answered {e}"));
            Failure::interrupted(&format!(
                "{name}; cancelling queued request {id} was refused: {}",
                e.status.name()
            ))
        }
        Ok(None) => {
            s.conn().shutdown();
            Failure::interrupted(&format!("{name}; no answer to the cancel of request {id}"))
        }
    }
}

fn node_list(v: &Value) -> Vec<String> {
    crate::codec::helpers::value_list(v)
}

/// After an EXTEND, what the DVM now holds for the allocation: all its
/// nodes, its expiry, the time it has left and its rule (the reply names
/// only the nodes added, and the time asked for is an increment, not the
/// limit); on PRRTE master as psched holds them.
pub(super) fn as_the_dvm_has_it(s: &Session, rec: &mut AllocationRecord) {
    let want = crate::ops::status_query::Want {
        reservations: true,
        ..Default::default()
    };
    let mut answers = crate::ops::status_query::status(s, want);
    // PRRTE master keeps no expiry or rule: psched, when it serves the DVM.
    if let Some(sched) = super::status_sched::ask_scheduler(s, &want) {
        super::status_sched::amend(&mut answers, sched);
    }
    let Some(Ok(list)) = answers.reservations else {
        return;
    };
    if let Some(r) = list.iter().find(|r| r.alloc_id == rec.alloc_id) {
        rec.nodes = r.nodes.clone();
        rec.expires_at = r.expires_at;
        rec.time_limit_secs = r.expires_in;
        if let Some(rule) = r.inherit {
            // The rule the reservation has, not the one this EXTEND did
            // not name.
            rec.inherit = rule;
            rec.on_owner_exit = disposition_on_exit(Some(rule), false, &rec.alloc_id);
        }
    }
}

/// What palloc prints for a grant.
pub(super) fn granted_record(
    req: &AllocAsk,
    reply: &AllocReply,
    s: &Session,
    from_application: bool,
) -> AllocationRecord {
    let find = |k: &str| reply.info.iter().find(|i| i.key == k).map(|i| &i.value);
    // What the DVM applied (read as every end reads an allocation's
    // attributes) wins over what was asked (a DVM may ignore
    // PMIX_ALLOC_TARGET or PMIX_ALLOC_SHARE, spec §8.2.1.10).
    let got = AllocAttrs::from_infos(&reply.info);
    let alloc_id = reply
        .alloc_id
        .clone()
        .or_else(|| req.attrs.alloc_id.clone())
        .unwrap_or_else(|| "(unnamed)".into());
    let nodes = got
        .node_list
        .or_else(|| find(keys::NODE_LIST).map(node_list))
        .unwrap_or_else(|| req.attrs.nodes_named().to_vec());
    let time = got.time_secs.or(req.attrs.time_secs).map(u64::from);
    // The expiry the DVM reports wins over one computed from what was asked.
    let remaining = find(keys::TIME_REMAINING).and_then(Value::as_u64);
    let extend = req.directive == Directive::Extend;
    let owner = got
        .target
        .or_else(|| req.attrs.target.clone())
        .or_else(|| (!extend).then(|| s.me().0));
    let share = got.share.unwrap_or(req.attrs.shared());
    // An inheritance the DVM names outside the vocabulary is no rule known.
    let inherit = match got.inherit {
        Some(r) => r.known(),
        None => req.attrs.inheritance(),
    };
    // Through a holder, the namespace is the holder's: it outlives us.
    let via_holder = s.conn().target().holder_of.is_some();
    let owner_is_self =
        !from_application && !via_holder && owner.as_deref() == Some(s.me().0.as_str());
    AllocationRecord {
        alloc_id: alloc_id.clone(),
        request_id: reply
            .request_id
            .clone()
            .or_else(|| req.attrs.req_id.clone()),
        directive: if extend { "extend" } else { "new" }.into(),
        state: "granted".into(),
        nodes,
        time_limit_secs: time,
        expires_at: remaining.or(time).map(|t| now_secs() as u64 + t),
        reserved: !share,
        owner_nspace: owner,
        inherit: inherit.unwrap_or(Inheritance::Default),
        on_owner_exit: disposition_on_exit(inherit, owner_is_self, &alloc_id),
    }
}

fn show_warning(ev: &crate::ops::events::Event, alloc_id: &str, ui: &Ui) {
    let f = EventFields::from_event(ev, now_secs());
    if f.alloc_id.as_deref().is_some_and(|a| a != alloc_id) {
        return;
    }
    if ui.json {
        ui.record(&f.record());
    } else {
        let left = f
            .time_remaining
            .map(|t| crate::render::human::duration(u64::from(t)))
            .unwrap_or_else(|| "little time".into());
        say!(
            "palloc: warning: allocation {alloc_id} expires in {left} \
(extend it: palloc --extend {alloc_id} -t DURATION)"
        );
    }
}

/// What `palloc --hold` says it offers, no more: who can act through it
/// (other shells of the user, only the job's processes for a holder inside
/// a job, or only with the socket named when the registry cannot be used).
fn holding_note(holder: &Holder, id: &str) -> String {
    let tools = format!("`pspawn --target {id}`, `palloc --extend {id}` and `prelease {id}`");
    let who = match (holder.job(), crate::conn::holder::registry()) {
        (Some(job), _) => format!(
            "only processes of job {job} (and this palloc's own) can act through it ({tools}), \
as its owner is that job"
        ),
        (None, Ok(_)) if holder.registered() => {
            format!("from other shells {tools} act through this palloc")
        }
        (None, Err(why)) => format!(
            "{why}: tools in other shells will not find it by its id; set {}={} in them to act \
through it",
            crate::conn::holder::HOLDER_ENV,
            holder.path().display()
        ),
        (None, Ok(_)) => format!(
            "it could not be registered by its id: tools in other shells act through it only with \
{}={} set",
            crate::conn::holder::HOLDER_ENV,
            holder.path().display()
        ),
    };
    format!("holding allocation {id}; {who}; Ctrl-C or SIGTERM ends it")
}

/// `--hold`: keep the allocation (and palloc's namespace) until a signal,
/// relaying the requests of this user's tools that name it from other
/// shells (`pspawn --target ID`, `prelease ID`, `palloc --extend ID`),
/// until the DVM announces the allocation's end (exit 8 when it expired).
pub(super) fn hold(
    s: &Session,
    rec: &mut AllocationRecord,
    give_back: bool,
    submitter: Option<Submitter>,
    ui: &Ui,
    announce: &dyn Fn(&AllocationRecord),
) -> std::result::Result<i32, Failure> {
    let (mut holder, _alias) = share(s, rec, "cannot share the allocation")?;
    announce(rec);
    // Once other shells can reach it, the palloc that started this one
    // (if detached) may print the grant.
    if let Some(sub) = submitter {
        let waited = sub.waited();
        let told = sub.say(&format!(
            "granted {}",
            serde_json::to_string(rec).unwrap_or_default()
        ));
        // Nobody will ever learn this grant's id: give it back.
        if waited && !told {
            drop(holder);
            release_after(s, rec, "the palloc waiting for this grant has gone", ui);
            return Err(Failure::other(rec.on_owner_exit.clone()));
        }
    }
    ui.note(&holding_note(&holder, &rec.alloc_id));
    ui.detail(&format!("holder socket {}", holder.path().display()));
    // Once the allocation has ended, the clients still connected (e.g. the
    // prelease that ended it, with more requests to make) are served until
    // they leave.
    let mut ended = None;
    loop {
        if let Some(sig) = signals::caught() {
            drop(holder);
            if give_back && ended.is_none() {
                release_after(s, rec, &format!("ended by {}", signals::name(sig)), ui);
            }
            return Ok(if sig == Signal::SIGINT as i32 {
                130
            } else {
                128 + sig
            });
        }
        if ended.is_none() && holder.released() {
            rec.on_owner_exit = format!("allocation {} has ended (released)", rec.alloc_id);
            ended = Some(AllocEnd::released());
        }
        if let (Some(end), 0) = (&ended, holder.clients()) {
            return match end.failure(&rec.alloc_id) {
                Some(f) => Err(f),
                None => Ok(end.exit().code()),
            };
        }
        match step(s, Some(&mut holder), None, None) {
            Step::Notify(bytes) => {
                if let Some(end) = notice(s, &bytes, &rec.alloc_id, ui) {
                    rec.on_owner_exit =
                        format!("allocation {} has ended ({})", rec.alloc_id, end.why);
                    ended = Some(end);
                }
            }
            Step::Lost(e) => return Err(Failure::lost(&e)),
            _ => {}
        }
    }
}

/// The holder that lets the user's other shells reach a queued request by
/// its id (`prelease --cancel ID`), started once the DVM has handled the
/// request (the barrier behind it answered), before palloc says it is
/// queued: a request granted at once (pdvm with free nodes) never needs
/// one, and costs no socket, lock file or thread for it.
pub(super) struct QueuedHolder {
    /// The request id it serves; `None`: no holder (a job's own request).
    rid: Option<String>,
    holder: Option<Holder>,
}

impl QueuedHolder {
    /// One for request `rid`, not started yet.
    pub(super) fn new(rid: Option<String>) -> QueuedHolder {
        QueuedHolder { rid, holder: None }
    }

    /// Start it (once) on `conn`.
    fn start(&mut self, conn: &crate::conn::client::Connection) {
        if self.holder.is_none() {
            if let Some(rid) = &self.rid {
                self.holder = Holder::start(conn, rid, HeldBy::Request).ok();
            }
        }
    }
}

/// What palloc's wait for the answer to its request looks after.
pub(super) struct Awaiting<'a> {
    /// The holder serving the queued request (a detached palloc).
    pub(super) holder: Option<&'a mut QueuedHolder>,
    /// The pipe to the palloc that started this one.
    pub(super) submitter: &'a mut Option<Submitter>,
    /// The spinner shown while queued.
    pub(super) spinner: Option<&'a super::ui::Waiting>,
    /// What the request was sent with: sent again when a restarted
    /// scheduler says it lost the request
    /// ([`crate::proto::status::REQUEST_LOST`]).
    pub(super) infos: &'a [Info],
}

/// Wait for the DVM's answer to allocation request `tag` (as long as it
/// stays queued); the outer error is palloc's own failure (no answer,
/// interrupted), the inner result the DVM's answer.
pub(super) fn await_answer(
    s: &Session,
    req: &AllocAsk,
    mut tag: u32,
    w: &mut Awaiting<'_>,
    ui: &Ui,
) -> std::result::Result<crate::error::Result<AllocReply>, Failure> {
    // A barrier behind the request: once it is answered the DVM has handled
    // the request, which is then queued and may wait as long as it takes;
    // until then, a DVM answering neither within the request deadline is
    // stopped or stuck (exit 8), not slow to grant.
    let barrier = crate::ops::query::begin_barrier(s).ok();
    let mut alive_by = barrier.map(|_| Instant::now() + s.timeout());
    if barrier.is_none() {
        if let Some(h) = w.holder.as_deref_mut() {
            h.start(s.conn());
        }
    }
    let clear = || {
        if let Some(pb) = w.spinner {
            pb.finish_and_clear();
        }
    };
    let mut reason = super::queued_request::QueuedReason::default();
    loop {
        if alive_by.is_some_and(|d| Instant::now() >= d) {
            clear();
            s.conn().give_up(tag);
            return Err(Failure::outcome_unknown(
                if req.directive == Directive::Extend {
                    Operation::AllocExtend
                } else {
                    Operation::AllocNew
                },
                &format!(
                    "no answer from the DVM to the allocation request after {} (nor to a query sent behind it); it may be stopped or overloaded",
                    crate::conn::client::seconds(s.timeout())
                ),
            ));
        }
        let waiter = w.submitter.as_ref().and_then(Submitter::waiter);
        let holder = w.holder.as_deref_mut().and_then(|h| h.holder.as_mut());
        match step(s, holder, waiter, alive_by) {
            // The palloc that waits for this grant has gone (killed): the
            // request is withdrawn rather than granted to nobody.
            Step::Child => {
                clear();
                return Err(withdraw(
                    s,
                    req,
                    tag,
                    "the palloc waiting for this grant has gone",
                    ui,
                ));
            }
            Step::Reply(t) if t == tag => match s.conn().take_reply(tag) {
                Some(Ok(bytes)) => return Ok(decode_alloc_reply(s, req.directive, &bytes)),
                Some(Err(e)) => return Ok(Err(e)),
                None => {}
            },
            Step::Reply(t) if Some(t) == barrier => {
                s.conn().forget(t);
                alive_by = None;
                if let Some(h) = w.holder.as_deref_mut() {
                    h.start(s.conn());
                }
                if let Some(sub) = w.submitter.as_ref() {
                    sub.tell("queued");
                }
            }
            Step::Signal => {
                if let Some(sig) = signals::caught() {
                    clear();
                    return Err(cancel_queued(s, req, sig, tag, ui));
                }
            }
            Step::Notify(bytes) => {
                if super::queued_request::lost(s, &bytes, req.attrs.req_id.as_deref()).is_some() {
                    // PRRTE master keeps the request a dead scheduler had
                    // queued for ever: ask the scheduler that came back.
                    s.conn().give_up(tag);
                    tag = resend(s, req, w.infos)?;
                    ui.note("the scheduler restarted and lost this queued request; sent it again");
                } else {
                    reason.on_event(s, &bytes, ui);
                }
            }
            Step::Lost(e) => {
                // The reply may have come just before the end.
                if let Some(Ok(bytes)) = s.conn().take_reply(tag) {
                    return Ok(decode_alloc_reply(s, req.directive, &bytes));
                }
                return Ok(Err(e));
            }
            _ => {}
        }
    }
}

/// Send request `req` again with `infos` (its scheduler lost it): the new
/// tag, or palloc's failure, saying why the request ended.
fn resend(s: &Session, req: &AllocAsk, infos: &[Info]) -> std::result::Result<u32, Failure> {
    begin_allocate(s, req.directive, infos).map_err(|e| {
        Failure::with(
            crate::cli::exit::Exit::OutcomeUnknown,
            Some(e.status),
            format!(
                "the scheduler restarted and lost this queued request, and sending it again failed: {e}; nothing is reserved, ask again"
            ),
        )
    })
}

/// What one turn of palloc's wait brought.
pub(super) enum Step {
    /// A signal was caught (see [`signals::caught`]).
    Signal,
    /// The watched child's descriptor became readable: it has ended.
    Child,
    /// The reply to one of palloc's own pending requests (by tag).
    Reply(u32),
    /// An event notification (already copied to the holder's clients).
    Notify(Vec<u8>),
    /// The connection to the DVM closed.
    Lost(crate::error::Error),
    /// Nothing for the caller (holder work done, other messages passed
    /// on, or the deadline).
    Quiet,
}

/// One turn of palloc's single wait: the DVM connection, the signal
/// self-pipe, the child's pidfd and the holder's sockets. What the DVM sends
/// unasked goes to the holder's clients; their requests are relayed.
pub(super) fn step(
    s: &Session,
    mut holder: Option<&mut Holder>,
    child: Option<BorrowedFd<'_>>,
    deadline: Option<Instant>,
) -> Step {
    use nix::poll::PollFlags;
    let hfds: Vec<RawFd> = holder.as_ref().map(|h| h.fds()).unwrap_or_default();
    let wfds: Vec<RawFd> = holder.as_ref().map(|h| h.write_fds()).unwrap_or_default();
    let take_messages = holder.as_ref().is_none_or(|h| !h.paused());
    let mut extras: Vec<Watched<'_>> = Vec::with_capacity(hfds.len() + wfds.len() + 2);
    let sig = signals::fd();
    if let Some(f) = sig {
        extras.push((f, PollFlags::POLLIN));
    }
    let child_at = child.map(|c| {
        extras.push((c, PollFlags::POLLIN));
        extras.len() - 1
    });
    let holder_from = extras.len();
    for (fd, flags) in hfds
        .iter()
        .map(|f| (f, PollFlags::POLLIN))
        .chain(wfds.iter().map(|f| (f, PollFlags::POLLOUT)))
    {
        // SAFETY: the holder owns these sockets and is not touched until
        // the wait below returns.
        extras.push((unsafe { BorrowedFd::borrow_raw(*fd) }, flags));
    }
    if let Some(h) = holder.as_deref_mut() {
        h.sync_flow(s.conn());
        h.drop_stalled(Instant::now());
    }
    let stall = holder.as_ref().and_then(|h| h.next_stall());
    let deadline = deadline.into_iter().chain(stall).min();
    match s.conn().wait_watching(&extras, deadline, take_messages) {
        Event::Ready(i) => {
            if sig.is_some() && i == 0 {
                signals::drain();
                return Step::Signal;
            }
            if Some(i) == child_at {
                return Step::Child;
            }
            if let Some(h) = holder.as_deref_mut() {
                let k = i - holder_from;
                match (hfds.get(k), wfds.get(k.wrapping_sub(hfds.len()))) {
                    (Some(fd), _) => h.on_ready(*fd, s.conn()),
                    (None, Some(fd)) => h.on_writable(*fd),
                    _ => {}
                }
            }
            Step::Quiet
        }
        Event::Reply(tag) => match holder {
            Some(h) if h.owns(tag) => {
                h.on_reply(tag, s.conn());
                Step::Quiet
            }
            _ => Step::Reply(tag),
        },
        Event::Message(m) => match m {
            Unsolicited::Notify(bytes) => {
                let claimed = holder.is_some_and(|h| h.route(TAG_NOTIFY, bytes.clone()));
                if claimed {
                    Step::Quiet
                } else {
                    Step::Notify(bytes)
                }
            }
            Unsolicited::Iof(bytes) => {
                if let Some(h) = holder {
                    h.route(TAG_IOF, bytes);
                }
                Step::Quiet
            }
            Unsolicited::Other(..) => Step::Quiet,
            Unsolicited::Closed(e) => {
                if let Some(h) = holder {
                    h.close_all();
                }
                Step::Lost(e)
            }
        },
        Event::Deadline => Step::Quiet,
    }
}

/// A notification palloc looks at: a timeout warning for `alloc_id` is
/// shown; the end of `alloc_id` is returned.
pub(super) fn notice(s: &Session, bytes: &[u8], alloc_id: &str, ui: &Ui) -> Option<AllocEnd> {
    let ev = decode_notification(&mut s.decoder(bytes)).ok()?;
    if launch::is_warning(&ev) {
        show_warning(&ev, alloc_id, ui);
        return None;
    }
    if super::source_outage::on_event(s, bytes, ui) {
        return None;
    }
    if let Some(text) = super::alloc_end::nodes_lost(&ev, alloc_id) {
        if ui.json {
            ui.record(&EventFields::from_event(&ev, now_secs()).record());
        } else {
            say!("palloc: allocation {alloc_id}: {text}");
        }
        return None;
    }
    AllocEnd::of_event(&ev, alloc_id, now_secs())
}

/// Start the holder that shares allocation `rec` with this user's other
/// tools; its request id names it too (`pspawn --target REQ_ID`, `prelease
/// REQ_ID` once granted) while the alias is kept.
pub(super) fn share(
    s: &Session,
    rec: &AllocationRecord,
    what: &str,
) -> std::result::Result<(Holder, Option<crate::conn::holder::Alias>), Failure> {
    let mut holder = Holder::start(s.conn(), &rec.alloc_id, HeldBy::Alloc)
        .map_err(|e| Failure::from_error(what, &e))?;
    // Inside a job, the job's other processes (other ranks) act through
    // the holder too: it learns them from the DVM's process table. Not
    // asked of a PMIx 4 server: OpenPMIx 4.2.2 drops the client when its
    // host answers that query with nothing (its reply fails to pack), and
    // the holder would lose the DVM; there, only the job process palloc
    // runs under and its descendants act through the holder.
    let recent =
        crate::proto::PmixVersion::of(s.server_version()) >= crate::proto::PmixVersion::new(5, 0);
    if recent && matches!(s.conn().identity(), crate::conn::Identity::Client { .. }) {
        let me = s.me().0;
        if let Ok(procs) =
            crate::ops::query::proc_table_within(s, &me, crate::ops::job::END_CHECK_WAIT)
        {
            let pids: Vec<u32> = procs.iter().map(|p| p.pid).collect();
            holder.know_job_processes(&pids);
        }
    }
    let alias = rec
        .request_id
        .as_deref()
        .and_then(|r| holder.alias(s.conn(), r));
    Ok((holder, alias))
}

/// CMD ended: give the allocation back to the scheduler, as salloc does.
pub(super) fn release_after(s: &Session, rec: &mut AllocationRecord, why: &str, ui: &Ui) {
    // A scheduler known to be down would leave the release unanswered
    // until it returns (P17): palloc leaves without it, and its own rule
    // (CHILD, palloc's choice whenever it gives back) ends the allocation.
    if let Some(down) = super::sched_down::scheduler_down(s) {
        rec.on_owner_exit = format!(
            "{why}: allocation {} not released through the scheduler ({down}); it ends as this \
palloc leaves (rule child), and psched frees its nodes (on Slurm its watchdog ends the Slurm job)",
            rec.alloc_id
        );
        return;
    }
    let release = [Info::new(keys::ALLOC_ID, rec.alloc_id.as_str())];
    match allocate(s, Directive::Release, &release) {
        Ok(_) => {
            rec.on_owner_exit = format!(
                "{why}: released allocation {} (its nodes go back to the scheduler)",
                rec.alloc_id
            )
        }
        Err(e) if e.status == Status::ERR_NOT_FOUND => {
            rec.on_owner_exit = format!(
                "{why}; allocation {} had already ended (its time limit was reached, or \
it was released)",
                rec.alloc_id
            )
        }
        Err(e) => ui.warn(&format!(
            "{why}, but releasing allocation {} was refused: {e}",
            rec.alloc_id
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infos_carry_every_flag_in_wire_form() {
        let req = AllocAsk {
            directive: Directive::New,
            attrs: crate::codec::alloc::every_attribute(),
        };
        let v = request_infos(&req, Some("5.0.11"), true);
        let get = |k: &str| v.iter().find(|i| i.key == k).map(|i| i.value.clone());
        assert_eq!(get(keys::ALLOC_NUM_NODES), Some(Value::Uint64(2)));
        assert_eq!(get(keys::ALLOC_NODE_LIST), Some(Value::from("n1,n2")));
        assert_eq!(get(keys::ALLOC_EXCLUDE), Some(Value::from("n3")));
        assert_eq!(get(keys::ALLOC_NUM_CPUS), Some(Value::Uint64(8)));
        assert_eq!(get(keys::ALLOC_MEM_SIZE), Some(Value::Float(512.0)));
        assert_eq!(get(keys::ALLOC_TIME), Some(Value::from("0:01:00:00")));
        assert_eq!(get(keys::ALLOC_QUEUE), Some(Value::from("q")));
        assert_eq!(get(keys::ALLOC_ACCOUNT), Some(Value::from("phys")));
        assert_eq!(get(keys::ALLOC_CONSTRAINT), Some(Value::from("gpu&ib")));
        assert_eq!(get(keys::ALLOC_QOS), None);
        assert_eq!(get(keys::ALLOC_REQ_ID), Some(Value::from("r1")));
        assert_eq!(get(keys::ALLOC_TARGET), Some(Value::from("job@1")));
        assert_eq!(get(keys::ALLOC_SHARE), Some(Value::Bool(true)));
        assert_eq!(
            get(keys::ALLOC_INHERITANCE),
            Some(Value::AllocInherit(crate::codec::AllocInheritance::CHILD))
        );
        assert_eq!(get(keys::ALLOC_WARN_TIMEOUT), Some(Value::Uint32(60)));
        let old = request_infos(&req, Some("4.2.2"), false);
        assert!(old.iter().all(|i| i.key != keys::ALLOC_INHERITANCE));
        assert!(old
            .iter()
            .any(|i| i.key == keys::ALLOC_TIME && i.value == Value::Uint32(3600)));
    }
}
