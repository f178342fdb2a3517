//! Allocation requests (`PMIx_Allocation_request`): NEW, EXTEND, RELEASE,
//! REAQUIRE and REQ_CANCEL, and the reply's well-known fields.

use serde::Serialize;

use crate::codec::{AllocDirective, Info, Value};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::session::{find, read_infos, write_infos, Session};
use crate::proto::{cmd, keys};

/// A granted (or acknowledged) allocation request.
#[derive(Clone, Debug, Serialize)]
pub struct AllocReply {
    /// The directive that was sent.
    pub directive: &'static str,
    /// `PMIX_ALLOC_ID` from the reply (the scheduler-assigned id).
    pub alloc_id: Option<String>,
    /// `PMIX_ALLOC_REQ_ID` echoed back.
    pub request_id: Option<String>,
    /// Every info the server returned.
    pub info: Vec<Info>,
}

/// Send an allocation request with `directive` and `info`.
///
/// A refusal comes back as an [`Error`] whose status is the server's (for
/// example `PMIX_ERR_NOT_SUPPORTED` from a DVM without reservation support).
pub fn allocate(s: &Session, directive: u8, info: &[Info]) -> Result<AllocReply> {
    let reply = s.call(alloc_request(s, directive, info)?)?;
    decode_alloc_reply(s, directive, &reply)
}

/// Send an allocation request without waiting: returns the pending reply's
/// tag (see [`crate::conn::Connection::begin`]); decode the reply with
/// [`decode_alloc_reply`].
pub fn begin_allocate(s: &Session, directive: u8, info: &[Info]) -> Result<u32> {
    let e = alloc_request(s, directive, info)?;
    s.conn().begin(e.bytes())
}

fn alloc_request(s: &Session, directive: u8, info: &[Info]) -> Result<crate::codec::Encoder> {
    s.check_infos(info)?;
    let mut e = s.request(cmd::ALLOC)?;
    e.pack_one(&AllocDirective(directive))?;
    write_infos(&mut e, info)?;
    Ok(e)
}

/// Read the reply to an allocation request with `directive`.
pub fn decode_alloc_reply(s: &Session, directive: u8, reply: &[u8]) -> Result<AllocReply> {
    let mut d = s.decoder(reply);
    let st: Status = d.unpack_one()?;
    if !st.is_success() {
        return Err(Error::refused(st, crate::proto::directive::name(directive)));
    }
    let info = read_infos(&mut d)?;
    Ok(AllocReply {
        directive: crate::proto::directive::name(directive),
        alloc_id: find(&info, keys::ALLOC_ID)
            .and_then(Value::as_str)
            .map(String::from),
        request_id: find(&info, keys::ALLOC_REQ_ID)
            .and_then(Value::as_str)
            .map(String::from),
        info,
    })
}

/// Whether the server lists `nspace` among its live namespaces (a
/// `PMIX_QUERY_NAMESPACES` query); `None` when it does not answer the query.
/// palloc asks before a NEW with `PMIX_ALLOC_TARGET`, so a mistyped target
/// is refused before anything is reserved, on any DVM.
pub fn target_is_live(s: &Session, nspace: &str) -> Option<bool> {
    super::query::namespaces(s)
        .ok()
        .map(|l| l.iter().any(|n| n == nspace))
}

/// The value of `PMIX_ALLOC_TIME` in the form the server expects: a `u32` of
/// seconds for OpenPMIx 4.x servers, a `d:h:m:s` string for 5.x and later.
pub fn alloc_time_value(server_version: Option<&str>, secs: u64) -> Value {
    let major = server_version
        .and_then(|v| v.trim_start_matches('v').split('.').next())
        .and_then(|m| m.parse::<u32>().ok())
        .unwrap_or(5);
    if major < 5 {
        Value::Uint32(secs.min(u32::MAX as u64) as u32)
    } else {
        let (d, rem) = (secs / 86_400, secs % 86_400);
        let (h, rem) = (rem / 3600, rem % 3600);
        let (m, sec) = (rem / 60, rem % 60);
        Value::from(format!("{d}:{h:02}:{m:02}:{sec:02}"))
    }
}

/// Parse a `PMIX_ALLOC_TIME` value in either form back into seconds.
pub fn parse_alloc_time(v: &Value) -> Option<u64> {
    if let Some(s) = v.as_str() {
        let mut total: u64 = 0;
        // right to left: seconds, minutes, hours, days, months(30 days)
        let mults = [1u64, 60, 3600, 86_400, 30 * 86_400];
        for (i, part) in s.rsplit(':').enumerate() {
            let n: u64 = part.trim().parse().ok()?;
            total = total.checked_add(n.checked_mul(*mults.get(i)?)?)?;
        }
        Some(total)
    } else {
        v.as_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_in_server_form() {
        assert_eq!(alloc_time_value(Some("4.2.2"), 90), Value::Uint32(90));
        let v = alloc_time_value(Some("5.0.11rc1"), 2 * 86_400 + 3600 + 61);
        assert_eq!(v.as_str(), Some("2:01:01:01"));
        assert_eq!(parse_alloc_time(&v), Some(2 * 86_400 + 3600 + 61));
        assert_eq!(parse_alloc_time(&Value::from("2")), Some(2));
        assert_eq!(parse_alloc_time(&Value::Uint32(7)), Some(7));
        assert_eq!(parse_alloc_time(&Value::from("x:1")), None);
    }
}
