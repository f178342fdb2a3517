//! psched's I/O: attach to the DVM with a fresh scheduler identity, feed
//! its requests to [`Dvm`] and the backend, carry out what they decide,
//! write the ledger before anyone hears of a change, and attach again when
//! the DVM goes away. The loop sleeps only in one wait, on the DVM's
//! socket, the release-request directory and the backend's waker (its
//! worker threads' answers), until the next deadline.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::conn::{discover, Connection, Event, Identity, Unsolicited};
use crate::error::Result;
use crate::proto::{keys, status::Status};

use super::admin::Watch;
use super::backend::Backend;
use super::dvm::{Dvm, Send, Verdict};
use super::ledger::Ledger;
use super::state::Out;
use super::status_server::Snapshot;
use super::wire::{self, Inbound};
use super::{now_ms, Config};

/// Tags of psched's own messages: far above any tag the DVM's library uses,
/// so their answers are never mistaken for requests.
pub(crate) const OWN_TAG_BASE: u32 = 0xF000_0000;
/// How long the handshake with the DVM may take.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Longest wait of the serving loop without a deadline of its own.
const MAX_WAIT: Duration = Duration::from_secs(5);
/// How often psched asks the DVM which allocations it still holds (the
/// DVM does not say when an owner's disposition ends one).
const RECONCILE_EVERY_MS: u64 = 1000;
/// A grant younger than this is not reconciled away (the DVM may not have
/// made the reservation yet).
const SETTLE_MS: u64 = 3000;

/// Set by a SIGTERM/SIGINT handler: leave after the current step.
pub static STOP: AtomicBool = AtomicBool::new(false);
static ATTACHES: AtomicU32 = AtomicU32::new(0);

/// What psched keeps of the DVM it served, between two attachments.
struct Kept {
    dvm: Option<String>,
    book: super::ledger::DvmBook,
    sessions: u32,
}

/// Run psched until stopped (or, with `once`, until the DVM goes away).
pub fn run(cfg: &Config) -> Result<()> {
    super::files::check_dir(&cfg.ledger)?;
    let ledger = Ledger::load(&cfg.ledger)?;
    let mut kept = Kept {
        dvm: ledger.dvm.clone(),
        book: ledger.dvm_side.clone(),
        sessions: ledger.sessions,
    };
    let mut st = super::backend::make(cfg.backend, cfg, ledger)?;
    let mut disk = full_ledger(st.as_ref(), &kept);
    disk.store(&cfg.ledger)?;
    let snap: Snapshot = Arc::new(Mutex::new(disk.clone()));
    let contact = super::status_server::start(Arc::clone(&snap), cfg.status_public)?;
    if let Some(p) = &cfg.status_uri {
        super::files::replace(p, contact.as_bytes(), 0o644).map_err(|e| {
            crate::error::Error::new(Status::ERR_NOT_AVAILABLE, format!("status socket: {e}"))
        })?;
    }
    let watch = Watch::new(&cfg.ledger);
    while !STOP.load(Ordering::Relaxed) {
        match attach(cfg) {
            Ok(conn) => {
                let dvm = conn.server().0.to_string();
                eprintln!("psched: attached to {dvm} as {}", conn.me().0);
                if kept.dvm.as_deref() != Some(dvm.as_str()) {
                    kept = Kept {
                        dvm: Some(dvm.clone()),
                        book: Default::default(),
                        sessions: 0,
                    };
                }
                let told = super::contact::Published::new(&dvm, &contact);
                st.attach(&dvm, conn.wire());
                let mut d = Dvm::new(
                    conn.wire(),
                    conn.me().0,
                    &dvm,
                    kept.book.clone(),
                    kept.sessions,
                    OWN_TAG_BASE,
                );
                d.set_slots(cfg.slots);
                let granted: Vec<String> = st
                    .ledger()
                    .grants
                    .iter()
                    .flat_map(|g| g.nodes.clone())
                    .collect();
                d.not_idle(&granted);
                d.warm(&st.warm());
                let mut l = Loop {
                    cfg,
                    conn: &conn,
                    st: st.as_mut(),
                    d: &mut d,
                    snap: &snap,
                    disk: &mut disk,
                    watch: &watch,
                    kept: &mut kept,
                };
                l.serve()?;
                drop(told);
                conn.shutdown();
                if cfg.once {
                    return Ok(());
                }
            }
            Err(e) if cfg.once => return Err(e),
            Err(_) => {}
        }
        // Deadlines and releases still happen while no DVM is attached
        // (nothing to tell).
        let _ = st.tick(now_ms());
        let answered = admin(cfg, st.as_mut()).map(|(_, p)| p).unwrap_or_default();
        let now = full_ledger(st.as_ref(), &kept);
        if now != disk {
            publish(&snap, &now);
            now.store(&cfg.ledger)?;
            disk = now;
        }
        for p in answered {
            let _ = std::fs::remove_file(p);
        }
        watch.wait(Instant::now() + cfg.retry);
    }
    Ok(())
}

/// The ledger to store: the backend's books and what psched knows of the
/// DVM.
fn full_ledger(st: &dyn Backend, kept: &Kept) -> Ledger {
    let mut l = st.ledger();
    l.dvm = kept.dvm.clone();
    l.sessions = kept.sessions;
    l.dvm_side = kept.book.clone();
    for g in &mut l.grants {
        g.session = kept
            .book
            .owners
            .iter()
            .find(|o| o.alloc_id == g.alloc_id)
            .and_then(|o| o.session);
    }
    l
}

/// A fresh scheduler identity for every connection: reusing one crashed
/// PRRTE master.
fn fresh_identity() -> Identity {
    let n = ATTACHES.fetch_add(1, Ordering::Relaxed);
    Identity::Scheduler {
        nspace: format!("psched-{}-{}-{n}", std::process::id(), super::now_ms()),
        rank: 0,
    }
}

fn attach(cfg: &Config) -> Result<Connection> {
    let mut target = discover::discover(&cfg.connect, &discover::ProcessEnv)?;
    target.identity = fresh_identity();
    Connection::open(target, HANDSHAKE)
}

/// Hand the status socket the state as it is now.
fn publish(snap: &Snapshot, l: &Ledger) {
    if let Ok(mut g) = snap.lock() {
        *g = l.clone();
    }
}

/// One attachment's serving loop and what it works on.
struct Loop<'a> {
    cfg: &'a Config,
    conn: &'a Connection,
    st: &'a mut dyn Backend,
    d: &'a mut Dvm,
    snap: &'a Snapshot,
    disk: &'a mut Ledger,
    watch: &'a Watch,
    kept: &'a mut Kept,
}

impl Loop<'_> {
    fn serve(&mut self) -> Result<()> {
        let mut next_reconcile = now_ms() + RECONCILE_EVERY_MS;
        let mut asked: Option<u32> = None;
        let mut out: Vec<Send> = Vec::new();
        let mut admin_due = true;
        let mut answered: Vec<std::path::PathBuf> = Vec::new();
        loop {
            if STOP.load(Ordering::Relaxed) {
                return Ok(());
            }
            let now = now_ms();
            if now >= next_reconcile && asked.is_none() {
                next_reconcile = now + RECONCILE_EVERY_MS;
                let t = self.d.plain_tag();
                out.push(Send::Own(t, wire::query_alloc_ids(self.conn.wire())?));
                asked = Some(t);
            }
            let mut outs = self.st.tick(now)?;
            if std::mem::take(&mut admin_due) {
                let (o, paths) = admin(self.cfg, self.st)?;
                outs.extend(o);
                answered = paths;
            }
            self.d.push(outs, &mut out)?;
            self.settle(now, &mut out)?;
            self.flush(&mut out)?;
            // The ledger is on disk: the requesters may see their files go.
            for p in answered.drain(..) {
                let _ = std::fs::remove_file(p);
            }
            let deadline = [
                self.st.next_deadline(),
                self.d.next_deadline(),
                Some(next_reconcile),
            ]
            .into_iter()
            .flatten()
            .min()
            .map_or(MAX_WAIT, |d| Duration::from_millis(d.saturating_sub(now)))
            .min(MAX_WAIT);
            // The backend's waker first: its index is 0 when it has one.
            let fd = self.watch.fd();
            let extras: Vec<_> = (self.st.wake_fd().into_iter())
                .chain(fd.iter().map(|f| f.as_fd()))
                .collect();
            let woken = self.st.wake_fd().is_some();
            match self.conn.wait(&extras, Some(Instant::now() + deadline)) {
                Event::Message(Unsolicited::Closed(e)) => {
                    eprintln!("psched: the DVM went away ({})", e.context);
                    return Ok(());
                }
                Event::Message(Unsolicited::Other(tag, payload)) if tag < OWN_TAG_BASE => {
                    self.on_message(tag, &payload, &mut out)?;
                }
                Event::Message(Unsolicited::Other(tag, payload)) if Some(tag) == asked => {
                    asked = None;
                    if let Some(live) = wire::alloc_ids_answer(self.conn.wire(), &payload) {
                        let outs = self.st.reconcile(&live, now_ms(), SETTLE_MS)?;
                        self.d.push(outs, &mut out)?;
                    }
                }
                Event::Message(Unsolicited::Other(tag, payload)) => {
                    let passed = {
                        let l = self.st.ledger();
                        let nodes_of = |id: &str| {
                            l.grants
                                .iter()
                                .find(|g| g.alloc_id == id)
                                .map(|g| g.nodes.clone())
                                .unwrap_or_default()
                        };
                        self.d
                            .on_own_answer(tag, &payload, now_ms(), &nodes_of, &mut out)?
                    };
                    for (t, ask) in passed {
                        let outs = self.st.on_alloc(t, ask, now_ms())?;
                        self.d.push(outs, &mut out)?;
                    }
                }
                // The backend's news are taken by its tick, at the top.
                Event::Ready(0) if woken => {}
                Event::Ready(_) => admin_due |= self.watch.take(),
                _ => {}
            }
        }
    }

    /// What the DVM side learned: refused grants go back to the backend,
    /// broken nodes are held back, its log is written, the next change
    /// starts.
    fn settle(&mut self, now: u64, out: &mut Vec<Send>) -> Result<()> {
        for id in self.d.take_refused() {
            let outs = self.st.on_session_done(&id, now)?;
            self.d.push(outs, out)?;
        }
        self.st.hold_back(self.d.broken());
        for line in self.d.take_log() {
            eprintln!("psched: {line}");
        }
        self.d.tick(now, out)
    }

    fn on_message(&mut self, tag: u32, payload: &[u8], out: &mut Vec<Send>) -> Result<()> {
        let now = now_ms();
        let wire = self.conn.wire();
        match wire::decode(wire, payload) {
            Ok(Inbound::Alloc(ask)) => {
                let l = self.st.ledger();
                let find = |rid: &str| {
                    l.grants
                        .iter()
                        .find(|g| g.req_id.as_deref() == Some(rid))
                        .map(|g| g.alloc_id.clone())
                };
                if let Verdict::Pass(ask) = self.d.on_request(tag, *ask, &find, out)? {
                    let outs = self.st.on_alloc(tag, *ask, now)?;
                    self.d.push(outs, out)?;
                }
            }
            Ok(Inbound::Session { infos, .. }) => {
                let done = infos
                    .iter()
                    .any(|i| i.key == crate::proto::keys::SESSION_COMPLETE);
                let id = infos
                    .iter()
                    .find(|i| i.key == keys::ALLOC_ID)
                    .and_then(|i| i.value.as_str());
                let outs = match (done, id) {
                    (true, Some(id)) => self.st.on_session_done(id, now)?,
                    _ => Vec::<Out>::new(),
                };
                self.d.push(outs, out)?;
                out.push(Send::Answer(tag, wire::status_only(wire, Status(0))?));
            }
            Ok(Inbound::Other(_)) | Err(_) => out.push(Send::Answer(
                tag,
                wire::status_only(wire, Status::ERR_NOT_SUPPORTED)?,
            )),
        }
        self.settle(now, out)
    }

    /// Store the ledger if it changed (a grant is on disk before anyone
    /// hears of it), then send what is waiting.
    fn flush(&mut self, out: &mut Vec<Send>) -> Result<()> {
        let (book, sessions) = self.d.book();
        self.kept.book = book;
        self.kept.sessions = sessions;
        let now = full_ledger(self.st, self.kept);
        if now != *self.disk {
            now.store(&self.cfg.ledger)?;
            publish(self.snap, &now);
            *self.disk = now;
        }
        for s in out.drain(..) {
            match s {
                Send::Answer(tag, body) | Send::Own(tag, body) => self.conn.send(tag, &body)?,
            }
        }
        Ok(())
    }
}

/// Serve the administrator's release requests (`psched --release`): what
/// they decide, and the request files to remove once the ledger is stored.
fn admin(cfg: &Config, st: &mut dyn Backend) -> Result<(Vec<Out>, Vec<std::path::PathBuf>)> {
    let mut out = Vec::new();
    let mut done = Vec::new();
    for (path, id) in super::admin::pending(&cfg.ledger) {
        match st.admin_release(&id, now_ms())? {
            Some(o) => {
                eprintln!("psched: released {id} (administrator)");
                out.extend(o);
            }
            None => eprintln!("psched: release of {id} refused: not a grant of this psched"),
        }
        done.push(path);
    }
    Ok((out, done))
}
