//! Sans-I/O framing of what a peer sends: bytes go in ([`InBuf::push`]),
//! the connect-ack and then steady-state messages come out. O(1) per frame
//! (each byte is moved a bounded number of times), bounded buffering, and a
//! message refused against the memory budget is discarded as it arrives.

use crate::conn::frame::{Header, HEADER_LEN};

use super::handshake::MAX_CONNECT_LEN;

/// Largest steady-state message we accept from a peer (bytes).
pub(crate) const MAX_REQUEST_LEN: u32 = 16 * 1024 * 1024;

/// One framed message received.
#[derive(Debug)]
pub(crate) struct Frame {
    /// Its header.
    pub header: Header,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// Why a connection must be dropped.
#[derive(Debug)]
pub(crate) struct Fatal(pub String);

/// Received bytes not yet taken as messages.
#[derive(Debug, Default)]
pub(crate) struct InBuf {
    /// Received bytes; those before `rpos` are already consumed.
    rbuf: Vec<u8>,
    rpos: usize,
    /// Payload bytes of a refused message still to be discarded.
    skip: usize,
    /// Size of the large message being received, once admitted against the
    /// memory budget (0 when none).
    reserve: usize,
}

impl InBuf {
    /// Unconsumed received bytes.
    fn unread(&self) -> &[u8] {
        &self.rbuf[self.rpos..]
    }

    /// Bytes held: unconsumed input, or the admitted message's whole size.
    pub(crate) fn held(&self) -> usize {
        (self.rbuf.len() - self.rpos).max(self.reserve)
    }

    /// True when the large message being received was already admitted.
    pub(crate) fn admitted(&self) -> bool {
        self.reserve > 0
    }

    /// Admit the message being received: its whole size counts as held.
    pub(crate) fn admit(&mut self, n: usize) {
        self.reserve = HEADER_LEN + n;
    }

    /// Consume `n` bytes; compact the buffer once most of it is consumed, so
    /// each byte is moved at most a bounded number of times (O(1) per frame).
    fn consume(&mut self, n: usize) {
        self.rpos += n;
        if self.rpos == self.rbuf.len() {
            self.rbuf.clear();
            self.rpos = 0;
            if self.rbuf.capacity() > 1024 * 1024 {
                self.rbuf = Vec::new();
            }
        } else if self.rpos >= 64 * 1024 && self.rpos * 2 >= self.rbuf.len() {
            self.rbuf.drain(..self.rpos);
            self.rpos = 0;
        }
    }

    /// Take bytes received; `handshaken` tells which bound applies (a
    /// connect request is at most [`MAX_CONNECT_LEN`]).
    pub(crate) fn push(&mut self, data: &[u8], handshaken: bool) -> Result<(), Fatal> {
        let mut data = data;
        if self.skip > 0 {
            let k = self.skip.min(data.len());
            self.skip -= k;
            data = &data[k..];
        }
        self.rbuf.extend_from_slice(data);
        // Never buffer more than one maximal message plus a header.
        let have = self.rbuf.len() - self.rpos;
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
        let b = self.unread();
        if b.len() < HEADER_LEN {
            return Ok(None);
        }
        let mut hb = [0u8; HEADER_LEN];
        hb.copy_from_slice(&b[..HEADER_LEN]);
        let len = Header::decode_connect_len(&hb);
        if len > MAX_CONNECT_LEN {
            return Err(Fatal(format!("connection request of {len} bytes refused")));
        }
        let total = HEADER_LEN + len as usize;
        if b.len() < total {
            return Ok(None);
        }
        let body = b[HEADER_LEN..total].to_vec();
        self.consume(total);
        Ok(Some(body))
    }

    /// The header of the next message, once it has arrived.
    pub(crate) fn peek_header(&self) -> Option<Header> {
        let b = self.unread();
        if b.len() < HEADER_LEN {
            return None;
        }
        let mut hb = [0u8; HEADER_LEN];
        hb.copy_from_slice(&b[..HEADER_LEN]);
        Some(Header::decode(&hb))
    }

    /// Drop the next message unread: its header and whatever of its payload
    /// has arrived; the rest is discarded as it comes.
    pub(crate) fn discard_next(&mut self) {
        let Some(h) = self.peek_header() else {
            return;
        };
        let have = self.unread().len() - HEADER_LEN;
        let n = (h.nbytes as usize).min(have);
        self.skip = h.nbytes as usize - n;
        self.reserve = 0;
        self.consume(HEADER_LEN + n);
    }

    /// True when a complete message is waiting.
    pub(crate) fn has_frame(&self) -> bool {
        self.skip == 0
            && self
                .peek_header()
                .is_some_and(|h| self.unread().len() >= HEADER_LEN + h.nbytes as usize)
    }

    /// Take the next complete steady-state message, if any.
    pub(crate) fn take_frame(&mut self) -> Result<Option<Frame>, Fatal> {
        let Some(header) = self.peek_header() else {
            return Ok(None);
        };
        if header.nbytes > MAX_REQUEST_LEN {
            return Err(Fatal(format!("message of {} bytes refused", header.nbytes)));
        }
        let total = HEADER_LEN + header.nbytes as usize;
        let b = self.unread();
        if b.len() < total {
            return Ok(None);
        }
        let payload = b[HEADER_LEN..total].to_vec();
        self.reserve = 0;
        self.consume(total);
        Ok(Some(Frame { header, payload }))
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
