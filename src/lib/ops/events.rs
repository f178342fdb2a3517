//! Event registration and decoding of notifications.

use serde::Serialize;

use crate::codec::event_message::{Notification, NotifyRequest};
use crate::codec::{Decoder, Info, Proc, Value};
use crate::error::Result;
use crate::proto::status::Status;

use super::session::{find, read_status, Session};
use crate::codec::attrs::write_infos;
use crate::proto::{cmd, keys};

/// An event notification as delivered by the server.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    /// The event code (e.g. `PMIX_EVENT_JOB_END`).
    pub status: Status,
    /// The process that raised it.
    pub source: Proc,
    /// Its payload.
    pub info: Vec<Info>,
}

impl Event {
    /// Look up a payload value by key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        find(&self.info, key)
    }

    /// The namespace the event is about (`PMIX_EVENT_AFFECTED_PROC`, else the
    /// first of `PMIX_EVENT_AFFECTED_PROCS`).
    pub fn affected_nspace(&self) -> Option<&str> {
        if let Some(Value::Proc(p)) = self.get(keys::EVENT_AFFECTED_PROC) {
            return Some(&p.nspace);
        }
        match self.get(keys::EVENT_AFFECTED_PROCS) {
            Some(Value::DataArray(a)) => a
                .as_procs()
                .and_then(|p| p.first())
                .map(|p| p.nspace.as_str()),
            _ => None,
        }
    }
}

/// Register for `codes` (all events when empty) with qualifiers `info`.
pub fn register(s: &Session, codes: &[Status], info: &[Info]) -> Result<()> {
    s.check_infos(info)?;
    let mut e = s.request(cmd::REGEVENTS)?;
    crate::codec::attrs::write_sized(&mut e, codes)?;
    write_infos(&mut e, info)?;
    let reply = s.call(e)?;
    read_status(&mut s.decoder(&reply))
}

/// Notify every process and tool of the DVM (`PMIX_RANGE_GLOBAL`) that
/// registered for event `code`, with `info` (never cached, never for a
/// default handler: [`crate::codec::attrs::quiet_event_flags`]); the DVM's
/// answer.
pub fn notify_all(s: &Session, code: Status, info: &[Info]) -> Result<()> {
    let mut info = info.to_vec();
    info.extend(crate::codec::attrs::quiet_event_flags());
    s.check_infos(&info)?;
    let mut e = s.request(cmd::NOTIFY)?;
    NotifyRequest::new(code, crate::proto::range::GLOBAL, &info).encode_body(&mut e)?;
    let reply = s.call(e)?;
    read_status(&mut s.decoder(&reply))
}

/// Decode a notification payload (command, code, source, size, infos:
/// [`Notification`]).
pub fn decode_notification(d: &mut Decoder) -> Result<Event> {
    let n = Notification::decode(d)?;
    Ok(Event {
        status: n.code,
        source: n.source,
        info: n.infos.into_owned(),
    })
}
