//! psched's I/O: attach to the DVM with a fresh scheduler identity, feed
//! its requests to the one core ([`Core`]), carry out what it decides,
//! store the ledger when a change arrived, before anyone hears of it, and
//! attach again when the DVM goes away. The loop sleeps only in one wait,
//! on the DVM's socket, the release-request directory and the node
//! source's waker (its worker threads' answers), until the next deadline.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::conn::{discover, Connection, Event, Identity, Unsolicited};
use crate::error::Result;
use crate::proto::status::Status;

use super::admin::Watch;
use super::core::Core;
use super::dvm::OWN_TAG_BASE;
use super::dvm::{Dvm, Send};
use super::ledger::Ledger;
use super::out::Out;
use super::requests::Requests;
use super::status_server::Snapshot;

use super::{now_ms, Config};

/// How long the handshake with the DVM may take.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Longest wait of the serving loop without a deadline of its own.
const MAX_WAIT: Duration = Duration::from_secs(5);

/// Set by a SIGTERM/SIGINT handler: leave after the current step.
pub static STOP: AtomicBool = AtomicBool::new(false);
static ATTACHES: AtomicU32 = AtomicU32::new(0);

/// Run psched until stopped (or, with `once`, until the DVM goes away).
pub fn run(cfg: &Config) -> Result<()> {
    super::files::check_dir(&cfg.ledger)?;
    let ledger = Ledger::load(&cfg.ledger)?;
    let mut st = super::backends::make(cfg.backend, cfg, ledger)?;
    st.ledger().store(&cfg.ledger)?;
    st.take_dirty();
    if cfg.backend == super::BackendKind::Slurm {
        super::watchdog::start(&cfg.ledger);
    }
    let snap: Snapshot = Arc::new(Mutex::new(st.ledger().clone()));
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
                let told = super::contact::Published::new(&dvm, &contact);
                // Another DVM than the ledger's starts with empty books.
                st.attach(&dvm, conn.wire(), now_ms());
                let l = st.ledger();
                let mut d = Dvm::new(
                    conn.wire(),
                    conn.me().0,
                    &dvm,
                    l.dvm_side.clone(),
                    l.sessions,
                    OWN_TAG_BASE,
                );
                d.set_slots(cfg.slots);
                let granted: Vec<String> = l.grants.iter().flat_map(|g| g.nodes.clone()).collect();
                d.not_idle(&granted);
                d.warm(&st.idle());
                let mut l = Loop {
                    cfg,
                    conn: &conn,
                    core: Core::new(&mut st, &mut d, conn.wire(), now_ms()),
                    snap: &snap,
                    watch: &watch,
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
        let answered = admin(cfg, &mut st).map(|(_, p)| p).unwrap_or_default();
        if st.take_dirty() {
            publish(&snap, st.ledger());
            st.ledger().store(&cfg.ledger)?;
        }
        for p in answered {
            let _ = std::fs::remove_file(p);
        }
        watch.wait(Instant::now() + cfg.retry);
    }
    Ok(())
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

/// The most frames taken in one turn before the ledger is stored and the
/// answers go out.
const BATCH: usize = 64;

/// One attachment's serving loop and what it works on: the I/O around the
/// one core ([`Core`]).
struct Loop<'a> {
    cfg: &'a Config,
    conn: &'a Connection,
    core: Core<'a>,
    snap: &'a Snapshot,
    watch: &'a Watch,
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
                let (o, paths) = admin(self.cfg, self.core.requests_mut())?;
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
            // The source's waker first: its index is 0 when it has one.
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
                    if self.take_queued(&mut out)? {
                        say!("psched: the DVM went away (closed)");
                        return Ok(());
                    }
                }
                // The source's news are taken by the turn, at the top.
                Event::Ready(0) if woken => {}
                Event::Ready(_) => admin_due |= self.watch.take(),
                _ => {}
            }
        }
    }

    /// Take the frames the DVM has already sent, up to [`BATCH`], before
    /// the next store and send: a burst of requests read at once costs one
    /// ledger store (two syncs), not one per request. True when the DVM
    /// went away.
    fn take_queued(&mut self, out: &mut Vec<Send>) -> Result<bool> {
        for _ in 0..BATCH {
            match self.conn.wait(&[], Some(Instant::now())) {
                Event::Message(Unsolicited::Closed(_)) => return Ok(true),
                Event::Message(Unsolicited::Other(tag, payload)) => {
                    self.core.on_frame(tag, &payload, now_ms(), out)?;
                }
                _ => break,
            }
        }
        Ok(false)
    }

    /// Write the DVM side's log, store the ledger if a change arrived (a
    /// grant is on disk before anyone hears of it), then send what is
    /// waiting.
    fn flush(&mut self, out: &mut Vec<Send>) -> Result<()> {
        for line in self.core.take_log() {
            say!("psched: {line}");
        }
        self.core.keep_books();
        if self.core.requests_mut().take_dirty() {
            let l = self.core.requests().ledger();
            l.store(&self.cfg.ledger)?;
            publish(self.snap, l);
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
fn admin(cfg: &Config, st: &mut Requests) -> Result<(Vec<Out>, Vec<std::path::PathBuf>)> {
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
