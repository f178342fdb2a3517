//! psched's status socket (always served; its URI also in `--status-uri
//! FILE` and the contact file of [`crate::conn::sched_contact`]): a minimal PMIx server on
//! loopback that tools connect to like to any DVM, answering only status
//! queries ([`super::status`]); every other request gets `PMIX_SUCCESS`
//! with nothing (a tool's finalize) so tools end cleanly. Bounded: at most
//! [`MAX_CLIENTS`] at once, each frame at most [`MAX_FRAME`] bytes, each
//! read waiting at most [`IDLE`].

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::codec::{Cmd, Decoder, Encoder, Query, Size, WireVersion};
use crate::conn::frame::{encode_frame, FrameDecoder, Header, HEADER_LEN};
use crate::error::{Error, Result};
use crate::proto::cmd;
use crate::proto::status::Status;

use super::ledger::Ledger;

/// Most tools served at once; more wait in the listen queue.
pub const MAX_CLIENTS: usize = 8;
/// Largest frame (and connect-ack) read.
pub const MAX_FRAME: u32 = 1 << 20;
/// Longest a connection may stay silent.
pub const IDLE: Duration = Duration::from_secs(10);
/// The PMIx version psched announces (the wire it speaks: v61).
const VERSION: &str = "v7.0.0a1";
const WIRE: WireVersion = WireVersion::V61;
const NSPACE_FIELD: usize = 256;

/// What the serving loop shares with the status socket.
pub type Snapshot = Arc<Mutex<Ledger>>;

/// Listen on loopback and serve status queries from `snap` on a thread of
/// their own; unless `public`, only psched's user and root. Returns the
/// socket's contact text (URI and PMIx version, a rendezvous file's lines),
/// for the `--status-uri` file and the contact file tools find
/// ([`crate::conn::sched_contact`]).
pub fn start(snap: Snapshot, public: bool) -> Result<String> {
    let io =
        |e: std::io::Error| Error::new(Status::ERR_NOT_AVAILABLE, format!("status socket: {e}"));
    let l = TcpListener::bind("127.0.0.1:0").map_err(io)?;
    let port = l.local_addr().map_err(io)?.port();
    let body = format!("psched@0.0;tcp4://127.0.0.1:{port}\n{VERSION}\n");
    std::thread::spawn(move || accept_loop(&l, &snap, public));
    Ok(body)
}

/// Slots for tools being served; a tool beyond them waits in the listen
/// queue (a thread blocks on the condition, never spins).
struct Slots {
    busy: Mutex<usize>,
    freed: std::sync::Condvar,
}

fn accept_loop(l: &TcpListener, snap: &Snapshot, public: bool) {
    let slots = Arc::new(Slots {
        busy: Mutex::new(0),
        freed: std::sync::Condvar::new(),
    });
    let me = nix::unistd::geteuid().as_raw();
    for (n, s) in l.incoming().flatten().enumerate() {
        if !public && !allowed(&s, me) {
            // Another user: closed at once, holding no slot.
            continue;
        }
        {
            let mut b = slots.busy.lock().unwrap_or_else(|e| e.into_inner());
            while *b >= MAX_CLIENTS {
                b = slots.freed.wait(b).unwrap_or_else(|e| e.into_inner());
            }
            *b += 1;
        }
        let (snap, slots) = (Arc::clone(snap), Arc::clone(&slots));
        std::thread::spawn(move || {
            let _ = serve_client(s, &snap, n);
            *slots.busy.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
            slots.freed.notify_one();
        });
    }
}

/// Whether the peer of `s` runs as psched's user `me` or root.
fn allowed(s: &TcpStream, me: u32) -> bool {
    matches!(crate::conn::creds::peer_uid(s), Some(u) if u == me || u == 0)
}

fn field(name: &str) -> [u8; NSPACE_FIELD] {
    let mut f = [0u8; NSPACE_FIELD];
    let b = name.as_bytes();
    f[..b.len().min(NSPACE_FIELD - 1)].copy_from_slice(&b[..b.len().min(NSPACE_FIELD - 1)]);
    f
}

/// Read the connect-ack (bounded) and welcome the tool with a namespace of
/// its own.
fn handshake(s: &mut TcpStream, n: usize) -> std::io::Result<()> {
    let mut h = [0u8; HEADER_LEN];
    s.read_exact(&mut h)?;
    let len = Header::decode_connect_len(&h);
    if len > MAX_FRAME {
        return Err(std::io::Error::other("connect-ack too large"));
    }
    std::io::copy(&mut s.take(u64::from(len)), &mut std::io::sink())?;
    let mut w = vec![0u8; 4];
    w.extend_from_slice(&field(&format!("psched-status@{n}")));
    w.extend_from_slice(&[0; 4]);
    w.extend_from_slice(&field("psched@0"));
    w.extend_from_slice(&[0; 8]);
    s.write_all(&w)
}

fn serve_client(mut s: TcpStream, snap: &Snapshot, n: usize) -> std::io::Result<()> {
    s.set_read_timeout(Some(IDLE))?;
    s.set_write_timeout(Some(IDLE))?;
    handshake(&mut s, n)?;
    let mut d = FrameDecoder::new(MAX_FRAME);
    let mut buf = [0u8; 8192];
    loop {
        loop {
            match d.next_frame() {
                Ok(Some((h, payload))) => {
                    let body = reply(&payload, snap);
                    let frame = encode_frame(0, h.tag, &body).map_err(std::io::Error::other)?;
                    s.write_all(&frame)?;
                }
                Ok(None) => break,
                // A frame over the limit: this peer is dropped.
                Err(_) => return Ok(()),
            }
        }
        match s.read(&mut buf)? {
            0 => return Ok(()),
            k => d.feed(&buf[..k]),
        }
    }
}

/// The reply to one request: a status query's answer, else plain success.
fn reply(payload: &[u8], snap: &Snapshot) -> Vec<u8> {
    let (st, infos) = match queries(payload) {
        Some(qs) => {
            let l = snap.lock().map(|g| g.clone()).unwrap_or_default();
            super::status::answer_queries(&l, &qs, WIRE, super::now_ms())
        }
        None => (Status::SUCCESS, Vec::new()),
    };
    let mut e = Encoder::new(WIRE);
    let _ = e.pack_one(&st);
    let _ = crate::codec::attrs::write_infos(&mut e, &infos);
    e.into_bytes()
}

/// The queries of a `PMIX_QUERY_CMD` payload (at most 64).
fn queries(payload: &[u8]) -> Option<Vec<Query>> {
    let mut d = Decoder::new(payload, WIRE);
    let Cmd(c) = d.unpack_one().ok()?;
    if c != cmd::QUERY {
        return None;
    }
    let Size(n) = d.unpack_one().ok()?;
    if n == 0 || n > 64 {
        return Some(Vec::new());
    }
    d.unpack::<Query>(n as usize).ok()
}
