//! psched's I/O: attach to the DVM with a fresh scheduler identity, serve
//! its requests and psched's deadlines, write the ledger after every
//! change, and attach again when the DVM goes away.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::conn::{discover, Connection, Event, Identity, Unsolicited};
use crate::error::Result;
use crate::proto::{keys, status::Status};

use super::backend::Backend;
use super::ledger::Ledger;
use super::state::Out;
use super::status_server::Snapshot;
use super::wire::{self, Inbound};
use super::{now_ms, Config};

/// Tags of psched's own messages: far above any tag the DVM's library uses,
/// so their answers are never mistaken for requests.
const OWN_TAG_BASE: u32 = 0xF000_0000;
/// How long the handshake with the DVM may take.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Longest sleep of the serving loop (bounds every wait).
const MAX_WAIT: Duration = Duration::from_secs(1);
/// How often psched asks the DVM which allocations it still holds.
const RECONCILE_EVERY: Duration = Duration::from_secs(2);
/// A grant younger than this is not reconciled away (the DVM may not have
/// made the reservation yet).
const SETTLE_MS: u64 = 3000;

/// Set by a SIGTERM/SIGINT handler: leave after the current step.
pub static STOP: AtomicBool = AtomicBool::new(false);
static OWN_TAG: AtomicU32 = AtomicU32::new(OWN_TAG_BASE);
static ATTACHES: AtomicU32 = AtomicU32::new(0);

/// Run psched until stopped (or, with `once`, until the DVM goes away).
pub fn run(cfg: &Config) -> Result<()> {
    let ledger = super::ledger::Ledger::load(&cfg.ledger)?;
    let mut st = super::backend::make(cfg.backend, cfg, ledger);
    st.ledger().store(&cfg.ledger)?;
    let snap: Snapshot = Arc::new(Mutex::new(st.ledger()));
    if let Some(p) = &cfg.status_uri {
        super::status_server::start(p, Arc::clone(&snap))?;
    }
    while !STOP.load(Ordering::Relaxed) {
        match attach(cfg) {
            Ok(conn) => {
                let dvm = conn.server().0.to_string();
                eprintln!("psched: attached to {dvm} as {}", conn.me().0);
                st.attach(&dvm, conn.wire());
                serve(cfg, &conn, st.as_mut(), &snap)?;
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
        let _ = admin(cfg, st.as_mut());
        publish(&snap, st.as_ref());
        st.ledger().store(&cfg.ledger)?;
        std::thread::sleep(cfg.retry);
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
fn publish(snap: &Snapshot, st: &dyn Backend) {
    if let Ok(mut g) = snap.lock() {
        *g = st.ledger();
    }
}

fn serve(cfg: &Config, conn: &Connection, st: &mut dyn Backend, snap: &Snapshot) -> Result<()> {
    let mut next_query = Instant::now() + RECONCILE_EVERY;
    let mut asked: Option<u32> = None;
    loop {
        if STOP.load(Ordering::Relaxed) {
            return Ok(());
        }
        if Instant::now() >= next_query {
            next_query = Instant::now() + RECONCILE_EVERY;
            let tag = OWN_TAG.fetch_add(1, Ordering::Relaxed);
            conn.send(tag, &wire::query_alloc_ids(conn.wire())?)?;
            asked = Some(tag);
        }
        let now = now_ms();
        let mut outs = st.tick(now)?;
        outs.extend(admin(cfg, st)?);
        send_all(conn, st, cfg, outs)?;
        publish(snap, st);
        let wait = st
            .next_deadline()
            .map_or(MAX_WAIT, |d| Duration::from_millis(d.saturating_sub(now)))
            .min(MAX_WAIT);
        match conn.wait(&[], Some(Instant::now() + wait)) {
            Event::Message(Unsolicited::Closed(e)) => {
                eprintln!("psched: the DVM went away ({})", e.context);
                return Ok(());
            }
            Event::Message(Unsolicited::Other(tag, payload)) if tag < OWN_TAG_BASE => {
                let outs = on_message(conn, st, tag, &payload)?;
                send_all(conn, st, cfg, outs)?;
            }
            Event::Message(Unsolicited::Other(tag, payload)) if Some(tag) == asked => {
                asked = None;
                if let Some(live) = wire::alloc_ids_answer(conn.wire(), &payload) {
                    let outs = st.reconcile(&live, now_ms(), SETTLE_MS)?;
                    send_all(conn, st, cfg, outs)?;
                }
            }
            _ => {}
        }
    }
}

/// Serve the administrator's release requests (`psched --release`).
fn admin(cfg: &Config, st: &mut dyn Backend) -> Result<Vec<Out>> {
    let mut out = Vec::new();
    for (path, id) in super::admin::pending(&cfg.ledger) {
        match st.admin_release(&id, now_ms())? {
            Some(o) => {
                eprintln!("psched: released {id} (administrator)");
                out.extend(o);
            }
            None => eprintln!("psched: release of {id} refused: not a grant of this psched"),
        }
        // The ledger goes to disk before the requester sees the file go.
        st.ledger().store(&cfg.ledger)?;
        let _ = std::fs::remove_file(path);
    }
    Ok(out)
}

fn on_message(
    conn: &Connection,
    st: &mut dyn Backend,
    tag: u32,
    payload: &[u8],
) -> Result<Vec<Out>> {
    let now = now_ms();
    match wire::decode(conn.wire(), payload) {
        Ok(Inbound::Alloc(ask)) => st.on_alloc(tag, ask, now),
        Ok(Inbound::Session { infos, .. }) => {
            let done = infos.iter().any(|i| i.key == "pmix.ssn.complete");
            let id = infos
                .iter()
                .find(|i| i.key == keys::ALLOC_ID)
                .and_then(|i| i.value.as_str());
            let mut out = match (done, id) {
                (true, Some(id)) => st.on_session_done(id, now)?,
                _ => Vec::new(),
            };
            out.push(Out::Answer(tag, wire::status_only(conn.wire(), Status(0))?));
            Ok(out)
        }
        Ok(Inbound::Other(_)) | Err(_) => Ok(vec![Out::Answer(
            tag,
            wire::status_only(conn.wire(), Status::ERR_NOT_SUPPORTED)?,
        )]),
    }
}

fn send_all(conn: &Connection, st: &dyn Backend, cfg: &Config, outs: Vec<Out>) -> Result<()> {
    // The ledger first: a grant is on disk before anyone hears of it.
    let now = st.ledger();
    if outs.is_empty() && Ledger::load(&cfg.ledger).ok().as_ref() == Some(&now) {
        return Ok(());
    }
    now.store(&cfg.ledger)?;
    for o in outs {
        match o {
            Out::Answer(tag, body) => conn.send(tag, &body)?,
            Out::Own(body) => conn.send(OWN_TAG.fetch_add(1, Ordering::Relaxed), &body)?,
        }
    }
    Ok(())
}
