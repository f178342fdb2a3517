//! The query request on the wire (the `PMIX_QUERY` command): one type with
//! one encoding, for the tools' queries and psched's own, and one decoding,
//! for pdvm.

use std::borrow::Cow;

use super::attrs::{write_sized, MAX_REQUEST_INFOS};
use super::{Cmd, Decoder, Encoder, Query, Size};
use crate::error::{Error, Result};
use crate::proto::cmd;
use crate::proto::status::Status;

/// Most queries one request may carry, the same bound as a request's infos.
pub const MAX_QUERIES: usize = MAX_REQUEST_INFOS;

/// A query request: its queries, each keys and qualifiers.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryMessage<'a> {
    /// The queries, in order.
    pub queries: Cow<'a, [Query]>,
}

impl<'a> QueryMessage<'a> {
    /// A request of `queries`.
    pub fn new(queries: &'a [Query]) -> Self {
        QueryMessage {
            queries: Cow::Borrowed(queries),
        }
    }

    /// The whole message: the command, then [`QueryMessage::encode_body`].
    pub fn encode(&self, enc: &mut Encoder) -> Result<()> {
        enc.pack_one(&Cmd(cmd::QUERY))?;
        self.encode_body(enc)
    }

    /// What follows the command (a client's request frame writes the
    /// command itself): the queries counted.
    pub fn encode_body(&self, enc: &mut Encoder) -> Result<()> {
        write_sized(enc, &self.queries)
    }

    /// The message after its command byte: at most [`MAX_QUERIES`]
    /// queries (more is `PMIX_ERR_BAD_PARAM`; none reads as none).
    pub fn decode_body(dec: &mut Decoder) -> Result<QueryMessage<'static>> {
        let Size(n) = dec.unpack_one()?;
        let n = usize::try_from(n)
            .ok()
            .filter(|n| *n <= MAX_QUERIES)
            .ok_or_else(|| {
                Error::new(
                    Status::ERR_BAD_PARAM,
                    format!("a query request with {n} queries (at most {MAX_QUERIES})"),
                )
            })?;
        let queries = if n == 0 { Vec::new() } else { dec.unpack(n)? };
        Ok(QueryMessage {
            queries: Cow::Owned(queries),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Info, WireVersion};

    #[test]
    fn a_query_reads_back_as_written_on_every_wire() {
        for wire in [WireVersion::V41, WireVersion::V51, WireVersion::V61] {
            let qs = [
                Query {
                    keys: vec!["pmix.qry.ns".into()],
                    qualifiers: vec![],
                },
                Query {
                    keys: vec!["pmix.qry.ptable".into()],
                    qualifiers: vec![Info::new("pmix.nspace", "job@1")],
                },
            ];
            let mut e = Encoder::new(wire);
            QueryMessage::new(&qs).encode(&mut e).unwrap();
            let bytes = e.into_bytes();
            let mut d = Decoder::new(&bytes, wire);
            let Cmd(c) = d.unpack_one().unwrap();
            assert_eq!(c, cmd::QUERY);
            let m = QueryMessage::decode_body(&mut d).unwrap();
            assert_eq!(&*m.queries, &qs[..]);
        }
    }

    #[test]
    fn too_many_queries_are_refused_and_none_reads_as_none() {
        let mut e = Encoder::new(WireVersion::V61);
        e.pack_one(&Size(MAX_QUERIES as u64 + 1)).unwrap();
        let bytes = e.into_bytes();
        let err =
            QueryMessage::decode_body(&mut Decoder::new(&bytes, WireVersion::V61)).unwrap_err();
        assert_eq!(err.status, Status::ERR_BAD_PARAM, "{err}");
        let mut e = Encoder::new(WireVersion::V61);
        e.pack_one(&Size(0)).unwrap();
        let bytes = e.into_bytes();
        let m = QueryMessage::decode_body(&mut Decoder::new(&bytes, WireVersion::V61)).unwrap();
        assert!(m.queries.is_empty());
    }
}
