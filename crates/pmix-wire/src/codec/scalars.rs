//! Pack / Unpack for the primitive types and the typed newtypes that tell
//! apart wire types sharing a Rust representation.

use super::buffer::{Decoder, Encoder, Pack, Unpack};
use super::types::{dt, DataType};
use crate::error::{Error, Result};
use crate::proto::status::Status;

/// Implements Pack + Unpack for a type with a fixed per-item encoding.
macro_rules! wire {
    ($ty:ty, $dt:expr, |$e:ident, $v:ident| $pack:expr, |$d:ident| $unpack:expr) => {
        impl $crate::codec::buffer::Pack for $ty {
            const DT: $crate::codec::types::DataType = $dt;
            fn pack_body(
                &self,
                $e: &mut $crate::codec::buffer::Encoder,
            ) -> $crate::error::Result<()> {
                let $v = self;
                $pack;
                Ok(())
            }
        }
        impl $crate::codec::buffer::Unpack for $ty {
            const DT: $crate::codec::types::DataType = $dt;
            fn unpack_body($d: &mut $crate::codec::buffer::Decoder) -> $crate::error::Result<Self> {
                $unpack
            }
        }
    };
}

/// Implements Pack + Unpack for a newtype that travels as its inner scalar
/// under its own type code.
macro_rules! wire_as_inner {
    ($name:ident($inner:ty), $dt:expr) => {
        $crate::codec::scalars::wire!($name, $dt, |e, v| v.0.pack_body(e)?, |d| Ok($name(
            <$inner as $crate::codec::buffer::Unpack>::unpack_body(d)?
        )));
    };
}

/// Implements Pack + Unpack for a struct that travels as its fields, in
/// order, each as its own type.
macro_rules! wire_fields {
    ($ty:ident, $dt:expr, $($f:ident),+ $(,)?) => {
        $crate::codec::scalars::wire!(
            $ty,
            $dt,
            |e, v| {
                $($crate::codec::buffer::Pack::pack_body(&v.$f, e)?;)+
            },
            |d| Ok($ty {
                $($f: $crate::codec::buffer::Unpack::unpack_body(d)?,)+
            })
        );
    };
}

pub(crate) use {wire, wire_as_inner, wire_fields};

/// Declares a documented single-field newtype that travels as its inner
/// scalar under type code `$dt`.
macro_rules! newtype {
    ($(#[$m:meta])* $name:ident($inner:ty), $dt:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
        pub struct $name(pub $inner);
        wire_as_inner!($name($inner), $dt);
    };
}

newtype!(
    /// `PMIX_SIZE` (`size_t`, flex encoded).
    Size(u64),
    dt::SIZE
);
/// `PMIX_PID` (`pid_t`; a `UINT32` type tag per pack call, then flex).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Pid(pub u32);
newtype!(
    /// `PMIX_INT` (C `int`, packed as a flex `INT32`).
    Int(i32),
    dt::INT
);
/// `PMIX_UINT` (C `unsigned int`, packed as a flex `INT32` like `INT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Uint(pub u32);
newtype!(
    /// `PMIX_PROC_RANK` (flex `UINT32`).
    Rank(u32),
    dt::PROC_RANK
);
newtype!(
    /// `PMIX_COMMAND` (one byte).
    Cmd(u8),
    dt::COMMAND
);
newtype!(
    /// `PMIX_DATA_TYPE` as a payload (flex `UINT16`, any value).
    DataTypeTag(u16),
    dt::DATA_TYPE
);
newtype!(
    /// `PMIX_PROC_STATE` (one byte).
    ProcState(u8),
    dt::PROC_STATE
);
newtype!(
    /// `PMIX_JOB_STATE` (one byte).
    JobState(u8),
    dt::JOB_STATE
);
newtype!(
    /// `PMIX_ALLOC_DIRECTIVE` (one byte).
    AllocDirective(u8),
    dt::ALLOC_DIRECTIVE
);
newtype!(
    /// `PMIX_IOF_CHANNEL` (flex `UINT16` bit mask).
    IofChannel(u16),
    dt::IOF_CHANNEL
);
newtype!(
    /// `PMIX_TIME` (`time_t`, packed as flex `UINT64`).
    Time(u64),
    dt::TIME
);
newtype!(
    /// `PMIX_PERSIST` (one byte).
    Persist(u8),
    dt::PERSIST
);
newtype!(
    /// `PMIX_SCOPE` (one byte).
    Scope(u8),
    dt::SCOPE
);
newtype!(
    /// `PMIX_DATA_RANGE` (one byte).
    Range(u8),
    dt::DATA_RANGE
);

/// `PMIX_BYTE_OBJECT`: size then bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ByteObject(pub Vec<u8>);

/// `PMIX_PROC_NSPACE`: a namespace name, packed as a string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ProcNspace(pub String);

/// `PMIX_STRING` that may be the NULL string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NullableString(pub Option<String>);

/// Formats like C's `"%f"` (what bfrops sends for FLOAT and DOUBLE).
pub(crate) fn c_fixed6(v: f64) -> String {
    if v.is_nan() {
        if v.is_sign_negative() { "-nan" } else { "nan" }.to_string()
    } else if v.is_infinite() {
        if v < 0.0 { "-inf" } else { "inf" }.to_string()
    } else {
        format!("{v:.6}")
    }
}

/// Parses the string form of a FLOAT / DOUBLE.
pub(crate) fn parse_c_float(s: Option<String>) -> Result<f64> {
    let s = s.unwrap_or_default();
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    match t.to_ascii_lowercase().as_str() {
        "nan" => return Ok(f64::NAN),
        "-nan" => return Ok(-f64::NAN),
        _ => {}
    }
    t.parse::<f64>().map_err(|_| {
        Error::new(
            Status::ERR_UNPACK_FAILURE,
            format!("floating point text {s:?} does not parse"),
        )
    })
}

/// Writes `PMIX_PID`s as one `PACK_TYPE` call: a `UINT32` tag, then values.
pub(crate) fn pack_pids(enc: &mut Encoder, pids: &[u32]) -> Result<()> {
    enc.put_type(dt::UINT32)?;
    pids.iter().for_each(|p| enc.put_u32(*p));
    Ok(())
}

/// One integer of wire type `t` (one of the integer types), widened.
fn unpack_integer(dec: &mut Decoder, t: DataType) -> Result<i128> {
    Ok(match t {
        dt::INT8 => i128::from(dec.get_u8()? as i8),
        dt::UINT16 => i128::from(dec.get_u16()?),
        dt::INT16 => i128::from(dec.get_i16()?),
        dt::UINT32 => i128::from(dec.get_u32()?),
        dt::INT32 => i128::from(dec.get_i32()?),
        dt::UINT64 => i128::from(dec.get_u64()?),
        dt::INT64 => i128::from(dec.get_i64()?),
        _ => i128::from(dec.get_u8()?),
    })
}

/// Reads `n` `PMIX_PID`s: the sender's integer type tag, then values
/// (each read as that integer type).
pub(crate) fn unpack_pids(dec: &mut Decoder, n: usize) -> Result<Vec<u32>> {
    let t = dec.get_type()?;
    let mut v: Vec<u32> = dec.alloc(n)?;
    for _ in 0..n {
        if !matches!(
            t,
            dt::UINT8
                | dt::BYTE
                | dt::INT8
                | dt::UINT16
                | dt::INT16
                | dt::UINT32
                | dt::INT32
                | dt::UINT64
                | dt::INT64
        ) {
            return Err(Error::new(
                Status::ERR_UNPACK_FAILURE,
                format!("pid packed as non-integer type {t}"),
            ));
        }
        let x = unpack_integer(dec, t)?;
        let p = u32::try_from(x)
            .map_err(|_| Error::new(Status::ERR_UNPACK_FAILURE, format!("pid {x} out of range")))?;
        v.push(p);
    }
    Ok(v)
}

wire!(bool, dt::BOOL, |e, v| e.put_u8(u8::from(*v)), |d| Ok(d
    .get_u8()?
    != 0));
wire!(u8, dt::BYTE, |e, v| e.put_u8(*v), |d| d.get_u8());
wire!(i8, dt::INT8, |e, v| e.put_u8(*v as u8), |d| Ok(
    d.get_u8()? as i8
));
wire!(u16, dt::UINT16, |e, v| e.put_u16(*v), |d| d.get_u16());
wire!(i16, dt::INT16, |e, v| e.put_i16(*v), |d| d.get_i16());
wire!(u32, dt::UINT32, |e, v| e.put_u32(*v), |d| d.get_u32());
wire!(i32, dt::INT32, |e, v| e.put_i32(*v), |d| d.get_i32());
wire!(u64, dt::UINT64, |e, v| e.put_u64(*v), |d| d.get_u64());
wire!(i64, dt::INT64, |e, v| e.put_i64(*v), |d| d.get_i64());
wire!(
    f32,
    dt::FLOAT,
    |e, v| e.put_string(Some(&c_fixed6(f64::from(*v))))?,
    |d| Ok(parse_c_float(d.get_string()?)? as f32)
);
wire!(
    f64,
    dt::DOUBLE,
    |e, v| e.put_string(Some(&c_fixed6(*v)))?,
    |d| parse_c_float(d.get_string()?)
);
wire!(String, dt::STRING, |e, v| e.put_string(Some(v))?, |d| Ok(d
    .get_string()?
    .unwrap_or_default()));
wire!(
    NullableString,
    dt::STRING,
    |e, v| e.put_string(v.0.as_deref())?,
    |d| Ok(NullableString(d.get_string()?))
);
wire_as_inner!(Status(i32), dt::STATUS);
wire!(Uint, dt::UINT, |e, v| e.put_i32(v.0 as i32), |d| Ok(Uint(
    d.get_i32()? as u32
)));
wire!(ByteObject, dt::BYTE_OBJECT, |e, v| e.put_bytes(&v.0), |d| {
    Ok(ByteObject(d.get_bytes()?))
});
wire!(
    ProcNspace,
    dt::PROC_NSPACE,
    |e, v| e.put_string(Some(&v.0))?,
    |d| Ok(ProcNspace(d.get_string()?.unwrap_or_default()))
);

impl Pack for &str {
    const DT: DataType = dt::STRING;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        enc.put_string(Some(self))
    }
}

impl Pack for Pid {
    const DT: DataType = dt::PID;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        pack_pids(enc, &[self.0])
    }
    fn pack_slice(items: &[Self], enc: &mut Encoder) -> Result<()> {
        let v: Vec<u32> = items.iter().map(|p| p.0).collect();
        pack_pids(enc, &v)
    }
}

impl Unpack for Pid {
    const DT: DataType = dt::PID;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        Ok(Pid(unpack_pids(dec, 1)?
            .into_iter()
            .next()
            .unwrap_or_default()))
    }
    fn unpack_many(dec: &mut Decoder, n: usize) -> Result<Vec<Self>> {
        Ok(unpack_pids(dec, n)?.into_iter().map(Pid).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::WireVersion;

    #[test]
    fn string_encodings() {
        let mut e = Encoder::new(WireVersion::V41);
        e.put_string(Some("hi")).unwrap();
        e.put_string(Some("")).unwrap();
        e.put_string(None).unwrap();
        assert_eq!(e.bytes(), [0x06, b'h', b'i', 0, 0x02, 0, 0x00]);
        let mut d = Decoder::new(e.bytes(), WireVersion::V41);
        assert_eq!(d.get_string().unwrap().as_deref(), Some("hi"));
        assert_eq!(d.get_string().unwrap().as_deref(), Some(""));
        assert_eq!(d.get_string().unwrap(), None);
        assert!(d.is_empty());
        assert!(e.put_string(Some("a\0b")).is_err());
    }

    #[test]
    fn c_float_text() {
        assert_eq!(c_fixed6(1.5), "1.500000");
        assert_eq!(c_fixed6(-0.25), "-0.250000");
        assert_eq!(c_fixed6(f64::INFINITY), "inf");
        assert_eq!(parse_c_float(Some("3.250000".into())).unwrap(), 3.25);
        assert!(parse_c_float(Some("x".into())).is_err());
    }

    #[test]
    fn pid_tag_once_per_call() {
        let mut e = Encoder::new(WireVersion::V41);
        e.pack(&[Pid(0), Pid(12345)]).unwrap();
        assert_eq!(e.bytes(), [0x04, 0x0e, 0x00, 0xb9, 0x60]);
    }
}
