//! A live connection to a PMIx server.
//!
//! One reader thread owns the receiving half of the socket. Replies are routed
//! by tag to the request waiting for them; everything else (event
//! notifications, forwarded output) goes to one queue the caller drains with
//! [`Connection::next_unsolicited`]. When the server closes the connection or
//! sends something unreadable, every waiting request fails at once with
//! `PMIX_ERR_LOST_CONNECTION`, and the queue yields [`Unsolicited::Closed`].

use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::codec::WireVersion;
use crate::error::{Error, Result};
use crate::status::Status;

use super::discover::{discover, ConnectOptions, ProcessEnv, Target};
use super::frame::{
    io_error, read_frame, write_frame, MAX_PAYLOAD, TAG_DYNAMIC, TAG_IOF, TAG_NOTIFY,
};
use super::handshake::{handshake, Hello, Identity, Welcome, BUFFER_NON_DESCRIBED};
use super::stream::Stream;

/// How long the handshake may take before we give up on a silent server.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A message the server sent without being asked.
#[derive(Debug)]
pub enum Unsolicited {
    /// An event notification (payload as received).
    Notify(Vec<u8>),
    /// Forwarded stdout/stderr of a process (payload as received).
    Iof(Vec<u8>),
    /// Any other tag.
    Other(u32, Vec<u8>),
    /// Sent by a [`Waker`]: something outside the connection needs the
    /// waiting loop's attention.
    Wake,
    /// The connection ended; no more messages will come.
    Closed(Error),
}

/// Requests waiting for replies, and why the connection closed once it has:
/// one lock, so a request is either registered before the close (and then
/// told the reason by the reader) or sees the reason itself — never lost.
#[derive(Default)]
struct WaitTable {
    pending: HashMap<u32, Waiter>,
    closed: Option<Error>,
}

/// Who gets a reply: a request blocked on a channel, or a callback (a
/// relayed request, answered from the reader thread).
enum Waiter {
    Chan(Sender<Result<Vec<u8>>>),
    Call(Box<dyn FnOnce(Result<Vec<u8>>) + Send>),
}

impl Waiter {
    fn deliver(self, r: Result<Vec<u8>>) {
        match self {
            Waiter::Chan(tx) => {
                let _ = tx.send(r);
            }
            Waiter::Call(f) => f(r),
        }
    }
}

/// Wakes a loop blocked in [`Connection::next_unsolicited`] with
/// [`Unsolicited::Wake`] (e.g. when a child process ends).
#[derive(Clone)]
pub struct Waker(Sender<Unsolicited>);

impl Waker {
    /// Deliver one [`Unsolicited::Wake`].
    pub fn wake(&self) {
        let _ = self.0.send(Unsolicited::Wake);
    }
}

impl WaitTable {
    fn closed_error(&self) -> Option<Error> {
        self.closed
            .as_ref()
            .map(|e| Error::new(e.status, e.context.clone()))
    }
}

type Waiters = Arc<Mutex<WaitTable>>;

/// A connected, handshaken session with a PMIx server.
pub struct Connection {
    writer: Mutex<Stream>,
    waiters: Waiters,
    unsolicited: Mutex<Receiver<Unsolicited>>,
    wake: Sender<Unsolicited>,
    next_tag: AtomicU32,
    target: Target,
    welcome: Welcome,
    wire: WireVersion,
}

/// Choose the wire version to speak from the server's PMIx version string:
/// `v61` for OpenPMIx 6.1 and later (and master), `v41` otherwise.
pub fn wire_for_version(version: Option<&str>) -> WireVersion {
    let Some(v) = version else {
        return WireVersion::V41;
    };
    let v = v.trim_start_matches('v');
    let mut parts = v
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty());
    let major: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    if major > 6 || (major == 6 && minor >= 1) {
        WireVersion::V61
    } else {
        WireVersion::V41
    }
}

/// The holder to connect through: inside `palloc … -- CMD` (its socket in
/// [`super::holder::HOLDER_ENV`]), unless a server, a tool identity or
/// `--as-tool` was asked for explicitly.
pub fn holder_in_charge(
    opts: &ConnectOptions,
    env: &dyn super::discover::Env,
) -> Option<std::path::PathBuf> {
    if !holders_apply(opts) {
        return None;
    }
    env.var(super::holder::HOLDER_ENV).map(Into::into)
}

/// Holders are bypassed when a server, a tool identity or `--as-tool` is
/// asked for explicitly.
fn holders_apply(opts: &ConnectOptions) -> bool {
    !(opts.names_a_server() || opts.force_tool || opts.tool_id.is_some())
}

/// The holder of the allocation the command acts on ([`ConnectOptions::alloc`])
/// on the DVM found (`target`), registered by a palloc in another shell of
/// the same user; none inside a job, or when a server or `--as-tool` was
/// asked for explicitly.
pub fn registered_holder(opts: &ConnectOptions, target: &Target) -> Option<std::path::PathBuf> {
    if !holders_apply(opts) || !target.identity.is_tool() {
        return None;
    }
    let path = super::holder::registered_path(&target.uri.nspace, opts.alloc.as_deref()?)?;
    path.exists().then_some(path)
}

/// Our command line as one string (PRRTE records it for the tool's job).
fn command_line() -> String {
    let line = std::env::args().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        "pmix-tools".to_string()
    } else {
        line
    }
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
    /// Find the server per `opts`, connect and handshake, retrying as asked.
    pub fn connect(opts: &ConnectOptions) -> Result<Connection> {
        if let Some(path) = holder_in_charge(opts, &ProcessEnv) {
            return super::holder::connect(&path);
        }
        let attempts = opts.retries.saturating_add(1);
        let delay = opts.wait_to_connect.unwrap_or(Duration::from_secs(1));
        let mut last = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                std::thread::sleep(delay);
            }
            let found = discover(opts, &ProcessEnv).and_then(|t| {
                // A holder that has gone leaves a stale socket: then
                // connect as usual.
                match registered_holder(opts, &t).map(|p| super::holder::connect(&p)) {
                    Some(Ok(c)) => Ok(c),
                    _ => Connection::open(t, HANDSHAKE_TIMEOUT),
                }
            });
            match found {
                Ok(c) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(last
            .unwrap_or_else(|| Error::new(Status::ERR_UNREACH, "no connection attempt was made")))
    }

    /// Connect to a known target.
    pub fn open(target: Target, handshake_timeout: Duration) -> Result<Connection> {
        let addr = target.uri.socket_addr()?;
        let mut stream = TcpStream::connect_timeout(&addr, handshake_timeout).map_err(|e| {
            Error::new(
                Status::ERR_UNREACH,
                format!(
                    "cannot connect to the server at {} (found by {}): {e}",
                    target.uri.address, target.found_by
                ),
            )
        })?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(handshake_timeout))
            .map_err(|e| io_error(e, "configuring the socket"))?;
        let wire = wire_for_version(target.version.as_deref());
        let hello = Hello {
            identity: target.identity.clone(),
            version: version_for_wire(wire).to_string(),
            bfrops: wire.name().to_string(),
            buffer_kind: BUFFER_NON_DESCRIBED,
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            info_blob: super::handshake::tool_info_blob(wire, &command_line(), std::process::id())?,
        };
        let welcome = handshake(&mut stream, &hello)
            .map_err(|e| Error::new(e.status, format!("{} (server {})", e.context, target.uri)))?;
        Connection::established(Stream::Tcp(stream), target, welcome, wire)
    }

    /// Wrap a stream whose handshake is done: start its reader.
    pub(crate) fn established(
        stream: Stream,
        target: Target,
        welcome: Welcome,
        wire: WireVersion,
    ) -> Result<Connection> {
        stream
            .set_read_timeout(None)
            .map_err(|e| io_error(e, "configuring the socket"))?;
        let reader = stream
            .try_clone()
            .map_err(|e| io_error(e, "cloning the socket"))?;
        let waiters: Waiters = Arc::new(Mutex::new(WaitTable::default()));
        let (tx, rx) = mpsc::channel();
        spawn_reader(reader, waiters.clone(), tx.clone())?;
        Ok(Connection {
            writer: Mutex::new(stream),
            waiters,
            unsolicited: Mutex::new(rx),
            wake: tx,
            next_tag: AtomicU32::new(TAG_DYNAMIC),
            target,
            welcome,
            wire,
        })
    }

    /// A handle that wakes [`Connection::next_unsolicited`] from elsewhere.
    pub fn waker(&self) -> Waker {
        Waker(self.wake.clone())
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
        lock(&self.waiters).closed.is_some()
    }

    fn pindex(&self) -> i32 {
        self.welcome.pindex.map(|p| p as i32).unwrap_or(0)
    }

    /// Send a request and wait up to `timeout` for its reply payload.
    pub fn request(&self, payload: &[u8], timeout: Duration) -> Result<Vec<u8>> {
        let tag = self.alloc_tag();
        let (tx, rx) = mpsc::channel();
        {
            let mut w = lock(&self.waiters);
            if let Some(e) = w.closed_error() {
                return Err(e);
            }
            w.pending.insert(tag, Waiter::Chan(tx));
        }
        if let Err(e) = self.send(tag, payload) {
            lock(&self.waiters).pending.remove(&tag);
            return Err(e);
        }
        match rx.recv_timeout(timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => {
                lock(&self.waiters).pending.remove(&tag);
                Err(Error::new(
                    Status::ERR_TIMEOUT,
                    format!(
                        "no reply from the server within {:.1}s",
                        timeout.as_secs_f64()
                    ),
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(Error::new(
                Status::ERR_LOST_CONNECTION,
                "the server closed the connection",
            )),
        }
    }

    /// Send a request on a fresh tag; its reply (or the reason none will
    /// come) is handed to `on_reply` on the reader thread, which must not
    /// block for long. Used to relay requests for a holder's clients.
    pub fn relay(
        &self,
        payload: &[u8],
        on_reply: Box<dyn FnOnce(Result<Vec<u8>>) + Send>,
    ) -> Result<()> {
        let tag = self.alloc_tag();
        {
            let mut w = lock(&self.waiters);
            if let Some(e) = w.closed_error() {
                return Err(e);
            }
            w.pending.insert(tag, Waiter::Call(on_reply));
        }
        if let Err(e) = self.send(tag, payload) {
            if let Some(w) = lock(&self.waiters).pending.remove(&tag) {
                w.deliver(Err(e.clone()));
            }
            return Err(e);
        }
        Ok(())
    }

    /// Send a request on a fresh tag without waiting for its reply (a reply
    /// that does come is treated as unsolicited).
    pub fn post(&self, payload: &[u8]) -> Result<()> {
        let tag = self.alloc_tag();
        self.send(tag, payload)
    }

    /// Send a message on a fixed tag without waiting for a reply.
    pub fn send(&self, tag: u32, payload: &[u8]) -> Result<()> {
        let mut w = lock(&self.writer);
        write_frame(&mut *w, self.pindex(), tag, payload)?;
        w.flush().map_err(|e| io_error(e, "sending a message"))
    }

    /// Wait up to `timeout` for the next unsolicited message.
    pub fn next_unsolicited(&self, timeout: Duration) -> Option<Unsolicited> {
        let rx = lock(&self.unsolicited);
        match rx.recv_timeout(timeout) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => {
                lock(&self.waiters).closed_error().map(Unsolicited::Closed)
            }
            Err(RecvTimeoutError::Disconnected) => Some(Unsolicited::Closed(Error::new(
                Status::ERR_LOST_CONNECTION,
                "the server closed the connection",
            ))),
        }
    }

    /// Wait until `deadline` for the next unsolicited message.
    pub fn next_unsolicited_until(&self, deadline: Option<Instant>) -> Option<Unsolicited> {
        let timeout = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => Duration::from_secs(3600 * 24 * 365),
        };
        self.next_unsolicited(timeout)
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

    /// Close the socket; the reader thread ends on its own.
    pub fn shutdown(&self) {
        let _ = lock(&self.writer).shutdown();
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn spawn_reader(mut stream: Stream, waiters: Waiters, tx: Sender<Unsolicited>) -> Result<()> {
    std::thread::Builder::new()
        .name("pmix-reader".into())
        .spawn(move || {
            let end = loop {
                stream.quick_ack();
                match read_frame(&mut stream, MAX_PAYLOAD) {
                    Ok(Some((hdr, payload))) => {
                        if hdr.tag >= TAG_DYNAMIC {
                            let waiter = lock(&waiters).pending.remove(&hdr.tag);
                            if let Some(w) = waiter {
                                w.deliver(Ok(payload));
                                continue;
                            }
                        }
                        let msg = match hdr.tag {
                            TAG_NOTIFY => Unsolicited::Notify(payload),
                            TAG_IOF => Unsolicited::Iof(payload),
                            t => Unsolicited::Other(t, payload),
                        };
                        let _ = tx.send(msg);
                    }
                    Ok(None) => {
                        break Error::new(
                            Status::ERR_LOST_CONNECTION,
                            "the server closed the connection",
                        )
                    }
                    Err(e) => break e,
                }
            };
            let waiting: Vec<Waiter> = {
                let mut w = lock(&waiters);
                w.closed = Some(Error::new(end.status, end.context.clone()));
                w.pending.drain().map(|(_, w)| w).collect()
            };
            for w in waiting {
                w.deliver(Err(Error::new(end.status, end.context.clone())));
            }
            let _ = tx.send(Unsolicited::Closed(end));
        })
        .map(|_| ())
        .map_err(|e| {
            Error::new(
                Status::ERR_OUT_OF_RESOURCE,
                format!("cannot start the connection's reader thread: {e}"),
            )
        })
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
}
