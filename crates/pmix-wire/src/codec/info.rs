//! The structures that carry values, with their wire encoding: info, app,
//! query and pdata (their definitions, recursive with [`super::data::Value`],
//! are in [`super::data`]).

use super::buffer::{Decoder, Encoder, Pack, Unpack};
use super::data::{App, Info, PData, Query, Value};
use super::helpers::MAX_KEYLEN;
use super::scalars::wire_fields;
use super::structs::{check_len, InfoFlags};
use super::types::{dt, DataType};
use crate::error::Result;

impl Info {
    /// An info with no flags.
    pub fn new(key: impl Into<String>, value: impl Into<Value>) -> Self {
        Info {
            key: key.into(),
            flags: InfoFlags::NONE,
            value: value.into(),
        }
    }

    /// An info marked `PMIX_INFO_REQD`.
    pub fn required(key: impl Into<String>, value: impl Into<Value>) -> Self {
        Info {
            flags: InfoFlags::REQD,
            ..Info::new(key, value)
        }
    }

    /// Whether `PMIX_INFO_REQD` is set.
    pub fn is_required(&self) -> bool {
        self.flags.contains(InfoFlags::REQD)
    }
}

impl Pack for Info {
    const DT: DataType = dt::INFO;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        check_len("info key", &self.key, MAX_KEYLEN)?;
        enc.put_string(Some(&self.key))?;
        enc.put_u32(self.flags.0);
        self.value.pack_body(enc)
    }
}

impl Unpack for Info {
    const DT: DataType = dt::INFO;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        let key = dec.get_string()?.unwrap_or_default();
        let flags = InfoFlags(dec.get_u32()?);
        let value = Value::unpack_body(dec)?;
        Ok(Info { key, flags, value })
    }
}

/// Reads a string-array element (NULL reads as empty).
fn get_str(dec: &mut Decoder) -> Result<String> {
    Ok(dec.get_string()?.unwrap_or_default())
}

/// Writes a string array counted by a flex `INT32` (argv, env, query keys).
fn put_strings(enc: &mut Encoder, v: &[String]) -> Result<()> {
    enc.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
    v.iter().try_for_each(|s| enc.put_string(Some(s)))
}

/// Reads a string array counted by a flex `INT32`; `what` names the count.
fn get_strings(dec: &mut Decoder, what: &str) -> Result<Vec<String>> {
    let n = dec.get_i32()?;
    let n = dec.count(i64::from(n), what)?;
    let mut v: Vec<String> = dec.alloc(n)?;
    for _ in 0..n {
        v.push(get_str(dec)?);
    }
    Ok(v)
}

/// Writes infos counted by a `PMIX_SIZE`.
fn put_infos(enc: &mut Encoder, v: &[Info]) -> Result<()> {
    enc.put_len(v.len());
    Info::pack_slice(v, enc)
}

/// Reads infos counted by a `PMIX_SIZE`; `what` names the count.
fn get_infos(dec: &mut Decoder, what: &str) -> Result<Vec<Info>> {
    let n = dec.get_len(what)?;
    Info::unpack_many(dec, n)
}

impl Pack for App {
    const DT: DataType = dt::APP;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        enc.put_string(Some(&self.cmd))?;
        // argc goes out as PMIX_INT, envc as PMIX_INT32: both flex int32
        put_strings(enc, &self.argv)?;
        put_strings(enc, &self.env)?;
        enc.put_string(self.cwd.as_deref())?;
        enc.put_i32(self.maxprocs);
        put_infos(enc, &self.info)
    }
}

impl Unpack for App {
    const DT: DataType = dt::APP;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        Ok(App {
            cmd: get_str(dec)?,
            argv: get_strings(dec, "argv count")?,
            env: get_strings(dec, "env count")?,
            cwd: dec.get_string()?,
            maxprocs: dec.get_i32()?,
            info: get_infos(dec, "app info count")?,
        })
    }
}

impl Pack for Query {
    const DT: DataType = dt::QUERY;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        put_strings(enc, &self.keys)?;
        put_infos(enc, &self.qualifiers)
    }
}

impl Unpack for Query {
    const DT: DataType = dt::QUERY;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        Ok(Query {
            keys: get_strings(dec, "query key count")?,
            qualifiers: get_infos(dec, "query qualifier count")?,
        })
    }
}

wire_fields!(PData, dt::PDATA, proc, key, value);
