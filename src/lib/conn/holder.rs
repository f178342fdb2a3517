//! A holder: the process that owns an allocation (palloc) keeps its
//! connection to the DVM open and relays other tools' requests over it, so
//! that the DVM sees every such request come from the allocation's owning
//! namespace (spec 001 §8.2.1.7: only owners may spawn into, extend or
//! release a reservation).
//!
//! `palloc … -- CMD` runs CMD as an ordinary local process (the caller's
//! environment, directory, stdin and terminal, as `salloc` does) with
//! [`HOLDER_ENV`] naming the holder's socket; every pmix-tools program CMD
//! runs connects through it unless a server is named explicitly.
//!
//! # Protocol
//! A Unix socket in a fresh private directory (mode 0700); only processes
//! of the same user are served (checked with `SO_PEERCRED`). The holder's
//! first frame (tag [`TAG_WELCOME`]) is a JSON [`HolderWelcome`]; after it
//! both directions carry ordinary PMIx frames. Requests are relayed on the
//! holder's own connection under fresh tags and their replies routed back
//! under the client's tag; a client's FINALIZE is answered by the holder
//! itself (the holder's connection stays). Everything the DVM sends
//! unasked (events, forwarded output) is copied to every client, each of
//! which keeps what concerns it.
//!
//! The holder has no threads: its listening socket and its clients'
//! sockets are extra descriptors of the owner's one wait
//! ([`crate::conn::Connection::wait`]); the owner hands it what becomes
//! readable ([`Holder::on_ready`]) and the replies to relayed requests
//! ([`Holder::on_reply`]).

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::codec::{Cmd, Decoder, Encoder, WireVersion};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::client::{handshake_timeout, seconds, Connection, Deadlined};
use super::discover::Target;
use super::frame::{io_error, read_frame, write_frame, FrameDecoder, MAX_PAYLOAD, TAG_DYNAMIC};
use super::handshake::{Identity, Welcome};
use super::stream::Stream;
use super::uri::ServerUri;

/// Environment variable naming a holder's socket; set for the command
/// `palloc … -- CMD` runs.
pub(crate) const HOLDER_ENV: &str = "PMIX_TOOLS_HOLDER";
/// Tag of the holder's first frame.
pub(crate) const TAG_WELCOME: u32 = 3;
/// Longest a write to one client may block before that client is dropped.
const CLIENT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest welcome frame a client accepts.
const MAX_WELCOME: u32 = 64 * 1024;
/// Most requests of one client relayed and not yet answered; beyond it the
/// holder stops reading that client until replies come.
const MAX_RELAYED_PER_CLIENT: usize = 256;

/// What a client learns on connecting: who it acts as, and the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct HolderWelcome {
    /// The namespace every relayed request comes from (the holder's).
    pub nspace: String,
    /// The holder's rank in it.
    pub rank: u32,
    /// True when the holder is a client of a job (its requests are that
    /// job's "application" requests), false when it is a tool.
    pub client: bool,
    /// The server's namespace and rank, when known.
    pub server_nspace: String,
    /// See `server_nspace`.
    pub server_rank: u32,
    /// The server's URI (`NSPACE.RANK;tcp4://…`).
    pub server_uri: String,
    /// The server's PMIx version, when known.
    pub version: Option<String>,
    /// The wire version spoken (`v41`, `v61`).
    pub wire: String,
    /// The allocation held.
    pub alloc_id: String,
    /// The holder's process id.
    pub pid: u32,
}

/// A running holder; dropping it stops serving and removes its socket.
pub(crate) struct Holder {
    /// The private directory made for the socket (removed on drop), when
    /// the registry was not used.
    private_dir: Option<PathBuf>,
    path: PathBuf,
    listener: UnixListener,
    welcome: Vec<u8>,
    wire: WireVersion,
    clients: Vec<Client>,
    next_id: u64,
    /// Our tag on the DVM connection → (client id, the client's tag).
    relayed: HashMap<u32, (u64, u32)>,
}

struct Client {
    id: u64,
    stream: UnixStream,
    decoder: FrameDecoder,
    in_flight: usize,
}

impl Client {
    fn send(&self, tag: u32, payload: &[u8]) -> Result<()> {
        let mut w = &self.stream;
        write_frame(&mut w, 0, tag, payload)?;
        w.flush()
            .map_err(|e| io_error(e, "writing to a holder client"))
    }

    fn close(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

impl Holder {
    /// Serve `conn` (which holds `alloc_id`): on the registered socket of
    /// that allocation (see [`registered_path`]), so tools in other shells
    /// of the same user find it by the allocation id, or, where the
    /// registry cannot be used, on a socket in a fresh private directory.
    pub(crate) fn start(conn: &Connection, alloc_id: &str) -> Result<Holder> {
        let server = conn.target().uri.nspace.clone();
        let (listener, path, private_dir) = match bind_registered(&server, alloc_id) {
            Some((l, p)) => (l, p, None),
            None => {
                let (l, p, d) = bind_private()?;
                (l, p, Some(d))
            }
        };
        listener
            .set_nonblocking(true)
            .map_err(|e| io_error(e, "configuring the holder socket"))?;
        let (me, rank) = conn.me();
        let target = conn.target();
        let (server_nspace, server_rank) = conn.server();
        let welcome = HolderWelcome {
            nspace: me.to_string(),
            rank,
            client: matches!(conn.identity(), Identity::Client { .. }),
            server_nspace: server_nspace.to_string(),
            server_rank,
            server_uri: target.uri.to_string(),
            version: target.version.clone(),
            wire: conn.wire().name().to_string(),
            alloc_id: alloc_id.to_string(),
            pid: std::process::id(),
        };
        let welcome = serde_json::to_vec(&welcome)
            .map_err(|e| Error::new(Status::ERROR, format!("encoding the holder welcome: {e}")))?;
        Ok(Holder {
            private_dir,
            path,
            listener,
            welcome,
            wire: conn.wire(),
            clients: Vec::new(),
            next_id: 0,
            relayed: HashMap::new(),
        })
    }

    /// The socket clients connect to (the value of [`HOLDER_ENV`]).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The descriptors to watch for readability: the listening socket, then
    /// each client that may send more now. Pass their index in this list
    /// to [`Holder::on_ready`].
    pub(crate) fn fds(&self) -> Vec<RawFd> {
        let mut v = vec![self.listener.as_raw_fd()];
        v.extend(
            self.clients
                .iter()
                .filter(|c| c.in_flight < MAX_RELAYED_PER_CLIENT)
                .map(|c| c.stream.as_raw_fd()),
        );
        v
    }

    /// Descriptor `fd` (one of [`Holder::fds`]) is readable: accept a
    /// client, or relay what a client sent over `conn`.
    pub(crate) fn on_ready(&mut self, fd: RawFd, conn: &Connection) {
        if fd == self.listener.as_raw_fd() {
            self.accept();
            return;
        }
        let Some(i) = self.clients.iter().position(|c| c.stream.as_raw_fd() == fd) else {
            return;
        };
        if !self.serve(i, conn) {
            let c = self.clients.swap_remove(i);
            c.close();
            self.relayed.retain(|_, (id, _)| *id != c.id);
        }
    }

    /// Whether `tag` (an [`crate::conn::client::Event::Reply`]) is a relayed
    /// request's.
    pub(crate) fn owns(&self, tag: u32) -> bool {
        self.relayed.contains_key(&tag)
    }

    /// The DVM answered relayed request `tag`: pass the reply back under
    /// the client's tag (a client whose request can no longer be answered
    /// learns it by its connection closing).
    pub(crate) fn on_reply(&mut self, tag: u32, conn: &Connection) {
        let Some((id, ctag)) = self.relayed.remove(&tag) else {
            return;
        };
        let reply = conn.take_reply(tag);
        let Some(i) = self.clients.iter().position(|c| c.id == id) else {
            return;
        };
        self.clients[i].in_flight = self.clients[i].in_flight.saturating_sub(1);
        let ok = match reply {
            Some(Ok(bytes)) => self.clients[i].send(ctag, &bytes).is_ok(),
            _ => false,
        };
        if !ok {
            let c = self.clients.swap_remove(i);
            c.close();
            self.relayed.retain(|_, (cid, _)| *cid != c.id);
        }
    }

    /// Copy a message the DVM sent unasked to every client.
    pub(crate) fn broadcast(&mut self, tag: u32, payload: &[u8]) {
        let mut dead = Vec::new();
        for c in &self.clients {
            if c.send(tag, payload).is_err() {
                c.close();
                dead.push(c.id);
            }
        }
        if !dead.is_empty() {
            self.clients.retain(|c| !dead.contains(&c.id));
            self.relayed.retain(|_, (id, _)| !dead.contains(id));
        }
    }

    /// How many clients are connected now.
    pub(crate) fn clients(&self) -> usize {
        self.clients.len()
    }

    fn accept(&mut self) {
        // At most a few per round: the owner's loop comes back for more.
        for _ in 0..16 {
            let Ok((stream, _)) = self.listener.accept() else {
                return;
            };
            if !same_user(&stream) {
                continue;
            }
            let _ = stream.set_write_timeout(Some(CLIENT_WRITE_TIMEOUT));
            self.next_id += 1;
            let client = Client {
                id: self.next_id,
                stream,
                decoder: FrameDecoder::new(MAX_PAYLOAD),
                in_flight: 0,
            };
            if client.send(TAG_WELCOME, &self.welcome).is_ok() {
                self.clients.push(client);
            }
        }
    }

    /// Read what client `i` sent and relay it; false when it has gone.
    fn serve(&mut self, i: usize, conn: &Connection) -> bool {
        let mut buf = vec![0u8; 64 * 1024];
        let got = nix::sys::socket::recv(
            self.clients[i].stream.as_raw_fd(),
            &mut buf,
            nix::sys::socket::MsgFlags::MSG_DONTWAIT,
        );
        match got {
            Ok(0) => return false,
            Ok(n) => self.clients[i].decoder.feed(&buf[..n]),
            Err(nix::errno::Errno::EAGAIN) | Err(nix::errno::Errno::EINTR) => return true,
            Err(_) => return false,
        }
        loop {
            let frame = match self.clients[i].decoder.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => return true,
                Err(_) => return false,
            };
            let (hdr, payload) = frame;
            if hdr.tag < TAG_DYNAMIC {
                if conn.send(hdr.tag, &payload).is_err() {
                    return false;
                }
                continue;
            }
            if is_finalize(&payload, self.wire) {
                let mut e = Encoder::new(self.wire);
                if e.pack_one(&Status::SUCCESS).is_ok()
                    && self.clients[i].send(hdr.tag, &e.into_bytes()).is_err()
                {
                    return false;
                }
                continue;
            }
            match conn.begin(&payload) {
                Ok(tag) => {
                    self.relayed.insert(tag, (self.clients[i].id, hdr.tag));
                    self.clients[i].in_flight += 1;
                }
                Err(_) => return false,
            }
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        for c in self.clients.drain(..) {
            c.close();
        }
        let _ = std::fs::remove_file(&self.path);
        if let Some(d) = &self.private_dir {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// The per-user directory where holders register their sockets by
/// allocation id: `$XDG_RUNTIME_DIR/pmix-tools-holders` or
/// `/tmp/pmix-tools-holders.<uid>`, created with mode 0700 (see [`registry`]).
pub(crate) fn registry_dir() -> Option<PathBuf> {
    registry().ok()
}

/// Names tried for the registry after the first, when another user holds it.
const REGISTRY_ALTERNATIVES: usize = 8;

/// The holder registry: the first of `BASE`, `BASE.1` … `BASE.7` that is
/// (or can be made) a real private directory of ours, so a path another
/// user pre-created does not take it away (every tool of ours picks the
/// same one); or why none can be used, naming each path and its owner.
pub(crate) fn registry() -> std::result::Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = nix::unistd::geteuid().as_raw();
    let base = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_dir() => d.join("pmix-tools-holders"),
        _ => PathBuf::from(format!("/tmp/pmix-tools-holders.{uid}")),
    };
    let mut refused = Vec::new();
    for n in 0..REGISTRY_ALTERNATIVES {
        let dir = match n {
            0 => base.clone(),
            _ => PathBuf::from(format!("{}.{n}", base.display())),
        };
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0 => return Ok(dir),
            Ok(m) => refused.push(format!(
                "{} is {} owned by uid {} (mode {:o})",
                dir.display(),
                if m.file_type().is_symlink() {
                    "a symlink"
                } else if m.is_dir() {
                    "a directory"
                } else {
                    "a file"
                },
                m.uid(),
                m.mode() & 0o7777
            )),
            Err(e) => refused.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!(
        "the holder registry cannot be used: {}",
        refused.join("; ")
    ))
}

/// Where the holder of `alloc_id` on the DVM whose namespace is `server`
/// registers its socket (in [`registry_dir`]): allocation ids are unique
/// only within one DVM. Characters other than letters, digits and `@._-`
/// are replaced by `_`.
pub(crate) fn registered_path(server: &str, alloc_id: &str) -> Option<PathBuf> {
    if alloc_id.is_empty() || alloc_id.len() + server.len() > 200 {
        return None;
    }
    let name: String = format!("{server}+{alloc_id}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "@._-+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(registry_dir()?.join(format!("{name}.sock")))
}

/// Bind the registered socket of `alloc_id` on `server`, replacing a stale one (whose
/// holder has gone); `None` when it cannot (no registry, or a live holder
/// of the same id).
fn bind_registered(server: &str, alloc_id: &str) -> Option<(UnixListener, PathBuf)> {
    let path = registered_path(server, alloc_id)?;
    if path.exists() {
        if UnixStream::connect(&path).is_ok() {
            return None;
        }
        std::fs::remove_file(&path).ok()?;
    }
    UnixListener::bind(&path).ok().map(|l| (l, path))
}

/// Bind a socket in a fresh private directory under TMPDIR.
fn bind_private() -> Result<(UnixListener, PathBuf, PathBuf)> {
    let base = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let template = base.join(format!("palloc.{}.XXXXXX", std::process::id()));
    let dir = nix::unistd::mkdtemp(&template).map_err(|e| {
        Error::new(
            Status::ERR_OUT_OF_RESOURCE,
            format!(
                "cannot create a private directory under {}: {e}",
                base.display()
            ),
        )
    })?;
    let path = dir.join("holder.sock");
    match UnixListener::bind(&path) {
        Ok(l) => Ok((l, path, dir)),
        Err(e) => {
            let _ = std::fs::remove_dir(&dir);
            Err(io_error(e, "creating the holder socket"))
        }
    }
}

fn same_user(s: &UnixStream) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    getsockopt(s, PeerCredentials)
        .map(|c| c.uid() == nix::unistd::geteuid().as_raw())
        .unwrap_or(false)
}

fn is_finalize(payload: &[u8], wire: WireVersion) -> bool {
    matches!(
        Decoder::new(payload, wire).unpack_one::<Cmd>(),
        Ok(Cmd(crate::proto::cmd::FINALIZE))
    )
}

/// Connect to the holder whose socket is `path`.
pub(crate) fn connect(path: &Path) -> Result<Connection> {
    let fail = |e: std::io::Error| {
        Error::new(
            Status::ERR_UNREACH,
            format!(
                "cannot reach the palloc holding this allocation ({HOLDER_ENV}={}): {e}; \
it has probably ended",
                path.display()
            ),
        )
    };
    let stream = UnixStream::connect(path).map_err(fail)?;
    let mut stream = Stream::Unix(stream);
    let patience = handshake_timeout();
    let deadline = Instant::now() + patience;
    let welcome =
        read_frame(&mut Deadlined::new(&mut stream, deadline), MAX_WELCOME).map_err(|e| {
            if e.status == Status::ERR_TIMEOUT {
                Error::new(
                    Status::ERR_TIMEOUT,
                    format!(
                        "no answer from the palloc holding this allocation ({}) after {}",
                        path.display(),
                        seconds(patience)
                    ),
                )
            } else {
                e
            }
        })?;
    let Some((hdr, body)) = welcome else {
        return Err(Error::new(
            Status::ERR_LOST_CONNECTION,
            format!("the holder at {} closed the connection", path.display()),
        ));
    };
    let w: HolderWelcome = (hdr.tag == TAG_WELCOME)
        .then(|| serde_json::from_slice(&body).ok())
        .flatten()
        .ok_or_else(|| {
            Error::new(
                Status::ERR_UNPACK_FAILURE,
                format!("{} is not a palloc holder", path.display()),
            )
        })?;
    let wire = WireVersion::from_name(&w.wire).ok_or_else(|| {
        Error::new(
            Status::ERR_NOT_SUPPORTED,
            format!("the holder speaks wire {:?}, which we do not", w.wire),
        )
    })?;
    let identity = if w.client {
        Identity::Client {
            nspace: w.nspace.clone(),
            rank: w.rank,
        }
    } else {
        Identity::Tool
    };
    let target = Target {
        uri: ServerUri::parse(&w.server_uri)?,
        version: w.version.clone(),
        identity,
        found_by: format!(
            "palloc holder of allocation {} (pid {}, {})",
            w.alloc_id,
            w.pid,
            path.display()
        ),
    };
    let welcome = Welcome {
        nspace: w.nspace,
        rank: w.rank,
        server_nspace: w.server_nspace,
        server_rank: w.server_rank,
        pindex: None,
    };
    Connection::established(stream, target, welcome, wire)
}
