//! One client of a holder: its socket (non-blocking), the frames it sent
//! and not yet complete, and the bounded queue of frames waiting to be
//! written to it. A client that reads slowly is written to as fast as it
//! reads; it is never dropped for being slow (its queue filling up makes
//! the holder stop taking messages from the DVM instead, see
//! [`super::holder::Holder::paused`]).

use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

use crate::error::Result;

use super::frame::{encode_frame, FrameDecoder};

/// Bytes queued for one client beyond which the holder stops taking
/// messages from the DVM until that client has read some.
pub(crate) const CLIENT_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// Largest frame a client may send to its holder (a request: a spawn with
/// a large environment, a push of stdin).
pub(crate) const MAX_CLIENT_FRAME: u32 = 4 * 1024 * 1024;
/// Bytes of unfinished frames held for all clients together beyond which
/// the holder stops reading the clients that are mid-frame (as pdvm
/// bounds what its peers' partial messages hold).
pub(crate) const PARTIAL_BUDGET: usize = 16 * 1024 * 1024;
/// A client mid-frame that sends nothing more for this long is dropped
/// (a header announcing megabytes, then silence), as pdvm does.
pub(crate) const PARTIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A client connected to a holder.
pub(crate) struct Client {
    /// The holder's number for it.
    pub(crate) id: u64,
    /// Its socket.
    pub(crate) stream: UnixStream,
    /// What it sent, framed.
    pub(crate) decoder: FrameDecoder,
    /// Its requests relayed and not answered yet.
    pub(crate) in_flight: usize,
    /// Event codes it registered for: `None` before any registration,
    /// empty for every event.
    pub(crate) codes: Option<Vec<i32>>,
    /// Allocations whose timeout warning it asked for.
    pub(crate) warn_allocs: Vec<String>,
    /// When it last sent anything.
    pub(crate) last_input: std::time::Instant,
    out: VecDeque<Vec<u8>>,
    /// Bytes of the front frame already written.
    out_off: usize,
    out_bytes: usize,
}

impl Client {
    /// A client on `stream` (made non-blocking).
    pub(crate) fn new(id: u64, stream: UnixStream) -> Client {
        let _ = stream.set_nonblocking(true);
        Client {
            id,
            stream,
            decoder: FrameDecoder::new(MAX_CLIENT_FRAME),
            in_flight: 0,
            codes: None,
            warn_allocs: Vec::new(),
            last_input: std::time::Instant::now(),
            out: VecDeque::new(),
            out_off: 0,
            out_bytes: 0,
        }
    }

    /// Bytes of an unfinished frame it holds (0 between frames).
    pub(crate) fn partial(&self) -> usize {
        if self.decoder.mid_frame() {
            self.decoder.buffered()
        } else {
            0
        }
    }

    /// When it must have sent more of its unfinished frame, if it is mid-frame.
    pub(crate) fn stall_deadline(&self) -> Option<std::time::Instant> {
        self.decoder
            .mid_frame()
            .then(|| self.last_input + PARTIAL_TIMEOUT)
    }

    /// Queue a frame and write what the socket takes now; an error when the
    /// client has gone.
    pub(crate) fn send(&mut self, tag: u32, payload: &[u8]) -> Result<()> {
        let frame = encode_frame(0, tag, payload)?;
        self.out_bytes += frame.len();
        self.out.push_back(frame);
        self.flush()
    }

    /// Write what the socket takes now (never blocking); an error when the
    /// client has gone.
    pub(crate) fn flush(&mut self) -> Result<()> {
        while let Some(front) = self.out.front() {
            let got = nix::sys::socket::send(
                self.stream.as_raw_fd(),
                &front[self.out_off..],
                nix::sys::socket::MsgFlags::MSG_DONTWAIT | nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
            );
            match got {
                Ok(n) => {
                    self.out_off += n;
                    self.out_bytes -= n;
                    if self.out_off == front.len() {
                        self.out.pop_front();
                        self.out_off = 0;
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => return Ok(()),
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => {
                    return Err(super::frame::io_error(
                        std::io::Error::from(e),
                        "writing to a holder client",
                    ))
                }
            }
        }
        Ok(())
    }

    /// Whether frames wait to be written (watch the socket for writing).
    pub(crate) fn wants_write(&self) -> bool {
        !self.out.is_empty()
    }

    /// Bytes waiting to be written.
    pub(crate) fn queued(&self) -> usize {
        self.out_bytes
    }

    /// Whether its queue is at its bound.
    pub(crate) fn full(&self) -> bool {
        self.out_bytes >= CLIENT_QUEUE_BYTES
    }

    /// Whether it registered for events of `code`.
    pub(crate) fn listens(&self, code: i32) -> bool {
        self.codes
            .as_ref()
            .is_some_and(|c| c.is_empty() || c.contains(&code))
    }

    /// Close its socket (it learns the holder has gone).
    pub(crate) fn close(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}
