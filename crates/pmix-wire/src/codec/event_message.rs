//! Events on the wire (the `PMIX_NOTIFY` command), in their two shapes:
//! what a client asks the server to send ([`NotifyRequest`]: code, range,
//! infos; the tools' `prelease` notice, psched's announcements, read by
//! pdvm) and what a server sends a client ([`Notification`]: code, source,
//! infos; pdvm's events, read by the tools and the holder's relay). One
//! encoding and one decoding each.

use std::borrow::Cow;

use super::attrs::{read_request_infos, write_infos};
use super::{Cmd, Decoder, Encoder, Info, Proc, Range};
use crate::error::{Error, Result};
use crate::proto::cmd;
use crate::proto::status::Status;

/// Most infos a notification a client reads may carry.
pub const MAX_NOTIFICATION_INFOS: usize = 1 << 20;

/// A client's request to notify (`PMIx_Notify_event`).
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyRequest<'a> {
    /// The event's code.
    pub code: Status,
    /// Who hears it (`PMIX_RANGE_*`).
    pub range: u8,
    /// The event's infos.
    pub infos: Cow<'a, [Info]>,
}

impl<'a> NotifyRequest<'a> {
    /// Event `code` to `range` with `infos`.
    pub fn new(code: Status, range: u8, infos: &'a [Info]) -> Self {
        NotifyRequest {
            code,
            range,
            infos: Cow::Borrowed(infos),
        }
    }

    /// The whole message: the command, then [`NotifyRequest::encode_body`].
    pub fn encode(&self, enc: &mut Encoder) -> Result<()> {
        enc.pack_one(&Cmd(cmd::NOTIFY))?;
        self.encode_body(enc)
    }

    /// What follows the command: code, range, the infos counted.
    pub fn encode_body(&self, enc: &mut Encoder) -> Result<()> {
        enc.pack_one(&self.code)?;
        enc.pack_one(&Range(self.range))?;
        write_infos(enc, &self.infos)
    }

    /// The message after its command byte (at most
    /// [`super::attrs::MAX_REQUEST_INFOS`] infos).
    pub fn decode_body(dec: &mut Decoder) -> Result<NotifyRequest<'static>> {
        let code: Status = dec.unpack_one()?;
        let Range(range) = dec.unpack_one()?;
        Ok(NotifyRequest {
            code,
            range,
            infos: Cow::Owned(read_request_infos(dec)?),
        })
    }
}

/// An event a server sends a client.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification<'a> {
    /// The event's code.
    pub code: Status,
    /// Who raised it.
    pub source: Proc,
    /// The event's infos.
    pub infos: Cow<'a, [Info]>,
}

impl<'a> Notification<'a> {
    /// Event `code` from `source` with `infos`.
    pub fn new(code: Status, source: Proc, infos: &'a [Info]) -> Self {
        Notification {
            code,
            source,
            infos: Cow::Borrowed(infos),
        }
    }

    /// The whole message: the command, code, source, the infos counted.
    pub fn encode(&self, enc: &mut Encoder) -> Result<()> {
        enc.pack_one(&Cmd(cmd::NOTIFY))?;
        enc.pack_one(&self.code)?;
        enc.pack_one(&self.source)?;
        write_infos(enc, &self.infos)
    }

    /// A whole notification, its command included (anything else is
    /// `PMIX_ERR_UNPACK_FAILURE`); at most [`MAX_NOTIFICATION_INFOS`]
    /// infos, none when the payload ends after the source.
    pub fn decode(dec: &mut Decoder) -> Result<Notification<'static>> {
        let Cmd(c) = dec.unpack_one()?;
        if c != cmd::NOTIFY {
            return Err(Error::new(
                Status::ERR_UNPACK_FAILURE,
                format!("expected a notification, got command {c}"),
            ));
        }
        let code: Status = dec.unpack_one()?;
        let source: Proc = dec.unpack_one()?;
        let infos = if dec.is_empty() {
            Vec::new()
        } else {
            let super::Size(n) = dec.unpack_one()?;
            let n = usize::try_from(n)
                .ok()
                .filter(|n| *n <= MAX_NOTIFICATION_INFOS)
                .ok_or_else(|| Error::new(Status::ERR_UNPACK_FAILURE, "notification too large"))?;
            if n == 0 {
                Vec::new()
            } else {
                dec.unpack(n)?
            }
        };
        Ok(Notification {
            code,
            source,
            infos: Cow::Owned(infos),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Value, WireVersion};

    #[test]
    fn both_shapes_read_back_as_written_on_every_wire() {
        for wire in [WireVersion::V41, WireVersion::V51, WireVersion::V61] {
            let infos = [Info::new("pmix.nspace", Value::from("job@2"))];
            let mut e = Encoder::new(wire);
            NotifyRequest::new(Status::EVENT_JOB_END, 2, &infos)
                .encode(&mut e)
                .unwrap();
            let bytes = e.into_bytes();
            let mut d = Decoder::new(&bytes, wire);
            let Cmd(c) = d.unpack_one().unwrap();
            assert_eq!(c, cmd::NOTIFY);
            let r = NotifyRequest::decode_body(&mut d).unwrap();
            assert_eq!(
                (r.code, r.range, &*r.infos),
                (Status::EVENT_JOB_END, 2, &infos[..])
            );
            let src = Proc {
                nspace: "dvm@0".into(),
                rank: 0,
            };
            let mut e = Encoder::new(wire);
            Notification::new(Status::EVENT_JOB_END, src.clone(), &infos)
                .encode(&mut e)
                .unwrap();
            let bytes = e.into_bytes();
            let n = Notification::decode(&mut Decoder::new(&bytes, wire)).unwrap();
            assert_eq!(
                (n.code, &n.source, &*n.infos),
                (Status::EVENT_JOB_END, &src, &infos[..])
            );
        }
    }

    #[test]
    fn another_command_is_no_notification() {
        let mut e = Encoder::new(WireVersion::V61);
        e.pack_one(&Cmd(cmd::QUERY)).unwrap();
        let bytes = e.into_bytes();
        let err = Notification::decode(&mut Decoder::new(&bytes, WireVersion::V61)).unwrap_err();
        assert_eq!(err.status, Status::ERR_UNPACK_FAILURE);
    }
}
