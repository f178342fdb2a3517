//! `palloc`: request an allocation (NEW, or EXTEND), say what was granted
//! and what becomes of it when palloc ends; optionally hold it until a
//! signal, or run a command inside it.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::exit::{AttrsPresent, Exit, Operation};
use crate::cli::palloc::disposition_on_exit;
use crate::cli::parse::Inheritance;
use crate::cli::request::{directive, AllocRequest};
use crate::cli::{PallocArgs, PallocMode};
use crate::codec::{dt, AllocInheritance, Info, Value};
use crate::conn::frame::{TAG_IOF, TAG_NOTIFY};
use crate::conn::holder::{Holder, HOLDER_ENV};
use crate::conn::{Identity, Unsolicited};
use crate::error::Result;
use crate::ops::alloc::{alloc_time_value, allocate, parse_alloc_time, AllocReply};
use crate::ops::events::{decode_notification, register};
use crate::ops::{keys, Session};
use crate::render::human::allocation_line;
use crate::render::{AllocationRecord, ExitRecord, RequestRecord};
use crate::status::Status;

use super::events::EventFields;
use super::launch;
use super::{connect_for, finish, now_secs, signals, Failure, Ui};

/// How long a queued request may wait for its grant.
const QUEUE_WAIT: Duration = Duration::from_secs(30 * 86_400);
/// How often a loop that waits on a child looks at the signal flags.
const SIGNAL_TICK: Duration = Duration::from_millis(100);
/// How long `--no-wait` listens for an immediate refusal after printing the id.
const NO_WAIT_GRACE: Duration = Duration::from_millis(300);

/// Run palloc; returns the exit code.
pub fn run(args: &PallocArgs) -> i32 {
    let ui = Ui::new("palloc", &args.output());
    signals::install();
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
    req: &AllocRequest,
    server_version: Option<&str>,
    send_inheritance: bool,
) -> Vec<Info> {
    let mut v = Vec::new();
    if let Some(n) = req.nodes {
        v.push(Info::new(keys::ALLOC_NUM_NODES, n));
    }
    if !req.nodelist.is_empty() {
        v.push(Info::new(keys::ALLOC_NODE_LIST, req.nodelist.join(",")));
    }
    if !req.exclude.is_empty() {
        v.push(Info::new(keys::ALLOC_EXCLUDE, req.exclude.join(",")));
    }
    if let Some(c) = req.cpus {
        v.push(Info::new(keys::ALLOC_NUM_CPUS, c));
    }
    if let Some(m) = req.mem_mb {
        v.push(Info::new(keys::ALLOC_MEM_SIZE, Value::Float(m)));
    }
    if let Some(t) = req.time_secs {
        v.push(Info::new(
            keys::ALLOC_TIME,
            alloc_time_value(server_version, t),
        ));
    }
    if let Some(q) = &req.queue {
        v.push(Info::new(keys::ALLOC_QUEUE, q.as_str()));
    }
    if let Some(a) = &req.alloc_id {
        v.push(Info::new(keys::ALLOC_ID, a.as_str()));
    }
    if let Some(r) = &req.request_id {
        v.push(Info::new(keys::ALLOC_REQ_ID, r.as_str()));
    }
    if let Some(t) = &req.target {
        v.push(Info::new(keys::ALLOC_TARGET, t.as_str()));
    }
    if req.share {
        v.push(Info::new(keys::ALLOC_SHARE, true));
    }
    if let (Some(code), true) = (req.inherit, send_inheritance) {
        v.push(Info::new(
            keys::ALLOC_INHERITANCE,
            Value::AllocInherit(AllocInheritance(code)),
        ));
    }
    if let Some(w) = req.warn_timeout {
        v.push(Info::new(keys::ALLOC_WARN_TIMEOUT, Value::Uint32(w)));
    }
    v
}

fn inherit_word(code: Option<u8>) -> &'static str {
    code.and_then(Inheritance::from_code)
        .unwrap_or(Inheritance::Default)
        .word()
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
    let mut req = args.request();
    let shell = std::env::var("SHELL").ok();
    let mode = args.mode_at(interactive(), shell.as_deref());
    let opens_shell = args.command.is_empty() && matches!(mode, PallocMode::Run(_));
    if req.directive == directive::NEW && req.request_id.is_none() {
        req.request_id = Some(generated_request_id());
    }
    let mut s = connect_for(&args.connect, ui, req.alloc_id.as_deref())?;
    let from_application = matches!(s.conn().identity(), Identity::Client { .. });
    let attrs = AttrsPresent {
        target: req.target.is_some(),
        from_application,
        alloc_id: req.alloc_id.is_some(),
        req_id: req.request_id.is_some(),
        non_default_inheritance: req
            .inherit
            .is_some_and(|c| c != Inheritance::Default.code()),
        spawn_target: false,
    };
    let op = if req.directive == directive::EXTEND {
        Operation::AllocExtend
    } else {
        Operation::AllocNew
    };
    // Outside a job, a tool's request dies with its namespace: a request
    // that must outlive this palloc (as sbatch's does) is handed to a
    // detached palloc that waits for it and then holds the grant.
    if mode == PallocMode::NoWait && !from_application && req.directive == directive::NEW {
        finish(s);
        return submit_detached(args, &req, ui);
    }

    // PMIX_ALLOC_INHERITANCE needs wire type 75, which a v41 server lacks.
    let mut send_inheritance = req.inherit.is_some();
    if send_inheritance && !s.wire().supports(dt::ALLOC_INHERIT) {
        if req.inherit == Some(Inheritance::Default.code()) {
            ui.detail("--inherit default is this DVM's behaviour already; not sending it");
            send_inheritance = false;
        } else {
            let msg = format!(
                "this DVM's PMIx ({}) cannot carry PMIX_ALLOC_INHERITANCE; --inherit needs a DVM with \
reservation support (nothing was sent)",
                s.wire().name()
            );
            finish(s);
            return Err(Failure::with(
                Exit::NotSupported,
                Some("PMIX_ERR_NOT_SUPPORTED"),
                msg,
            ));
        }
    }
    // A TARGET must name a live namespace (the owner), or the nodes would be
    // stranded: refuse before anything is reserved.
    if let (Some(t), false, true) = (
        &req.target,
        from_application,
        req.directive == directive::NEW,
    ) {
        if crate::ops::alloc::target_is_live(&s, t) == Some(false) {
            finish(s);
            return Err(Failure::with(
                Exit::NotFound,
                Some("PMIX_ERR_NOT_FOUND"),
                format!(
                    "--target {t} names no live namespace of this DVM (the owning namespace must \
exist, spec §8.2.1.7); nothing was reserved. List the live ones with `pwatch --status --what namespaces`"
                ),
            ));
        }
    }
    let infos = request_infos(&req, s.server_version(), send_inheritance);

    // Warnings for this allocation go to the requester: listen before asking.
    if matches!(mode, PallocMode::Hold | PallocMode::Run(_)) {
        if let Err(e) = register(
            &s,
            &[Status::ALLOC_TIMEOUT_WARNING, Status::EVENT_SESSION_END],
            &[Info::new(keys::EVENT_HDLR_NAME, "palloc-timeout-warning")],
        ) {
            ui.detail(&format!("cannot register for timeout warnings: {e}"));
        }
    }
    s.set_timeout(QUEUE_WAIT);
    let mut s = Arc::new(s);
    let (tx, rx) = mpsc::channel::<Result<AllocReply>>();
    let worker = {
        let s = Arc::clone(&s);
        let d = req.directive;
        std::thread::spawn(move || {
            let _ = tx.send(allocate(&s, d, &infos));
        })
    };

    if mode == PallocMode::NoWait {
        ui.record(&RequestRecord {
            request_id: req.request_id.clone(),
            state: "accepted".into(),
        });
        if let Some(r) = &req.request_id {
            ui.result(r);
        }
        // Report an immediate refusal; otherwise leave the request queued.
        return match rx.recv_timeout(NO_WAIT_GRACE) {
            Ok(Err(e)) => Err(Failure::refused(op, &attrs, &e)),
            Ok(Ok(reply)) => {
                let rec = granted_record(&req, &reply, &s, from_application);
                ui.record(&rec);
                ui.note(&allocation_line(&rec));
                Ok(0)
            }
            Err(_) => Ok(0),
        };
    }

    // While a detached palloc's request is queued, other shells of the user
    // reach it by the request id (`prelease --cancel ID`).
    let queued_holder = match (&mode, from_application, &req.request_id) {
        (PallocMode::Hold, false, Some(rid)) => Holder::start(s.shared_conn(), rid).ok(),
        _ => None,
    };
    let spinner = ui.queued(req.request_id.as_deref());
    let reply = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(r) => break r,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(crate::error::Error::new(
                    Status::ERR_LOST_CONNECTION,
                    "the request was lost",
                ))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(sig) = signals::caught() {
            if let Some(pb) = &spinner {
                pb.finish_and_clear();
            }
            return Err(cancel_queued(&s, &req, sig, ui));
        }
    };
    drop(queued_holder);
    if let Some(pb) = spinner {
        pb.finish_and_clear();
    }
    let _ = worker.join();
    // Only the queued request may wait that long; later requests (spawn,
    // registration) get the usual reply time-out again.
    if let Some(sess) = Arc::get_mut(&mut s) {
        sess.set_timeout(crate::ops::session::DEFAULT_TIMEOUT);
    }
    let reply = match reply {
        Ok(r) => r,
        Err(e) => {
            close(s);
            return Err(Failure::refused(op, &attrs, &e));
        }
    };
    let mut rec = granted_record(&req, &reply, &s, from_application);
    ui.record(&rec);
    if args.parsable {
        ui.result(&rec.alloc_id);
    } else {
        ui.result(&allocation_line(&rec));
    }
    if opens_shell {
        if let PallocMode::Run(cmd) = &mode {
            ui.note(&format!(
                "starting {} inside allocation {}; exit it to give the allocation back",
                cmd[0], rec.alloc_id
            ));
        }
    }
    let code = match mode {
        PallocMode::Print | PallocMode::NoWait => Ok(0),
        PallocMode::Hold => hold(&s, &mut rec, ui),
        PallocMode::Run(cmd) => run_command(&s, &mut rec, &cmd, args.keep, ui),
    };
    let code = match code {
        Ok(c) => c,
        Err(f) => {
            ui.note(&rec.on_owner_exit);
            close(s);
            return Err(f);
        }
    };
    ui.note(&rec.on_owner_exit);
    // A plain grant is one JSON document; --hold and -- CMD stream records.
    if !matches!(args.mode(), PallocMode::Print) || opens_shell {
        ui.record(&ExitRecord {
            exit_code: code,
            alloc_id: Some(rec.alloc_id.clone()),
            on_owner_exit: Some(rec.on_owner_exit.clone()),
        });
    }
    close(s);
    Ok(code)
}

/// `--no-wait` outside a job: start `palloc … --hold` for the same request,
/// detached from this terminal (its own session, no stdio), print the
/// request id and return. The detached palloc waits for the grant (its
/// queued request can be cancelled from any shell of the user with
/// `prelease --cancel ID`), then holds the allocation until it is released
/// or expires.
fn submit_detached(
    args: &PallocArgs,
    req: &AllocRequest,
    ui: &Ui,
) -> std::result::Result<i32, Failure> {
    use std::os::unix::process::CommandExt;
    let rid = req.request_id.clone().unwrap_or_else(generated_request_id);
    let exe = std::env::current_exe()
        .map_err(|e| Failure::other(format!("cannot find palloc's own program: {e}")))?;
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|a| a != "--no-wait")
        .collect();
    argv.push("--hold".into());
    if args.request_id.is_none() {
        argv.push("--request-id".into());
        argv.push(rid.clone().into());
    }
    // Its output goes to a log in the user's private holder directory.
    let log_path = crate::conn::holder::registry_dir()
        .map(|d| d.join(format!("palloc.{}.log", rid.replace('/', "_"))));
    let log = log_path
        .as_ref()
        .and_then(|p| std::fs::File::create(p).ok());
    let (out, err) = match &log {
        Some(f) => (
            f.try_clone()
                .map(Into::into)
                .unwrap_or(std::process::Stdio::null()),
            f.try_clone()
                .map(Into::into)
                .unwrap_or(std::process::Stdio::null()),
        ),
        None => (std::process::Stdio::null(), std::process::Stdio::null()),
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.args(&argv)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err);
    // SAFETY: setsid is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Failure::other(format!("cannot start the detached palloc: {e}")))?;
    ui.record(&RequestRecord {
        request_id: Some(rid.clone()),
        state: "submitted".into(),
    });
    ui.result(&rid);
    // An immediate refusal (a DVM without reservations, a bad request) is
    // reported here; anything later is in the log.
    let until = std::time::Instant::now() + NO_WAIT_GRACE;
    while std::time::Instant::now() < until {
        if let Ok(Some(st)) = child.try_wait() {
            let said = log_path
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .unwrap_or_default();
            let why = said
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("palloc: "))
                .unwrap_or("the detached palloc ended at once")
                .to_string();
            let code = st.code().unwrap_or(1);
            let status = why
                .split_whitespace()
                .find(|w| w.starts_with("PMIX_"))
                .map(|w| w.trim_end_matches([',', '.', ':', ';']).to_string());
            return Err(Failure::with(
                Exit::Command(code),
                status.as_deref(),
                format!("request {rid} was refused: {why}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    ui.note(&format!(
        "request {rid} is held by a detached palloc (pid {}{}): `pwatch --event alloc --request-id {rid}` \
shows its grant, `prelease --cancel {rid}` withdraws it, and once granted `prelease ID` gives it back",
        child.id(),
        log_path
            .map(|p| format!(", log {}", p.display()))
            .unwrap_or_default()
    ));
    Ok(0)
}

/// Finalize the session once no other thread holds it.
fn close(s: Arc<Session>) {
    if let Ok(s) = Arc::try_unwrap(s) {
        finish(s);
    }
}

/// Ctrl-C while the request is queued: withdraw it, then exit 130.
fn cancel_queued(s: &Session, req: &AllocRequest, sig: i32, ui: &Ui) -> Failure {
    let name = signals::name(sig);
    let Some(id) = &req.request_id else {
        return Failure::interrupted(&format!(
            "interrupted by {name} while the request was queued"
        ));
    };
    let (tx, rx) = mpsc::channel();
    let cancel = [Info::new(keys::ALLOC_REQ_ID, id.as_str())];
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let _ = tx.send(allocate(s, directive::REQ_CANCEL, &cancel));
        });
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Ok(_)) => Failure::interrupted(&format!(
                "interrupted by {name}: cancelled queued request {id} (PMIX_ALLOC_REQ_CANCEL)"
            )),
            Ok(Err(e)) => {
                ui.detail(&format!("cancel of {id} answered {e}"));
                Failure::interrupted(&format!(
                    "interrupted by {name}; cancelling queued request {id} was refused: {}",
                    e.status.name()
                ))
            }
            Err(_) => {
                s.conn().shutdown();
                Failure::interrupted(&format!(
                    "interrupted by {name}; no answer to the cancel of request {id}"
                ))
            }
        }
    })
}

fn node_list(v: &Value) -> Vec<String> {
    match v {
        Value::DataArray(a) => a.as_strings().map(<[String]>::to_vec).unwrap_or_default(),
        v => v
            .as_str()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect(),
    }
}

/// What palloc prints for a grant.
pub fn granted_record(
    req: &AllocRequest,
    reply: &AllocReply,
    s: &Session,
    from_application: bool,
) -> AllocationRecord {
    let find = |k: &str| reply.info.iter().find(|i| i.key == k).map(|i| &i.value);
    let alloc_id = reply
        .alloc_id
        .clone()
        .or_else(|| req.alloc_id.clone())
        .unwrap_or_else(|| "(unnamed)".into());
    let nodes = find(keys::ALLOC_NODE_LIST)
        .or_else(|| find(keys::NODE_LIST))
        .map(node_list)
        .unwrap_or_else(|| req.nodelist.clone());
    let time = find(keys::ALLOC_TIME)
        .and_then(parse_alloc_time)
        .or(req.time_secs);
    let extend = req.directive == directive::EXTEND;
    // What the DVM applied wins over what was asked (a DVM may ignore
    // PMIX_ALLOC_TARGET or PMIX_ALLOC_SHARE, spec §8.2.1.10).
    let owner = find(keys::ALLOC_TARGET)
        .and_then(|v| v.as_str())
        .map(String::from)
        .or_else(|| req.target.clone())
        .or_else(|| (!extend).then(|| s.me().0));
    let share = find(keys::ALLOC_SHARE)
        .map(|v| v.is_true())
        .unwrap_or(req.share);
    let inherit = match find(keys::ALLOC_INHERITANCE) {
        Some(crate::codec::Value::AllocInherit(i)) => Some(i.0),
        Some(v) => v
            .as_str()
            .and_then(crate::codec::AllocInheritance::from_word)
            .map(|i| i.0),
        None => req.inherit,
    };
    let owner_is_self = !from_application && owner.as_deref() == Some(s.me().0.as_str());
    AllocationRecord {
        alloc_id: alloc_id.clone(),
        request_id: reply.request_id.clone().or_else(|| req.request_id.clone()),
        directive: if extend { "extend" } else { "new" }.into(),
        state: "granted".into(),
        nodes,
        time_limit_secs: time,
        expires_at: time.map(|t| now_secs() as u64 + t),
        reserved: !share,
        owner_nspace: owner,
        inherit: inherit_word(inherit).into(),
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
        eprintln!(
            "palloc: warning: allocation {alloc_id} expires in {left} \
(extend it: palloc --extend {alloc_id} -t DURATION)"
        );
    }
}

/// `--hold`: keep the allocation (and palloc's namespace) until a signal,
/// relaying the requests of this user's tools that name it from other
/// shells (`pspawn --target ID`, `prelease ID`, `palloc --extend ID`),
/// until the DVM announces the allocation's end (exit 8 when it expired).
fn hold(s: &Session, rec: &mut AllocationRecord, ui: &Ui) -> std::result::Result<i32, Failure> {
    let holder = Holder::start(s.shared_conn(), &rec.alloc_id)
        .map_err(|e| Failure::from_error("cannot share the allocation", &e))?;
    ui.note(&format!(
        "holding allocation {id}; from other shells `pspawn --target {id}`, `palloc --extend {id}` \
and `prelease {id}` act through this palloc; Ctrl-C or SIGTERM ends it",
        id = rec.alloc_id
    ));
    ui.detail(&format!("holder socket {}", holder.path().display()));
    // Once the allocation has ended, the clients still connected (e.g. the
    // prelease that ended it, with more requests to make) are served until
    // they leave.
    let mut ended = None;
    loop {
        if let Some(sig) = signals::caught() {
            return Ok(if sig == nix::libc::SIGINT {
                130
            } else {
                128 + sig
            });
        }
        if let (Some(code), 0) = (ended, holder.clients()) {
            return Ok(code);
        }
        match pump(s, &holder, &rec.alloc_id, ui) {
            Pumped::Quiet => {}
            Pumped::Lost(e) => return Err(Failure::lost(&e)),
            Pumped::Ended { expired, why } => {
                rec.on_owner_exit = format!("allocation {} has ended ({why})", rec.alloc_id);
                ended = Some(if expired { Exit::TimedOut.code() } else { 0 });
            }
        }
    }
}

/// What [`pump`] saw.
enum Pumped {
    /// Nothing that ends the wait.
    Quiet,
    /// The DVM announced the end of the held allocation.
    Ended {
        /// Its time limit was reached.
        expired: bool,
        /// Why, as the DVM said.
        why: String,
    },
    /// The connection closed.
    Lost(crate::error::Error),
}

/// Wait (at most [`SIGNAL_TICK`]) for what the DVM sends unasked and pass
/// it to the holder's clients, showing a timeout warning for `alloc_id` on
/// the way, and noticing the DVM announce the allocation's end.
fn pump(s: &Session, holder: &Holder, alloc_id: &str, ui: &Ui) -> Pumped {
    let Some(msg) = s.conn().next_unsolicited(SIGNAL_TICK) else {
        return Pumped::Quiet;
    };
    match msg {
        Unsolicited::Notify(bytes) => {
            holder.broadcast(TAG_NOTIFY, &bytes);
            if let Ok(ev) = decode_notification(&mut s.decoder(&bytes)) {
                if launch::is_warning(&ev) {
                    show_warning(&ev, alloc_id, ui);
                } else if ev.status == Status::EVENT_SESSION_END
                    && ev.get(keys::ALLOC_ID).and_then(|v| v.as_str()) == Some(alloc_id)
                {
                    let f = EventFields::from_event(&ev, now_secs());
                    let why = ev
                        .get(keys::EVENT_TEXT_MESSAGE)
                        .and_then(|v| v.as_str())
                        .unwrap_or("the DVM ended it")
                        .to_string();
                    return Pumped::Ended {
                        expired: f.change.as_deref() == Some("expired"),
                        why,
                    };
                }
            }
        }
        Unsolicited::Iof(bytes) => holder.broadcast(TAG_IOF, &bytes),
        Unsolicited::Other(tag, bytes) => holder.broadcast(tag, &bytes),
        Unsolicited::Closed(e) => return Pumped::Lost(e),
        Unsolicited::Wake => {}
    }
    Pumped::Quiet
}

/// `-- CMD`: run CMD as a local process (the caller's environment,
/// directory, stdin and terminal, as `salloc` does) while palloc holds the
/// allocation and relays the requests of the tools CMD runs (see
/// [`crate::conn::holder`]); then give the allocation back unless a
/// child-flavoured rule or `--keep` says otherwise. Returns CMD's status.
fn run_command(
    s: &Session,
    rec: &mut AllocationRecord,
    cmd: &[String],
    keep: bool,
    ui: &Ui,
) -> std::result::Result<i32, Failure> {
    let (program, args) = cmd
        .split_first()
        .ok_or_else(|| Failure::other("no command to run"))?;
    let holder = Holder::start(s.shared_conn(), &rec.alloc_id)
        .map_err(|e| Failure::from_error("cannot share the allocation with the command", &e))?;
    let child_rule = matches!(rec.inherit.as_str(), "child" | "child-default");
    let give_back = !keep && !child_rule;
    let spawned = std::process::Command::new(program)
        .args(args)
        .env("PMIX_ALLOC_ID", &rec.alloc_id)
        .env(HOLDER_ENV, holder.path())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            if give_back {
                release_after(s, rec, program, ui);
            }
            return Err(Failure::with(
                Exit::Command(code),
                None,
                format!("cannot run `{program}`: {e}"),
            ));
        }
    };
    ui.detail(&format!(
        "running {program} (pid {}) in allocation {}; its tools act through palloc",
        child.id(),
        rec.alloc_id
    ));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (done_tx, done) = mpsc::channel();
    let waker = s.conn().waker();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
        waker.wake();
    });
    let forward_int = !std::io::IsTerminal::is_terminal(&std::io::stdin());
    let mut dvm_lost = false;
    let mut ended = false;
    let status = loop {
        if let Ok(st) = done.try_recv() {
            break st;
        }
        if let Some(sig) = signals::take_new() {
            // A terminal's Ctrl-C already reached CMD (same process group).
            if sig != nix::libc::SIGINT || forward_int {
                if let Ok(sig) = nix::sys::signal::Signal::try_from(sig) {
                    let _ = nix::sys::signal::kill(pid, sig);
                }
            }
        }
        if dvm_lost {
            if let Ok(st) = done.recv_timeout(SIGNAL_TICK) {
                break st;
            }
            continue;
        }
        match pump(s, &holder, &rec.alloc_id, ui) {
            Pumped::Quiet => {}
            Pumped::Lost(e) => {
                ui.warn(&format!(
                    "lost the DVM while {program} ran ({e}); waiting for {program} to end"
                ));
                dvm_lost = true;
            }
            Pumped::Ended { why, .. } => {
                ui.warn(&format!(
                    "allocation {} has ended ({why}) while {program} runs",
                    rec.alloc_id
                ));
                rec.on_owner_exit = format!(
                    "{program} ended; allocation {} had already ended ({why})",
                    rec.alloc_id
                );
                ended = true;
            }
        }
    };
    drop(holder);
    let code = match status {
        Ok(st) => {
            use std::os::unix::process::ExitStatusExt;
            st.code()
                .or_else(|| st.signal().map(|n| 128 + n))
                .unwrap_or(1)
        }
        Err(e) => return Err(Failure::other(format!("waiting for {program}: {e}"))),
    };
    if give_back && !dvm_lost && !ended {
        release_after(s, rec, program, ui);
    }
    Ok(code)
}

/// CMD ended: give the allocation back to the scheduler, as salloc does.
fn release_after(s: &Session, rec: &mut AllocationRecord, program: &str, ui: &Ui) {
    let release = [Info::new(keys::ALLOC_ID, rec.alloc_id.as_str())];
    match allocate(s, directive::RELEASE, &release) {
        Ok(_) => {
            rec.on_owner_exit = format!(
                "{program} ended: released allocation {} (its nodes go back to the scheduler)",
                rec.alloc_id
            )
        }
        Err(e) if e.status == Status::ERR_NOT_FOUND => {
            rec.on_owner_exit = format!(
                "{program} ended; allocation {} had already ended (its time limit was reached, or \
it was released)",
                rec.alloc_id
            )
        }
        Err(e) => ui.warn(&format!(
            "{program} ended, but releasing allocation {} was refused: {e}",
            rec.alloc_id
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infos_carry_every_flag_in_wire_form() {
        let req = AllocRequest {
            directive: directive::NEW,
            nodes: Some(2),
            nodelist: vec!["n1".into(), "n2".into()],
            exclude: vec!["n3".into()],
            cpus: Some(8),
            mem_mb: Some(512.0),
            time_secs: Some(3600),
            queue: Some("q".into()),
            request_id: Some("r1".into()),
            alloc_id: None,
            target: Some("job@1".into()),
            share: true,
            inherit: Some(2),
            warn_timeout: Some(60),
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
        assert_eq!(get(keys::ALLOC_REQ_ID), Some(Value::from("r1")));
        assert_eq!(get(keys::ALLOC_TARGET), Some(Value::from("job@1")));
        assert_eq!(get(keys::ALLOC_SHARE), Some(Value::Bool(true)));
        assert_eq!(
            get(keys::ALLOC_INHERITANCE),
            Some(Value::AllocInherit(AllocInheritance::CHILD))
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
