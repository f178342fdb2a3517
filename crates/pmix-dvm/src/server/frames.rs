//! What pdvm accepts of a peer's bytes: the shared sans-I/O
//! [`FrameDecoder`] (the tools' decoder too) under pdvm's limits — a
//! connect-ack of at most [`MAX_CONNECT_LEN`], then messages of at most
//! [`MAX_REQUEST_LEN`], never more buffered than one message. What it holds
//! counts against the memory budget byte for byte as the bytes arrive,
//! never by the size a header announces.

use crate::conn::frame::{FrameDecoder, Header, HEADER_LEN};

use super::handshake::MAX_CONNECT_LEN;

/// Largest steady-state message we accept from a peer (bytes): the
/// tools' own limit ([`crate::conn::frame::MAX_REQUEST_LEN`]).
pub(crate) use crate::conn::frame::MAX_REQUEST_LEN;

/// One framed message received.
#[derive(Debug)]
pub(crate) struct Frame {
    /// Its header.
    pub(crate) header: Header,
    /// Its payload.
    pub(crate) payload: Vec<u8>,
}

/// Why a connection must be dropped.
#[derive(Debug)]
pub(crate) struct Fatal(pub(crate) String);

/// Received bytes not yet taken as messages.
#[derive(Debug)]
pub(crate) struct InBuf {
    dec: FrameDecoder,
}

impl Default for InBuf {
    fn default() -> Self {
        InBuf {
            dec: FrameDecoder::for_connect_ack(MAX_CONNECT_LEN, MAX_REQUEST_LEN),
        }
    }
}

impl InBuf {
    /// Bytes held: unconsumed input actually received.
    pub(crate) fn held(&self) -> usize {
        self.dec.buffered()
    }

    /// True while a message has started to arrive and is not whole yet.
    pub(crate) fn mid_frame(&self) -> bool {
        self.dec.mid_frame()
    }

    /// Take bytes received; `handshaken` tells which bound applies (a
    /// connect request is at most [`MAX_CONNECT_LEN`]).
    pub(crate) fn push(&mut self, data: &[u8], handshaken: bool) -> Result<(), Fatal> {
        self.dec.feed(data);
        // Never buffer more than one maximal message plus a header.
        let have = self.dec.buffered();
        if have > MAX_REQUEST_LEN as usize + 2 * HEADER_LEN {
            return Err(Fatal("peer sent more than a message's worth".into()));
        }
        if !handshaken && have > MAX_CONNECT_LEN as usize + HEADER_LEN {
            return Err(Fatal("oversized connection request".into()));
        }
        Ok(())
    }

    /// Take the connect-ack body if it has fully arrived.
    pub(crate) fn take_connect(&mut self) -> Result<Option<Vec<u8>>, Fatal> {
        if !self.dec.awaiting_connect() {
            return Err(Fatal("a second connection request".into()));
        }
        self.take_frame().map(|f| f.map(|f| f.payload))
    }

    /// The header of the next message, once it has arrived.
    pub(crate) fn peek_header(&self) -> Option<Header> {
        self.dec.peek_header()
    }

    /// Drop the next message unread: its header and whatever of its payload
    /// has arrived; the rest is discarded as it comes.
    pub(crate) fn discard_next(&mut self) {
        self.dec.discard_next();
    }

    /// True when a complete message is waiting.
    pub(crate) fn has_frame(&self) -> bool {
        self.dec.has_frame()
    }

    /// Take the next complete message, if any.
    pub(crate) fn take_frame(&mut self) -> Result<Option<Frame>, Fatal> {
        match self.dec.next_frame() {
            Ok(Some((header, payload))) => Ok(Some(Frame { header, payload })),
            Ok(None) => Ok(None),
            Err(e) => Err(Fatal(e.context)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere_come_out_whole() {
        let mut wire = Vec::new();
        for i in 0..50u32 {
            let h = Header {
                pindex: 0,
                tag: i,
                nbytes: i,
            };
            wire.extend_from_slice(&h.encode());
            wire.extend(std::iter::repeat_n(i as u8, i as usize));
        }
        for step in [1, 7, 16, 1000] {
            let mut b = InBuf::default();
            let mut got = Vec::new();
            for piece in wire.chunks(step) {
                b.push(piece, true).unwrap();
                while let Some(f) = b.take_frame().unwrap() {
                    got.push((f.header.tag, f.payload.len()));
                }
            }
            assert_eq!(got.len(), 50, "step {step}");
            assert!(got.iter().all(|(t, n)| *t as usize == *n));
            assert_eq!(b.held(), 0);
        }
    }

    #[test]
    fn oversized_messages_and_connects_are_fatal() {
        let mut b = InBuf::default();
        let h = Header {
            pindex: 0,
            tag: 1,
            nbytes: MAX_REQUEST_LEN + 1,
        };
        b.push(&h.encode(), true).unwrap();
        assert!(b.take_frame().is_err());
        let mut b = InBuf::default();
        assert!(b
            .push(&vec![0u8; MAX_CONNECT_LEN as usize + HEADER_LEN + 1], false)
            .is_err());
    }
}
