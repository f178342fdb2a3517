//! A live connection to a PMIx server, event-driven.
//!
//! There is no reader thread. Sending a request ([`Connection::begin`])
//! returns its tag, a pending-reply handle; one wait primitive,
//! [`Connection::wait`], polls the server's socket together with any
//! descriptors the caller registers (a signal self-pipe, a child's pidfd, a
//! holder's sockets) and returns the next [`Event`]: a reply for a pending
//! tag, an unsolicited message (event notification, forwarded output), a
//! readable extra descriptor, or the deadline. Blocking calls
//! ([`Connection::request`], [`Connection::next_unsolicited`]) are wrappers
//! over the same primitive with a deadline.
//!
//! Bytes go through a sans-IO [`FrameDecoder`]. Unsolicited messages wait
//! in a queue bounded in count ([`MAX_QUEUED`]) and bytes
//! ([`MAX_QUEUED_BYTES`]); while it is full the socket is not read, so TCP
//! backpressure reaches the server, and a request whose reply is awaited
//! meanwhile fails with `PMIX_ERR_OUT_OF_RESOURCE` rather than let memory
//! grow. When the server closes the connection or sends something
//! unreadable, every waiting request fails with the reason and the queue,
//! once drained, yields [`Unsolicited::Closed`].
//!
//! Several threads may share a connection (e.g. one forwarding stdin while
//! another follows a job): one of them polls at a time and the others wait
//! on a condition variable for what it reads.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout};

use crate::codec::WireVersion;
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::discover::Target;
use super::frame::{
    encode_frame, io_error, FrameDecoder, MAX_PAYLOAD, TAG_DYNAMIC, TAG_IOF, TAG_NOTIFY,
};
use super::handshake::{handshake, Hello, Identity, Welcome, BUFFER_NON_DESCRIBED};
use super::stream::Stream;

/// How long the whole handshake (connect, our request, the server's whole
/// answer) may take before we give up on a silent or stopped server.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest one timed wait of a wait without a deadline (it ends earlier at
/// any event: this only bounds a single timed wait).
const LONGEST_WAIT: Duration = Duration::from_secs(3600);
/// Default time we wait for a reply (`PMIX_TOOLS_TIMEOUT` overrides it).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Environment variable overriding the handshake deadline and the default
/// per-request deadline, in seconds (e.g. `PMIX_TOOLS_TIMEOUT=5`).
pub(crate) const TIMEOUT_ENV: &str = "PMIX_TOOLS_TIMEOUT";

/// The deadline [`TIMEOUT_ENV`] sets, if it holds a positive number of
/// seconds.
pub fn env_timeout() -> Option<Duration> {
    let v = std::env::var(TIMEOUT_ENV).ok()?;
    let secs: f64 = v.trim().trim_end_matches('s').parse().ok()?;
    (secs.is_finite() && secs > 0.0 && secs < 1e9).then(|| Duration::from_secs_f64(secs))
}

/// The handshake deadline in force: [`TIMEOUT_ENV`], else
/// [`HANDSHAKE_TIMEOUT`].
pub fn handshake_timeout() -> Duration {
    env_timeout().unwrap_or(HANDSHAKE_TIMEOUT)
}

/// Most unsolicited messages kept for the caller before the socket is no
/// longer read.
pub const MAX_QUEUED: usize = 8192;
/// Most payload bytes of unsolicited messages kept for the caller before the
/// socket is no longer read.
pub(crate) const MAX_QUEUED_BYTES: usize = 32 * 1024 * 1024;
/// Longest a single write to the server may block.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 64 * 1024;
/// Reads per poll round at most (fairness with the caller's descriptors).
const READS_PER_ROUND: usize = 16;
/// Longest command line sent in the handshake (the tool's identity only;
/// the spawn request carries a job's real argv).
pub(crate) const MAX_HANDSHAKE_CMDLINE: usize = 1024;

/// A message the server sent without being asked.
#[derive(Debug)]
pub enum Unsolicited {
    /// An event notification (payload as received).
    Notify(Vec<u8>),
    /// Forwarded stdout/stderr of a process (payload as received).
    Iof(Vec<u8>),
    /// Any other tag (including a reply to a request nobody waits for).
    Other(u32, Vec<u8>),
    /// The connection ended; no more messages will come.
    Closed(Error),
}

impl Unsolicited {
    fn len(&self) -> usize {
        match self {
            Unsolicited::Notify(b) | Unsolicited::Iof(b) | Unsolicited::Other(_, b) => b.len(),
            Unsolicited::Closed(_) => 0,
        }
    }
}

/// What [`Connection::wait`] returns.
#[derive(Debug)]
pub enum Event {
    /// The reply to a request sent with [`Connection::begin`] has arrived
    /// (or the connection closed first); take it with
    /// [`Connection::take_reply`].
    Reply(u32),
    /// An unsolicited message.
    Message(Unsolicited),
    /// The caller's extra descriptor at this index is readable (or hung up).
    Ready(usize),
    /// The deadline passed.
    Deadline,
}

/// A request's reply slot.
enum Slot {
    /// Sent, no reply yet; `notify`: report its arrival as [`Event::Reply`].
    Waiting { notify: bool },
    /// Sent, no reply yet, and nobody wants it any more: dropped when it
    /// comes (it still counts as in flight, see [`Connection::settle`]).
    Abandoned,
    /// The reply.
    Arrived(Vec<u8>),
}

/// The receiving side: decoder, reply slots, the unsolicited queue.
struct Rx {
    reader: Stream,
    decoder: FrameDecoder,
    scratch: Vec<u8>,
    pending: HashMap<u32, Slot>,
    /// Tags of [`Slot::Waiting`] `notify` slots whose reply arrived, not yet
    /// reported.
    ready: VecDeque<u32>,
    queue: VecDeque<Unsolicited>,
    queued_bytes: usize,
    closed: Option<Error>,
    /// A thread is in poll(2) on the socket (the others wait on the condvar).
    polling: bool,
    /// Threads waiting for the poller to wake them (none: no wake-up
    /// call is made).
    waiters: usize,
    /// A reply was given up on at its deadline: the server did not answer.
    gave_up: bool,
    /// The trace hook, called for each message received.
    trace: Option<TraceHook>,
}

impl Rx {
    fn full(&self) -> bool {
        self.queue.len() >= MAX_QUEUED || self.queued_bytes >= MAX_QUEUED_BYTES
    }

    fn closed_error(&self) -> Option<Error> {
        self.closed
            .as_ref()
            .map(|e| Error::new(e.status, e.context.clone()))
    }

    fn backpressure_error(&self) -> Error {
        Error::new(
            Status::ERR_OUT_OF_RESOURCE,
            format!(
                "{} unsolicited messages ({} bytes) from the server are waiting to be handled \
(the limit is {MAX_QUEUED} messages or {MAX_QUEUED_BYTES} bytes); the server sends faster than \
this tool can take them",
                self.queue.len(),
                self.queued_bytes
            ),
        )
    }

    /// Route whole frames out of the decoder while the queue has room.
    fn dispatch(&mut self) {
        while !self.full() {
            match self.decoder.next_frame() {
                Ok(Some((hdr, payload))) => self.route(hdr.tag, payload),
                Ok(None) => break,
                Err(e) => {
                    self.close(e);
                    break;
                }
            }
        }
    }

    fn route(&mut self, tag: u32, payload: Vec<u8>) {
        if let Some(hook) = &self.trace {
            hook(&Traced {
                dir: Direction::Received,
                tag,
                payload: &payload,
            });
        }
        if tag >= TAG_DYNAMIC {
            if let Some(slot) = self.pending.get_mut(&tag) {
                match *slot {
                    Slot::Waiting { notify } => {
                        *slot = Slot::Arrived(payload);
                        if notify {
                            self.ready.push_back(tag);
                        }
                        return;
                    }
                    Slot::Abandoned => {
                        self.pending.remove(&tag);
                        return;
                    }
                    Slot::Arrived(_) => {}
                }
            }
        }
        let msg = match tag {
            TAG_NOTIFY => Unsolicited::Notify(payload),
            TAG_IOF => Unsolicited::Iof(payload),
            t => Unsolicited::Other(t, payload),
        };
        self.queued_bytes += msg.len();
        self.queue.push_back(msg);
    }

    /// Nobody waits for the reply to `tag` any more.
    fn abandon(&mut self, tag: u32) {
        self.ready.retain(|t| *t != tag);
        match self.pending.get(&tag) {
            Some(Slot::Waiting { .. }) => {
                self.pending.insert(tag, Slot::Abandoned);
            }
            Some(Slot::Arrived(_)) => {
                self.pending.remove(&tag);
            }
            _ => {}
        }
    }

    /// Requests sent and not answered yet.
    fn in_flight(&self) -> usize {
        self.pending
            .values()
            .filter(|s| matches!(s, Slot::Waiting { .. } | Slot::Abandoned))
            .count()
    }

    fn close(&mut self, e: Error) {
        if self.closed.is_some() {
            return;
        }
        for (tag, slot) in &self.pending {
            if matches!(slot, Slot::Waiting { notify: true }) {
                self.ready.push_back(*tag);
            }
        }
        self.closed = Some(e);
    }

    /// Read what the socket has (never blocking), and route it. A read
    /// that did not fill the buffer took all there was: the socket is not
    /// read again to hear `EAGAIN` (what comes later wakes the next poll).
    fn read_available(&mut self) {
        self.reader.quick_ack();
        for _ in 0..READS_PER_ROUND {
            if self.closed.is_some() || self.full() {
                return;
            }
            let fd = self.reader.as_raw_fd();
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.resize(READ_CHUNK, 0);
            let got =
                nix::sys::socket::recv(fd, &mut scratch, nix::sys::socket::MsgFlags::MSG_DONTWAIT);
            match got {
                Ok(0) => {
                    let e = self.decoder.eof_error();
                    self.scratch = scratch;
                    self.dispatch();
                    self.close(e);
                    return;
                }
                Ok(n) => {
                    let drained = n < scratch.len();
                    self.decoder.feed(&scratch[..n]);
                    self.scratch = scratch;
                    self.dispatch();
                    if drained {
                        return;
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => {
                    self.scratch = scratch;
                    return;
                }
                Err(nix::errno::Errno::EINTR) => {
                    self.scratch = scratch;
                }
                Err(e) => {
                    self.scratch = scratch;
                    self.close(io_error(std::io::Error::from(e), "reading from the server"));
                    return;
                }
            }
        }
    }
}

/// Which way a traced message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From us to the server.
    Sent,
    /// From the server to us.
    Received,
}

/// One whole message as the trace hook sees it (after the handshake): the
/// connection does not interpret the payload; the hook's owner does.
#[derive(Debug)]
pub struct Traced<'a> {
    /// Sent or received.
    pub dir: Direction,
    /// The frame's tag.
    pub tag: u32,
    /// The payload, as on the wire.
    pub payload: &'a [u8],
}

/// Called with every message sent and received once set
/// ([`Connection::set_trace`]); `pwatch -vv` prints them.
pub type TraceHook = Arc<dyn Fn(&Traced<'_>) + Send + Sync>;

/// A connected, handshaken session with a PMIx server.
pub struct Connection {
    writer: Mutex<Stream>,
    shared: Arc<Shared>,
    next_tag: AtomicU32,
    target: Target,
    welcome: Welcome,
    wire: WireVersion,
    trace: OnceLock<TraceHook>,
}

/// The receiving side as the waiting threads share it.
struct Shared {
    rx: Mutex<Rx>,
    turn: Condvar,
    fd: RawFd,
}

/// What a waiter's check says after each round.
enum Check<T> {
    Done(T),
    Again,
}

/// Choose the wire version to speak from the server's PMIx version string:
/// `v61` for OpenPMIx 6.1 and later (and master), `v41` otherwise.
pub(crate) fn wire_for_version(version: Option<&str>) -> WireVersion {
    if crate::proto::PmixVersion::of(version) >= crate::proto::PmixVersion::new(6, 1) {
        WireVersion::V61
    } else {
        WireVersion::V41
    }
}

/// Our command line as one string (PRRTE records it for the tool's job),
/// cut to [`MAX_HANDSHAKE_CMDLINE`] bytes: it only names the tool, and a
/// long one (10,000 arguments) must not make the handshake too large.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().collect();
    summarise_command_line(&args)
}

/// `args` joined by spaces, cut at a character boundary to
/// [`MAX_HANDSHAKE_CMDLINE`] bytes with a note of what was left out.
pub(crate) fn summarise_command_line(args: &[String]) -> String {
    let line = args.join(" ");
    if line.is_empty() {
        return "pmix-tools".to_string();
    }
    if line.len() <= MAX_HANDSHAKE_CMDLINE {
        return line;
    }
    let note = format!(" … ({} arguments, {} bytes)", args.len(), line.len());
    let mut cut = MAX_HANDSHAKE_CMDLINE.saturating_sub(note.len());
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{note}", &line[..cut])
}

/// The error of a request over [`super::frame::MAX_REQUEST_LEN`]: nothing
/// was sent, the connection goes on.
fn too_large(payload: &[u8]) -> Error {
    Error::of_kind(
        crate::error::ErrorKind::Local,
        Status::ERR_BAD_PARAM,
        format!(
            "the request is {} bytes, over the {} bytes a request may have (a DVM closes the \
connection on a longer one); it was not sent: shorten its arguments or environment",
            payload.len(),
            super::frame::MAX_REQUEST_LEN
        ),
    )
}

/// The PMIx version we announce for a wire version.
fn version_for_wire(wire: WireVersion) -> &'static str {
    if wire == WireVersion::V61 {
        "6.1.0"
    } else {
        "5.0.11"
    }
}

impl Connection {
    /// Connect to a known target; the connection and the whole handshake
    /// must be done within `handshake_timeout`.
    pub fn open(target: Target, handshake_timeout: Duration) -> Result<Connection> {
        let deadline = Instant::now() + handshake_timeout;
        let addr = target.uri.socket_addr()?;
        let stream = TcpStream::connect_timeout(&addr, handshake_timeout).map_err(|e| {
            if matches!(
                e.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) {
                return Error::new(
                    Status::ERR_TIMEOUT,
                    format!(
                        "no answer from the DVM at {} (found by {}) to our connection after {}",
                        target.uri.address,
                        target.found_by,
                        seconds(handshake_timeout)
                    ),
                );
            }
            Error::new(
                Status::ERR_UNREACH,
                format!(
                    "cannot connect to the server at {} (found by {}): {e}",
                    target.uri.address, target.found_by
                ),
            )
        })?;
        let listener = super::local_trust::check_local_server(&stream, &target.uri.address)?;
        let _ = stream.set_nodelay(true);
        let wire = wire_for_version(target.version.as_deref());
        let hello = Hello {
            identity: target.identity.clone(),
            version: version_for_wire(wire).to_string(),
            bfrops: wire.name().to_string(),
            buffer_kind: BUFFER_NON_DESCRIBED,
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            info_blob: match target.identity {
                Identity::Scheduler { .. } => super::handshake::scheduler_info_blob(
                    wire,
                    &command_line(),
                    std::process::id(),
                )?,
                _ => super::handshake::tool_info_blob(wire, &command_line(), std::process::id())?,
            },
        };
        let mut stream = Stream::Tcp(stream);
        let welcome =
            handshake(&mut Deadlined::new(&mut stream, deadline), &hello).map_err(|e| {
                if e.status == Status::ERR_TIMEOUT {
                    Error::new(
                        Status::ERR_TIMEOUT,
                        format!(
                        "no answer from the DVM to the connection handshake after {} (server {}, \
found by {}); it may be stopped or overloaded",
                        seconds(handshake_timeout),
                        target.uri,
                        target.found_by
                    ),
                    )
                } else {
                    super::local_trust::refused_by_other_user(
                        Error::new(e.status, format!("{} (server {})", e.context, target.uri)),
                        listener,
                        &target.uri.address,
                    )
                }
            })?;
        Connection::established(stream, target, welcome, wire)
    }

    /// Wrap a stream whose handshake is done.
    pub(crate) fn established(
        stream: Stream,
        target: Target,
        welcome: Welcome,
        wire: WireVersion,
    ) -> Result<Connection> {
        stream
            .set_read_timeout(None)
            .map_err(|e| io_error(e, "configuring the socket"))?;
        stream
            .set_write_timeout(Some(WRITE_TIMEOUT))
            .map_err(|e| io_error(e, "configuring the socket"))?;
        let reader = stream
            .try_clone()
            .map_err(|e| io_error(e, "cloning the socket"))?;
        let fd = reader.as_raw_fd();
        Ok(Connection {
            writer: Mutex::new(stream),
            shared: Arc::new(Shared {
                rx: Mutex::new(Rx {
                    reader,
                    decoder: FrameDecoder::new(MAX_PAYLOAD),
                    scratch: Vec::new(),
                    pending: HashMap::new(),
                    ready: VecDeque::new(),
                    queue: VecDeque::new(),
                    queued_bytes: 0,
                    closed: None,
                    polling: false,
                    waiters: 0,
                    gave_up: false,
                    trace: None,
                }),
                turn: Condvar::new(),
                fd,
            }),
            next_tag: AtomicU32::new(TAG_DYNAMIC),
            target,
            welcome,
            wire,
            trace: OnceLock::new(),
        })
    }

    /// Our own namespace and rank.
    pub fn me(&self) -> (&str, u32) {
        (&self.welcome.nspace, self.welcome.rank)
    }

    /// Who we connected as.
    pub fn identity(&self) -> &Identity {
        &self.target.identity
    }

    /// The server we are connected to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The server's namespace and rank as it announced them (tools only).
    pub fn server(&self) -> (&str, u32) {
        (&self.welcome.server_nspace, self.welcome.server_rank)
    }

    /// The wire version spoken on this connection.
    pub fn wire(&self) -> WireVersion {
        self.wire
    }

    /// True once the server has gone away.
    pub fn is_closed(&self) -> bool {
        lock(&self.shared.rx).closed.is_some()
    }

    /// Unsolicited messages received and not taken yet: a caller that
    /// sends request after request checks it and takes them before the
    /// queue fills ([`MAX_QUEUED`]), past which no reply can be read.
    pub fn backlog(&self) -> usize {
        lock(&self.shared.rx).queue.len()
    }

    fn pindex(&self) -> i32 {
        self.welcome.pindex.map(|p| p as i32).unwrap_or(0)
    }

    /// Send a request on a fresh tag and return the tag: the handle of its
    /// pending reply. [`Connection::wait`] reports the reply's arrival as
    /// [`Event::Reply`]; [`Connection::take_reply`] takes it.
    pub fn begin(&self, payload: &[u8]) -> Result<u32> {
        self.start(payload, true)
    }

    fn start(&self, payload: &[u8], notify: bool) -> Result<u32> {
        if payload.len() > super::frame::MAX_REQUEST_LEN as usize {
            return Err(too_large(payload));
        }
        let tag = self.alloc_tag();
        {
            let mut rx = lock(&self.shared.rx);
            if let Some(e) = rx.closed_error() {
                return Err(e);
            }
            rx.pending.insert(tag, Slot::Waiting { notify });
        }
        if let Err(e) = self.send(tag, payload) {
            lock(&self.shared.rx).pending.remove(&tag);
            return Err(e);
        }
        Ok(tag)
    }

    /// The reply to request `tag` once it has arrived (`Some(Ok)`), or the
    /// reason none will come (`Some(Err)`); `None` while it is pending.
    /// Taking a reply ends the handle.
    pub fn take_reply(&self, tag: u32) -> Option<Result<Vec<u8>>> {
        let mut rx = lock(&self.shared.rx);
        rx.ready.retain(|t| *t != tag);
        match rx.pending.get(&tag) {
            Some(Slot::Arrived(_)) => match rx.pending.remove(&tag) {
                Some(Slot::Arrived(b)) => Some(Ok(b)),
                _ => None,
            },
            Some(Slot::Waiting { .. }) => {
                let e = rx.closed_error()?;
                rx.pending.remove(&tag);
                Some(Err(e))
            }
            Some(Slot::Abandoned) | None => Some(Err(Error::new(
                Status::ERR_NOT_FOUND,
                format!("no request with tag {tag} is pending"),
            ))),
        }
    }

    /// Stop waiting for the reply to `tag` (a reply that still comes is
    /// dropped).
    pub fn forget(&self, tag: u32) {
        lock(&self.shared.rx).abandon(tag);
    }

    /// [`Connection::forget`] because the server did not answer in time
    /// (see [`Connection::gave_up`]).
    pub fn give_up(&self, tag: u32) {
        let mut rx = lock(&self.shared.rx);
        rx.abandon(tag);
        rx.gave_up = true;
    }

    /// Wait until every request sent on this connection has been answered
    /// (replies not taken yet are kept), at most until `deadline`; true
    /// when none is left in flight. Some servers (PRRTE master) are upset
    /// by a client that leaves with requests in flight: call this before
    /// saying goodbye.
    pub fn settle(&self, deadline: Instant) -> bool {
        let r = self.shared.wait_for(&[], Some(deadline), true, |rx| {
            let open = rx.in_flight();
            if open == 0 || rx.closed.is_some() || (rx.full() && !rx.polling) {
                Check::Done(open == 0)
            } else {
                Check::Again
            }
        });
        matches!(r, WaitOut::Done(true))
    }

    /// True once a reply was given up on at its deadline (the server did
    /// not answer in time): saying goodbye then does not wait long.
    pub fn gave_up(&self) -> bool {
        lock(&self.shared.rx).gave_up
    }

    /// Send a request and wait up to `timeout` for its reply payload.
    pub fn request(&self, payload: &[u8], timeout: Duration) -> Result<Vec<u8>> {
        self.request_for(payload, timeout, "our request")
    }

    /// [`Connection::request`], naming what was asked (`what`, e.g. "the
    /// allocation request") in the time-out error.
    pub fn request_for(&self, payload: &[u8], timeout: Duration, what: &str) -> Result<Vec<u8>> {
        let tag = self.start(payload, false)?;
        let deadline = Instant::now() + timeout;
        match self.await_reply(tag, &[], Some(deadline)) {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(Error::new(
                Status::ERR_TIMEOUT,
                format!(
                    "no answer from the DVM to {what} after {}",
                    seconds(timeout)
                ),
            )),
            Err(e) => Err(e),
        }
    }

    /// [`Connection::request_for`], asking `quiet` after each `every`
    /// without an answer whether to give the request up: `Ok(None)` when
    /// it said so (the reply, should it still come, is dropped).
    pub fn request_watching(
        &self,
        payload: &[u8],
        timeout: Duration,
        what: &str,
        every: Duration,
        quiet: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let tag = self.start(payload, false)?;
        let deadline = Instant::now() + timeout;
        loop {
            let until = (Instant::now() + every).min(deadline);
            let last = until >= deadline;
            match self.shared.await_reply_or_not(tag, &[], Some(until), last) {
                Ok(Some(r)) => return Ok(Some(r)),
                Ok(None) if Instant::now() >= deadline => {
                    return Err(Error::new(
                        Status::ERR_TIMEOUT,
                        format!(
                            "no answer from the DVM to {what} after {}",
                            seconds(timeout)
                        ),
                    ))
                }
                Ok(None) if quiet() => {
                    self.forget(tag);
                    return Ok(None);
                }
                Ok(None) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Wait until `deadline` for the reply to `tag` (from
    /// [`Connection::begin`]); `Ok(None)` at the deadline (the request
    /// stays pending) or when one of `extras` became readable. Unsolicited
    /// messages meanwhile are queued for the caller; while that queue is
    /// full the wait fails.
    pub fn await_reply(
        &self,
        tag: u32,
        extras: &[BorrowedFd<'_>],
        deadline: Option<Instant>,
    ) -> Result<Option<Vec<u8>>> {
        let watched: Vec<Watched<'_>> = extras.iter().map(|f| (*f, PollFlags::POLLIN)).collect();
        self.shared.await_reply(tag, &watched, deadline)
    }

    /// Send a request on a fresh tag; its reply (or the reason none will
    /// come) is handed to `on_reply` on a thread of its own that waits for
    /// it. For callers without a wait loop of their own (tests, scripts);
    /// the tools use [`Connection::begin`] and [`Connection::wait`].
    pub fn relay(
        &self,
        payload: &[u8],
        on_reply: Box<dyn FnOnce(Result<Vec<u8>>) + Send>,
    ) -> Result<()> {
        let tag = self.start(payload, false)?;
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name("pmix-relay".into())
            .spawn(move || {
                let r = shared.await_reply(tag, &[], None).and_then(|r| {
                    r.ok_or_else(|| Error::new(Status::ERR_TIMEOUT, "no reply came"))
                });
                on_reply(r);
            })
            .map(|_| ())
            .map_err(|e| {
                self.forget(tag);
                Error::new(
                    Status::ERR_OUT_OF_RESOURCE,
                    format!("cannot start a thread to wait for the reply: {e}"),
                )
            })
    }

    /// The one wait primitive: the next event, waiting at most until
    /// `deadline` (`None`: no limit). Replies to [`Connection::begin`]
    /// requests come first, then queued unsolicited messages (the caller's
    /// `extras` are still looked at between them), then whatever poll(2)
    /// finds on the socket and `extras`.
    pub fn wait(&self, extras: &[BorrowedFd<'_>], deadline: Option<Instant>) -> Event {
        let watched: Vec<Watched<'_>> = extras.iter().map(|f| (*f, PollFlags::POLLIN)).collect();
        self.wait_watching(&watched, deadline, true)
    }

    /// [`Connection::wait`] for a relay: `watched` descriptors with the
    /// readiness wanted for each ([`Event::Ready`] gives the index), and,
    /// unless `take_messages`, unsolicited messages are left queued (replies
    /// still come): once the queue is full the socket is no longer read, so
    /// the server feels the backpressure of a relay's slow reader. A closed
    /// connection is reported either way.
    pub fn wait_watching(
        &self,
        watched: &[Watched<'_>],
        deadline: Option<Instant>,
        take_messages: bool,
    ) -> Event {
        let r = self.shared.wait_for(watched, deadline, false, |rx| {
            if let Some(tag) = rx.ready.pop_front() {
                return Check::Done(Event::Reply(tag));
            }
            if take_messages {
                if let Some(m) = rx.queue.pop_front() {
                    rx.queued_bytes -= m.len();
                    return Check::Done(Event::Message(m));
                }
            }
            match rx.closed_error() {
                Some(e) if !take_messages || !rx.decoder.has_frame() => {
                    Check::Done(Event::Message(Unsolicited::Closed(e)))
                }
                _ => Check::Again,
            }
        });
        match r {
            WaitOut::Done(ev) => ev,
            WaitOut::Ready(i) => Event::Ready(i),
            WaitOut::Deadline => Event::Deadline,
        }
    }

    /// Wait up to `timeout` for the next unsolicited message (replies to
    /// [`Connection::begin`] requests stay for [`Connection::wait`]).
    pub fn next_unsolicited(&self, timeout: Duration) -> Option<Unsolicited> {
        self.next_unsolicited_until(Some(Instant::now() + timeout))
    }

    /// Wait until `deadline` for the next unsolicited message.
    pub fn next_unsolicited_until(&self, deadline: Option<Instant>) -> Option<Unsolicited> {
        let r = self.shared.wait_for(&[], deadline, false, |rx| {
            if let Some(m) = rx.queue.pop_front() {
                rx.queued_bytes -= m.len();
                return Check::Done(m);
            }
            match rx.closed_error() {
                Some(e) if !rx.decoder.has_frame() => Check::Done(Unsolicited::Closed(e)),
                _ => Check::Again,
            }
        });
        match r {
            WaitOut::Done(m) => Some(m),
            _ => None,
        }
    }

    /// Call `hook` with every message sent and received from now on (once
    /// per connection: a second hook is ignored).
    pub fn set_trace(&self, hook: TraceHook) {
        lock(&self.shared.rx).trace = Some(hook.clone());
        let _ = self.trace.set(hook);
    }

    /// Send a message on a fixed tag without waiting for a reply.
    pub fn send(&self, tag: u32, payload: &[u8]) -> Result<()> {
        if let Some(hook) = self.trace.get() {
            hook(&Traced {
                dir: Direction::Sent,
                tag,
                payload,
            });
        }
        let msg = encode_frame(self.pindex(), tag, payload)?;
        let mut w = lock(&self.writer);
        w.write_all(&msg).map_err(|e| {
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                Error::new(
                    Status::ERR_TIMEOUT,
                    format!(
                        "the DVM took nothing we sent for {} (it may be stopped)",
                        seconds(WRITE_TIMEOUT)
                    ),
                )
            } else {
                io_error(e, "sending a message")
            }
        })?;
        w.flush().map_err(|e| io_error(e, "sending a message"))
    }

    fn alloc_tag(&self) -> u32 {
        // Stay in the lower half of the dynamic space, as the initiating side.
        let t = self.next_tag.fetch_add(1, Ordering::Relaxed);
        if t >= u32::MAX / 2 {
            self.next_tag.store(TAG_DYNAMIC + 1, Ordering::Relaxed);
            TAG_DYNAMIC
        } else {
            t
        }
    }

    /// Close the socket; waits see the connection closed.
    pub fn shutdown(&self) {
        let _ = lock(&self.writer).shutdown();
    }
}

impl Shared {
    fn await_reply(
        &self,
        tag: u32,
        extras: &[Watched<'_>],
        deadline: Option<Instant>,
    ) -> Result<Option<Vec<u8>>> {
        self.await_reply_or_not(tag, extras, deadline, true)
    }

    /// [`Shared::await_reply`]; at the deadline the request is given up
    /// only if `give_up` (else it stays pending, to be waited for again).
    fn await_reply_or_not(
        &self,
        tag: u32,
        extras: &[Watched<'_>],
        deadline: Option<Instant>,
        give_up: bool,
    ) -> Result<Option<Vec<u8>>> {
        let r = self.wait_for(extras, deadline, true, |rx| {
            match rx.pending.get(&tag) {
                Some(Slot::Arrived(_)) => {
                    rx.ready.retain(|t| *t != tag);
                    match rx.pending.remove(&tag) {
                        Some(Slot::Arrived(b)) => return Check::Done(Ok(b)),
                        _ => unreachable!("checked above"),
                    }
                }
                Some(Slot::Abandoned) | None => {
                    return Check::Done(Err(Error::new(
                        Status::ERR_NOT_FOUND,
                        format!("no request with tag {tag} is pending"),
                    )))
                }
                Some(Slot::Waiting { .. }) => {}
            }
            if let Some(e) = rx.closed_error() {
                rx.pending.remove(&tag);
                rx.ready.retain(|t| *t != tag);
                return Check::Done(Err(e));
            }
            if rx.full() && !rx.polling {
                rx.abandon(tag);
                return Check::Done(Err(rx.backpressure_error()));
            }
            Check::Again
        });
        match r {
            WaitOut::Done(Ok(b)) => Ok(Some(b)),
            WaitOut::Done(Err(e)) => Err(e),
            WaitOut::Ready(_) | WaitOut::Deadline => {
                if give_up && deadline.is_some_and(|d| Instant::now() >= d) {
                    let mut rx = lock(&self.rx);
                    rx.abandon(tag);
                    rx.gave_up = true;
                }
                Ok(None)
            }
        }
    }

    /// The leader/follower loop under every wait: `check` runs on the
    /// receive state after each round; one thread at a time polls. Unless
    /// `for_reply`, with messages queued, `extras` are polled without
    /// waiting before the next message is handed out (so a flood cannot
    /// hide a signal).
    fn wait_for<T>(
        &self,
        extras: &[Watched<'_>],
        deadline: Option<Instant>,
        for_reply: bool,
        mut check: impl FnMut(&mut Rx) -> Check<T>,
    ) -> WaitOut<T> {
        let mut rx = lock(&self.rx);
        // A wait whose deadline has already passed still looks once at what
        // the kernel holds (without blocking): "what has arrived".
        let mut polled = false;
        loop {
            rx.dispatch();
            if !extras.is_empty() && !for_reply && (!rx.queue.is_empty() || !rx.ready.is_empty()) {
                if let Some(i) = poll_extras(extras) {
                    return WaitOut::Ready(i);
                }
            }
            if let Check::Done(t) = check(&mut rx) {
                return WaitOut::Done(t);
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) && (polled || rx.polling) {
                return WaitOut::Deadline;
            }
            if rx.polling {
                // Another thread polls: it wakes us when it has read.
                let left = deadline.map_or(LONGEST_WAIT, |d| d.saturating_duration_since(now));
                rx.waiters += 1;
                rx = super::wait::for_turn(&self.turn, rx, left.min(LONGEST_WAIT));
                rx.waiters -= 1;
                continue;
            }
            let read_socket = rx.closed.is_none() && !rx.full();
            rx.polling = true;
            drop(rx);
            let ready = self.poll_once(read_socket, extras, deadline);
            rx = lock(&self.rx);
            rx.polling = false;
            polled = true;
            if ready.socket {
                rx.read_available();
            }
            if rx.waiters > 0 {
                self.turn.notify_all();
            }
            if let Some(i) = ready.extra {
                rx.dispatch();
                if let Check::Done(t) = check(&mut rx) {
                    return WaitOut::Done(t);
                }
                return WaitOut::Ready(i);
            }
        }
    }

    fn poll_once(
        &self,
        read_socket: bool,
        extras: &[Watched<'_>],
        deadline: Option<Instant>,
    ) -> Readiness {
        // SAFETY: the connection's socket stays open while `self` lives.
        let sock = unsafe { BorrowedFd::borrow_raw(self.fd) };
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(extras.len() + 1);
        if read_socket {
            fds.push(PollFd::new(sock, PollFlags::POLLIN));
        }
        for (f, flags) in extras {
            fds.push(PollFd::new(*f, *flags));
        }
        let timeout = poll_timeout(deadline);
        if fds.is_empty() {
            // Nothing to watch (queue full, no extras): wait to the deadline.
            let until = deadline.unwrap_or_else(|| Instant::now() + LONGEST_WAIT);
            super::wait::until(until, super::wait::Retry::NothingToWatch);
            return Readiness::default();
        }
        match nix::poll::poll(&mut fds, timeout) {
            Ok(n) if n > 0 => {}
            _ => return Readiness::default(),
        }
        let skip = usize::from(read_socket);
        Readiness {
            socket: read_socket && fired(&fds[0]),
            extra: fds[skip..].iter().position(fired),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// How a [`Connection::wait_for`] ended.
enum WaitOut<T> {
    Done(T),
    Ready(usize),
    Deadline,
}

#[derive(Default)]
struct Readiness {
    socket: bool,
    extra: Option<usize>,
}

/// Whether poll(2) reported `p` readable (or writable, when asked), closed
/// or failed.
fn fired(p: &PollFd<'_>) -> bool {
    p.revents().is_some_and(|r| {
        r.intersects(
            PollFlags::POLLIN
                | PollFlags::POLLOUT
                | PollFlags::POLLHUP
                | PollFlags::POLLERR
                | PollFlags::POLLNVAL,
        )
    })
}

/// A descriptor a wait watches besides the connection, with the readiness
/// wanted (`POLLIN`, `POLLOUT`).
pub type Watched<'a> = (BorrowedFd<'a>, PollFlags);

/// Which of `extras` is readable now (no waiting).
fn poll_extras(extras: &[Watched<'_>]) -> Option<usize> {
    let mut fds: Vec<PollFd<'_>> = extras.iter().map(|(f, fl)| PollFd::new(*f, *fl)).collect();
    match nix::poll::poll(&mut fds, PollTimeout::ZERO) {
        Ok(n) if n > 0 => fds.iter().position(fired),
        _ => None,
    }
}

/// Wait until one of `fds` is readable (or hung up) or `deadline` passes:
/// the index of the first that is, `None` at the deadline or on an error.
pub fn poll_readable(fds: &[BorrowedFd<'_>], deadline: Option<Instant>) -> Option<usize> {
    let mut p: Vec<PollFd<'_>> = fds
        .iter()
        .map(|f| PollFd::new(*f, PollFlags::POLLIN))
        .collect();
    match nix::poll::poll(&mut p, poll_timeout(deadline)) {
        Ok(n) if n > 0 => p
            .iter()
            .position(|f| f.revents().is_some_and(|r| !r.is_empty())),
        _ => None,
    }
}

/// poll(2)'s timeout for `deadline`, rounded up to whole milliseconds.
fn poll_timeout(deadline: Option<Instant>) -> PollTimeout {
    match deadline {
        None => PollTimeout::NONE,
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            let ms = left.as_nanos().div_ceil(1_000_000);
            PollTimeout::try_from(i32::try_from(ms).unwrap_or(i32::MAX)).unwrap_or(PollTimeout::MAX)
        }
    }
}

/// "30 s", "2.5 s".
pub fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A stream whose reads and writes all end by one deadline (the handshake:
/// a server dripping its answer a byte at a time cannot keep us past it).
pub(crate) struct Deadlined<'a> {
    stream: &'a mut Stream,
    deadline: Instant,
}

impl<'a> Deadlined<'a> {
    /// Bound every operation on `stream` by `deadline`.
    pub(crate) fn new(stream: &'a mut Stream, deadline: Instant) -> Deadlined<'a> {
        Deadlined { stream, deadline }
    }

    fn left(&self) -> std::io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "deadline passed",
            ));
        }
        Ok(left)
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the socket stays open while `self` lives.
        unsafe { BorrowedFd::borrow_raw(self.shared.fd) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_choice_follows_server_version() {
        assert_eq!(wire_for_version(Some("5.0.11rc1")), WireVersion::V41);
        assert_eq!(wire_for_version(Some("4.2.2")), WireVersion::V41);
        assert_eq!(wire_for_version(Some("6.0.0")), WireVersion::V41);
        assert_eq!(wire_for_version(Some("6.1.0")), WireVersion::V61);
        assert_eq!(wire_for_version(Some("7.0.0a1")), WireVersion::V61);
        assert_eq!(wire_for_version(None), WireVersion::V41);
    }

    #[test]
    fn long_command_lines_are_summarised() {
        let args: Vec<String> = (0..10_000).map(|i| format!("arg{i:06}")).collect();
        let line = summarise_command_line(&args);
        assert!(line.len() <= MAX_HANDSHAKE_CMDLINE, "{}", line.len());
        assert!(line.starts_with("arg000000 arg000001"));
        assert!(line.ends_with("(10000 arguments, 99999 bytes)"), "{line}");
        let short = vec!["palloc".to_string(), "-N".into(), "1".into()];
        assert_eq!(summarise_command_line(&short), "palloc -N 1");
        let wide = vec!["é".repeat(2000)];
        assert!(summarise_command_line(&wide).len() <= MAX_HANDSHAKE_CMDLINE);
    }
}
