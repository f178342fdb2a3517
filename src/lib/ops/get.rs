//! A tool's `PMIx_Get` of one key of another process's data
//! (`PMIX_GET_CMD`), answered from what the server holds now
//! (`PMIX_IMMEDIATE`): the server never parks the request waiting for a
//! namespace it does not know (an ended one, say).

use std::time::Duration;

use crate::codec::{ByteObject, Info, Kval, NullableString, Proc, Rank, Value};
use crate::error::Result;
use crate::proto::{cmd, keys, Status};

use super::session::Session;

/// The value of `key` in process `target`'s data, as the server holds it
/// now; `Ok(None)` when the server has none (`PMIX_ERR_NOT_FOUND` and the
/// like: an unknown or ended namespace, a key never set). Waits at most
/// `timeout` for the answer.
pub fn get_now(s: &Session, target: &Proc, key: &str, timeout: Duration) -> Result<Option<Value>> {
    let mut e = s.request(cmd::GET)?;
    e.pack_one(&NullableString(Some(target.nspace.clone())))?;
    e.pack_one(&Rank(target.rank))?;
    crate::codec::attrs::write_infos(&mut e, &[Info::new(keys::client::IMMEDIATE, true)])?;
    e.pack_one(&NullableString(Some(key.to_string())))?;
    let reply = s.call_within(e, timeout)?;
    Ok(value_in(s, &reply, key))
}

/// `key`'s value in a get's answer: the status, then one byte object per
/// process (its name, then its key/value pairs).
fn value_in(s: &Session, reply: &[u8], key: &str) -> Option<Value> {
    let mut d = s.decoder(reply);
    let st: Status = d.unpack_one().ok()?;
    if !st.is_success() {
        return None;
    }
    while !d.is_empty() {
        let ByteObject(blob) = d.unpack_one().ok()?;
        let mut inner = s.decoder(&blob);
        let _who: Proc = inner.unpack_one().ok()?;
        while !inner.is_empty() {
            let kv: Kval = inner.unpack_one().ok()?;
            if kv.key == key {
                return Some(kv.value);
            }
        }
    }
    None
}
