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
use crate::proto::status::Status;

use super::admin::Watch;
use super::backend::Backend;
use super::core::Core;
use super::dvm::OWN_TAG_BASE;
use super::dvm::{Dvm, Send};
use super::ledger::Ledger;
use super::state::Out;
use super::status_server::Snapshot;

use super::{now_ms, Config};

/// How long the handshake with the DVM may take.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Longest wait of the serving loop without a deadline of its own.
const MAX_WAIT: Duration = Duration::from_secs(5);

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
    let mut st = super::backends::make(cfg.backend, cfg, ledger)?;
    let mut disk = full_ledger(st.as_ref(), &kept);
    disk.store(&cfg.ledger)?;
    if cfg.backend == super::BackendKind::Slurm {
        super::watchdog::start(&cfg.ledger);
    }
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
                say!("psched: attached to {dvm} as {}", conn.me().0);
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
                    core: Core::new(st.as_mut(), &mut d, conn.wire(), now_ms()),
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

/// One attachment's serving loop and what it works on: the I/O around the
/// one core ([`Core`]).
struct Loop<'a> {
    cfg: &'a Config,
    conn: &'a Connection,
    core: Core<'a>,
    snap: &'a Snapshot,
    disk: &'a mut Ledger,
    watch: &'a Watch,
    kept: &'a mut Kept,
}

impl Loop<'_> {
    fn serve(&mut self) -> Result<()> {
        let mut out: Vec<Send> = Vec::new();
        let mut admin_due = true;
        let mut answered: Vec<std::path::PathBuf> = Vec::new();
        loop {
            if STOP.load(Ordering::Relaxed) {
                return Ok(());
            }
            let now = now_ms();
            let mut extra = Vec::new();
            if std::mem::take(&mut admin_due) {
                let (o, paths) = admin(self.cfg, self.core.backend_mut())?;
                extra = o;
                answered = paths;
            }
            self.core.turn(now, extra, &mut out)?;
            self.flush(&mut out)?;
            // The ledger is on disk: the requesters may see their files go.
            for p in answered.drain(..) {
                let _ = std::fs::remove_file(p);
            }
            let deadline = self
                .core
                .next_deadline(now)
                .map_or(MAX_WAIT, |d| Duration::from_millis(d.saturating_sub(now)))
                .min(MAX_WAIT);
            // The backend's waker first: its index is 0 when it has one.
            let fd = self.watch.fd();
            let extras: Vec<_> = (self.core.wake_fd().into_iter())
                .chain(fd.iter().map(|f| f.as_fd()))
                .collect();
            let woken = self.core.wake_fd().is_some();
            let event = self.conn.wait(&extras, Some(Instant::now() + deadline));
            drop(extras);
            match event {
                Event::Message(Unsolicited::Closed(e)) => {
                    say!("psched: the DVM went away ({})", e.context);
                    return Ok(());
                }
                Event::Message(Unsolicited::Other(tag, payload)) => {
                    self.core.on_frame(tag, &payload, now_ms(), &mut out)?;
                }
                // The backend's news are taken by its tick, at the top.
                Event::Ready(0) if woken => {}
                Event::Ready(_) => admin_due |= self.watch.take(),
                _ => {}
            }
        }
    }

    /// Write the DVM side's log, store the ledger if it changed (a grant is
    /// on disk before anyone hears of it), then send what is waiting.
    fn flush(&mut self, out: &mut Vec<Send>) -> Result<()> {
        for line in self.core.take_log() {
            say!("psched: {line}");
        }
        let (book, sessions) = self.core.dvm().book();
        self.kept.book = book;
        self.kept.sessions = sessions;
        let now = full_ledger(self.core.backend(), self.kept);
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
                say!("psched: released {id} (administrator)");
                out.extend(o);
            }
            None => say!("psched: release of {id} refused: not a grant of this psched"),
        }
        done.push(path);
    }
    Ok((out, done))
}
