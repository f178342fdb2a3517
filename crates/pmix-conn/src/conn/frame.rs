//! Message framing.
//!
//! Every steady-state message is a 16-byte header — sender index (`i32`),
//! tag (`u32`), payload length (`u32`), 4 bytes of padding — all in network
//! byte order, followed by the payload. The very first message on a socket
//! (the connect-ack) uses the same header layout but carries its length in
//! the sender's host order (little-endian on every platform we run on);
//! that quirk is part of the protocol and is kept on both sides.

use std::io::{self, Read, Write};

use crate::error::{Error, Result};
use crate::proto::status::Status;

/// Size of a message header on the wire.
pub const HEADER_LEN: usize = 16;

/// Largest request a tool sends and pdvm accepts (16 MiB): a longer one
/// would make pdvm close the connection, taking every other request on it
/// along; the tools refuse it before sending, as that request's own error.
pub const MAX_REQUEST_LEN: u32 = 16 * 1024 * 1024;
/// Tag of unsolicited event notifications.
pub const TAG_NOTIFY: u32 = 0;
/// Tag of heartbeats.
pub const TAG_HEARTBEAT: u32 = 1;
/// Tag of forwarded I/O.
pub const TAG_IOF: u32 = 2;
/// First tag of the request/reply space.
pub const TAG_DYNAMIC: u32 = 100;
/// Largest payload we accept from a peer (bytes). Real replies are well
/// under a megabyte; anything larger is treated as hostile.
pub const MAX_PAYLOAD: u32 = 64 * 1024 * 1024;

/// Buffer reserved up front for a payload; beyond it the buffer grows only
/// as bytes arrive.
const INITIAL_CHUNK: usize = 64 * 1024;

/// A steady-state message header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The sender's index in the receiver's peer table (`-1` when unknown).
    pub pindex: i32,
    /// Routes the message to a waiting request or a standing handler.
    pub tag: u32,
    /// Payload length in bytes.
    pub nbytes: u32,
}

impl Header {
    /// Encode in network byte order.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&self.pindex.to_be_bytes());
        b[4..8].copy_from_slice(&self.tag.to_be_bytes());
        b[8..12].copy_from_slice(&self.nbytes.to_be_bytes());
        b
    }

    /// Decode a network-order header.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Header {
        Header {
            pindex: i32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            tag: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            nbytes: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        }
    }

    /// Encode the connect-ack header: index -1, tag `u32::MAX`, length in
    /// little-endian (host) order.
    pub fn encode_connect(nbytes: u32) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&(-1i32).to_be_bytes());
        b[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        b[8..12].copy_from_slice(&nbytes.to_le_bytes());
        b
    }

    /// Decode the payload length of a connect-ack header.
    pub fn decode_connect_len(b: &[u8; HEADER_LEN]) -> u32 {
        u32::from_le_bytes([b[8], b[9], b[10], b[11]])
    }
}

/// A sans-IO frame decoder: feed it the bytes that arrived, take whole
/// frames out. It does no I/O and never blocks, so the same decoder serves
/// a blocking reader, a poll loop, or a server's event loop.
///
/// Work is O(bytes fed): consumed bytes are dropped by moving a start
/// offset and compacting only when the dead prefix is at least half the
/// buffer. Memory is bounded by what has arrived: a header announcing a
/// payload larger than the decoder's limit is refused at once, and nothing
/// is reserved for an announced length before its bytes come.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    start: usize,
    max_payload: u32,
    /// Limit of the connect-ack, while one is awaited.
    max_connect: u32,
    /// The next frame is a connect-ack (its length in little-endian order).
    connect: bool,
    failed: bool,
    /// Payload bytes of a discarded frame still to be dropped as they come.
    skip: usize,
}

impl FrameDecoder {
    /// A decoder of steady-state frames whose payloads may be at most
    /// `max_payload` bytes.
    pub fn new(max_payload: u32) -> FrameDecoder {
        FrameDecoder {
            buf: Vec::new(),
            start: 0,
            max_payload,
            max_connect: max_payload,
            connect: false,
            failed: false,
            skip: 0,
        }
    }

    /// A decoder whose first frame is a connect-ack of at most
    /// `max_connect` bytes (a server reading a connecting peer); later
    /// frames are steady-state, at most `max_payload` bytes.
    pub fn for_connect_ack(max_connect: u32, max_payload: u32) -> FrameDecoder {
        FrameDecoder {
            connect: true,
            max_connect,
            ..FrameDecoder::new(max_payload)
        }
    }

    /// Append bytes received from the peer (the rest of a discarded frame
    /// is dropped here).
    pub fn feed(&mut self, bytes: &[u8]) {
        let k = self.skip.min(bytes.len());
        self.skip -= k;
        self.buf.extend_from_slice(&bytes[k..]);
    }

    /// Bytes held that do not yet form a whole frame (or frames not yet
    /// taken).
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// True while a frame has started to arrive but is not whole yet (or
    /// the rest of a discarded frame is still to come).
    pub fn mid_frame(&self) -> bool {
        self.skip > 0 || (self.buffered() > 0 && !self.has_frame())
    }

    /// True while the connect-ack has not been taken.
    pub fn awaiting_connect(&self) -> bool {
        self.connect
    }

    /// True when a whole frame is ready to be taken.
    pub fn has_frame(&self) -> bool {
        self.skip == 0
            && self
                .peek_header()
                .is_some_and(|h| self.buffered() >= HEADER_LEN + h.nbytes as usize)
    }

    /// The next frame's header, once its bytes have arrived (for a
    /// connect-ack, `nbytes` is its length).
    pub fn peek_header(&self) -> Option<Header> {
        let avail = &self.buf[self.start..];
        let hb: &[u8; HEADER_LEN] = avail.get(..HEADER_LEN)?.try_into().ok()?;
        let mut h = Header::decode(hb);
        if self.connect {
            h.nbytes = Header::decode_connect_len(hb);
        }
        Some(h)
    }

    /// The next whole frame, `Ok(None)` when more bytes are needed, or an
    /// error (after which the stream cannot be trusted; every later call
    /// fails too) when the peer announced a payload above the limit.
    pub fn next_frame(&mut self) -> Result<Option<(Header, Vec<u8>)>> {
        if self.failed {
            return Err(self.too_large(None));
        }
        let Some(h) = self.peek_header() else {
            return Ok(None);
        };
        let limit = if self.connect {
            self.max_connect
        } else {
            self.max_payload
        };
        if h.nbytes > limit {
            self.failed = true;
            return Err(self.too_large(Some((h.nbytes, limit))));
        }
        let end = self.start + HEADER_LEN + h.nbytes as usize;
        if self.buf.len() < end {
            return Ok(None);
        }
        let payload = self.buf[self.start + HEADER_LEN..end].to_vec();
        self.connect = false;
        self.consume(HEADER_LEN + h.nbytes as usize);
        Ok(Some((h, payload)))
    }

    /// Drop the next frame unread: its header and whatever of its payload
    /// has arrived now, the rest as it comes.
    pub fn discard_next(&mut self) {
        let Some(h) = self.peek_header() else {
            return;
        };
        let n = (h.nbytes as usize).min(self.buffered() - HEADER_LEN);
        self.skip = h.nbytes as usize - n;
        self.connect = false;
        self.consume(HEADER_LEN + n);
    }

    /// Consume `n` bytes. Each byte is moved a bounded number of times: the
    /// buffer is compacted only once the consumed prefix is most of it, and
    /// a large buffer is given back once empty.
    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            if self.buf.capacity() > 1024 * 1024 {
                self.buf = Vec::new();
            }
        } else if self.start >= 64 * 1024 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }

    /// What to say when the peer has gone: whether it left inside a frame.
    pub fn eof_error(&self) -> Error {
        let held = self.buffered();
        if held == 0 {
            return Error::new(
                Status::ERR_LOST_CONNECTION,
                "the server closed the connection",
            );
        }
        Error::new(
            Status::ERR_LOST_CONNECTION,
            format!("connection closed inside a message ({held} bytes of it received)"),
        )
    }

    fn too_large(&self, n: Option<(u32, u32)>) -> Error {
        Error::new(
            Status::ERR_UNPACK_FAILURE,
            match n {
                Some((n, limit)) => {
                    format!("peer announced a {n}-byte message; the limit is {limit}")
                }
                None => "the stream is unreadable after an oversized message".to_string(),
            },
        )
    }
}

/// A whole frame (header and payload) ready to write.
pub fn encode_frame(pindex: i32, tag: u32, payload: &[u8]) -> Result<Vec<u8>> {
    let nbytes = u32::try_from(payload.len())
        .ok()
        .filter(|n| *n <= MAX_PAYLOAD)
        .ok_or_else(|| {
            Error::new(
                Status::ERR_BAD_PARAM,
                format!("message of {} bytes is too large", payload.len()),
            )
        })?;
    let mut msg = Vec::with_capacity(HEADER_LEN + payload.len());
    msg.extend_from_slice(
        &Header {
            pindex,
            tag,
            nbytes,
        }
        .encode(),
    );
    msg.extend_from_slice(payload);
    Ok(msg)
}

/// Write one framed message.
pub fn write_frame(w: &mut impl Write, pindex: i32, tag: u32, payload: &[u8]) -> Result<()> {
    let msg = encode_frame(pindex, tag, payload)?;
    w.write_all(&msg)
        .map_err(|e| io_error(e, "sending a message"))
}

/// Read one framed message; `Ok(None)` on a clean end of stream before a header.
pub fn read_frame(r: &mut impl Read, max_payload: u32) -> Result<Option<(Header, Vec<u8>)>> {
    let mut hb = [0u8; HEADER_LEN];
    match read_full(r, &mut hb)? {
        0 => return Ok(None),
        HEADER_LEN => {}
        n => {
            return Err(Error::new(
                Status::ERR_LOST_CONNECTION,
                format!("connection closed inside a message header ({n} of {HEADER_LEN} bytes)"),
            ))
        }
    }
    let hdr = Header::decode(&hb);
    if hdr.nbytes > max_payload {
        return Err(Error::new(
            Status::ERR_UNPACK_FAILURE,
            format!(
                "peer announced a {}-byte message; the limit is {max_payload}",
                hdr.nbytes
            ),
        ));
    }
    // Grow with the bytes that actually arrive, never with the announced
    // length alone: a peer claiming 60 MiB and sending 10 bytes costs 10 bytes.
    let mut payload = Vec::with_capacity((hdr.nbytes as usize).min(INITIAL_CHUNK));
    let got = r
        .take(u64::from(hdr.nbytes))
        .read_to_end(&mut payload)
        .map_err(|e| io_error(e, "reading from the server"))?;
    if got != hdr.nbytes as usize {
        return Err(Error::new(
            Status::ERR_LOST_CONNECTION,
            format!(
                "connection closed inside a message ({got} of {} bytes)",
                hdr.nbytes
            ),
        ));
    }
    Ok(Some((hdr, payload)))
}

/// Read until `buf` is full or the stream ends; returns the bytes read.
pub fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(e, "reading from the server")),
        }
    }
    Ok(got)
}

/// Map an I/O error onto a PMIx status.
pub fn io_error(e: io::Error, doing: &str) -> Error {
    let status = match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Status::ERR_TIMEOUT,
        io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound => Status::ERR_UNREACH,
        _ => Status::ERR_LOST_CONNECTION,
    };
    Error::new(status, format!("{doing}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_network_order() {
        let h = Header {
            pindex: 0,
            tag: 0x66,
            nbytes: 0x14,
        };
        let b = h.encode();
        // bytes seen on the wire from a real libpmix tool
        assert_eq!(b, [0, 0, 0, 0, 0, 0, 0, 0x66, 0, 0, 0, 0x14, 0, 0, 0, 0]);
        assert_eq!(Header::decode(&b), h);
    }

    #[test]
    fn connect_header_is_host_order_length() {
        let b = Header::encode_connect(0xa4);
        assert_eq!(
            &b[..12],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xa4, 0, 0, 0]
        );
        assert_eq!(Header::decode_connect_len(&b), 0xa4);
    }

    #[test]
    fn truncated_and_oversized_frames_are_errors() {
        let mut full = Header {
            pindex: 0,
            tag: 101,
            nbytes: 4,
        }
        .encode()
        .to_vec();
        full.extend_from_slice(&[1, 2]);
        assert!(read_frame(&mut &full[..], MAX_PAYLOAD).is_err());
        assert!(read_frame(&mut &full[..7], MAX_PAYLOAD).is_err());
        assert!(read_frame(&mut &[][..], MAX_PAYLOAD).unwrap().is_none());
        let huge = Header {
            pindex: 0,
            tag: 101,
            nbytes: u32::MAX,
        }
        .encode();
        assert_eq!(
            read_frame(&mut &huge[..], MAX_PAYLOAD).unwrap_err().status,
            Status::ERR_UNPACK_FAILURE
        );
    }

    fn frame(tag: u32, payload: &[u8]) -> Vec<u8> {
        encode_frame(0, tag, payload).unwrap()
    }

    #[test]
    fn decoder_yields_frames_fed_byte_by_byte() {
        let mut bytes = frame(101, b"hello");
        bytes.extend(frame(0, b""));
        bytes.extend(frame(2, &[7; 300]));
        let mut d = FrameDecoder::new(MAX_PAYLOAD);
        let mut got = Vec::new();
        for b in &bytes {
            d.feed(std::slice::from_ref(b));
            while let Some((h, p)) = d.next_frame().unwrap() {
                got.push((h.tag, p));
            }
        }
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (101, b"hello".to_vec()));
        assert_eq!(got[1], (0, vec![]));
        assert_eq!(got[2], (2, vec![7; 300]));
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn decoder_takes_many_frames_from_one_chunk() {
        let mut bytes = Vec::new();
        for i in 0..1000u32 {
            bytes.extend(frame(100 + i, &i.to_be_bytes()));
        }
        let mut d = FrameDecoder::new(MAX_PAYLOAD);
        d.feed(&bytes);
        for i in 0..1000u32 {
            assert!(d.has_frame());
            let (h, p) = d.next_frame().unwrap().unwrap();
            assert_eq!((h.tag, p), (100 + i, i.to_be_bytes().to_vec()));
        }
        assert!(!d.has_frame());
        assert!(d.next_frame().unwrap().is_none());
    }

    #[test]
    fn decoder_refuses_frames_above_the_limit() {
        let mut d = FrameDecoder::new(MAX_PAYLOAD);
        let huge = Header {
            pindex: 0,
            tag: 101,
            nbytes: MAX_PAYLOAD + 1,
        }
        .encode();
        d.feed(&huge);
        let e = d.next_frame().unwrap_err();
        assert_eq!(e.status, Status::ERR_UNPACK_FAILURE);
        assert!(e.context.contains("limit"), "{}", e.context);
        // the stream stays refused
        d.feed(&frame(101, b"x"));
        assert!(d.next_frame().is_err());
        // a small limit applies as given; exactly the limit is fine
        let mut d = FrameDecoder::new(4);
        d.feed(&frame(5, b"1234"));
        assert_eq!(d.next_frame().unwrap().unwrap().1, b"1234");
        d.feed(&frame(5, b"12345"));
        assert!(d.next_frame().is_err());
    }

    #[test]
    fn decoder_reserves_nothing_for_an_announced_length() {
        let mut d = FrameDecoder::new(MAX_PAYLOAD);
        d.feed(
            &Header {
                pindex: 0,
                tag: 101,
                nbytes: MAX_PAYLOAD,
            }
            .encode(),
        );
        d.feed(b"ten bytes!");
        assert!(d.next_frame().unwrap().is_none());
        assert_eq!(d.buffered(), HEADER_LEN + 10);
        assert!(d.buf.capacity() < 1024 * 1024);
        assert!(d.eof_error().context.contains("inside a message"));
    }

    #[test]
    fn decoder_reads_a_connect_ack_first() {
        let body = b"native\0rest";
        let mut bytes = Header::encode_connect(body.len() as u32).to_vec();
        bytes.extend_from_slice(body);
        bytes.extend(frame(101, b"next"));
        let mut d = FrameDecoder::for_connect_ack(1024, 1024);
        d.feed(&bytes);
        let (h, p) = d.next_frame().unwrap().unwrap();
        assert_eq!((h.tag, p.as_slice()), (u32::MAX, &body[..]));
        let (h, p) = d.next_frame().unwrap().unwrap();
        assert_eq!((h.tag, p.as_slice()), (101, &b"next"[..]));
    }
}
