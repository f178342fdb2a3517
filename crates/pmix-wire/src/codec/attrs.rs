//! Attribute values whose form the PMIx version decides, and info-list
//! framing both sides of a connection share.

use super::{Decoder, Encoder, Info, Pack, Size, Value};
use crate::error::{Error, Result};
use crate::proto::{PmixVersion, Status};

/// Most infos one request may carry (an allocation request, a spawn's job
/// info, a session control): the one limit pdvm, psched and the holder's
/// relay apply to what a peer sends.
pub const MAX_REQUEST_INFOS: usize = 4096;

/// The value of `PMIX_ALLOC_TIME` in the form the server expects: a `u32` of
/// seconds for OpenPMIx 4.x servers, a `d:h:m:s` string for 5.x and later.
pub fn alloc_time_value(server_version: Option<&str>, secs: u64) -> Value {
    if PmixVersion::of(server_version).major < 5 {
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

/// What every event the tools and psched send carries: for handlers that
/// asked for its code alone (`PMIX_EVENT_NON_DEFAULT`), and not kept to be
/// replayed to every later registration (`PMIX_EVENT_DO_NOT_CACHE`).
/// Without them PRRTE master replays an allocation's end to each MPI
/// process that starts later, whose default handler then aborts MPI_Init.
pub fn quiet_event_flags() -> [Info; 2] {
    use crate::proto::keys::{EVENT_DO_NOT_CACHE, EVENT_NON_DEFAULT};
    [
        Info::new(EVENT_NON_DEFAULT, true),
        Info::new(EVENT_DO_NOT_CACHE, true),
    ]
}

/// Write `size` followed by the infos.
pub fn write_infos(enc: &mut Encoder, infos: &[Info]) -> Result<()> {
    write_sized(enc, infos)
}

/// Read a request's `size` followed by that many infos (at most
/// [`MAX_REQUEST_INFOS`]); nothing at all reads as no infos.
pub fn read_request_infos(dec: &mut Decoder) -> Result<Vec<Info>> {
    if dec.is_empty() {
        return Ok(Vec::new());
    }
    let Size(n) = dec.unpack_one()?;
    let n = usize::try_from(n)
        .ok()
        .filter(|n| *n <= MAX_REQUEST_INFOS)
        .ok_or_else(|| {
            Error::new(
                Status::ERR_BAD_PARAM,
                format!("a request with {n} infos (at most {MAX_REQUEST_INFOS})"),
            )
        })?;
    if n == 0 {
        return Ok(Vec::new());
    }
    dec.unpack(n)
}

/// Write a count (`size`) followed by the items, nothing more when there
/// are none: how requests carry their lists.
pub fn write_sized<T: Pack>(enc: &mut Encoder, items: &[T]) -> Result<()> {
    enc.pack_one(&Size(items.len() as u64))?;
    if !items.is_empty() {
        enc.pack(items)?;
    }
    Ok(())
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
