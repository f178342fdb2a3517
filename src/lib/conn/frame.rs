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
use crate::status::Status;

/// Size of a message header on the wire.
pub const HEADER_LEN: usize = 16;
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

/// Write one framed message.
pub fn write_frame(w: &mut impl Write, pindex: i32, tag: u32, payload: &[u8]) -> Result<()> {
    let nbytes = u32::try_from(payload.len())
        .ok()
        .filter(|n| *n <= MAX_PAYLOAD)
        .ok_or_else(|| {
            Error::new(
                Status::ERR_BAD_PARAM,
                format!("message of {} bytes is too large", payload.len()),
            )
        })?;
    let hdr = Header {
        pindex,
        tag,
        nbytes,
    }
    .encode();
    let mut msg = Vec::with_capacity(HEADER_LEN + payload.len());
    msg.extend_from_slice(&hdr);
    msg.extend_from_slice(payload);
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
}
