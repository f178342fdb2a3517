//! The single-threaded event loop: epoll ([`super::reactor`]) over the listener, a signalfd
//! (SIGCHLD, SIGTERM, SIGINT, SIGHUP), captured output pipes and every
//! connection; timers for scheduler deadlines and kill escalation.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::Signal;

use crate::codec::WireVersion;
use crate::proto::keys;
use crate::proto::status::Status;

use super::handshake::{
    client_reply, native_cred_ids, parse_connect, refusal, tool_reply, ConnectRequest, PeerIdentity,
};
use super::ident::ProcName;
use super::jobs::reap;
use super::peer::{PeerClass, PeerConn, PeerInfo, FRAME_BUDGET, MAX_REQUEST_LEN, PARTIAL_TIMEOUT};
use super::reactor::Token;
use super::state::{Server, KILL_GRACE, MEM_BUDGET, PIPE_HIGH_WATER, PIPE_LOW_WATER};
use crate::conn::creds::peer_uid;

/// An admitted connection's answer and identity, or the refusal.
type Admission = Result<(Vec<u8>, PeerInfo), (Status, &'static str)>;

/// Most connections served at once (further ones are closed at accept).
pub(crate) const MAX_CONNECTIONS: usize = 16_384;
/// Most connections one uid other than pdvm's own may hold (they are all
/// refused at the handshake; this keeps them from filling the table).
pub(crate) const MAX_FOREIGN_PER_UID: usize = 32;
/// Most connections pdvm's own uid may hold (a crowd of tools fits).
pub(crate) const MAX_OWN_CONNECTIONS: usize = MAX_CONNECTIONS - 1024;
/// A connection must complete its handshake within this time.
pub(crate) const PRE_AUTH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long accepting pauses when the process is out of descriptors.
const EMFILE_PAUSE: Duration = Duration::from_millis(100);

impl Server {
    /// Run until pdvm must stop (a signal, or the leader job ended).
    pub fn run_loop(&mut self) {
        while !self.stop {
            self.poll_once(self.next_wakeup());
            self.tick();
        }
    }

    /// One round: wait up to `timeout` (zero when peers have requests left
    /// over from their budget), then serve whatever is ready. What it owes
    /// its peers is written by the [`Server::tick`] that follows, so a
    /// job's last output and the end that tick finds go out together.
    pub fn poll_once(&mut self, timeout: Duration) {
        let timeout = if !self.conns.has_backlog() {
            timeout
        } else {
            Duration::ZERO
        };
        let ready = self.io.wait(timeout);
        for r in ready {
            match r.token {
                Token::Listener => self.accept_all(),
                Token::Signals => self.on_signals(),
                Token::Spawned => self.on_spawned(),
                Token::Pipe(id) => self.service_pipe(id),
                Token::Conn(id) => {
                    if r.writable {
                        self.conns.touch(id);
                    }
                    if r.readable {
                        self.service_conn(id, true);
                    }
                }
            }
        }
        // Peers whose requests outran their per-round budget, after every
        // other ready peer had its turn.
        let left = self.conns.take_backlog();
        for id in left {
            self.service_conn(id, false);
        }
    }

    /// Bring every connection touched this round up to date: write what it
    /// is owed, account its buffers against the memory budget, set its
    /// epoll interest, and pause or resume the output pipes feeding it.
    pub fn settle(&mut self) {
        while self.conns.any_touched() {
            for id in self.conns.take_touched() {
                self.settle_conn(id);
            }
        }
    }

    fn settle_conn(&mut self, id: u64) {
        let Some(c) = self.conns.get_mut(id) else {
            return;
        };
        let failed = c.pending_out() > 0 && c.flush().is_err();
        if failed || (c.closing && c.pending_out() == 0) {
            self.close_conn(id);
            return;
        }
        self.conns.account(id);
        self.conns.watch_partial(id);
        let Some(c) = self.conns.get_mut(id) else {
            return;
        };
        let throttled = c.throttled();
        let want_write = c.pending_out() > 0;
        let deferred = !throttled && c.has_frame();
        // Pipes of jobs this peer spawned pause while it lags (their
        // processes then block on write) and resume once it has caught up.
        let lagging = c.pending_out() > PIPE_HIGH_WATER;
        let caught_up = c.pending_out() <= PIPE_LOW_WATER;
        let flip = (lagging && !c.pipes_paused) || (caught_up && c.pipes_paused);
        if flip {
            c.pipes_paused = lagging;
        }
        self.io
            .set_conn(id, c.stream.as_fd(), !throttled && !c.closing, want_write);
        if deferred {
            self.conns.defer(id);
        }
        if flip {
            self.pause_pipes_of(id, lagging);
        }
    }

    /// Close connections that did not complete their handshake in time
    /// (they are queued in accept order, so only the oldest are looked at).
    pub(super) fn expire_unauthenticated(&mut self) {
        for id in self.conns.handshake_overdue(Instant::now()) {
            self.log(format!(
                "connection {id} dropped: no handshake within {PRE_AUTH_TIMEOUT:?}"
            ));
            self.close_conn(id);
        }
    }

    /// Close handshaken connections whose partial message made no progress
    /// for [`PARTIAL_TIMEOUT`] (a header announcing megabytes, then nothing).
    pub(super) fn expire_stalled(&mut self) {
        for id in self.conns.partial_overdue(Instant::now()) {
            self.log(format!(
                "connection {id} dropped: a partial message made no progress for {PARTIAL_TIMEOUT:?}"
            ));
            self.close_conn(id);
        }
    }

    fn on_signals(&mut self) {
        while let Ok(Some(si)) = self.io.sigfd().read_signal() {
            match Signal::try_from(si.ssi_signo as i32) {
                Ok(Signal::SIGCHLD) => {}
                Ok(Signal::SIGTERM) | Ok(Signal::SIGINT) | Ok(Signal::SIGHUP) => {
                    self.log("signal received: tearing down");
                    self.stop = true;
                }
                _ => {}
            }
        }
        let list = reap();
        self.reaped(list);
    }

    fn accept_all(&mut self) {
        // Bounded per round, so a crowd cannot starve the peers being served.
        for _ in 0..1024 {
            match self.listener.accept() {
                Ok((s, _)) => {
                    if self.conns.len() >= MAX_CONNECTIONS || s.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let uid = crate::conn::creds::peer_uid(&s);
                    let me = nix::unistd::getuid().as_raw();
                    let limit = if uid == Some(me) {
                        MAX_OWN_CONNECTIONS
                    } else {
                        MAX_FOREIGN_PER_UID
                    };
                    let key = uid.unwrap_or(u32::MAX);
                    let n = self.conns.of_uid(key);
                    if n >= limit {
                        self.log(format!(
                            "connection from uid {key} refused: {n} already open"
                        ));
                        continue;
                    }
                    let _ = s.set_nodelay(true);
                    if self.io.add_conn(self.conns.next_id(), s.as_fd()).is_err() {
                        continue;
                    }
                    let c = PeerConn::new(s);
                    let deadline = c.accepted + PRE_AUTH_TIMEOUT;
                    self.conns.insert(c, key, deadline);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors: the pending connection stays queued
                    // and the listener stays readable; pause instead of
                    // spinning on it.
                    if matches!(
                        e.raw_os_error().map(Errno::from_raw),
                        Some(Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM)
                    ) {
                        self.log(format!("accept: {e}; pausing {EMFILE_PAUSE:?}"));
                        self.accept_paused_until = Some(Instant::now() + EMFILE_PAUSE);
                        self.io.set_listening(self.listener.as_fd(), false);
                    }
                    break;
                }
            }
        }
    }

    /// Write pending output everywhere (teardown); drop peers whose
    /// socket failed.
    pub fn flush_all(&mut self) {
        self.conns.touch_all();
        self.settle();
    }

    fn service_conn(&mut self, id: u64, readable: bool) {
        let open = match self.conns.get_mut(id) {
            Some(c) if readable && !c.throttled() => match c.fill() {
                Ok(open) => open,
                Err(f) => {
                    self.log(format!("connection {id} dropped: {}", f.0));
                    self.close_conn(id);
                    return;
                }
            },
            Some(_) => true,
            None => return,
        };
        self.conns.account(id);
        self.conns.touch(id);
        // A bounded amount of work per peer per round: the rest waits for
        // the next round, after every other ready peer had its turn.
        for _ in 0..FRAME_BUDGET {
            let uid_held = self.conns.held_of_conn_uid(id);
            let Some(c) = self.conns.get_mut(id) else {
                return;
            };
            if c.closing || c.throttled() {
                break;
            }
            if c.peer.is_none() {
                match c.take_connect() {
                    Ok(Some(body)) => self.on_connect(id, &body),
                    Ok(None) => break,
                    Err(f) => {
                        self.log(format!("connection {id} dropped: {}", f.0));
                        self.close_conn(id);
                        return;
                    }
                }
                continue;
            }
            // A large message arriving while its user's peers already hold
            // more than the memory budget (bytes actually received, never
            // sizes announced) is refused (typed error on its tag) and the
            // rest of it discarded as it arrives.
            if let Some(h) = c.peek_header() {
                // (Beyond MAX_REQUEST_LEN the framing itself is broken:
                // take_frame drops the peer.)
                let big = h.nbytes as usize > 64 * 1024 && h.nbytes <= MAX_REQUEST_LEN;
                if big && !c.has_frame() && uid_held > MEM_BUDGET {
                    c.discard_next();
                    self.log(format!(
                        "connection {id}: request of {} bytes refused (memory budget)",
                        h.nbytes
                    ));
                    let info = vec![crate::codec::Info::new(
                        keys::EVENT_TEXT_MESSAGE,
                        "request refused: pdvm's memory budget for your partial requests is exhausted",
                    )];
                    self.reply_status_infos(id, h.tag, Status::ERR_OUT_OF_RESOURCE, &info);
                    self.conns.account(id);
                    continue;
                }
            }
            let Some(c) = self.conns.get_mut(id) else {
                return;
            };
            match c.take_frame() {
                Ok(Some(fr)) => self.dispatch(id, fr.header.tag, &fr.payload),
                Ok(None) => break,
                Err(f) => {
                    self.log(format!("connection {id} dropped: {}", f.0));
                    self.close_conn(id);
                    return;
                }
            }
        }
        if !open {
            if let Some(c) = self.conns.get_mut(id) {
                let _ = c.flush();
            }
            self.close_conn(id);
        }
    }

    fn refuse(&mut self, id: u64, st: Status, why: &str) {
        self.log(format!("connection {id} refused: {why}"));
        if let Some(c) = self.conns.get_mut(id) {
            let _ = c.queue_raw(&refusal(st));
            c.closing = true;
        }
    }

    /// Whether a tool may take `nspace` as its given identity.
    fn given_identity_free(&self, nspace: &str) -> Result<(), (Status, &'static str)> {
        let minted = nspace
            .strip_prefix(self.ident.prefix.as_str())
            .is_some_and(|rest| rest.starts_with('@'));
        if nspace == self.ident.nspace || minted {
            return Err((
                Status::ERR_NO_PERMISSIONS,
                "namespace belongs to pdvm (its own, or one it assigns)",
            ));
        }
        if self.jobs.contains(nspace) || self.model.dvm().namespace_known(nspace) {
            return Err((Status::EXISTS, "namespace already in use or used before"));
        }
        if self.conns.nspace_connected(nspace) {
            return Err((Status::EXISTS, "tool namespace already in use"));
        }
        Ok(())
    }

    fn on_connect(&mut self, id: u64, body: &[u8]) {
        let req = match parse_connect(body) {
            Ok(r) => r,
            Err(e) => return self.refuse(id, e.status, &e.context),
        };
        self.log_connect_request(id, &req);
        if let Err((st, why)) = self.same_user(id) {
            return self.refuse(id, st, why);
        }
        let Some(wire) = req.wire() else {
            return self.refuse(id, Status::ERR_NOT_SUPPORTED, "unknown wire version");
        };
        let admitted = match &req.identity {
            // pdvm has its own simulated scheduler: none may attach.
            PeerIdentity::Scheduler { .. } => {
                Err((Status::ERR_NOT_SUPPORTED, "pdvm takes no scheduler"))
            }
            PeerIdentity::Tool => Ok(self.admit_minted_tool()),
            PeerIdentity::ToolWithId { nspace, rank } => self.admit_given_tool(nspace, *rank),
            PeerIdentity::Client { nspace, rank } => self.admit_client(id, nspace, *rank),
        };
        match admitted {
            Ok((reply, peer)) => self.bind_peer(id, &req, wire, &reply, peer),
            Err((st, why)) => self.refuse(id, st, why),
        }
    }

    fn log_connect_request(&mut self, id: u64, req: &ConnectRequest) {
        if self.cfg.verbose {
            self.log(format!(
                "connection {id}: identity flag {}, security {} (credential ids {:?}, claimed {:?}), \
                 PMIx {} {}, datastore {}",
                req.flag,
                req.psec,
                native_cred_ids(&req.cred),
                req.claimed_ids,
                req.version,
                req.bfrops,
                req.gds
            ));
        }
    }

    /// Only our own user's processes may connect (the uid the kernel
    /// reported at accept, else one sock_diag lookup).
    fn same_user(&self, id: u64) -> Result<(), (Status, &'static str)> {
        let me = nix::unistd::getuid().as_raw();
        let uid = self.conns.get(id).and_then(|c| {
            c.uid
                .filter(|&u| u != u32::MAX)
                .or_else(|| peer_uid(&c.stream))
        });
        if uid == Some(me) {
            Ok(())
        } else {
            Err((Status::ERR_NO_PERMISSIONS, "peer belongs to another user"))
        }
    }

    /// A tool asking for an identity: a fresh namespace, rank 0.
    fn admit_minted_tool(&mut self) -> (Vec<u8>, PeerInfo) {
        let ns = self.mint_nspace();
        let _ = self.model.tool_connected_minted(&ns);
        (
            tool_reply(Some((&ns, 0)), &self.ident.nspace, 0),
            PeerInfo {
                name: ProcName::new(ns, 0),
                class: PeerClass::Tool,
                owns_nspace: true,
            },
        )
    }

    /// A tool bringing its own identity. Identity is bound to the connection
    /// that proved it: a given namespace must be new — not pdvm's own or one
    /// it mints, not a job's, not one in use or used before (a namespace
    /// maps to exactly one job and is never reused).
    fn admit_given_tool(&mut self, nspace: &str, rank: u32) -> Admission {
        self.given_identity_free(nspace)?;
        if self.model.tool_connected(nspace).is_err() {
            return Err((Status::EXISTS, "tool namespace already in use"));
        }
        Ok((
            tool_reply(None, &self.ident.nspace, 0),
            PeerInfo {
                name: ProcName::new(nspace.to_string(), rank),
                class: PeerClass::Tool,
                owns_nspace: true,
            },
        ))
    }

    /// A client rank is accepted only while that rank's process lives, and
    /// (where the kernel tells) only from it or one of its descendants.
    /// Once per live rank, unless the kernel vouches that the connection
    /// comes from that rank's own process tree (tools a job runs act for its
    /// rank, several at a time, as the conformance suite's leader jobs do):
    /// where it cannot tell, a second connection claiming a connected rank
    /// is refused.
    fn admit_client(&mut self, id: u64, nspace: &str, rank: u32) -> Admission {
        let pid = self.jobs.get(nspace).and_then(|j| {
            j.procs
                .iter()
                .find(|p| p.rank == rank && p.exit.is_none())
                .map(|p| p.pid)
        });
        let pid = pid.ok_or((Status::ERR_NOT_FOUND, "client of no running process"))?;
        let from_job = self
            .conns
            .get(id)
            .and_then(|c| crate::conn::creds::peer_in_tree(&c.stream, pid));
        if from_job == Some(false) {
            return Err((
                Status::ERR_NO_PERMISSIONS,
                "client identity claimed from outside that process",
            ));
        }
        let name = ProcName::new(nspace.to_string(), rank);
        if rank == crate::codec::RANK_WILDCARD
            || (from_job != Some(true) && self.conns.identity_held(&name))
        {
            return Err((
                Status::EXISTS,
                "client rank already connected (accepted once while it lives)",
            ));
        }
        Ok((
            client_reply((id & 0x7fff_ffff) as u32),
            PeerInfo {
                name,
                class: PeerClass::Client,
                owns_nspace: false,
            },
        ))
    }

    /// Bind the admitted identity to connection `id` and answer it.
    fn bind_peer(
        &mut self,
        id: u64,
        req: &ConnectRequest,
        wire: WireVersion,
        reply: &[u8],
        peer: PeerInfo,
    ) {
        let described = req.described();
        let kind = if peer.class == PeerClass::Tool {
            "tool"
        } else {
            "client"
        };
        let form = if described {
            "described"
        } else {
            "non-described"
        };
        self.log(format!(
            "{kind} {} connected ({} {}, {form})",
            peer.name, req.version, req.bfrops
        ));
        let Some(c) = self.conns.get_mut(id) else {
            return;
        };
        c.wire = wire;
        c.described = described;
        c.peer = Some(peer);
        let info = |key: &str| req.info.iter().find(|i| i.key == key);
        c.pid = info(keys::PROC_PID).and_then(|i| i.value.as_u32());
        c.cmd_line = info(keys::CMD_LINE)
            .and_then(|i| i.value.as_str())
            .map(str::to_string);
        if c.queue_raw(reply).is_err() {
            c.closing = true;
        }
    }

    /// Tear everything down: end all reservations, terminate every job
    /// (SIGTERM, then SIGKILL after the grace), flush what peers are owed.
    pub fn teardown(&mut self) {
        self.stop = true;
        let fx = self.model.teardown();
        self.apply_effects(fx);
        let names = self.jobs.names();
        for ns in &names {
            self.terminate_job(ns, Signal::SIGTERM);
        }
        // Children's exits wake the loop (SIGCHLD on the signalfd); timers
        // (the SIGKILL escalation, pipe grace) bound each wait.
        let deadline = Instant::now() + KILL_GRACE + Duration::from_millis(500);
        while !self.jobs.is_empty() && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            self.poll_once(left.min(self.next_wakeup()));
            self.tick();
        }
        for j in self.jobs.values_mut() {
            j.signal(Signal::SIGKILL);
        }
        let end = Instant::now() + Duration::from_millis(500);
        while !self.jobs.is_empty() && Instant::now() < end {
            let left = end.saturating_duration_since(Instant::now());
            self.poll_once(left.min(self.next_wakeup()));
            self.tick();
        }
        self.flush_all();
        let ids = self.conns.ids();
        for id in ids {
            if let Some(c) = self.conns.remove(id) {
                self.io.remove_conn(id, c.stream.as_fd());
                let _ = c.stream.shutdown(std::net::Shutdown::Both);
            }
        }
        self.rendezvous = None;
    }
}
