//! What palloc says when the scheduler's node source stops answering and
//! when it answers again (psched on Slurm: its controller down, then back:
//! [`SOURCE_UNREACHABLE`], [`SOURCE_BACK`]), holding an allocation or
//! waiting in the queue: a line on stderr, or with `--json` the event's
//! record (its `status` names the event).

use crate::codec::Value;
use crate::ops::events::decode_notification;
use crate::ops::session::Session;
use crate::proto::keys;
use crate::proto::status::{Status, SOURCE_BACK, SOURCE_UNREACHABLE};

use super::events::EventFields;
use super::ui::Ui;

/// The codes to register for.
pub(super) const CODES: [Status; 2] = [SOURCE_UNREACHABLE, SOURCE_BACK];

/// Say the event `bytes` carries, if it is one of [`CODES`]; true when it
/// was.
pub(super) fn on_event(s: &Session, bytes: &[u8], ui: &Ui) -> bool {
    let Ok(ev) = decode_notification(&mut s.decoder(bytes)) else {
        return false;
    };
    if !CODES.contains(&ev.status) {
        return false;
    }
    if ui.json {
        ui.record(&EventFields::from_event(&ev, super::now_secs()).record());
        return true;
    }
    let text = ev
        .get(keys::EVENT_TEXT_MESSAGE)
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| {
            if ev.status == SOURCE_BACK {
                "the scheduler's node source answers again".into()
            } else {
                "the scheduler's node source does not answer".into()
            }
        });
    ui.note(&text);
    true
}
