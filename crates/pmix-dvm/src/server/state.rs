//! The server's state and the actions shared by the event loop and the
//! request handlers: sending replies and notifications, applying the model's
//! effects, and following jobs to their end.

use std::net::TcpListener;
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use std::borrow::Cow;

use crate::codec::event_message::Notification;
use crate::codec::{ByteObject, Info, IofChannel, Proc, Size, Value, RANK_WILDCARD};
use crate::dvm::Effect;
use crate::proto::keys;
use crate::proto::status::Status;

use super::conns::ConnTable;
use super::ident::ProcName;
use super::job_env::LaunchEnv;
use super::jobs::{JobTable, OutPipe};
use super::listener::{RendezvousFiles, ServerIdent};
use super::model::{ModelDriver, Pending};
use super::peer::PeerInfo;
use super::reactor::Reactor;
use super::ServerConfig;

/// Tag of unsolicited notifications.
pub(crate) const TAG_NOTIFY: u32 = crate::conn::frame::TAG_NOTIFY;
/// Tag of forwarded output.
pub(crate) const TAG_IOF: u32 = crate::conn::frame::TAG_IOF;
/// Grace between SIGTERM and SIGKILL for a job being terminated.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long output pipes may outlive a job's last process.
pub(crate) const PIPE_GRACE: Duration = Duration::from_secs(1);

/// Everything the server holds, composed of parts with private state:
/// the connection table ([`ConnTable`]), the job table ([`JobTable`]), the
/// reactor ([`Reactor`]), and the model driver (the DVM, the scheduler,
/// the clock and the replies waiting on them). Visible to the server
/// module only.
pub struct Server {
    /// Start-up configuration.
    pub(super) cfg: ServerConfig,
    /// Who we are.
    pub(super) ident: ServerIdent,
    /// The listening socket.
    pub(super) listener: TcpListener,
    /// Rendezvous files (removed on drop).
    pub(super) rendezvous: Option<RendezvousFiles>,
    /// Live connections and their bookkeeping.
    pub(super) conns: ConnTable,
    /// The reservation model, the scheduler, the clock, and the replies
    /// waiting on them.
    pub(super) model: ModelDriver,
    /// Running jobs, their pids and captured output pipes.
    pub(super) jobs: JobTable,
    /// Environment for launched processes.
    pub(super) launch: LaunchEnv,
    /// pdvm's own command's namespace, when one was given.
    pub(super) leader: Option<String>,
    /// The connection that asked for each allocation's timeout warning
    /// (`PMIX_ALLOC_WARN_TIMEOUT`): the warning goes to it alone, not to
    /// every connection of the requester's process.
    pub(super) warn_conns: std::collections::HashMap<String, u64>,
    /// Its exit status once it ended.
    pub(super) leader_status: Option<i32>,
    /// Set when the server must stop.
    pub(super) stop: bool,
    /// Accepting is paused until then (the process ran out of descriptors).
    pub(super) accept_paused_until: Option<Instant>,
    /// The epoll instance and the signalfd.
    pub(super) io: Reactor,
    /// The thread that starts job processes ([`super::spawner`]).
    pub(super) spawner: super::spawner::Spawner,
    /// Exits reaped before their start was heard of (pid → status).
    pub(super) early_exits: std::collections::HashMap<i32, i32>,
    /// Where output pipes are read into ([`READ_CHUNK`] bytes, made on
    /// first use and kept).
    pub(super) read_buf: Box<[u8]>,
    /// What job clients committed, their fences and waiting gets.
    pub(super) modex: super::modex::Modex,
    /// Published keys and lookups waiting for them.
    pub(super) published: super::publications::Publications,
}

/// Most bytes read from one output pipe at a time.
const READ_CHUNK: usize = 16 * 1024;

/// Most exits kept for starts not yet heard of (only the last moments'
/// starts can be among them; the oldest go first past it).
const MAX_EARLY_EXITS: usize = 65_536;

/// Above this many unsent bytes for a spawner, pdvm stops reading the
/// output pipes of the jobs it spawned (their processes block on write).
pub(crate) const PIPE_HIGH_WATER: usize = 1024 * 1024;
/// Once the spawner's backlog is down to this, the pipes are read again.
pub(crate) const PIPE_LOW_WATER: usize = 256 * 1024;

/// Most bytes pdvm holds for the peers of one uid (partial requests
/// actually received, replies and notifications not yet sent; forwarded
/// output is bounded by backpressure instead); a large request or reply
/// that would pass it is refused with `PMIX_ERR_OUT_OF_RESOURCE`. Each
/// uid has its own, so one user's connections cannot use up another's.
pub(crate) const MEM_BUDGET: usize = 256 * 1024 * 1024;
/// Messages at most this large are always queued (refusals must get out).
const ALWAYS_SEND: usize = 4096;

impl Server {
    /// Mint the next namespace.
    pub fn mint_nspace(&mut self) -> String {
        let n = self.model.next_ns_number();
        self.ident.nspace_n(n)
    }

    /// Log a line on stderr when verbose.
    pub fn log(&self, msg: impl AsRef<str>) {
        if self.cfg.verbose {
            say!("pdvm: {}", msg.as_ref());
        }
    }

    /// The server's own process name (source of notifications).
    pub fn me(&self) -> Proc {
        Proc {
            nspace: self.ident.nspace.clone(),
            rank: 0,
        }
    }

    /// Queue a framed message to a connection. Forwarded output and
    /// notifications are never dropped (job output is bounded by
    /// backpressure on the job's pipes); a large reply that would pass its
    /// user's memory budget is replaced by `PMIX_ERR_OUT_OF_RESOURCE`. A
    /// peer whose unsent backlog passes [`super::peer::MAX_PENDING_OUT`] is
    /// disconnected (it then learns it lost the DVM).
    pub fn send(&mut self, conn: u64, tag: u32, payload: &[u8]) {
        let reply = tag != TAG_NOTIFY && tag != TAG_IOF;
        let over = self.conns.held_of_conn_uid(conn) + payload.len() > MEM_BUDGET;
        if reply && payload.len() > ALWAYS_SEND && over {
            self.log(format!(
                "connection {conn}: {} bytes would pass the memory budget, refused",
                payload.len()
            ));
            let info = vec![Info::new(
                keys::EVENT_TEXT_MESSAGE,
                "pdvm's memory budget for pending replies is exhausted; retry later",
            )];
            self.reply_status_infos(conn, tag, Status::ERR_OUT_OF_RESOURCE, &info);
            return;
        }
        let failed = match self.conns.get_mut(conn) {
            Some(c) if tag == TAG_IOF => c.queue_output(tag, payload).is_err(),
            Some(c) => c.queue(tag, payload).is_err(),
            None => false,
        };
        self.conns.account(conn);
        self.conns.touch(conn);
        if failed {
            self.log(format!(
                "connection {conn}: output backlog too large, dropping it"
            ));
            self.close_conn(conn);
        }
    }

    /// Connection ids whose peer `to` covers (one process, or every
    /// process of a namespace for the wildcard rank).
    pub fn conns_of(&self, to: &ProcName) -> Vec<u64> {
        self.conns.of(to)
    }

    /// Where allocation `alloc_id`'s timeout warning goes: the connection
    /// that asked for it, while it is open and still the requester's;
    /// else every connection of the requester `to` (it asked, then
    /// reconnected). Forgets the connections of allocations that ended.
    fn warn_targets(&mut self, alloc_id: &str, to: &ProcName) -> Vec<u64> {
        let all = self.conns_of(to);
        let model = &self.model;
        self.warn_conns
            .retain(|a, _| model.reservation(a).is_some());
        match self.warn_conns.get(alloc_id) {
            Some(c) if all.contains(c) => vec![*c],
            _ => all,
        }
    }

    /// Build and send an event notification from the server itself.
    pub fn notify(&mut self, conn: u64, code: Status, info: &[Info]) {
        let me = self.me();
        self.notify_from(conn, code, &me, info);
    }

    /// Build and send an event notification whose source is `source`.
    pub fn notify_from(&mut self, conn: u64, code: Status, source: &Proc, info: &[Info]) {
        if let Some(bytes) = self.notification_bytes(conn, code, source, info) {
            self.send(conn, TAG_NOTIFY, &bytes);
        }
    }

    /// A notification encoded for connection `conn`'s wire version and
    /// buffer kind; one from pdvm itself is marked `PMIX_EVENT_NON_DEFAULT`.
    pub fn notification_bytes(
        &self,
        conn: u64,
        code: Status,
        source: &Proc,
        info: &[Info],
    ) -> Option<Vec<u8>> {
        let c = self.conns.get(conn)?;
        // pdvm's own events go to handlers of their code alone, as PRRTE's
        // do: an MPI library's default handler aborts the job on any event.
        let own = (*source == self.me() && !info.iter().any(|i| i.key == keys::EVENT_NON_DEFAULT))
            .then(|| Info::new(keys::EVENT_NON_DEFAULT, true));
        let mut e = c.encoder();
        let all: Cow<'_, [Info]> = match own {
            Some(flag) => {
                let mut all = info.to_vec();
                all.push(flag);
                Cow::Owned(all)
            }
            None => Cow::Borrowed(info),
        };
        let built = Notification::new(code, source.clone(), &all).encode(&mut e);
        match built {
            Ok(()) => Some(e.into_bytes()),
            Err(err) => {
                self.log(format!("cannot encode notification: {err}"));
                None
            }
        }
    }

    /// Forward a chunk of output to a connection.
    pub fn forward_output(
        &mut self,
        conn: u64,
        src: Proc,
        channel: u16,
        data: &[u8],
        complete: bool,
    ) {
        let Some(c) = self.conns.get(conn) else {
            return;
        };
        let mut e = c.encoder();
        let info: Vec<Info> = if complete {
            vec![Info::new(keys::IOF_COMPLETE, true)]
        } else {
            Vec::new()
        };
        let built = e
            .pack_one(&src)
            .and_then(|_| e.pack_one(&IofChannel(channel)))
            .and_then(|_| e.pack_one(&Size(0)))
            .and_then(|_| crate::codec::attrs::write_infos(&mut e, &info))
            .and_then(|_| e.pack_one(&ByteObject(data.to_vec())));
        if built.is_ok() {
            let bytes = e.into_bytes();
            self.send(conn, TAG_IOF, &bytes);
        }
    }

    /// Reply to a request: status followed by `size` + infos.
    pub fn reply_status_infos(&mut self, conn: u64, tag: u32, st: Status, info: &[Info]) {
        let Some(c) = self.conns.get(conn) else {
            return;
        };
        let mut e = c.encoder();
        if e.pack_one(&st)
            .and_then(|_| crate::codec::attrs::write_infos(&mut e, info))
            .is_ok()
        {
            let bytes = e.into_bytes();
            self.send(conn, tag, &bytes);
        }
    }

    /// Close a connection and settle what its peer leaves behind.
    pub fn close_conn(&mut self, id: u64) {
        let Some(c) = self.conns.remove(id) else {
            return;
        };
        self.io.remove_conn(id, c.stream.as_fd());
        self.modex.conn_closed(id);
        self.published.drop_conn(id);
        if c.pipes_paused {
            self.pause_pipes_of(id, false);
        }
        self.lift_pauses_of(id);
        let _ = c.stream.shutdown(std::net::Shutdown::Both);
        if let Some(PeerInfo {
            name,
            owns_nspace: true,
            ..
        }) = c.peer
        {
            let nspace = name.nspace();
            self.log(format!("tool {nspace} disconnected"));
            match self.model.tool_disconnected(nspace) {
                Ok(fx) => self.apply_effects(fx),
                Err(e) => self.log(format!("tool {nspace}: {}", e.rule())),
            }
        }
    }

    /// The output pauses connection `conn` asked for (`pdvm.iof.pause`)
    /// end with it: a holder killed while its client lagged must not leave
    /// the job blocked on a full pipe for ever.
    fn lift_pauses_of(&mut self, conn: u64) {
        let held: Vec<crate::codec::Proc> = self
            .jobs
            .values()
            .filter(|j| j.iof_paused_by == Some(conn))
            .map(|j| crate::codec::Proc {
                nspace: j.nspace.clone(),
                rank: crate::codec::RANK_WILDCARD,
            })
            .collect();
        if !held.is_empty() {
            self.log(format!(
                "connection {conn} closed: resuming the output of {} job(s) it paused",
                held.len()
            ));
            self.pause_output_of(conn, &held, false);
        }
    }

    /// Carry out what the model asks.
    pub fn apply_effects(&mut self, fx: Vec<Effect>) {
        for f in fx {
            match f {
                Effect::KillJob { nspace, reason } => {
                    self.log(format!("terminating {nspace}: {reason}"));
                    self.terminate_job(&nspace, Signal::SIGTERM);
                }
                Effect::Warn {
                    to,
                    alloc_id,
                    req_id,
                    remaining_secs,
                } => {
                    let mut info = vec![Info::new(keys::ALLOC_ID, alloc_id.as_str())];
                    if let Some(r) = req_id {
                        info.push(Info::new(keys::ALLOC_REQ_ID, r));
                    }
                    info.push(Info::new(
                        keys::TIME_REMAINING,
                        Value::Uint32(remaining_secs),
                    ));
                    for c in self.warn_targets(&alloc_id, &ProcName::from(&to)) {
                        self.notify(c, Status::ALLOC_TIMEOUT_WARNING, &info);
                    }
                }
                Effect::Granted {
                    to,
                    alloc_id,
                    req_id,
                    nodes,
                } => {
                    if let Some(p) = self.take_pending(&alloc_id, &ProcName::from(&to)) {
                        let info = self.grant_infos(p.conn, &alloc_id, req_id.as_deref(), &nodes);
                        self.reply_status_infos(p.conn, p.tag, Status::SUCCESS, &info);
                    }
                    self.emit_granted(&alloc_id, req_id.as_deref(), &nodes);
                }
                Effect::RequestDropped {
                    to,
                    alloc_id,
                    req_id,
                    cancelled_by,
                } => {
                    if let Some(p) = self.take_pending(&alloc_id, &ProcName::from(&to)) {
                        let mut info = alloc_reply_infos(&alloc_id, req_id.as_deref(), &[]);
                        // Withdrawn by a REQ_CANCEL: say so, and by whom.
                        let st = match cancelled_by {
                            Some((ns, rank)) => {
                                info.push(Info::new(
                                    keys::REQUESTOR,
                                    Value::Proc(Proc::new(ns, rank)),
                                ));
                                Status::ERR_JOB_CANCELED
                            }
                            None => Status::ERR_NOT_FOUND,
                        };
                        self.reply_status_infos(p.conn, p.tag, st, &info);
                    }
                }
                Effect::ReservationEnded { alloc_id, how, why } => {
                    self.log(format!("{alloc_id} ended: {how:?} ({why:?})"));
                    // Nothing of an ended allocation is kept.
                    self.warn_conns.remove(&alloc_id);
                    self.emit_ended(&alloc_id, how, why);
                }
                Effect::NodesJoined { alloc_id, nodes } => {
                    self.emit_nodes("joined", Some(&alloc_id), &nodes);
                }
                Effect::NodesLeft { nodes } => self.emit_nodes("left", None, &nodes),
                Effect::NodesUnreserved { alloc_id, nodes } => {
                    self.emit_nodes("unreserved", Some(&alloc_id), &nodes);
                }
            }
        }
    }

    /// The queued request of `to` on `alloc_id` (see [`ModelDriver::take_reply`]).
    fn take_pending(&mut self, alloc_id: &str, to: &ProcName) -> Option<Pending> {
        let p = self.model.take_reply(alloc_id, to);
        if p.is_none() {
            self.log(format!("{alloc_id}: no queued request of {to} to answer"));
        }
        p
    }

    /// Signal a job's processes; SIGTERM starts the SIGKILL grace period.
    pub fn terminate_job(&mut self, nspace: &str, sig: Signal) {
        if let Some(j) = self.jobs.get_mut(nspace) {
            j.signal(sig);
            if sig == Signal::SIGTERM && j.kill_requested.is_none() {
                j.kill_requested = Some(Instant::now());
            }
        }
    }

    /// Register a captured pipe.
    pub fn add_pipe(&mut self, fd: OwnedFd, nspace: &str, rank: u32, channel: u16) {
        if let Err(e) = self.io.add_pipe(self.jobs.next_pipe_id(), fd.as_fd()) {
            self.log(format!("cannot watch the output of {nspace}: {e}"));
            return;
        }
        let id = self.jobs.add_pipe(OutPipe {
            file: std::fs::File::from(fd),
            nspace: nspace.to_string(),
            rank,
            channel,
            resumed: Instant::now(),
        });
        // A spawner already lagging does not get more until it catches up.
        let paused = self
            .jobs
            .get(nspace)
            .and_then(|j| j.output_conn())
            .filter(|c| self.conns.get(*c).is_some_and(|c| c.pipes_paused));
        if paused.is_some() {
            if let Some(p) = self.jobs.pipe(id) {
                self.io.arm_pipe(id, p.file.as_fd(), false);
            }
        }
    }

    /// Read a pipe that polled readable; forward or close it.
    pub fn service_pipe(&mut self, id: u64) {
        // A pipe paused earlier in this round (its reader lags) waits.
        if !self.io.pipe_armed(id) {
            return;
        }
        let Some(p) = self.jobs.pipe_mut(id) else {
            return;
        };
        // Taken for the call (forwarding needs the whole server), then put
        // back: one buffer serves every read.
        let mut buf = std::mem::take(&mut self.read_buf);
        if buf.is_empty() {
            buf = vec![0u8; READ_CHUNK].into_boxed_slice();
        }
        let chunk = p.read_some(&mut buf).map(|d| d.len());
        let (ns, rank, ch) = (p.nspace.clone(), p.rank, p.channel);
        let (spawner, fwd) = match self.jobs.get(&ns) {
            Some(j) => (
                j.output_conn(),
                (ch == super::jobs::CH_STDOUT && j.fwd_stdout)
                    || (ch == super::jobs::CH_STDERR && j.fwd_stderr),
            ),
            None => (None, false),
        };
        match chunk {
            Some(0) => {}
            Some(n) => {
                if let (Some(conn), true) = (spawner, fwd) {
                    self.forward_output(conn, Proc { nspace: ns, rank }, ch, &buf[..n], false);
                    // A spawner that lags is settled now, so this pipe is
                    // paused before its next read; otherwise the round's
                    // end writes every chunk of the round in one go.
                    if self
                        .conns
                        .get(conn)
                        .is_some_and(|c| c.pending_out() > PIPE_HIGH_WATER)
                    {
                        self.settle();
                    }
                }
            }
            None => self.close_pipe(id),
        }
        self.read_buf = buf;
    }

    /// Close a pipe and account for it in its job.
    pub fn close_pipe(&mut self, id: u64) {
        if let Some(p) = self.jobs.remove_pipe(id) {
            self.io.remove_pipe(id, p.file.as_fd());
        }
    }

    /// Record reaped children.
    pub fn reaped(&mut self, list: Vec<(i32, i32)>) {
        for (pid, status) in list {
            let Some((ns, rank)) = self.jobs.take_pid(pid) else {
                // Its start may not be heard of yet (the spawner thread).
                if self.early_exits.len() >= MAX_EARLY_EXITS {
                    self.early_exits.clear();
                }
                self.early_exits.insert(pid, status);
                continue;
            };
            self.proc_ended(&ns, rank, status);
        }
    }

    /// Rank `rank` of job `ns` ended with `status`: once none runs, the
    /// job's end is timed from now.
    fn proc_ended(&mut self, ns: &str, rank: u32, status: i32) {
        if let Some(j) = self.jobs.get_mut(ns) {
            if let Some(p) = j.procs.iter_mut().find(|p| p.rank == rank) {
                p.exit = Some(status);
            }
            if j.live() == 0 && j.all_exited_at.is_none() {
                j.all_exited_at = Some(Instant::now());
            }
        }
        self.modex_proc_ended(&(ns.to_string(), rank));
    }

    /// Starts the spawner thread carried out: each process gets its pid (and
    /// its exit, when it was reaped first, and the signal its job was sent
    /// meanwhile), or ends 127 when it could not start.
    pub fn on_spawned(&mut self) {
        for ((ns, rank), r) in self.spawner.take_done() {
            match r {
                Ok(pid) => self.started(&ns, rank, pid),
                Err(e) => {
                    self.log(format!("{ns} rank {rank}: cannot start: {e}"));
                    self.proc_ended(&ns, rank, 127);
                }
            }
        }
    }

    fn started(&mut self, ns: &str, rank: u32, pid: i32) {
        let Some(j) = self.jobs.get_mut(ns) else {
            // Its job is gone (torn down): the process must not outlive it.
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            return;
        };
        // A job signalled or terminated meanwhile left its signal here
        // (Job::signal), the grace's SIGKILL over its SIGTERM.
        if let Some(p) = j.procs.iter_mut().find(|p| p.rank == rank && p.starting()) {
            p.pid = Some(pid);
            if let Some(sig) = p.pending_signal.take() {
                let _ = killpg(Pid::from_raw(pid), sig);
            }
        }
        self.jobs.record_pid(pid, ns, rank);
        if let Some(status) = self.early_exits.remove(&pid) {
            self.reaped(vec![(pid, status)]);
        }
    }

    /// Stop or resume reading the output pipes of the jobs connection
    /// `conn` spawned (backpressure from a lagging reader).
    pub fn pause_pipes_of(&mut self, conn: u64, pause: bool) {
        let now = Instant::now();
        let held: Vec<String> = self
            .jobs
            .values()
            .filter(|j| j.iof_paused_by.is_some())
            .map(|j| j.nspace.clone())
            .collect();
        for (id, p) in self.jobs.pipes_spawned_by(conn) {
            // A job paused on its own stays so.
            let on = !pause && !held.contains(&p.nspace);
            self.io.arm_pipe(id, p.file.as_fd(), on);
            if on {
                p.resumed = now;
            }
        }
    }

    /// `pdvm.iof.pause` from connection `conn`: stop (or resume) reading
    /// the output of the jobs named in `targets`; whether any is a job pdvm
    /// runs.
    pub fn pause_output_of(
        &mut self,
        conn: u64,
        targets: &[crate::codec::Proc],
        pause: bool,
    ) -> bool {
        let mut hit = false;
        let now = Instant::now();
        for t in targets {
            let Some(j) = self.jobs.get_mut(&t.nspace) else {
                continue;
            };
            hit = true;
            j.iof_paused_by = pause.then_some(conn);
            let lagging = j
                .output_conn()
                .and_then(|c| self.conns.get(c))
                .is_some_and(|c| c.pipes_paused);
            let ids: Vec<u64> = self.jobs.pipes_of(&t.nspace).map(|(id, _)| id).collect();
            for id in ids {
                if let Some(p) = self.jobs.pipe_mut(id) {
                    let on = !pause && !lagging;
                    self.io.arm_pipe(id, p.file.as_fd(), on);
                    if on {
                        p.resumed = now;
                    }
                }
            }
        }
        hit
    }

    /// Time-driven work: scheduler deadlines, SIGKILL escalation, pipe
    /// grace, the handshake deadline, resuming accepts, and ending jobs
    /// whose processes and output are all done; then everything the round
    /// owes its peers is written ([`Server::settle`]).
    pub fn tick(&mut self) {
        let fx = self.model.advance_due();
        if !fx.is_empty() {
            self.apply_effects(fx);
        }
        self.expire_unauthenticated();
        self.expire_stalled();
        if self
            .accept_paused_until
            .is_some_and(|t| t <= Instant::now())
        {
            self.accept_paused_until = None;
            self.io.set_listening(self.listener.as_fd(), true);
        }
        let mut stale_pipes = Vec::new();
        let mut done = Vec::new();
        let mut killed = Vec::new();
        for j in self.jobs.values() {
            let ns = &j.nspace;
            if let Some(t) = j.kill_requested {
                if t.elapsed() >= KILL_GRACE && j.live() > 0 && !j.killed {
                    killed.push(ns.clone());
                }
            }
            if j.live() == 0 {
                let grace_over = j.all_exited_at.is_none_or(|t| t.elapsed() >= PIPE_GRACE);
                if j.open_pipes == 0 {
                    done.push(ns.clone());
                } else if grace_over {
                    // The grace runs only while a pipe is read: a paused
                    // pipe (its reader lags) still holds output to forward,
                    // unless pdvm is tearing down.
                    stale_pipes.extend(
                        self.jobs
                            .pipes_of(ns)
                            .filter(|(id, p)| {
                                self.stop
                                    || (self.io.pipe_armed(*id)
                                        && p.resumed.elapsed() >= PIPE_GRACE)
                            })
                            .map(|(id, _)| id),
                    );
                }
            }
        }
        for ns in killed {
            if let Some(j) = self.jobs.get_mut(&ns) {
                j.signal(Signal::SIGKILL);
                j.killed = true;
            }
        }
        for id in stale_pipes {
            self.close_pipe(id);
        }
        for ns in done {
            self.job_ended(&ns);
        }
        self.settle();
    }

    /// How long the loop may wait: until the nearest deadline (scheduler,
    /// SIGKILL escalation, pipe grace, handshake deadline, resumed accepts),
    /// at most a minute.
    pub fn next_wakeup(&self) -> Duration {
        let now = Instant::now();
        let mut d = Duration::from_secs(60);
        let mut at = |t: Instant| d = d.min(t.saturating_duration_since(now));
        if let Some(t) = self.accept_paused_until {
            at(t);
        }
        if let Some(t) = self.conns.next_handshake_deadline() {
            at(t);
        }
        if let Some(t) = self.conns.next_partial_deadline() {
            at(t);
        }
        for j in self.jobs.values() {
            if let Some(t) = j.kill_requested.filter(|_| j.live() > 0 && !j.killed) {
                at(t + KILL_GRACE);
            }
            if let Some(t) = j.all_exited_at.filter(|_| j.open_pipes > 0) {
                let armed = self
                    .jobs
                    .pipes_of(&j.nspace)
                    .filter(|(id, _)| self.io.pipe_armed(*id));
                for (_, p) in armed {
                    at(t.max(p.resumed) + PIPE_GRACE);
                }
            }
        }
        if let Some(t) = self.model.until_next_deadline() {
            d = d.min(t);
        }
        d
    }

    /// A job's processes and output are done: tell the model and the peers.
    pub fn job_ended(&mut self, nspace: &str) {
        let Some(j) = self.jobs.remove(nspace) else {
            return;
        };
        let status = j.status();
        self.modex_job_ended(nspace);
        if self.cfg.verbose {
            // Formatted only when it is printed: this runs once per job.
            self.log(format!("job {nspace} ended with status {status}"));
        }
        match self.model.job_terminated(nspace, status) {
            Ok(fx) => self.apply_effects(fx),
            Err(e) => self.log(format!("job {nspace}: {}", e.rule())),
        }
        let info = vec![
            Info::new(
                keys::EVENT_AFFECTED_PROC,
                Value::Proc(Proc {
                    nspace: nspace.to_string(),
                    rank: RANK_WILDCARD,
                }),
            ),
            Info::new(keys::JOB_TERM_STATUS, Value::Status(Status(status))),
            Info::new(keys::EXIT_CODE, Value::Int(status)),
        ];
        let mut info = info;
        if let Some((root, active)) = self.model.dvm().spawn_tree(nspace) {
            info.push(Info::new(keys::SPAWN_TREE_ROOT, root.as_str()));
            info.push(Info::new(keys::SPAWN_TREE_ACTIVE, Value::Uint32(active)));
        }
        if let Some((_, sentence)) = &j.aborted {
            info.push(Info::new(keys::EVENT_TEXT_MESSAGE, sentence.as_str()));
        }
        let mut targets = self.conns.registered_for(Status::EVENT_JOB_END.0);
        if let (Some(s), true) = (j.spawner, j.notify_completion) {
            if !targets.contains(&s) {
                targets.push(s);
            }
        }
        let me = self.me();
        self.notify_many(&targets, Status::EVENT_JOB_END, &me, &info);
        if self.leader.as_deref() == Some(nspace) {
            self.leader_status = Some(status);
            self.stop = true;
        }
    }
}

/// The infos of an allocation reply.
impl Server {
    /// The reply to a granted request: the ids and nodes, plus what the DVM
    /// actually applied — owning namespace (`PMIX_ALLOC_TARGET`), share,
    /// inheritance and time left — so the requester reports what it got, not
    /// what it asked for (they differ in `--pmix-compat` mode).
    pub fn grant_infos(
        &self,
        conn: u64,
        alloc_id: &str,
        req_id: Option<&str>,
        nodes: &[String],
    ) -> Vec<Info> {
        let mut info = alloc_reply_infos(alloc_id, req_id, nodes);
        let wire = self
            .conns
            .get(conn)
            .map(|c| c.wire)
            .unwrap_or(crate::codec::WireVersion::V41);
        if let Some(r) = self.model.reservation(alloc_id) {
            if let Some(n) = r.session_id {
                info.push(Info::new(keys::SESSION_ID, crate::codec::Value::Uint32(n)));
            }
            info.push(Info::new(keys::ALLOC_TARGET, r.owner_nspace.as_str()));
            info.push(Info::new(keys::ALLOC_SHARE, r.share));
            if let Some(i) = r.inherit {
                info.push(crate::schema::status::inheritance_info(i, wire));
            }
            if let Some(t) = r.expires_in {
                info.push(Info::new(
                    keys::TIME_REMAINING,
                    crate::codec::Value::Uint32(t.min(u32::MAX as u64) as u32),
                ));
            }
        }
        info
    }
}

/// The infos of an allocation reply: id, request id, node list and count.
pub(crate) fn alloc_reply_infos(
    alloc_id: &str,
    req_id: Option<&str>,
    nodes: &[String],
) -> Vec<Info> {
    let mut info = vec![Info::new(keys::ALLOC_ID, alloc_id)];
    if let Some(r) = req_id {
        info.push(Info::new(keys::ALLOC_REQ_ID, r));
    }
    if !nodes.is_empty() {
        info.push(Info::new(keys::ALLOC_NODE_LIST, nodes.join(",")));
        info.push(Info::new(keys::ALLOC_NUM_NODES, nodes.len() as u64));
    }
    info
}
