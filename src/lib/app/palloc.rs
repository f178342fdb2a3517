//! `palloc`: request an allocation (NEW, or EXTEND), say what was granted
//! and what becomes of it when palloc ends; optionally hold it until a
//! signal, or run a command inside it.

use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use crate::cli::exit::{Exit, Operation};
use crate::cli::palloc::disposition_on_exit;
use crate::cli::request::AllocAsk;
use crate::cli::PallocArgs;
use crate::codec::{Info, Value};
use crate::conn::client::{Event, Watched};
use crate::conn::frame::{TAG_IOF, TAG_NOTIFY};
use crate::conn::holder::{HeldBy, Holder, HOLDER_ENV};
use crate::conn::Unsolicited;
use crate::ops::alloc::{allocate, begin_allocate, decode_alloc_reply, AllocReply};
use crate::ops::events::decode_notification;
use crate::ops::Session;
use crate::proto::keys;
use crate::proto::status::Status;
use crate::proto::{AllocAttrs, Directive, Inheritance};
use crate::render::{AllocationRecord, BatchStop};
use nix::sys::signal::Signal;

use super::alloc_end::AllocEnd;
use super::events::EventFields;
use super::launch;
use super::palloc_batch::Batch;
pub use super::palloc_detach::adopt_inherited_pipe;
use super::palloc_detach::Submitter;
use super::{now_secs, signals, Failure, Ui};

/// How long the cancel of a queued request may take to be answered.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// Run palloc; returns the exit code.
pub fn run(args: &PallocArgs) -> i32 {
    let ui = Ui::new("palloc", &args.output());
    match run_inner(args, &ui) {
        Ok(code) => code,
        Err(f) => ui.fail(&f),
    }
}

/// The request id palloc sends with a NEW when the user gave none, so the
/// request can be cancelled and named: `palloc-<pid>-<millis>`.
pub fn generated_request_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("palloc-{}-{ms}", std::process::id())
}

/// The attributes of `req` for a server speaking `server_version`; the
/// inheritance is left out when `send_inheritance` is false.
pub fn request_infos(
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

/// Whether palloc will surely act as a tool, known before connecting: a
/// server or the tool identity is named, or no job (nor `palloc -- CMD`'s
/// holder, whose identity decides) is in the environment.
pub(super) fn acts_as_tool(args: &PallocArgs) -> bool {
    let c = &args.connect;
    let named = c.as_tool
        || c.uri.is_some()
        || c.pid.is_some()
        || c.nspace.is_some()
        || c.system_server_first
        || c.system_server_only;
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    named || (!set("PMIX_NAMESPACE") && !set(HOLDER_ENV))
}

/// Whether palloc was typed at a terminal outside any job: stdin and
/// stdout are terminals and no job's namespace is in the environment.
pub fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::env::var_os("PMIX_NAMESPACE").is_none_or(|v| v.is_empty())
}

fn run_inner(args: &PallocArgs, ui: &Ui) -> std::result::Result<i32, Failure> {
    super::palloc_flow::run(args, ui)
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
pub fn granted_record(
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

/// What palloc's wait for the answer to its request looks after.
pub(super) struct Awaiting<'a> {
    /// The holder serving the queued request (a detached palloc).
    pub(super) holder: Option<&'a mut Holder>,
    /// The pipe to the palloc that started this one.
    pub(super) submitter: &'a mut Option<Submitter>,
    /// The spinner shown while queued.
    pub(super) spinner: Option<&'a super::ui::Waiting>,
}

/// Wait for the DVM's answer to allocation request `tag` (as long as it
/// stays queued); the outer error is palloc's own failure (no answer,
/// interrupted), the inner result the DVM's answer.
pub(super) fn await_answer(
    s: &Session,
    req: &AllocAsk,
    tag: u32,
    w: &mut Awaiting<'_>,
    ui: &Ui,
) -> std::result::Result<crate::error::Result<AllocReply>, Failure> {
    // A barrier behind the request: once it is answered the DVM has handled
    // the request, which is then queued and may wait as long as it takes;
    // until then, a DVM answering neither within the request deadline is
    // stopped or stuck (exit 8), not slow to grant.
    let barrier = crate::ops::query::begin_barrier(s).ok();
    let mut alive_by = barrier.map(|_| Instant::now() + s.timeout());
    let clear = || {
        if let Some(pb) = w.spinner {
            pb.finish_and_clear();
        }
    };
    let mut reason = super::palloc_queued::QueuedReason::default();
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
        match step(s, w.holder.as_deref_mut(), waiter, alive_by) {
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
            Step::Notify(bytes) => reason.on_event(s, &bytes, ui),
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
fn notice(s: &Session, bytes: &[u8], alloc_id: &str, ui: &Ui) -> Option<AllocEnd> {
    let ev = decode_notification(&mut s.decoder(bytes)).ok()?;
    if launch::is_warning(&ev) {
        show_warning(&ev, alloc_id, ui);
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

/// A descriptor that becomes readable when process `pid` (our child) ends
/// (pidfd_open(2)); `None` on kernels without it.
fn pidfd(pid: u32) -> Option<std::os::fd::OwnedFd> {
    let pid = i32::try_from(pid).ok().filter(|&p| p != 0)?;
    crate::conn::pidfd::open(nix::unistd::Pid::from_raw(pid)).ok()
}

/// Wait until one of `fds` is readable or `deadline` passes (the DVM
/// connection is gone, only the child and signals are left to watch).
fn wait_fds(fds: &[BorrowedFd<'_>], deadline: Option<Instant>) {
    let _ = crate::conn::client::poll_readable(fds, deadline);
}

/// How often the end of a child is looked for on a kernel without pidfds.
const NO_PIDFD_CHECK: Duration = Duration::from_millis(250);

/// Start the holder that shares allocation `rec` with this user's other
/// tools; its request id names it too (`pspawn --target REQ_ID`, `prelease
/// REQ_ID` once granted) while the alias is kept.
fn share(
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

/// Start `cmd` with the allocation's id and its holder's socket in its
/// environment; when it cannot start, the allocation is given back (if
/// `give_back`) and the failure has a shell's status (127: not found).
fn start_command(
    s: &Session,
    rec: &mut AllocationRecord,
    cmd: &[String],
    (holder, output): (
        &std::path::Path,
        Option<(std::process::Stdio, std::process::Stdio)>,
    ),
    give_back: bool,
    ui: &Ui,
) -> std::result::Result<std::process::Child, Failure> {
    use std::os::unix::process::CommandExt;
    let program = &cmd[0];
    let mut command = std::process::Command::new(program);
    if let Some((out, err)) = output {
        command.stdout(out).stderr(err);
    }
    command
        .args(&cmd[1..])
        .env("PMIX_ALLOC_ID", &rec.alloc_id)
        .env(HOLDER_ENV, holder);
    // The granted nodes, as SLURM_JOB_NODELIST / SLURM_JOB_NUM_NODES: a
    // script writes its host file without asking the DVM again.
    if rec.nodes.is_empty() {
        command.env_remove(NODELIST_ENV).env_remove(NUM_NODES_ENV);
    } else {
        command
            .env(NODELIST_ENV, rec.nodes.join(","))
            .env(NUM_NODES_ENV, rec.nodes.len().to_string());
    }
    // A batch script leads a process group of its own, so stopping it
    // stops everything it started.
    if std::env::var_os(super::palloc_batch::LOG_ENV).is_some() {
        command
            .env_remove(super::palloc_batch::LOG_ENV)
            .process_group(0);
    }
    let spawned = command.spawn();
    spawned.map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        if give_back {
            release_after(s, rec, &format!("{program} ended"), ui);
        }
        Failure::with(
            Exit::Command(code),
            None,
            format!("cannot run `{program}`: {e}"),
        )
    })
}

/// CMD's environment: the granted nodes, comma-separated.
pub const NODELIST_ENV: &str = "PMIX_ALLOC_NODELIST";
/// CMD's environment: how many nodes were granted.
pub const NUM_NODES_ENV: &str = "PMIX_ALLOC_NUM_NODES";

/// A process's status as a shell gives it (128+N for signal N).
fn shell_status(st: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code()
        .or_else(|| st.signal().map(|n| 128 + n))
        .unwrap_or(1)
}

/// `-- CMD`: run CMD as a local process (the caller's environment,
/// directory, stdin and terminal, as `salloc` does) while palloc holds the
/// allocation and relays the requests of the tools CMD runs (see
/// [`crate::conn::holder`]); then give the allocation back unless a
/// child-flavoured rule or `--keep` says otherwise. Returns CMD's status.
pub(super) fn run_command(
    s: &Session,
    rec: &mut AllocationRecord,
    cmd: &[String],
    give_back: bool,
    ui: &Ui,
    announce: &dyn Fn(&AllocationRecord),
) -> std::result::Result<i32, Failure> {
    let program = cmd
        .first()
        .ok_or_else(|| Failure::other("no command to run"))?;
    let (mut holder, _alias) = share(s, rec, "cannot share the allocation with the command")?;
    announce(rec);
    // `palloc --no-wait -- SCRIPT`: the script is stopped when its
    // allocation ends, and how it ended is written to its log; its record
    // is written before it starts.
    let batch_run = std::env::var_os(super::palloc_batch::LOG_ENV).is_some();
    let mut starting = batch_run.then(|| Batch::starting(&s.conn().target().uri.nspace, rec, cmd));
    let output = starting.as_mut().and_then(|b| b.output());
    let mut child = match start_command(s, rec, cmd, (holder.path(), output), give_back, ui) {
        Ok(c) => c,
        Err(f) => {
            if let Some(b) = starting {
                b.failed();
            }
            return Err(f);
        }
    };
    let mut batch = starting.map(|b| b.running_as(child.id()));
    ui.detail(&format!(
        "running {program} (pid {}) in allocation {}; its tools act through palloc",
        child.id(),
        rec.alloc_id
    ));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let child_fd = pidfd(child.id());
    let forward_int = !std::io::IsTerminal::is_terminal(&std::io::stdin());
    // The DVM's loss: the error, and when CMD, told with SIGTERM, is killed.
    let mut dvm_lost: Option<(crate::error::Error, Instant)> = None;
    let mut ended: Option<AllocEnd> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Ok(st),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
        if let Some(sig) = signals::take_new() {
            // A terminal's Ctrl-C already reached CMD (same process group).
            if sig != Signal::SIGINT as i32 || forward_int {
                if let Ok(sig) = nix::sys::signal::Signal::try_from(sig) {
                    match batch.as_mut() {
                        Some(b)
                            if matches!(sig, Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP) =>
                        {
                            b.stop(BatchStop::Signalled)
                        }
                        Some(b) => b.forward(sig),
                        None => {
                            let _ = nix::sys::signal::kill(pid, sig);
                        }
                    }
                }
            }
        }
        if let Some(b) = batch.as_mut() {
            if holder.released() && ended.is_none() {
                b.stop(BatchStop::Released);
                rec.on_owner_exit = format!("allocation {} has ended (released)", rec.alloc_id);
                ended = Some(AllocEnd::released());
            }
            b.kill_due();
        }
        let kill_at = batch.as_ref().and_then(Batch::kill_at);
        let deadline = child_fd
            .is_none()
            .then(|| Instant::now() + NO_PIDFD_CHECK)
            .into_iter()
            .chain(kill_at)
            .min();
        let child_watch = child_fd.as_ref().map(|f| f.as_fd());
        if let Some((_, kill_at)) = &dvm_lost {
            if Instant::now() >= *kill_at {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            }
            let fds: Vec<BorrowedFd<'_>> = signals::fd().into_iter().chain(child_watch).collect();
            let wake = deadline.map_or(*kill_at, |d| d.min(*kill_at));
            wait_fds(&fds, Some(wake.max(Instant::now() + NO_PIDFD_CHECK / 10)));
            signals::drain();
            continue;
        }
        match step(s, Some(&mut holder), child_watch, deadline) {
            Step::Notify(bytes) => {
                if let Some(end) = notice(s, &bytes, &rec.alloc_id, ui) {
                    if let Some(b) = batch.as_mut() {
                        b.stop(if end.expired {
                            BatchStop::TimeLimit
                        } else if holder.released() {
                            BatchStop::Released
                        } else {
                            BatchStop::Ended
                        });
                    }
                    ui.warn(&format!(
                        "allocation {} has ended ({}) while {program} runs",
                        rec.alloc_id, end.why
                    ));
                    rec.on_owner_exit = format!(
                        "{program} ended; allocation {} had already ended ({})",
                        rec.alloc_id, end.why
                    );
                    ended = Some(end);
                }
            }
            Step::Lost(e) => {
                // The allocation is gone with the DVM: CMD is stopped, as
                // salloc stops its command when the allocation is revoked.
                match batch.as_mut() {
                    Some(b) => b.stop(BatchStop::Ended),
                    None => {
                        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
                    }
                }
                dvm_lost = Some((e, Instant::now() + LOST_GRACE));
            }
            _ => {}
        }
    };
    drop(holder);
    let (code, st) = match status {
        Ok(st) => (shell_status(st), st),
        Err(e) => return Err(Failure::other(format!("waiting for {program}: {e}"))),
    };
    if let Some((e, _)) = dvm_lost {
        if let Some(b) = batch {
            b.ended(st);
        }
        rec.on_owner_exit = format!(
            "the DVM has gone: allocation {} is gone with it",
            rec.alloc_id
        );
        let mut f = Failure::lost(&e);
        f.message = format!(
            "lost the DVM while {program} ran ({}); {program} was stopped (it exited with {code})",
            e.context
        );
        return Err(f);
    }
    if give_back && ended.is_none() {
        release_after(s, rec, &format!("{program} ended"), ui);
    }
    // A batch log ends with how the script ended (said here, after what
    // became of the allocation, so it is the last line).
    if let Some(b) = batch {
        ui.note(&std::mem::take(&mut rec.on_owner_exit));
        b.ended(st);
    }
    // CMD's own failure wins; a CMD that succeeded in an allocation its
    // node source ended reports that end (salloc's revoked allocation).
    match ended.and_then(|e| e.failure(&rec.alloc_id)) {
        Some(mut f) if code == 0 => {
            f.message = format!("{program} exited 0, but {}", f.message);
            Err(f)
        }
        _ => Ok(code),
    }
}

/// How long CMD has to end after SIGTERM once the DVM has gone, before
/// SIGKILL.
const LOST_GRACE: Duration = Duration::from_secs(1);

/// CMD ended: give the allocation back to the scheduler, as salloc does.
fn release_after(s: &Session, rec: &mut AllocationRecord, why: &str, ui: &Ui) {
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

    #[test]
    fn generated_ids_are_distinct_per_process() {
        assert!(generated_request_id().starts_with(&format!("palloc-{}-", std::process::id())));
    }
}
