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
//! itself (the holder's connection stays). What the DVM sends unasked goes
//! only to the client it concerns ([`Holder::route`], read with
//! [`super::holder_route`]): a job's output and events to the client that
//! spawned it, a timeout warning to the client that asked for it, other
//! events to the clients registered for them. Each client has a bounded
//! queue written without blocking ([`super::holder_client`]); while one is
//! full the holder takes no more messages from the DVM (backpressure to the
//! source), and a slow reader is never dropped. Only operations on the
//! allocation held are relayed, and, for a holder inside a job, only for
//! that job's processes.
//!
//! The holder has no threads: its listening socket and its clients'
//! sockets are extra descriptors of the owner's one wait
//! ([`crate::conn::Connection::wait`]); the owner hands it what becomes
//! readable ([`Holder::on_ready`]) and the replies to relayed requests
//! ([`Holder::on_reply`]).

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::codec::{Cmd, Decoder, Encoder, WireVersion};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::client::{handshake_timeout, seconds, Connection, Deadlined};
use super::discover::Target;
use super::frame::{io_error, read_frame, TAG_DYNAMIC, TAG_IOF, TAG_NOTIFY};
use super::handshake::{Identity, Welcome};
use super::holder_client::{Client, CLIENT_QUEUE_BYTES, PARTIAL_BUDGET};
use super::holder_route::{
    acts_on_existing, classify, event_view, output_nspace, pause_request, spawned_nspace, Kind,
};
use super::registry::{claim, Claim};
pub use super::registry::{registered_path, registry, sweep, HeldBy};
use super::replays::Replays;
use super::stream::Stream;
use super::uri::ServerUri;

/// Environment variable naming a holder's socket; set for the command
/// `palloc … -- CMD` runs.
pub const HOLDER_ENV: &str = "PMIX_TOOLS_HOLDER";
/// Tag of the holder's first frame.
pub(crate) const TAG_WELCOME: u32 = 3;
/// Largest welcome frame a client accepts.
const MAX_WELCOME: u32 = 64 * 1024;
/// Most requests of one client relayed and not yet answered; beyond it the
/// holder stops reading that client until replies come.
const MAX_RELAYED_PER_CLIENT: usize = 256;
/// Most clients served at once; more wait in the listening backlog.
pub(crate) const MAX_CLIENTS: usize = 256;
/// Bytes queued for all clients together beyond which the holder stops
/// taking messages from the DVM.
pub(crate) const TOTAL_QUEUE_BYTES: usize = 64 * 1024 * 1024;
/// Bytes of output and events kept while the spawn they may belong to is
/// not answered yet; beyond it the holder stops taking messages.
const PARKED_BYTES: usize = 8 * 1024 * 1024;
/// Jobs remembered as spawned through this holder.
const MAX_JOBS: usize = 65_536;

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

/// A request relayed and not answered yet.
struct Relayed {
    client: u64,
    ctag: u32,
    kind: Kind,
}

/// A running holder; dropping it stops serving and removes its socket.
pub struct Holder {
    /// The private directory made for the socket (removed on drop), when
    /// the registry was not used.
    private_dir: Option<PathBuf>,
    /// The registry's name held (dropping it removes the socket).
    claim: Option<Claim>,
    path: PathBuf,
    listener: UnixListener,
    welcome: Vec<u8>,
    wire: WireVersion,
    alloc_id: String,
    /// The job the holder is a client of: only its processes (and the
    /// holder's own descendants) may act through it.
    job: Option<String>,
    clients: Vec<Client>,
    next_id: u64,
    /// Our tag on the DVM connection → who asked, and what.
    relayed: HashMap<u32, Relayed>,
    /// Jobs spawned through this holder → the client that spawned them.
    jobs: HashMap<String, u64>,
    /// The events passed on, so the DVM's replays of them are not.
    replays: Replays,
    /// Spawns relayed and not answered yet.
    spawning: usize,
    /// Output and events of jobs not known yet, while spawns are pending.
    parked: VecDeque<(u32, Vec<u8>, String)>,
    parked_bytes: usize,
    /// A client released the whole allocation held (the DVM said yes).
    released: bool,
    /// Jobs whose output the DVM holds back because their client's queue
    /// is full → that client.
    held_back: HashMap<String, u64>,
    /// The DVM cannot hold one job's output back (not pdvm): a full queue
    /// stops all reading instead.
    no_job_pause: bool,
    /// For a holder inside a job: the job's processes on this machine that
    /// the holder knows (the one it runs under, and those the DVM listed);
    /// a client must descend from one of them (see [`may_act_as_owner`]).
    job_roots: Vec<i32>,
}

impl Holder {
    /// Serve `conn` (which holds `alloc_id`): on the registered socket of
    /// that allocation (see [`registered_path`]), so tools in other shells
    /// of the same user find it by the allocation id, or, where the
    /// registry cannot be used, on a socket in a fresh private directory.
    pub fn start(conn: &Connection, alloc_id: &str, held: HeldBy) -> Result<Holder> {
        let server = conn.target().uri.nspace.clone();
        let (listener, path, private_dir, claim) = match bind_registered(&server, alloc_id, held) {
            Some((l, c)) => (l, c.entry().to_path_buf(), None, Some(c)),
            None => {
                let (l, p, d) = bind_private()?;
                (l, p, Some(d), None)
            }
        };
        listener
            .set_nonblocking(true)
            .map_err(|e| io_error(e, "configuring the holder socket"))?;
        let (me, rank) = conn.me();
        let target = conn.target();
        let (server_nspace, server_rank) = conn.server();
        let client = matches!(conn.identity(), Identity::Client { .. });
        let welcome = HolderWelcome {
            nspace: me.to_string(),
            rank,
            client,
            server_nspace: server_nspace.to_string(),
            server_rank,
            server_uri: target.uri.to_string(),
            version: target.version.clone(),
            wire: conn.wire().name().to_string(),
            alloc_id: alloc_id.to_string(),
            pid: std::process::id(),
        };
        let job = client.then(|| me.to_string());
        let job_roots = job.as_deref().and_then(job_ancestor).into_iter().collect();
        let welcome = serde_json::to_vec(&welcome)
            .map_err(|e| Error::new(Status::ERROR, format!("encoding the holder welcome: {e}")))?;
        Ok(Holder {
            private_dir,
            claim,
            path,
            listener,
            welcome,
            wire: conn.wire(),
            alloc_id: alloc_id.to_string(),
            job,
            clients: Vec::new(),
            next_id: 0,
            relayed: HashMap::new(),
            jobs: HashMap::new(),
            spawning: 0,
            replays: Replays::default(),
            parked: VecDeque::new(),
            parked_bytes: 0,
            released: false,
            held_back: HashMap::new(),
            no_job_pause: false,
            job_roots,
        })
    }

    /// For a holder inside a job: the job's processes the DVM lists (their
    /// pids); those running on this machine as the job's (their
    /// environment, which the DVM set, names it) are trusted as roots too.
    pub fn know_job_processes(&mut self, pids: &[u32]) {
        let Some(job) = self.job.as_deref() else {
            return;
        };
        for pid in pids.iter().filter_map(|p| i32::try_from(*p).ok()) {
            if pid > 1 && !self.job_roots.contains(&pid) && in_job(pid, job) {
                self.job_roots.push(pid);
            }
        }
    }

    /// Register this holder also under request id `rid` (a link to its
    /// socket, removed when the returned guard drops), so commands given
    /// the request id of a granted allocation find it.
    pub fn alias(&self, conn: &Connection, rid: &str) -> Option<Alias> {
        if self.private_dir.is_some() {
            return None;
        }
        let link = registered_path(&conn.target().uri.nspace, rid, HeldBy::Request)?;
        let claim = claim(&link)?;
        std::os::unix::fs::symlink(&self.path, claim.entry()).ok()?;
        Some(Alias { _claim: claim })
    }

    /// Whether tools in other shells find this holder by its id (it is in
    /// the registry).
    pub fn registered(&self) -> bool {
        self.claim.is_some()
    }

    /// The job this holder is a client of, when it runs inside one: only
    /// that job's processes may act through it.
    pub fn job(&self) -> Option<&str> {
        self.job.as_deref()
    }

    /// The socket clients connect to (the value of [`HOLDER_ENV`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The descriptors to watch for readability: the listening socket
    /// (while there is room for another client), then each client that may
    /// send more now. Pass a ready one to [`Holder::on_ready`].
    pub fn fds(&self) -> Vec<RawFd> {
        let mut v = Vec::with_capacity(self.clients.len() + 1);
        if self.clients.len() < MAX_CLIENTS {
            v.push(self.listener.as_raw_fd());
        }
        // Past the budget of unfinished frames, those clients wait (the
        // kernel holds the rest) until others finish or are dropped.
        let over = self.clients.iter().map(Client::partial).sum::<usize>() >= PARTIAL_BUDGET;
        v.extend(
            self.clients
                .iter()
                .filter(|c| c.in_flight < MAX_RELAYED_PER_CLIENT)
                .filter(|c| !over || c.partial() == 0)
                .map(|c| c.stream.as_raw_fd()),
        );
        v
    }

    /// When the next client that is mid-frame must have sent more (see
    /// [`Holder::drop_stalled`]).
    pub fn next_stall(&self) -> Option<Instant> {
        self.clients.iter().filter_map(Client::stall_deadline).min()
    }

    /// Drop the clients whose unfinished frame has made no progress for
    /// [`super::holder_client::PARTIAL_TIMEOUT`]: what they hold is freed.
    pub fn drop_stalled(&mut self, now: Instant) {
        while let Some(i) = self
            .clients
            .iter()
            .position(|c| c.stall_deadline().is_some_and(|d| d <= now))
        {
            self.remove(i);
        }
    }

    /// The clients' descriptors to watch for writability (those with
    /// frames waiting); pass a ready one to [`Holder::on_writable`].
    pub fn write_fds(&self) -> Vec<RawFd> {
        self.clients
            .iter()
            .filter(|c| c.wants_write())
            .map(|c| c.stream.as_raw_fd())
            .collect()
    }

    /// Whether the holder must stop taking messages from the DVM for now:
    /// a client's queue is full, all queues together are, or too much
    /// waits for spawns to be answered. Replies still come.
    pub fn paused(&self) -> bool {
        self.parked_bytes >= PARKED_BYTES
            || (self.no_job_pause && self.clients.iter().any(Client::full))
            || self.clients.iter().map(Client::queued).sum::<usize>() >= TOTAL_QUEUE_BYTES
    }

    /// Keep the DVM's output flow in step with the clients' queues: the
    /// jobs of a client whose queue is full are held back by the DVM (only
    /// they slow down); once that client has read half its queue, or has
    /// gone, they flow again.
    pub fn sync_flow(&mut self, conn: &Connection) {
        let any_full = self.clients.iter().any(Client::full);
        if self.no_job_pause || (!any_full && self.held_back.is_empty()) {
            return;
        }
        let full: Vec<u64> = self
            .clients
            .iter()
            .filter(|c| c.full())
            .map(|c| c.id)
            .collect();
        let hold: Vec<String> = self
            .jobs
            .iter()
            .filter(|(j, c)| full.contains(c) && !self.held_back.contains_key(*j))
            .map(|(j, _)| j.clone())
            .collect();
        for j in hold {
            let owner = self.jobs.get(&j).copied().unwrap_or(0);
            self.held_back.insert(j.clone(), owner);
            self.send_pause(&j, true, conn);
        }
        let drained = |c: &Client| c.queued() <= CLIENT_QUEUE_BYTES / 2;
        let flow: Vec<String> = self
            .held_back
            .iter()
            .filter(|(_, id)| !self.clients.iter().any(|c| c.id == **id && !drained(c)))
            .map(|(j, _)| j.clone())
            .collect();
        for j in flow {
            self.held_back.remove(&j);
            self.send_pause(&j, false, conn);
        }
    }

    fn send_pause(&mut self, job: &str, pause: bool, conn: &Connection) {
        let Some(req) = pause_request(job, pause, self.wire) else {
            return;
        };
        if let Ok(t) = conn.begin(&req) {
            self.relayed.insert(
                t,
                Relayed {
                    client: 0,
                    ctag: 0,
                    kind: Kind::Pause,
                },
            );
        }
    }

    /// Descriptor `fd` (one of [`Holder::fds`]) is readable: accept a
    /// client, or relay what a client sent over `conn`.
    pub fn on_ready(&mut self, fd: RawFd, conn: &Connection) {
        if fd == self.listener.as_raw_fd() {
            self.accept();
            return;
        }
        let Some(i) = self.clients.iter().position(|c| c.stream.as_raw_fd() == fd) else {
            return;
        };
        if !self.serve(i, conn) {
            self.remove(i);
        }
    }

    /// Client descriptor `fd` (one of [`Holder::write_fds`]) is writable.
    pub fn on_writable(&mut self, fd: RawFd) {
        if let Some(i) = self.clients.iter().position(|c| c.stream.as_raw_fd() == fd) {
            if self.clients[i].flush().is_err() {
                self.remove(i);
            }
        }
    }

    fn remove(&mut self, i: usize) {
        let c = self.clients.swap_remove(i);
        c.close();
        let spawns = self
            .relayed
            .values()
            .filter(|r| r.client == c.id && matches!(r.kind, Kind::Spawn { .. }))
            .count();
        self.spawning = self.spawning.saturating_sub(spawns);
        self.relayed.retain(|_, r| r.client != c.id);
        if self.spawning == 0 {
            self.unpark_foreign();
        }
    }

    /// Whether `tag` (an [`crate::conn::client::Event::Reply`]) is a relayed
    /// request's.
    pub fn owns(&self, tag: u32) -> bool {
        self.relayed.contains_key(&tag)
    }

    /// The DVM answered relayed request `tag`: pass the reply back under
    /// the client's tag (a client whose request can no longer be answered
    /// learns it by its connection closing). A spawn's reply makes the job
    /// it names that client's.
    pub fn on_reply(&mut self, tag: u32, conn: &Connection) {
        let Some(r) = self.relayed.remove(&tag) else {
            return;
        };
        let reply = conn.take_reply(tag);
        if r.kind == Kind::Pause {
            if !matches!(&reply, Some(Ok(b)) if succeeded(b, self.wire)) {
                self.no_job_pause = true;
            }
            return;
        }
        if self.releases_all(&r.kind) && matches!(&reply, Some(Ok(b)) if succeeded(b, self.wire)) {
            self.released = true;
        }
        if let Kind::Spawn { .. } = r.kind {
            self.spawning = self.spawning.saturating_sub(1);
            let job = match &reply {
                Some(Ok(bytes)) => spawned_nspace(bytes, self.wire),
                _ => None,
            };
            self.spawned(r.client, job);
        }
        let Some(i) = self.clients.iter().position(|c| c.id == r.client) else {
            return;
        };
        self.clients[i].in_flight = self.clients[i].in_flight.saturating_sub(1);
        let ok = match reply {
            Some(Ok(bytes)) => self.clients[i].send(r.ctag, &bytes).is_ok(),
            _ => false,
        };
        if !ok {
            self.remove(i);
        }
    }

    /// A spawn of `client` was answered: the job it names (if any) is the
    /// client's, with what was kept of it meanwhile. A spawn refused while
    /// output of unknown jobs was kept (PRRTE answers `PMIX_ERROR` for a job
    /// that failed before the reply) leaves them to that client when it
    /// was the only spawn pending.
    fn spawned(&mut self, client: u64, job: Option<String>) {
        if self.jobs.len() >= MAX_JOBS {
            let live: Vec<u64> = self.clients.iter().map(|c| c.id).collect();
            self.jobs.retain(|_, c| live.contains(c));
        }
        if let Some(j) = job {
            self.jobs.insert(j, client);
        } else if self.spawning == 0 {
            for (_, _, j) in &self.parked {
                self.jobs.insert(j.clone(), client);
            }
        }
        let parked = std::mem::take(&mut self.parked);
        self.parked_bytes = 0;
        for (tag, payload, job) in parked {
            if self.jobs.contains_key(&job) || self.spawning > 0 {
                self.route_job(tag, payload, job);
            } else {
                self.route_foreign(tag, &payload);
            }
        }
    }

    /// No spawn is pending any more: what was kept belongs to jobs not
    /// spawned here.
    fn unpark_foreign(&mut self) {
        let parked = std::mem::take(&mut self.parked);
        self.parked_bytes = 0;
        for (tag, payload, _) in parked {
            self.route_foreign(tag, &payload);
        }
    }

    /// A message the DVM sent unasked: forwarded output goes to the client
    /// that spawned its job, an event about a job to that client, a
    /// timeout warning to the client that asked for it, other events to
    /// the clients registered for their code. Nothing is copied to a client
    /// it does not concern. True when the message was a client's alone (a
    /// timeout warning a client asked for): the holder's owner leaves it.
    pub fn route(&mut self, tag: u32, payload: Vec<u8>) -> bool {
        let job = match tag {
            TAG_IOF => output_nspace(&payload, self.wire),
            TAG_NOTIFY => match event_view(&payload, self.wire) {
                Some(v) if v.code == Status::ALLOC_TIMEOUT_WARNING.0 => {
                    return self.deliver_warning(v.alloc_id.as_deref(), &payload);
                }
                // The DVM's replay of an event passed on already.
                Some(_) if !self.replays.first_time(&payload) => return false,
                Some(v) => v.job,
                None => return false,
            },
            _ => return false,
        };
        match job {
            Some(j) => self.route_job(tag, payload, j),
            None => self.route_foreign(tag, &payload),
        }
        false
    }

    fn route_job(&mut self, tag: u32, payload: Vec<u8>, job: String) {
        if let Some(&owner) = self.jobs.get(&job) {
            self.deliver(owner, tag, &payload);
        } else if self.spawning > 0 {
            self.parked_bytes += payload.len();
            self.parked.push_back((tag, payload, job));
        } else {
            self.route_foreign(tag, &payload);
        }
    }

    /// A message about no job spawned here: events go to the clients
    /// registered for their code; output is nobody's.
    fn route_foreign(&mut self, tag: u32, payload: &[u8]) {
        if tag != TAG_NOTIFY {
            return;
        }
        let Some(v) = event_view(payload, self.wire) else {
            return;
        };
        let ids: Vec<u64> = self
            .clients
            .iter()
            .filter(|c| c.listens(v.code))
            .map(|c| c.id)
            .collect();
        for id in ids {
            self.deliver(id, tag, payload);
        }
    }

    fn deliver_warning(&mut self, alloc_id: Option<&str>, payload: &[u8]) -> bool {
        let Some(a) = alloc_id else {
            return false;
        };
        let ids: Vec<u64> = self
            .clients
            .iter()
            .filter(|c| c.warn_allocs.iter().any(|w| w == a))
            .map(|c| c.id)
            .collect();
        let claimed = !ids.is_empty();
        for id in ids {
            self.deliver(id, TAG_NOTIFY, payload);
        }
        claimed
    }

    fn deliver(&mut self, id: u64, tag: u32, payload: &[u8]) {
        if let Some(i) = self.clients.iter().position(|c| c.id == id) {
            if self.clients[i].send(tag, payload).is_err() {
                self.remove(i);
            }
        }
    }

    /// Whether a client has released the whole allocation held (some DVMs,
    /// PRRTE master, announce no end to the holder).
    pub fn released(&self) -> bool {
        self.released
    }

    fn releases_all(&self, kind: &Kind) -> bool {
        matches!(kind, Kind::Alloc {
            directive,
            alloc_id: Some(a),
            whole: true,
            ..
        } if *directive == crate::proto::Received::Known(crate::proto::Directive::Release)
            && *a == self.alloc_id)
    }

    /// How many clients are connected now.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// Close every client's connection (the DVM has gone): each learns it
    /// at once.
    pub fn close_all(&mut self) {
        for c in self.clients.drain(..) {
            c.close();
        }
        self.relayed.clear();
    }

    fn accept(&mut self) {
        // At most a few per round: the owner's loop comes back for more.
        for _ in 0..16 {
            if self.clients.len() >= MAX_CLIENTS {
                return;
            }
            let Ok((stream, _)) = self.listener.accept() else {
                return;
            };
            if !may_act_as_owner(&stream, self.job.as_deref(), &self.job_roots) {
                continue;
            }
            self.next_id += 1;
            let mut client = Client::new(self.next_id, stream);
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
            Ok(n) => {
                self.clients[i].last_input = Instant::now();
                self.clients[i].decoder.feed(&buf[..n]);
            }
            Err(nix::errno::Errno::EAGAIN) | Err(nix::errno::Errno::EINTR) => return true,
            Err(_) => return false,
        }
        loop {
            let frame = match self.clients[i].decoder.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => return true,
                Err(_) => return false,
            };
            if !self.relay_frame(i, frame.0.tag, &frame.1, conn) {
                return false;
            }
        }
    }

    /// Relay one frame of client `i`; false when the client must go.
    fn relay_frame(&mut self, i: usize, tag: u32, payload: &[u8], conn: &Connection) -> bool {
        if tag < TAG_DYNAMIC {
            return conn.send(tag, payload).is_ok();
        }
        if is_finalize(payload, self.wire) {
            return self.answer(i, tag, Status::SUCCESS);
        }
        let kind = classify(payload, self.wire);
        if let Some(st) = self.refusal(&kind) {
            return self.answer(i, tag, st);
        }
        match &kind {
            Kind::RegEvents(codes) => {
                let c = &mut self.clients[i].codes;
                *c = match c.take() {
                    Some(h) if h.is_empty() => Some(h),
                    _ if codes.is_empty() => Some(Vec::new()),
                    Some(mut h) => {
                        h.extend(codes);
                        Some(h)
                    }
                    None => Some(codes.clone()),
                };
            }
            Kind::Alloc {
                alloc_id: Some(a),
                warn: true,
                ..
            } => self.clients[i].warn_allocs.push(a.clone()),
            Kind::Spawn { .. } => self.spawning += 1,
            _ => {}
        }
        match conn.begin(payload) {
            Ok(t) => {
                let client = self.clients[i].id;
                self.relayed.insert(
                    t,
                    Relayed {
                        client,
                        ctag: tag,
                        kind,
                    },
                );
                self.clients[i].in_flight += 1;
                true
            }
            Err(_) => false,
        }
    }

    /// Why a request is refused: it acts on another allocation than the one
    /// held (an owner's right is only lent for this allocation): another
    /// allocation is not found here; acting on it is not permitted.
    fn refusal(&self, kind: &Kind) -> Option<Status> {
        match kind {
            Kind::Alloc {
                directive,
                alloc_id: Some(a),
                ..
            } if acts_on_existing(*directive) && *a != self.alloc_id => {
                Some(Status::ERR_NO_PERMISSIONS)
            }
            Kind::Spawn { targets }
                if targets.iter().any(|t| !t.is_empty() && *t != self.alloc_id) =>
            {
                Some(Status::ERR_NOT_FOUND)
            }
            _ => None,
        }
    }

    /// Answer client `i`'s request `tag` ourselves with `status`.
    fn answer(&mut self, i: usize, tag: u32, status: Status) -> bool {
        let mut e = Encoder::new(self.wire);
        e.pack_one(&status).is_ok() && self.clients[i].send(tag, &e.into_bytes()).is_ok()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        for c in self.clients.drain(..) {
            c.close();
        }
        if self.claim.take().is_none() {
            let _ = std::fs::remove_file(&self.path);
        }
        if let Some(d) = &self.private_dir {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// A second name of a holder's socket (see [`Holder::alias`]), removed
/// when dropped.
pub struct Alias {
    _claim: Claim,
}

/// Bind the registered socket of `id` on `server` once its name is ours
/// (see [`super::registry::claim`]: a dead holder's socket is replaced);
/// `None` when it cannot be (no registry, or a live holder of the same
/// id). The registry is swept on the way (at most every
/// [`super::registry::SWEEP_EVERY`]).
fn bind_registered(server: &str, id: &str, held: HeldBy) -> Option<(UnixListener, Claim)> {
    let path = registered_path(server, id, held)?;
    if let Some(dir) = path.parent() {
        sweep(dir);
    }
    let claim = claim(&path)?;
    UnixListener::bind(claim.entry()).ok().map(|l| (l, claim))
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

/// Whether the process at the other end of `s` may act as the
/// allocation's owner through this holder: a process of the same user
/// and, when the holder acts for a job (`job`), one that descends from a
/// process of that job the holder knows (`roots`) or from the holder
/// itself. Descent is the kernel's (the peer's pid from SO_PEERCRED, its
/// parents in /proc), never the peer's own environment, which any process
/// may set: a job's identity is never lent to a process outside it.
fn may_act_as_owner(s: &UnixStream, job: Option<&str>, roots: &[i32]) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let Ok(cred) = getsockopt(s, PeerCredentials) else {
        return false;
    };
    if cred.uid() != nix::unistd::geteuid().as_raw() {
        return false;
    }
    if job.is_none() {
        return true;
    }
    let pid = cred.pid();
    descends_from(pid, std::process::id() as i32) || roots.iter().any(|r| descends_from(pid, *r))
}

/// The oldest ancestor of this process that runs as job `job` (its
/// environment names the job): the job's process this holder runs under.
/// Only the DVM starts such a process above us, so an outsider cannot
/// become it.
fn job_ancestor(job: &str) -> Option<i32> {
    let mut found = None;
    let mut pid = std::process::id() as i32;
    for _ in 0..256 {
        if pid <= 1 {
            break;
        }
        if in_job(pid, job) {
            found = Some(pid);
        }
        match parent_of(pid) {
            Some(p) => pid = p,
            None => break,
        }
    }
    found
}

/// Whether process `pid` is `ancestor` or one of its descendants.
fn descends_from(mut pid: i32, ancestor: i32) -> bool {
    for _ in 0..256 {
        if pid == ancestor {
            return true;
        }
        if pid <= 1 {
            return false;
        }
        match parent_of(pid) {
            Some(p) => pid = p,
            None => return false,
        }
    }
    false
}

/// The parent of process `pid` (the second field after the command name
/// in /proc/PID/stat).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
}

/// Whether process `pid`'s environment names job `job` (`PMIX_NAMESPACE`):
/// used only on processes known otherwise to be the job's (an ancestor of
/// the holder, a pid the DVM listed), never to admit a client.
fn in_job(pid: i32, job: &str) -> bool {
    let want = format!("PMIX_NAMESPACE={job}");
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
        .unwrap_or(false)
}

/// Whether a reply's status is success.
fn succeeded(reply: &[u8], wire: WireVersion) -> bool {
    Decoder::new(reply, wire)
        .unpack_one::<Status>()
        .is_ok_and(|s| s.is_success())
}

fn is_finalize(payload: &[u8], wire: WireVersion) -> bool {
    matches!(
        Decoder::new(payload, wire).unpack_one::<Cmd>(),
        Ok(Cmd(crate::proto::cmd::FINALIZE))
    )
}

/// Connect to the holder whose socket is `path` (found through `source`:
/// [`HOLDER_ENV`] or the registry), once it is known to be the user's own
/// ([`super::local_trust`]): nothing is sent to another user's socket.
pub(crate) fn connect(path: &Path, source: &str) -> Result<Connection> {
    super::local_trust::check_holder_path(path, source)?;
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
    super::local_trust::check_holder_peer(&stream, path, source)?;
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
        holder_of: Some(w.alloc_id.clone()),
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
