//! The allocation request on the wire (the `PMIX_ALLOC` command): one type
//! with one encoding, for the tools' requests and psched's own, and one
//! decoding, for pdvm, psched and the holder's relay.

use std::borrow::Cow;

use super::attrs::{read_request_infos, write_infos};
use super::{AllocDirective, Cmd, Decoder, Encoder, Info};
use crate::error::Result;
use crate::proto::{cmd, Directive, Received};

/// An allocation request: its directive (as sent: an unknown code survives
/// decoding, for the layer that decides to refuse) and its infos.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocMessage<'a> {
    /// `pmix_alloc_directive_t`.
    pub directive: Received<Directive>,
    /// The request's attributes.
    pub infos: Cow<'a, [Info]>,
}

impl<'a> AllocMessage<'a> {
    /// A request with `directive` and `infos`.
    pub fn new(directive: Directive, infos: &'a [Info]) -> Self {
        AllocMessage {
            directive: Received::Known(directive),
            infos: Cow::Borrowed(infos),
        }
    }

    /// The whole message: the command, then [`AllocMessage::encode_body`].
    pub fn encode(&self, enc: &mut Encoder) -> Result<()> {
        enc.pack_one(&Cmd(cmd::ALLOC))?;
        self.encode_body(enc)
    }

    /// What follows the command (a client's request frame writes the
    /// command itself): the directive, then the infos counted.
    pub fn encode_body(&self, enc: &mut Encoder) -> Result<()> {
        let code = match self.directive {
            Received::Known(d) => d.code(),
            Received::Unknown(c) => c,
        };
        enc.pack_one(&AllocDirective(code))?;
        write_infos(enc, &self.infos)
    }

    /// The message after its command byte (at most
    /// [`super::attrs::MAX_REQUEST_INFOS`] infos).
    pub fn decode_body(dec: &mut Decoder) -> Result<AllocMessage<'static>> {
        let AllocDirective(code) = dec.unpack_one()?;
        Ok(AllocMessage {
            directive: Directive::received(code),
            infos: Cow::Owned(read_request_infos(dec)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Value, WireVersion};

    #[test]
    fn an_allocation_request_reads_back_as_written_and_an_unknown_directive_survives() {
        for wire in [WireVersion::V41, WireVersion::V51, WireVersion::V61] {
            let infos = [Info::new("pmix.alloc.id", Value::from("a1"))];
            let mut e = Encoder::new(wire);
            AllocMessage::new(Directive::Extend, &infos)
                .encode(&mut e)
                .unwrap();
            let bytes = e.into_bytes();
            let mut d = Decoder::new(&bytes, wire);
            let Cmd(c) = d.unpack_one().unwrap();
            assert_eq!(c, cmd::ALLOC);
            let m = AllocMessage::decode_body(&mut d).unwrap();
            assert_eq!(m.directive, Received::Known(Directive::Extend));
            assert_eq!(&*m.infos, &infos[..]);
            let odd = AllocMessage {
                directive: Received::Unknown(200),
                infos: Cow::Borrowed(&[]),
            };
            let mut e = Encoder::new(wire);
            odd.encode_body(&mut e).unwrap();
            let bytes = e.into_bytes();
            let back = AllocMessage::decode_body(&mut Decoder::new(&bytes, wire)).unwrap();
            assert_eq!(back.directive, Received::Unknown(200));
            assert!(back.infos.is_empty());
        }
    }
}
