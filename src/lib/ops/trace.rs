//! `-vv`: one line on stderr per PMIx message sent and received — its
//! command (or, for what comes back, reply / event / output and the status),
//! its tag, its size and the attribute keys it carries. The connection calls
//! the hook with the raw message ([`crate::conn::Traced`]); this module
//! reads it.

use std::sync::Arc;

use crate::codec::{Cmd, Decoder, WireVersion};
use crate::conn::frame::{TAG_DYNAMIC, TAG_IOF, TAG_NOTIFY};
use crate::conn::{Direction, Traced};
use crate::proto::cmd;
use crate::proto::status::Status;

use super::session::Session;

/// Keys are at most this long (`PMIX_MAX_KEYLEN` is 511; real ones are short).
const MAX_KEY: usize = 128;

/// Trace every message of `s` from now on, each line handed to `sink`.
pub fn install(s: &Session, sink: impl Fn(&str) + Send + Sync + 'static) {
    let wire = s.wire();
    s.conn()
        .set_trace(Arc::new(move |m: &Traced<'_>| sink(&line(wire, m))));
}

/// The trace line of one message.
pub fn line(wire: WireVersion, m: &Traced<'_>) -> String {
    let mut d = Decoder::new(m.payload, wire);
    let what = match m.dir {
        Direction::Sent => {
            let c = d.unpack_one::<Cmd>().ok().map(|Cmd(c)| c);
            let name = c.and_then(cmd::name).map(String::from);
            format!(
                "sent {}",
                name.unwrap_or_else(|| c.map_or("message".into(), |c| format!("command {c}")))
            )
        }
        Direction::Received => {
            let kind = match m.tag {
                TAG_NOTIFY => "event",
                TAG_IOF => "output",
                t if t >= TAG_DYNAMIC => "reply",
                _ => "message",
            };
            if m.tag == TAG_NOTIFY {
                let _ = d.unpack_one::<Cmd>();
            }
            match d.unpack_one::<Status>() {
                Ok(st) if kind != "output" => format!("received {kind} {}", st.name()),
                _ => format!("received {kind}"),
            }
        }
    };
    let keys = keys_in(m.payload);
    format!(
        "{what} tag {} ({} bytes){}",
        m.tag,
        m.payload.len(),
        if keys.is_empty() {
            String::new()
        } else {
            format!(" keys {}", keys.join(","))
        }
    )
}

/// The attribute keys (`pmix.…`) packed in a payload, in order, once each.
/// Keys travel as NUL-terminated strings on every wire version.
pub fn keys_in(payload: &[u8]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(off) = find(&payload[i..], b"pmix.") {
        let start = i + off;
        let end = payload[start..]
            .iter()
            .take(MAX_KEY)
            .position(|b| *b == 0)
            .map(|n| start + n);
        i = start + 5;
        let Some(end) = end else { continue };
        let Ok(k) = std::str::from_utf8(&payload[start..end]) else {
            continue;
        };
        if k.bytes().all(|b| b.is_ascii_graphic()) && !keys.iter().any(|x| x == k) {
            keys.push(k.to_string());
        }
        i = end;
    }
    keys
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Encoder, Info};
    use crate::proto::keys;

    #[test]
    fn a_request_is_named_with_its_keys() {
        let mut e = Encoder::new(WireVersion::V41);
        e.pack_one(&Cmd(cmd::ALLOC)).unwrap();
        e.pack_one(&Info::new(keys::ALLOC_ID, "a.1")).unwrap();
        e.pack_one(&Info::new(keys::ALLOC_REQ_ID, "r")).unwrap();
        let l = line(
            WireVersion::V41,
            &Traced {
                dir: Direction::Sent,
                tag: 101,
                payload: e.bytes(),
            },
        );
        assert!(l.starts_with("sent ALLOC tag 101 ("), "{l}");
        assert!(l.ends_with("keys pmix.alloc.id,pmix.alloc.reqid"), "{l}");
    }
}
