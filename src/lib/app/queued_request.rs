//! What palloc says while its request waits in the scheduler's queue: the
//! reason psched on Slurm sends its requester
//! ([`crate::proto::status::PENDING_REASON`]), once per new reason
//! ("queued: Slurm says Resources"), and whether a restarted psched says
//! it lost the request ([`crate::proto::status::REQUEST_LOST`]).

use super::ui::Ui;
use crate::codec::Value;
use crate::ops::events::decode_notification;
use crate::ops::session::Session;
use crate::proto::{keys, status::PENDING_REASON, status::REQUEST_LOST};

/// The last reason said, so that each is said once.
#[derive(Debug, Default)]
pub(super) struct QueuedReason {
    last: Option<String>,
}

impl QueuedReason {
    /// Say the reason an event `bytes` carries, when it is a new one, or
    /// that the scheduler's node source stopped or resumed answering
    /// ([`super::source_outage`]).
    pub(super) fn on_event(&mut self, s: &Session, bytes: &[u8], ui: &Ui) {
        if super::source_outage::on_event(s, bytes, ui) {
            return;
        }
        let Some(text) = reason_text(s, bytes) else {
            return;
        };
        if self.last.as_deref() != Some(text.as_str()) {
            ui.note(&format!("queued: {text}"));
            self.last = Some(text);
        }
    }
}

/// The sentence of a pending-reason event (`None` for any other event).
fn reason_text(s: &Session, bytes: &[u8]) -> Option<String> {
    let ev = decode_notification(&mut s.decoder(bytes)).ok()?;
    if ev.status != PENDING_REASON {
        return None;
    }
    let said = |k: &str| ev.get(k).and_then(Value::as_str).map(String::from);
    said(keys::EVENT_TEXT_MESSAGE).or_else(|| said(keys::PENDING_REASON))
}

/// The sentence of a restarted scheduler's
/// [`REQUEST_LOST`] event for this palloc's request (`req_id`, when it
/// gave one; the event goes to the requester alone, which has one request
/// waiting), `None` for any other event.
pub(super) fn lost(s: &Session, bytes: &[u8], req_id: Option<&str>) -> Option<String> {
    let ev = decode_notification(&mut s.decoder(bytes)).ok()?;
    if ev.status != REQUEST_LOST {
        return None;
    }
    let said = |k: &str| ev.get(k).and_then(Value::as_str).map(String::from);
    match (said(keys::ALLOC_REQ_ID), req_id) {
        (Some(theirs), Some(mine)) if theirs != mine => None,
        _ => Some(said(keys::EVENT_TEXT_MESSAGE).unwrap_or_default()),
    }
}
