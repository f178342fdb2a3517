//! `pwatch`: stream events (filters, `--count`, `--timeout`, `--exec`,
//! `--extend-by`, warning re-arming) or show status tables.

pub(crate) mod status;

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::time::{Duration, Instant};

use crate::cli::exit::{AttrsPresent, Exit, Operation};
use crate::cli::request::{EventKind, EventWatch, StatusWatch, WatchRequest};
use crate::cli::{CompleteWhat, PwatchArgs};
use crate::codec::attrs::alloc_time_value;
use crate::codec::{Info, Value};
use crate::conn::{Event as Wake, Unsolicited};
use crate::ops::alloc::allocate;
use crate::ops::events::{decode_notification, register, Event};
use crate::ops::{status_query, Session};
use crate::proto::status::Status;
use crate::proto::{keys, Directive};
use crate::render::EventWriter;

use super::events::{registrations_for, EventFields};
use super::{connect, connect_for, finish, now_secs, signals, Failure, Ui};

/// Run pwatch; returns the exit code.
pub fn run(args: &PwatchArgs) -> i32 {
    let ui = Ui::new("pwatch", &args.output);
    if let Some(what) = args.complete {
        return complete(args, what, &ui);
    }
    let request = args.request();
    // Watching an allocation held by a palloc of this user goes through
    // that palloc (its warnings are the owner's to arm and receive).
    let alloc = match &request {
        WatchRequest::Events(w) => w.alloc_ids.first().cloned(),
        WatchRequest::Status(_) => None,
    };
    let s = match connect_for(&args.connect, &ui, alloc.as_deref()) {
        Ok(s) => s,
        Err(f) => return ui.fail(&f),
    };
    let r = match request {
        WatchRequest::Status(w) => watch_status(&s, &w, &ui),
        WatchRequest::Events(w) => watch_events(&s, &w, &ui),
    };
    finish(s);
    match r {
        Ok(code) => code,
        Err(f) => ui.fail(&f),
    }
}

/// `pwatch --complete WHAT`: the live allocation ids, job namespaces or node names, one
/// per line, for the shell completions; nothing (and 0) when no DVM answers.
fn complete(args: &PwatchArgs, what: CompleteWhat, ui: &Ui) -> i32 {
    let Ok(s) = connect(&args.connect, ui) else {
        return 0;
    };
    let want = status_query::Want {
        reservations: what == CompleteWhat::Allocs,
        jobs: what == CompleteWhat::Namespaces,
        nodes: what == CompleteWhat::Nodes,
        ..Default::default()
    };
    let a = status_query::status(&s, want);
    let mut words: Vec<String> = match what {
        CompleteWhat::Allocs => a
            .reservations
            .and_then(Result::ok)
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.alloc_id)
            .collect(),
        CompleteWhat::Namespaces => a
            .jobs
            .and_then(Result::ok)
            .unwrap_or_default()
            .into_iter()
            .filter(|j| j.state != "terminated")
            .map(|j| j.nspace)
            .collect(),
        CompleteWhat::Nodes => a
            .nodes
            .and_then(Result::ok)
            .unwrap_or_default()
            .into_iter()
            .map(|n| n.name)
            .collect(),
    };
    finish(s);
    words.retain(|w| !w.is_empty());
    let mut out = std::io::stdout().lock();
    for w in words {
        let _ = writeln!(out, "{w}");
    }
    0
}

fn watch_status(s: &Session, w: &StatusWatch, ui: &Ui) -> Result<i32, Failure> {
    loop {
        let snap = status::snapshot(s, w);
        if s.conn().is_closed() {
            return Err(Failure::with(
                Exit::CannotConnect,
                Some(crate::proto::Status::ERR_LOST_CONNECTION),
                "lost the DVM while asking for its status",
            ));
        }
        if let (Some(every), false) = (w.interval_secs, ui.json) {
            ui.result(&interval_header(every, ui.stdout_tty));
        }
        status::print(&snap, ui);
        if let Some(e) = &snap.failure {
            return Err(Failure::from_error("the DVM did not report its status", e));
        }
        let Some(every) = w.interval_secs else {
            return Ok(0);
        };
        let until = Instant::now() + Duration::from_secs(every);
        if let Some(sig) = signals::caught_by(until) {
            return Err(Failure::interrupted(&format!(
                "interrupted by {}",
                signals::name(sig)
            )));
        }
        if !ui.json && !ui.stdout_tty {
            ui.result("");
        }
    }
}

/// The line above each `--interval` snapshot: at a terminal the screen is
/// cleared first and the header names the period and the time (as `watch`
/// and `squeue -i`); elsewhere a plain time-stamp line, no escape codes.
fn interval_header(every: u64, tty: bool) -> String {
    let now = crate::render::human::utc_clock(super::now_secs() as u64);
    if tty {
        format!("\x1b[H\x1b[2JEvery {every}s: pwatch --status    {now}")
    } else {
        format!("--- {now} ---")
    }
}

/// An EXTEND naming `alloc_id`, carrying `time` and/or the warning lead.
fn extend(
    s: &Session,
    alloc_id: &str,
    secs: Option<u64>,
    warn: Option<u32>,
) -> Result<(), Failure> {
    let mut info = vec![Info::new(keys::ALLOC_ID, alloc_id)];
    if let Some(t) = secs {
        info.push(Info::new(
            keys::ALLOC_TIME,
            alloc_time_value(s.server_version(), t),
        ));
    }
    if let Some(w) = warn {
        info.push(Info::new(keys::ALLOC_WARN_TIMEOUT, Value::Uint32(w)));
    }
    allocate(s, Directive::Extend, &info)
        .map(|_| ())
        .map_err(|e| {
            let attrs = AttrsPresent {
                alloc_id: true,
                from_application: matches!(
                    s.conn().identity(),
                    crate::conn::Identity::Client { .. }
                ),
                ..Default::default()
            };
            Failure::refused(Operation::AllocExtend, &attrs, &e)
        })
}

/// A DVM replays the notifications it cached (every earlier job end, …)
/// to a new registrant, right after the registration reply. Those are
/// history, not events that happen while pwatch watches. OpenPMIx queues
/// that replay before it reads our next request, and our reader hands
/// messages over in arrival order, so one more request (a namespaces query)
/// is a barrier: everything unsolicited that is queued when its reply comes
/// back is history. No time window is involved, so no live event is lost.
/// Returns what was dropped: the (code, namespace) of each, so that a
/// straggler of the same history is recognised too (a job ends once), the
/// replayed events themselves, and the live namespaces the barrier query
/// answered.
fn skip_replay(s: &Session) -> Replay {
    let mut r = Replay::default();
    match crate::ops::query::namespaces(s) {
        Ok(live) => r.live = Some(live),
        Err(_) => return r,
    }
    while let Some(m) = s.conn().next_unsolicited(Duration::ZERO) {
        match m {
            Unsolicited::Notify(b) => {
                r.count += 1;
                if let Ok(ev) = decode_notification(&mut s.decoder(&b)) {
                    if let Some(ns) = ev.affected_nspace() {
                        r.seen.insert((ev.status.0, ns.to_string()));
                    }
                    r.events.push(ev);
                }
            }
            Unsolicited::Iof(_) | Unsolicited::Other(..) => {}
            Unsolicited::Closed(_) => break,
        }
    }
    r
}

/// What [`skip_replay`] dropped and learnt.
#[derive(Default)]
struct Replay {
    count: usize,
    seen: HashSet<(i32, String)>,
    events: Vec<Event>,
    live: Option<Vec<String>>,
}

/// The job ends pwatch can report at once for `--job NS --event job-end`:
/// a job that ended before pwatch started never ends again, so waiting for
/// its end would wait forever. The DVM's replayed end event is used when it
/// sent one (PRRTE caches them); else, for a namespace the DVM no longer
/// lists, its job table (pdvm keeps the last ended jobs with their status,
/// `pdvm --job-history`). A job the DVM knows nothing about (never one, or
/// past that history) is refused (`PMIX_ERR_NOT_FOUND`).
fn ended_before(s: &Session, w: &EventWatch, r: &Replay) -> Result<Vec<EventFields>, Failure> {
    let wants_end = w.events.is_empty()
        || w.events
            .iter()
            .any(|k| matches!(k, EventKind::JobEnd | EventKind::Any));
    let Some(live) = r.live.as_ref().filter(|_| wants_end) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut table: Option<Vec<crate::ops::status_query::JobEntry>> = None;
    for ns in &w.nspaces {
        let replayed = r.events.iter().find(|ev| {
            ev.status == Status::EVENT_JOB_END && ev.affected_nspace() == Some(ns.as_str())
        });
        if let Some(ev) = replayed {
            out.push(EventFields::from_event(ev, now_secs()));
            continue;
        }
        if live.contains(ns) {
            continue;
        }
        let jobs =
            table.get_or_insert_with(|| crate::ops::status_query::jobs(s).unwrap_or_default());
        match jobs.iter().find(|j| &j.nspace == ns) {
            Some(j) if j.exit_status.is_some() => out.push(EventFields {
                event: EventKind::JobEnd.name().to_string(),
                time: now_secs(),
                nspace: Some(ns.clone()),
                status: Some(Status::EVENT_JOB_END.name().to_string()),
                exit_code: j.exit_status,
                message: Some("the job had already ended when pwatch started".into()),
                ..Default::default()
            }),
            Some(_) => {}
            None => {
                return Err(Failure::with(
                    Exit::NotFound,
                    Some(crate::proto::Status::ERR_NOT_FOUND),
                    format!(
                        "the DVM has no job {ns}: it never existed, or it ended before \
                         pwatch started and the DVM kept no record of it"
                    ),
                ))
            }
        }
    }
    Ok(out)
}

/// Show one event (a JSON line or a human line) and run the `--exec` hook.
fn show_event<W: Write>(f: &EventFields, w: &EventWatch, out: &mut EventWriter<W>, ui: &Ui) {
    if ui.json {
        let _ = out.write(&f.record());
    } else {
        ui.result(&f.human());
    }
    if let Some(cmd) = &w.exec {
        run_hook(cmd, f, ui);
    }
}

/// Run the `--exec` hook for one event and wait for it.
fn run_hook(cmd: &str, f: &EventFields, ui: &Ui) {
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .envs(f.hook_env())
        .stdin(std::process::Stdio::null())
        .status();
    match status {
        Ok(st) if !st.success() => ui.warn(&format!("--exec hook ended with {st}")),
        Err(e) => ui.warn(&format!("cannot run the --exec hook: {e}")),
        _ => {}
    }
}

/// `--warn-timeout` with `--alloc`: ask for each allocation's warning,
/// which then comes to this pwatch.
fn arm_warnings(s: &Session, w: &EventWatch, ui: &Ui) -> Result<(), Failure> {
    let Some(warn) = w.warn_timeout else {
        return Ok(());
    };
    for a in &w.alloc_ids {
        extend(s, a, None, Some(warn))?;
        ui.note(&format!(
            "armed the timeout warning of {a} ({warn}s before expiry); this pwatch receives it"
        ));
    }
    Ok(())
}

/// Wait (until `deadline`) for the next event `w` selects: `None` when
/// something else woke us (a signal, another message, one of the ends the
/// DVM replayed from before pwatch started), the failure when the DVM went.
fn next_event(
    s: &Session,
    w: &EventWatch,
    history: &HashSet<(i32, String)>,
    deadline: Option<Instant>,
    ui: &Ui,
) -> Result<Option<EventFields>, Failure> {
    let sig: Vec<_> = signals::fd().into_iter().collect();
    let bytes = match s.conn().wait(&sig, deadline) {
        Wake::Ready(_) => {
            signals::drain();
            return Ok(None);
        }
        Wake::Deadline
        | Wake::Reply(_)
        | Wake::Message(Unsolicited::Iof(_))
        | Wake::Message(Unsolicited::Other(..)) => return Ok(None),
        Wake::Message(Unsolicited::Closed(e)) => return Err(Failure::lost(&e)),
        Wake::Message(Unsolicited::Notify(b)) => b,
    };
    let Ok(ev) = decode_notification(&mut s.decoder(&bytes)) else {
        ui.detail("ignored an unreadable notification");
        return Ok(None);
    };
    let replayed = ev.status == crate::proto::status::Status::EVENT_JOB_END
        && ev
            .affected_nspace()
            .is_some_and(|ns| history.contains(&(ev.status.0, ns.to_string())));
    let f = EventFields::from_event(&ev, now_secs());
    Ok((!replayed && f.matches(w)).then_some(f))
}

fn watch_events(s: &Session, w: &EventWatch, ui: &Ui) -> Result<i32, Failure> {
    let regs = registrations_for(&w.events);
    let last = regs.len().saturating_sub(1);
    for (i, codes) in regs.iter().enumerate() {
        let r = register(s, codes, &[Info::new(keys::EVENT_HDLR_NAME, "pwatch")]);
        match r {
            Ok(()) => {}
            // Every event: the codes named first are a help (a server that
            // refuses them still sends its events to the default handler).
            Err(e) if i < last => ui.detail(&format!("the DVM refused the known codes: {e}")),
            Err(e) => return Err(Failure::from_error("cannot register for events", &e)),
        }
    }
    let replay = skip_replay(s);
    if replay.count > 0 {
        ui.detail(&format!(
            "skipped {} event(s) the DVM replayed from before pwatch started",
            replay.count
        ));
    }
    let mut early: VecDeque<EventFields> = ended_before(s, w, &replay)?.into();
    let history = replay.seen;
    arm_warnings(s, w, ui)?;
    ui.detail("watching for events");
    let deadline = w
        .timeout_secs
        .map(|t| Instant::now() + Duration::from_secs(t));
    let mut out = EventWriter::new(std::io::stdout()).flush_each_event(true);
    let mut seen: u64 = 0;
    loop {
        if let Some(sig) = signals::caught() {
            let _ = out.flush();
            return Err(Failure::interrupted(&format!(
                "interrupted by {} after {seen} event(s)",
                signals::name(sig)
            )));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let _ = out.flush();
            if seen == 0 {
                return Err(Failure::timed_out(&format!(
                    "no matching event within {}s",
                    w.timeout_secs.unwrap_or(0)
                )));
            }
            return Ok(0);
        }
        if let Some(f) = early.pop_front() {
            seen += 1;
            show_event(&f, w, &mut out, ui);
            if w.count.is_some_and(|c| seen >= c) {
                let _ = out.flush();
                return Ok(0);
            }
            continue;
        }
        let f = match next_event(s, w, &history, deadline, ui) {
            Ok(Some(f)) => f,
            Ok(None) => continue,
            Err(f) => {
                let _ = out.flush();
                return Err(f);
            }
        };
        seen += 1;
        show_event(&f, w, &mut out, ui);
        if let (Some(by), Some(a), true) = (
            w.extend_by_secs,
            f.alloc_id.as_deref(),
            f.event == "timeout-warning",
        ) {
            extend(s, a, Some(by), w.warn_timeout)?;
            ui.note(&format!(
                "extended {a} by {}",
                crate::render::human::duration(by)
            ));
        }
        if w.count.is_some_and(|c| seen >= c) {
            let _ = out.flush();
            return Ok(0);
        }
    }
}
