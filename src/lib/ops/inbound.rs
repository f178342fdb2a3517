//! The tools' whole inbound path over arbitrary bytes, as a server would
//! send them: the handshake answer, then frames, each decoded the way the
//! tools decode it (replies to queries, allocations and spawns; event
//! notifications; forwarded output; the status records `pwatch --status`
//! builds from query answers). The client fuzz target
//! (`fuzz/fuzz_targets/tool_inbound.rs`) and its property tests drive
//! [`decode_server_stream`]; it never panics, and memory stays
//! proportional to the input.

use std::io::{Cursor, Read, Write};

use crate::codec::{Decoder, WireVersion};
use crate::conn::frame::{FrameDecoder, MAX_PAYLOAD, TAG_IOF, TAG_NOTIFY};
use crate::conn::handshake::{handshake, tool_info_blob, Hello, Identity};
use crate::proto::status::Status;

use super::session::{read_infos, read_status};

/// What [`decode_server_stream`] saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InboundSummary {
    /// The handshake answer was accepted.
    pub welcomed: bool,
    /// Frames taken after it.
    pub frames: usize,
    /// Notifications that decoded.
    pub notifications: usize,
    /// Forwarded-output chunks that decoded.
    pub output: usize,
    /// Replies that decoded as at least one kind of reply.
    pub replies: usize,
    /// Status records decoded from query answers.
    pub records: usize,
    /// True when the framing broke (the tools drop such a connection).
    pub fatal: bool,
}

/// A stream whose reads come from a buffer and whose writes are dropped
/// (the handshake's connect request goes nowhere).
struct Replay<'a>(Cursor<&'a [u8]>);

impl Read for Replay<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Replay<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The handshake a tool (or a job's client) starts, per selector bits.
fn hello(sel: u8, wire: WireVersion) -> Hello {
    let identity = match (sel >> 2) & 3 {
        0 | 1 => Identity::Tool,
        2 => Identity::ToolWithId {
            nspace: "fuzz@1".into(),
            rank: 0,
        },
        _ => Identity::Client {
            nspace: "fuzz@2".into(),
            rank: 0,
        },
    };
    Hello {
        identity,
        version: "5.0.11".into(),
        bfrops: wire.name().into(),
        buffer_kind: 1,
        uid: 0,
        gid: 0,
        info_blob: tool_info_blob(wire, "fuzz", 1).unwrap_or_default(),
    }
}

/// Decode one reply payload every way a tool may read one: a query answer
/// (status, infos, then its status records), an allocation answer
/// (status, infos), a spawn answer (status, namespace). Returns whether
/// any decoded and how many records.
fn decode_reply(payload: &[u8], wire: WireVersion) -> (bool, usize) {
    let mut any = false;
    let mut records = 0;
    let mut d = Decoder::new(payload, wire);
    if read_status(&mut d).is_ok() {
        if let Ok(infos) = read_infos(&mut d) {
            any = true;
            records += super::status_query::decode_answer(&infos).unwrap_or(0);
        }
    }
    let mut d = Decoder::new(payload, wire);
    if let Ok(st) = d.unpack_one::<Status>() {
        any |= st.is_success() && d.unpack_one::<String>().is_ok();
    }
    (any, records)
}

/// Run the tools' inbound path over `bytes`: the first byte picks the wire
/// version (bit 0), the buffer kind (bit 1) and the identity the tool
/// claimed (bits 2–3); then the server's handshake answer and frames.
pub fn decode_server_stream(bytes: &[u8]) -> InboundSummary {
    let mut out = InboundSummary::default();
    let Some((&sel, rest)) = bytes.split_first() else {
        return out;
    };
    let (wire, described) = WireVersion::fuzz_selector(sel);
    let mut replay = Replay(Cursor::new(rest));
    if handshake(&mut replay, &hello(sel, wire)).is_err() {
        return out;
    }
    out.welcomed = true;
    let rest = &rest[replay.0.position() as usize..];
    let mut dec = FrameDecoder::new(MAX_PAYLOAD);
    let step = 1 + (sel as usize >> 4);
    for piece in rest.chunks(step * 61) {
        dec.feed(piece);
        loop {
            match dec.next_frame() {
                Ok(Some((h, payload))) => {
                    out.frames += 1;
                    take_frame(&mut out, h.tag, &payload, wire, described);
                }
                Ok(None) => break,
                Err(_) => {
                    out.fatal = true;
                    return out;
                }
            }
        }
    }
    out
}

fn take_frame(
    out: &mut InboundSummary,
    tag: u32,
    payload: &[u8],
    wire: WireVersion,
    described: bool,
) {
    let mut d = if described {
        Decoder::described(payload, wire)
    } else {
        Decoder::new(payload, wire)
    };
    match tag {
        TAG_NOTIFY => {
            let ok = super::events::decode_notification(&mut d).is_ok();
            out.notifications += usize::from(ok);
        }
        TAG_IOF => out.output += usize::from(super::iof::decode_iof(&mut d).is_ok()),
        _ => {
            let (any, records) = decode_reply(payload, wire);
            out.replies += usize::from(any);
            out.records += records;
        }
    }
}
