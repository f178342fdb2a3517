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

use std::io::Write;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::codec::{Cmd, Decoder, Encoder, WireVersion};
use crate::error::{Error, Result};
use crate::status::Status;

use super::client::{Connection, HANDSHAKE_TIMEOUT};
use super::discover::Target;
use super::frame::{io_error, read_frame, write_frame, MAX_PAYLOAD, TAG_DYNAMIC};
use super::handshake::{Identity, Welcome};
use super::stream::Stream;
use super::uri::ServerUri;

/// Environment variable naming a holder's socket; set for the command
/// `palloc … -- CMD` runs.
pub const HOLDER_ENV: &str = "PMIX_TOOLS_HOLDER";
/// Tag of the holder's first frame.
pub const TAG_WELCOME: u32 = 3;
/// Longest a write to one client may block before that client is dropped.
const CLIENT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest welcome frame a client accepts.
const MAX_WELCOME: u32 = 64 * 1024;

/// What a client learns on connecting: who it acts as, and the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HolderWelcome {
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
pub struct Holder {
    /// The private directory made for the socket (removed on drop), when
    /// the registry was not used.
    private_dir: Option<PathBuf>,
    path: PathBuf,
    clients: Arc<Mutex<Vec<Arc<Client>>>>,
    stopping: Arc<AtomicBool>,
}

struct Client {
    writer: Mutex<UnixStream>,
}

impl Client {
    fn send(&self, tag: u32, payload: &[u8]) -> Result<()> {
        let mut w = lock(&self.writer);
        write_frame(&mut *w, 0, tag, payload)?;
        w.flush()
            .map_err(|e| io_error(e, "writing to a holder client"))
    }

    fn close(&self) {
        let _ = lock(&self.writer).shutdown(std::net::Shutdown::Both);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Holder {
    /// Serve `conn` (which holds `alloc_id`): on the registered socket of
    /// that allocation (see [`registered_path`]), so tools in other shells
    /// of the same user find it by the allocation id, or, where the
    /// registry cannot be used, on a socket in a fresh private directory.
    pub fn start(conn: Arc<Connection>, alloc_id: &str) -> Result<Holder> {
        let server = conn.target().uri.nspace.clone();
        let (listener, path, private_dir) = match bind_registered(&server, alloc_id) {
            Some((l, p)) => (l, p, None),
            None => {
                let (l, p, d) = bind_private()?;
                (l, p, Some(d))
            }
        };
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
        let holder = Holder {
            private_dir,
            path,
            clients: Arc::new(Mutex::new(Vec::new())),
            stopping: Arc::new(AtomicBool::new(false)),
        };
        let clients = Arc::clone(&holder.clients);
        let stopping = Arc::clone(&holder.stopping);
        std::thread::Builder::new()
            .name("holder-accept".into())
            .spawn(move || accept_loop(listener, conn, welcome, clients, stopping))
            .map_err(|e| {
                Error::new(
                    Status::ERR_OUT_OF_RESOURCE,
                    format!("cannot start the holder: {e}"),
                )
            })?;
        Ok(holder)
    }

    /// The socket clients connect to (the value of [`HOLDER_ENV`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Copy a message the DVM sent unasked to every client.
    pub fn broadcast(&self, tag: u32, payload: &[u8]) {
        let clients: Vec<Arc<Client>> = lock(&self.clients).clone();
        let mut dead = Vec::new();
        for c in clients {
            if c.send(tag, payload).is_err() {
                c.close();
                dead.push(c);
            }
        }
        if !dead.is_empty() {
            lock(&self.clients).retain(|c| !dead.iter().any(|d| Arc::ptr_eq(c, d)));
        }
    }

    /// How many clients are connected now.
    pub fn clients(&self) -> usize {
        lock(&self.clients).len()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag and ends.
        let _ = UnixStream::connect(&self.path);
        for c in lock(&self.clients).drain(..) {
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
/// `/tmp/pmix-tools-holders.<uid>`, created with mode 0700. Used only when
/// it is a real directory (not a link) owned by us and private.
pub fn registry_dir() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = nix::unistd::geteuid().as_raw();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_dir() => d.join("pmix-tools-holders"),
        _ => PathBuf::from(format!("/tmp/pmix-tools-holders.{uid}")),
    };
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    let private = meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0;
    private.then_some(dir)
}

/// Where the holder of `alloc_id` on the DVM whose namespace is `server`
/// registers its socket (in [`registry_dir`]): allocation ids are unique
/// only within one DVM. Characters other than letters, digits and `@._-`
/// are replaced by `_`.
pub fn registered_path(server: &str, alloc_id: &str) -> Option<PathBuf> {
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

fn accept_loop(
    listener: UnixListener,
    conn: Arc<Connection>,
    welcome: Vec<u8>,
    clients: Arc<Mutex<Vec<Arc<Client>>>>,
    stopping: Arc<AtomicBool>,
) {
    for incoming in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = incoming else {
            // Out of descriptors or similar: back off rather than spin.
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        if !same_user(&stream) {
            continue;
        }
        let _ = stream.set_write_timeout(Some(CLIENT_WRITE_TIMEOUT));
        let Ok(reader) = stream.try_clone() else {
            continue;
        };
        let client = Arc::new(Client {
            writer: Mutex::new(stream),
        });
        if client.send(TAG_WELCOME, &welcome).is_err() {
            continue;
        }
        lock(&clients).push(Arc::clone(&client));
        let conn = Arc::clone(&conn);
        let registry = Arc::clone(&clients);
        let spawned = std::thread::Builder::new()
            .name("holder-client".into())
            .spawn(move || {
                serve_client(reader, &client, &conn);
                client.close();
                lock(&registry).retain(|c| !Arc::ptr_eq(c, &client));
            });
        if spawned.is_err() {
            lock(&clients).pop();
        }
    }
}

/// Relay one client's requests until it leaves.
fn serve_client(mut reader: UnixStream, client: &Arc<Client>, conn: &Connection) {
    let wire = conn.wire();
    while let Ok(Some((hdr, payload))) = read_frame(&mut reader, MAX_PAYLOAD) {
        if hdr.tag < TAG_DYNAMIC {
            if conn.send(hdr.tag, &payload).is_err() {
                return;
            }
            continue;
        }
        if is_finalize(&payload, wire) {
            let mut e = Encoder::new(wire);
            if e.pack_one(&Status::SUCCESS).is_ok() {
                let _ = client.send(hdr.tag, &e.into_bytes());
            }
            continue;
        }
        let back = Arc::clone(client);
        let tag = hdr.tag;
        let relayed = conn.relay(
            &payload,
            Box::new(move |reply| match reply {
                Ok(bytes) => {
                    if back.send(tag, &bytes).is_err() {
                        back.close();
                    }
                }
                // The DVM connection is gone: the client learns it by its
                // own connection closing.
                Err(_) => back.close(),
            }),
        );
        if relayed.is_err() {
            return;
        }
    }
}

fn is_finalize(payload: &[u8], wire: WireVersion) -> bool {
    matches!(
        Decoder::new(payload, wire).unpack_one::<Cmd>(),
        Ok(Cmd(crate::ops::cmd::FINALIZE))
    )
}

/// Connect to the holder whose socket is `path`.
pub fn connect(path: &Path) -> Result<Connection> {
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
    stream
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(fail)?;
    let mut stream = Stream::Unix(stream);
    let Some((hdr, body)) = read_frame(&mut stream, MAX_WELCOME)? else {
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
