//! The spawn request on the wire (the `PMIX_SPAWNNB` command): one type with
//! one encoding, for the tools' spawns, and one decoding, for pdvm and the
//! holder's relay (which reads only the job's infos, to route by target).

use std::borrow::Cow;

use super::attrs::{read_request_infos, write_infos, MAX_REQUEST_INFOS};
use super::{App, Cmd, Decoder, Encoder, Info, Size};
use crate::error::{Error, Result};
use crate::proto::cmd;
use crate::proto::status::Status;

/// Most applications one spawn may carry (an MPMD job's `:`-separated
/// parts), the same bound as a request's infos.
pub const MAX_SPAWN_APPS: usize = MAX_REQUEST_INFOS;

/// A spawn request: the job's infos and its applications (at least one).
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnMessage<'a> {
    /// The job's attributes (`PMIX_SPAWN_TARGET`, `PMIX_MAPBY`, …).
    pub job_info: Cow<'a, [Info]>,
    /// The applications, in order.
    pub apps: Cow<'a, [App]>,
}

impl<'a> SpawnMessage<'a> {
    /// A spawn of `apps` with `job_info`.
    pub fn new(job_info: &'a [Info], apps: &'a [App]) -> Self {
        SpawnMessage {
            job_info: Cow::Borrowed(job_info),
            apps: Cow::Borrowed(apps),
        }
    }

    /// The whole message: the command, then [`SpawnMessage::encode_body`].
    pub fn encode(&self, enc: &mut Encoder) -> Result<()> {
        enc.pack_one(&Cmd(cmd::SPAWN))?;
        self.encode_body(enc)
    }

    /// What follows the command (a client's request frame writes the
    /// command itself): the job's infos counted, then the apps counted.
    pub fn encode_body(&self, enc: &mut Encoder) -> Result<()> {
        write_infos(enc, &self.job_info)?;
        enc.pack_one(&Size(self.apps.len() as u64))?;
        enc.pack(&self.apps)
    }

    /// The message after its command byte: at most
    /// [`MAX_REQUEST_INFOS`] infos and between one and [`MAX_SPAWN_APPS`]
    /// apps (none, or more, is `PMIX_ERR_BAD_PARAM`).
    pub fn decode_body(dec: &mut Decoder) -> Result<SpawnMessage<'static>> {
        let job_info = read_request_infos(dec)?;
        let Size(n) = dec.unpack_one()?;
        let n = usize::try_from(n)
            .ok()
            .filter(|n| (1..=MAX_SPAWN_APPS).contains(n))
            .ok_or_else(|| {
                Error::new(
                    Status::ERR_BAD_PARAM,
                    format!("a spawn with {n} applications (1 to {MAX_SPAWN_APPS})"),
                )
            })?;
        Ok(SpawnMessage {
            job_info: Cow::Owned(job_info),
            apps: Cow::Owned(dec.unpack(n)?),
        })
    }

    /// Only the job's infos of a spawn after its command byte (the relay
    /// routes by `PMIX_SPAWN_TARGET` and passes the bytes on unread).
    pub fn decode_job_info(dec: &mut Decoder) -> Result<Vec<Info>> {
        read_request_infos(dec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::WireVersion;

    fn app(argv: &[&str]) -> App {
        App {
            cmd: argv[0].to_string(),
            argv: argv.iter().map(|a| a.to_string()).collect(),
            maxprocs: 2,
            ..Default::default()
        }
    }

    #[test]
    fn a_spawn_reads_back_as_written_on_every_wire() {
        for wire in [WireVersion::V41, WireVersion::V51, WireVersion::V61] {
            let infos = [Info::new("pmix.spawn.tgt", "alloc.3")];
            let apps = [app(&["hostname"]), app(&["sh", "-c", "exit 3"])];
            let mut e = Encoder::new(wire);
            SpawnMessage::new(&infos, &apps).encode(&mut e).unwrap();
            let bytes = e.into_bytes();
            let mut d = Decoder::new(&bytes, wire);
            let Cmd(c) = d.unpack_one().unwrap();
            assert_eq!(c, cmd::SPAWN);
            let m = SpawnMessage::decode_body(&mut d).unwrap();
            assert_eq!(&*m.job_info, &infos[..]);
            assert_eq!(&*m.apps, &apps[..]);
            let mut d = Decoder::new(&bytes[..], wire);
            let _: Cmd = d.unpack_one().unwrap();
            assert_eq!(SpawnMessage::decode_job_info(&mut d).unwrap(), infos);
        }
    }

    #[test]
    fn a_spawn_with_no_app_or_too_many_is_refused() {
        for n in [0u64, MAX_SPAWN_APPS as u64 + 1] {
            let mut e = Encoder::new(WireVersion::V61);
            write_infos(&mut e, &[]).unwrap();
            e.pack_one(&Size(n)).unwrap();
            let bytes = e.into_bytes();
            let err =
                SpawnMessage::decode_body(&mut Decoder::new(&bytes, WireVersion::V61)).unwrap_err();
            assert_eq!(err.status, Status::ERR_BAD_PARAM, "{n}: {err}");
        }
    }
}
