//! The datastore's wire forms: a key with its typed value (`PMIX_KVAL`), as
//! job data, committed data and fetched data carry it, and a packed buffer
//! inside a message (`PMIX_BUFFER`), as a commit carries each scope's values.

use super::buffer::{Decoder, Encoder, Pack, Unpack};
use super::data::Value;
use super::scalars::Size;
use super::types::{dt, DataType};
use crate::error::{Error, Result};
use crate::proto::status::Status;

/// `PMIX_KVAL`: a key and its typed value.
#[derive(Debug, Clone, PartialEq)]
pub struct Kval {
    /// The key.
    pub key: String,
    /// Its value (with its type).
    pub value: Value,
}

impl Kval {
    /// A key/value pair.
    pub fn new(key: &str, value: impl Into<Value>) -> Kval {
        Kval {
            key: key.to_string(),
            value: value.into(),
        }
    }
}

impl Pack for Kval {
    const DT: DataType = dt::KVAL;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        enc.put_string(Some(&self.key))?;
        self.value.pack_body(enc)
    }
}

impl Unpack for Kval {
    const DT: DataType = dt::KVAL;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        let key = dec
            .get_string()?
            .ok_or_else(|| Error::new(Status::ERR_BAD_PARAM, "a key/value pair without a key"))?;
        Ok(Kval {
            key,
            value: Value::unpack_body(dec)?,
        })
    }
}

/// `PMIX_BUFFER`: a packed buffer inside a message (its kind byte, its
/// length, its bytes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bucket {
    /// The buffer's kind (`pmix_bfrop_buffer_type_t`).
    pub kind: u8,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl Pack for Bucket {
    const DT: DataType = dt::BUFFER;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        enc.put_u8(self.kind);
        Size(self.bytes.len() as u64).pack_body(enc)?;
        enc.put_raw(&self.bytes);
        Ok(())
    }
}

impl Unpack for Bucket {
    const DT: DataType = dt::BUFFER;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        let kind = dec.get_u8()?;
        let Size(n) = Size::unpack_body(dec)?;
        let n = usize::try_from(n)
            .map_err(|_| Error::new(Status::ERR_BAD_PARAM, "a buffer longer than memory"))?;
        let bytes = dec.get_raw(n)?.to_vec();
        Ok(Bucket { kind, bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::WireVersion;

    #[test]
    fn kvals_and_buckets_travel_both_ways() {
        let mut e = Encoder::new(WireVersion::V41);
        let kv = Kval::new("a.key", Value::Uint32(7));
        e.pack_one(&kv).unwrap();
        let b = Bucket {
            kind: 2,
            bytes: vec![1, 2, 3],
        };
        e.pack_one(&b).unwrap();
        let bytes = e.into_bytes();
        let mut d = Decoder::new(&bytes, WireVersion::V41);
        assert_eq!(d.unpack_one::<Kval>().unwrap(), kv);
        assert_eq!(d.unpack_one::<Bucket>().unwrap(), b);
        assert!(d.is_empty());
    }
}
