//! One accepted connection: non-blocking socket, read and write buffers,
//! and who is on the other end once the handshake is done.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use crate::codec::{Decoder, Encoder, WireVersion};
use crate::conn::frame::{Header, HEADER_LEN};

use super::ident::PeerId;

pub(crate) use super::frames::MAX_REQUEST_LEN;
/// Most unsent bytes we hold for a peer that does not read; beyond, it is dropped.
pub(crate) const MAX_PENDING_OUT: usize = 64 * 1024 * 1024;
/// Above this many unsent bytes a peer's requests are not read any more
/// until it reads its replies (backpressure instead of buffering).
pub(crate) const OUT_HIGH_WATER: usize = 1024 * 1024;
/// A handshaken peer that holds part of a message and sends nothing more
/// for this long (while pdvm reads it) is dropped.
pub(crate) const PARTIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Most bytes read from one peer in one poll round.
pub(crate) const READ_BUDGET: usize = 256 * 1024;
/// Most requests handled for one peer in one poll round.
pub(crate) const FRAME_BUDGET: usize = 256;

/// What kind of peer a connection carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PeerClass {
    /// A tool (or launcher).
    Tool,
    /// A process of one of our jobs.
    Client,
}

/// The identity of a handshaken peer.
#[derive(Clone, Debug)]
pub(crate) struct PeerInfo {
    /// Its process name (a tool's given or assigned identity, or a job
    /// client's namespace and rank).
    pub name: PeerId,
    /// Tool or client.
    pub class: PeerClass,
    /// True when we minted its namespace (its disconnect ends it).
    pub owns_nspace: bool,
}

impl PeerInfo {
    /// Its namespace.
    pub(crate) fn nspace(&self) -> &str {
        self.name.nspace()
    }
}

pub(crate) use super::frames::{Fatal, Frame, InBuf};

/// A connection's state.
#[derive(Debug)]
pub(crate) struct PeerConn {
    /// The socket (non-blocking).
    pub stream: TcpStream,
    /// Received bytes not yet taken as messages.
    input: InBuf,
    wbuf: Vec<u8>,
    woff: usize,
    /// Set once the handshake succeeded.
    pub peer: Option<PeerInfo>,
    /// Wire version negotiated.
    pub wire: WireVersion,
    /// True when the peer uses fully described buffers.
    pub described: bool,
    /// Registered event codes: `None` = not registered; empty = all events.
    pub events: Option<Vec<i32>>,
    /// The peer's OS pid, when its connect request said (`PMIX_PROC_PID`).
    pub pid: Option<u32>,
    /// The peer's command line, when its connect request said (`PMIX_CMD_LINE`).
    pub cmd_line: Option<String>,
    /// Close once the write buffer is flushed.
    pub closing: bool,
    /// Set once the peer said goodbye (`PMIX_FINALIZE_CMD`): its identity
    /// no longer counts as connected.
    pub finalized: bool,
    /// When the connection was accepted (pre-authentication timeout).
    pub accepted: std::time::Instant,
    /// uid owning the peer's socket, when the kernel said at accept.
    pub uid: Option<u32>,
    /// Bytes of [`PeerConn::held`] counted in the server's memory budget.
    pub accounted: usize,
    /// True while the output pipes of jobs it spawned are paused.
    pub pipes_paused: bool,
    /// When bytes last arrived from the peer (a partial message that makes
    /// no progress is dropped after [`PARTIAL_TIMEOUT`]).
    pub last_input: std::time::Instant,
    /// The deadline under which the connection is queued as holding a
    /// partial message, when it is.
    pub stall_at: Option<std::time::Instant>,
    /// Forwarded-output frames in the write buffer: (end position, length),
    /// positions counted from the first byte ever queued.
    iof_marks: std::collections::VecDeque<(u64, usize)>,
    /// Bytes of forwarded output not yet written.
    iof_pending: usize,
    /// Bytes ever queued and ever written (positions for `iof_marks`).
    queued_total: u64,
    written_total: u64,
}

impl PeerConn {
    /// Wrap an accepted socket.
    pub(crate) fn new(stream: TcpStream) -> Self {
        PeerConn {
            stream,
            input: InBuf::default(),
            wbuf: Vec::new(),
            woff: 0,
            peer: None,
            wire: WireVersion::V41,
            described: false,
            events: None,
            pid: None,
            cmd_line: None,
            closing: false,
            finalized: false,
            accepted: std::time::Instant::now(),
            uid: None,
            accounted: 0,
            pipes_paused: false,
            last_input: std::time::Instant::now(),
            stall_at: None,
            iof_marks: std::collections::VecDeque::new(),
            iof_pending: 0,
            queued_total: 0,
            written_total: 0,
        }
    }

    /// Bytes held for this peer that count against the memory budget:
    /// input actually received and not yet taken, and unsent replies and
    /// notifications. Forwarded job output is not counted: it is bounded
    /// by backpressure instead (the job's pipes pause while it waits).
    pub(crate) fn held(&self) -> usize {
        self.input.held() + self.pending_out().saturating_sub(self.iof_pending)
    }

    /// True while a message from the peer has started and is not whole.
    pub(crate) fn mid_frame(&self) -> bool {
        self.input.mid_frame()
    }

    /// True when the peer's output backlog is so large that its requests
    /// wait until it reads (see [`OUT_HIGH_WATER`]).
    pub(crate) fn throttled(&self) -> bool {
        self.pending_out() > OUT_HIGH_WATER
    }

    /// Read what is available, at most [`READ_BUDGET`] bytes this round.
    /// `Ok(false)` when the peer closed.
    pub(crate) fn fill(&mut self) -> Result<bool, Fatal> {
        let mut chunk = [0u8; 16 * 1024];
        let mut got = 0;
        while got < READ_BUDGET {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    got += n;
                    self.last_input = std::time::Instant::now();
                    self.input.push(&chunk[..n], self.peer.is_some())?;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Fatal(format!("read: {e}"))),
            }
        }
        Ok(true)
    }

    /// Take the connect-ack body if it has fully arrived.
    pub(crate) fn take_connect(&mut self) -> Result<Option<Vec<u8>>, Fatal> {
        self.input.take_connect()
    }

    /// The header of the next message, once it has arrived.
    pub(crate) fn peek_header(&self) -> Option<Header> {
        self.input.peek_header()
    }

    /// Drop the next message unread (see [`InBuf::discard_next`]).
    pub(crate) fn discard_next(&mut self) {
        self.input.discard_next();
    }

    /// True when a complete message is waiting.
    pub(crate) fn has_frame(&self) -> bool {
        self.input.has_frame()
    }

    /// Take the next complete steady-state message, if any.
    pub(crate) fn take_frame(&mut self) -> Result<Option<Frame>, Fatal> {
        self.input.take_frame()
    }

    /// Queue raw bytes (handshake replies).
    pub(crate) fn queue_raw(&mut self, bytes: &[u8]) -> Result<(), Fatal> {
        if self.pending_out() + bytes.len() > MAX_PENDING_OUT {
            return Err(Fatal("peer does not read its messages".into()));
        }
        self.wbuf.extend_from_slice(bytes);
        self.queued_total += bytes.len() as u64;
        Ok(())
    }

    /// Queue one forwarded-output frame on `tag` (counted apart: see
    /// [`PeerConn::held`]).
    pub(crate) fn queue_output(&mut self, tag: u32, payload: &[u8]) -> Result<(), Fatal> {
        self.queue(tag, payload)?;
        let len = HEADER_LEN + payload.len();
        self.iof_marks.push_back((self.queued_total, len));
        self.iof_pending += len;
        Ok(())
    }

    /// Queue one framed message on `tag`.
    pub(crate) fn queue(&mut self, tag: u32, payload: &[u8]) -> Result<(), Fatal> {
        let nbytes = u32::try_from(payload.len()).map_err(|_| Fatal("reply too large".into()))?;
        let h = Header {
            pindex: 0,
            tag,
            nbytes,
        }
        .encode();
        self.queue_raw(&h)?;
        self.queue_raw(payload)
    }

    /// Account `n` more bytes written: the part of them that was forwarded
    /// output no longer counts as pending forwarded output.
    fn wrote(&mut self, n: usize) {
        let (w0, w1) = (self.written_total, self.written_total + n as u64);
        self.written_total = w1;
        while let Some(&(end, len)) = self.iof_marks.front() {
            let start = end - len as u64;
            if start >= w1 {
                break;
            }
            let overlap = end.min(w1).saturating_sub(start.max(w0)) as usize;
            self.iof_pending -= overlap.min(self.iof_pending);
            if end > w1 {
                break;
            }
            self.iof_marks.pop_front();
        }
    }

    /// Bytes waiting to be written.
    pub(crate) fn pending_out(&self) -> usize {
        self.wbuf.len() - self.woff
    }

    /// Write what the socket accepts.
    pub(crate) fn flush(&mut self) -> Result<(), Fatal> {
        while self.woff < self.wbuf.len() {
            match self.stream.write(&self.wbuf[self.woff..]) {
                Ok(0) => return Err(Fatal("peer closed while we were writing".into())),
                Ok(n) => {
                    self.woff += n;
                    self.wrote(n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Fatal(format!("write: {e}"))),
            }
        }
        if self.woff == self.wbuf.len() {
            self.wbuf.clear();
            self.woff = 0;
            if self.wbuf.capacity() > 64 * 1024 {
                self.wbuf = Vec::new();
            }
        }
        Ok(())
    }

    /// A decoder over a payload in this peer's buffer kind and version.
    pub(crate) fn decoder<'a>(&self, bytes: &'a [u8]) -> Decoder<'a> {
        if self.described {
            Decoder::described(bytes, self.wire)
        } else {
            Decoder::new(bytes, self.wire)
        }
    }

    /// An encoder in this peer's buffer kind and version.
    pub(crate) fn encoder(&self) -> Encoder {
        if self.described {
            Encoder::described(self.wire)
        } else {
            Encoder::new(self.wire)
        }
    }

    /// True while the peer holds its identity: handshaken, not finalized,
    /// not closing, and its socket not at end of stream (a peer that closed
    /// but whose end pdvm has not read yet no longer counts).
    pub(crate) fn holds_identity(&self) -> bool {
        use nix::sys::socket::{recv, MsgFlags};
        use std::os::fd::AsRawFd;
        if self.peer.is_none() || self.finalized || self.closing {
            return false;
        }
        let mut b = [0u8; 1];
        !matches!(
            recv(
                self.stream.as_raw_fd(),
                &mut b,
                MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT
            ),
            Ok(0)
        )
    }

    /// True when the peer registered for `code` (or for all events).
    pub(crate) fn wants(&self, code: i32) -> bool {
        self.events
            .as_ref()
            .is_some_and(|c| c.is_empty() || c.contains(&code))
    }
}
