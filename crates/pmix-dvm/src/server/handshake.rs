//! Server side of the connection handshake: parsing a peer's connect-ack and
//! building the raw (not bfrops-packed) answer.
//!
//! The connect-ack body is, in order: security module name (NUL-terminated),
//! credential length (`u32`, network order) and bytes, an identity flag byte,
//! identity fields depending on the flag, the peer's PMIx version string, its
//! wire (bfrops) version name, a buffer-kind byte, its datastore module name,
//! and optionally a packed `size` + `info[]` blob. See
//! [`crate::codec::handshake`] for the message the client builds.

use crate::codec::{Decoder, Info, Size, WireVersion};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use crate::codec::handshake::{BUFFER_FULLY_DESCRIBED, NSPACE_FIELD};
pub(crate) use crate::codec::handshake::{
    FLAG_SIMPLE_CLIENT, FLAG_TOOL_GIVEN_ID, FLAG_TOOL_NEEDS_ID,
};

/// Largest connect-ack body we accept (bytes); larger is refused unread.
pub(crate) const MAX_CONNECT_LEN: u32 = 64 * 1024;
/// Most infos we read from a connect-ack blob.
const MAX_CONNECT_INFOS: usize = 256;

/// Identity flag: a tool started by a PMIx server, identifier given by it.
pub(crate) const FLAG_TOOL_CLIENT: u8 = 5;
/// Identity flag: a launcher that needs a namespace.
pub(crate) const FLAG_LAUNCHER_NEEDS_ID: u8 = 6;
/// Identity flag: a launcher bringing its own identifier.
pub(crate) const FLAG_LAUNCHER_GIVEN_ID: u8 = 7;
/// Identity flag: a launcher started by a PMIx server.
pub(crate) const FLAG_LAUNCHER_CLIENT: u8 = 8;
/// Identity flag: a singleton client naming itself.
pub(crate) const FLAG_SINGLETON_CLIENT: u8 = 9;

/// Who the peer says it is: the same three identities a client presents.
pub(crate) use crate::codec::handshake::Identity as PeerIdentity;

/// A parsed connect-ack.
#[derive(Clone, Debug)]
pub(crate) struct ConnectRequest {
    /// Security module name (`native`).
    pub psec: String,
    /// Credential bytes (for `native`: uid and gid, little-endian `u32`s).
    pub cred: Vec<u8>,
    /// The raw identity flag.
    pub flag: u8,
    /// The identity it announces.
    pub identity: PeerIdentity,
    /// uid/gid the peer claims (tools only).
    pub claimed_ids: Option<(u32, u32)>,
    /// The peer's PMIx version string.
    pub version: String,
    /// Its wire version name (`v41`, `v61`…).
    pub bfrops: String,
    /// Buffer kind byte (1 non-described, 2 fully described).
    pub buffer_kind: u8,
    /// Datastore module name.
    pub gds: String,
    /// Infos from the optional blob (best effort; unreadable blobs are ignored).
    pub info: Vec<Info>,
}

impl ConnectRequest {
    /// The codec version named by the peer, if we speak it.
    pub(crate) fn wire(&self) -> Option<WireVersion> {
        WireVersion::from_name(&self.bfrops)
    }

    /// True when the peer uses fully described buffers.
    pub(crate) fn described(&self) -> bool {
        self.buffer_kind == BUFFER_FULLY_DESCRIBED
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.b.len());
        match end {
            Some(end) => {
                let s = &self.b[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(bad(format!("connect request truncated in {what}"))),
        }
    }
    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u32_be(&mut self, what: &str) -> Result<u32> {
        let s = self.take(4, what)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn cstr(&mut self, what: &str) -> Result<String> {
        let rest = &self.b[self.pos..];
        let n = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| bad(format!("connect request: {what} is not terminated")))?;
        if n > NSPACE_FIELD * 4 {
            return Err(bad(format!("connect request: {what} is too long")));
        }
        let s = std::str::from_utf8(&rest[..n])
            .map_err(|_| bad(format!("connect request: {what} is not UTF-8")))?
            .to_string();
        self.pos += n + 1;
        Ok(s)
    }
    fn rest(&self) -> &'a [u8] {
        &self.b[self.pos..]
    }
}

fn bad(m: String) -> Error {
    Error::new(Status::ERR_BAD_PARAM, m)
}

/// Parse a connect-ack body (after its 16-byte header).
pub(crate) fn parse_connect(body: &[u8]) -> Result<ConnectRequest> {
    if body.len() > MAX_CONNECT_LEN as usize {
        return Err(bad("connect request too large".into()));
    }
    let mut c = Cursor { b: body, pos: 0 };
    let psec = c.cstr("the security module name")?;
    let clen = c.u32_be("the credential length")? as usize;
    let cred = c.take(clen, "the credential")?.to_vec();
    let flag = c.u8("the identity flag")?;
    let mut claimed_ids = None;
    let identity = match flag {
        FLAG_SIMPLE_CLIENT => {
            let nspace = c.cstr("the namespace")?;
            let rank = c.u32_be("the rank")?;
            PeerIdentity::Client { nspace, rank }
        }
        FLAG_TOOL_NEEDS_ID | FLAG_LAUNCHER_NEEDS_ID => {
            claimed_ids = Some((c.u32_be("the uid")?, c.u32_be("the gid")?));
            PeerIdentity::Tool
        }
        FLAG_TOOL_GIVEN_ID
        | FLAG_TOOL_CLIENT
        | FLAG_LAUNCHER_GIVEN_ID
        | FLAG_LAUNCHER_CLIENT
        | FLAG_SINGLETON_CLIENT => {
            claimed_ids = Some((c.u32_be("the uid")?, c.u32_be("the gid")?));
            let nspace = c.cstr("the namespace")?;
            let rank = c.u32_be("the rank")?;
            PeerIdentity::ToolWithId { nspace, rank }
        }
        other => {
            return Err(Error::new(
                Status::ERR_NOT_SUPPORTED,
                format!("connect request with unsupported identity flag {other}"),
            ))
        }
    };
    if let PeerIdentity::Client { nspace, .. } | PeerIdentity::ToolWithId { nspace, .. } = &identity
    {
        if nspace.is_empty() || nspace.len() >= NSPACE_FIELD {
            return Err(bad("connect request: namespace empty or too long".into()));
        }
    }
    let version = c.cstr("the version")?;
    let bfrops = c.cstr("the wire version")?;
    let buffer_kind = c.u8("the buffer kind")?;
    let gds = c.cstr("the datastore name")?;
    let info = match WireVersion::from_name(&bfrops) {
        Some(v) if !c.rest().is_empty() => read_blob(c.rest(), v, buffer_kind).unwrap_or_default(),
        _ => Vec::new(),
    };
    Ok(ConnectRequest {
        psec,
        cred,
        flag,
        identity,
        claimed_ids,
        version,
        bfrops,
        buffer_kind,
        gds,
        info,
    })
}

fn read_blob(b: &[u8], v: WireVersion, kind: u8) -> Result<Vec<Info>> {
    let mut d = if kind == BUFFER_FULLY_DESCRIBED {
        Decoder::described(b, v)
    } else {
        Decoder::new(b, v)
    };
    let Size(n) = d.unpack_one()?;
    let n = usize::try_from(n)
        .ok()
        .filter(|n| *n <= MAX_CONNECT_INFOS)
        .ok_or_else(|| bad("connect request: too many infos".into()))?;
    if n == 0 {
        return Ok(Vec::new());
    }
    d.unpack(n)
}

/// The uid/gid carried by a `native` credential, when it has that shape.
pub(crate) fn native_cred_ids(cred: &[u8]) -> Option<(u32, u32)> {
    if cred.len() != 8 {
        return None;
    }
    let uid = u32::from_le_bytes([cred[0], cred[1], cred[2], cred[3]]);
    let gid = u32::from_le_bytes([cred[4], cred[5], cred[6], cred[7]]);
    Some((uid, gid))
}

fn put_nspace(out: &mut Vec<u8>, ns: &str) {
    let mut field = [0u8; NSPACE_FIELD];
    let n = ns.len().min(NSPACE_FIELD - 1);
    field[..n].copy_from_slice(&ns.as_bytes()[..n]);
    out.extend_from_slice(&field);
}

/// The answer to a tool: status, [assigned namespace + rank], our namespace
/// and rank, security status.
pub(crate) fn tool_reply(
    assigned: Option<(&str, u32)>,
    server_nspace: &str,
    server_rank: u32,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * NSPACE_FIELD + 16);
    out.extend_from_slice(&0u32.to_be_bytes());
    if let Some((ns, rank)) = assigned {
        put_nspace(&mut out, ns);
        out.extend_from_slice(&rank.to_be_bytes());
    }
    put_nspace(&mut out, server_nspace);
    out.extend_from_slice(&server_rank.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out
}

/// The answer to a simple client: status then its index in our peer table.
pub(crate) fn client_reply(index: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(8);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&index.to_be_bytes());
    out
}

/// A refusal: just the (negative) status.
pub(crate) fn refusal(status: Status) -> Vec<u8> {
    (status.0 as u32).to_be_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::handshake::{connect_ack_body, tool_info_blob, Hello, Identity};

    fn build_connect_ack(h: &Hello) -> Vec<u8> {
        let body = connect_ack_body(h);
        let mut m = crate::conn::frame::Header::encode_connect(body.len() as u32).to_vec();
        m.extend_from_slice(&body);
        m
    }

    fn hello(identity: Identity, blob: Vec<u8>) -> Hello {
        Hello {
            identity,
            version: "5.0.11".into(),
            bfrops: "v41".into(),
            buffer_kind: 1,
            uid: 1000,
            gid: 100,
            info_blob: blob,
        }
    }

    #[test]
    fn parses_what_our_client_sends() {
        let m = build_connect_ack(&hello(
            Identity::Tool,
            tool_info_blob(crate::codec::WireVersion::V41, "palloc -N 1", 42).unwrap(),
        ));
        let r = parse_connect(&m[16..]).unwrap();
        assert_eq!(r.identity, PeerIdentity::Tool);
        assert_eq!(r.claimed_ids, Some((1000, 100)));
        assert_eq!(native_cred_ids(&r.cred), Some((1000, 100)));
        assert_eq!(r.bfrops, "v41");
        assert_eq!(r.gds, "hash");
        assert_eq!(r.info.len(), 2);
        assert_eq!(r.info[0].value.as_str(), Some("palloc -N 1"));
        let m = build_connect_ack(&hello(
            Identity::Client {
                nspace: "job@3".into(),
                rank: 7,
            },
            vec![],
        ));
        let r = parse_connect(&m[16..]).unwrap();
        assert_eq!(
            r.identity,
            PeerIdentity::Client {
                nspace: "job@3".into(),
                rank: 7
            }
        );
        // every truncation is an error or a shorter parse, never a panic
        for cut in 0..m.len() - 16 {
            let _ = parse_connect(&m[16..16 + cut]);
        }
    }

    #[test]
    fn replies_have_fixed_layout() {
        let r = tool_reply(Some(("pdvm-h-1@1", 0)), "pdvm-h-1@0", 0);
        assert_eq!(r.len(), 4 + 256 + 4 + 256 + 4 + 4);
        assert_eq!(&r[4..14], b"pdvm-h-1@1");
        assert_eq!(client_reply(5), vec![0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(refusal(Status(-23)), (-23i32).to_be_bytes().to_vec());
    }

    #[test]
    fn unknown_flag_and_garbage_are_refused() {
        assert!(parse_connect(b"native\0\0\0\0\0\x01").is_err());
        assert!(parse_connect(&[0xff; 100]).is_err());
        assert!(parse_connect(b"native\0\xff\xff\xff\xff").is_err());
    }
}
