//! [`Value`]: the tagged union carried by infos, pdata and value arrays
//! (`pmix_value_t`), with its wire encoding (type tag, then payload).

use super::buffer::{Decoder, Encoder, Pack, Unpack};
use super::data::{DataArray, Value};
use super::scalars::{c_fixed6, pack_pids, parse_c_float, unpack_pids};
use super::structs::{AllocInheritance, Envar, InfoFlags, Proc, ProcInfo, Timeval};
use super::types::{dt, type_name, DataType};
use crate::error::{Error, Result};
use crate::proto::status::Status;

impl Value {
    /// The PMIx data type code of this value.
    pub fn data_type(&self) -> DataType {
        use Value::*;
        match self {
            Undef => dt::UNDEF,
            Bool(_) => dt::BOOL,
            Byte(_) => dt::BYTE,
            String(_) | NullString => dt::STRING,
            Size(_) => dt::SIZE,
            Pid(_) => dt::PID,
            Int(_) => dt::INT,
            Int8(_) => dt::INT8,
            Int16(_) => dt::INT16,
            Int32(_) => dt::INT32,
            Int64(_) => dt::INT64,
            Uint(_) => dt::UINT,
            Uint8(_) => dt::UINT8,
            Uint16(_) => dt::UINT16,
            Uint32(_) => dt::UINT32,
            Uint64(_) => dt::UINT64,
            Float(_) => dt::FLOAT,
            Double(_) => dt::DOUBLE,
            Timeval(_) => dt::TIMEVAL,
            Time(_) => dt::TIME,
            Status(_) => dt::STATUS,
            Proc(_) => dt::PROC,
            Rank(_) => dt::PROC_RANK,
            ProcNspace(_) => dt::PROC_NSPACE,
            ProcState(_) => dt::PROC_STATE,
            JobState(_) => dt::JOB_STATE,
            LinkState(_) => dt::LINK_STATE,
            ProcInfo(_) => dt::PROC_INFO,
            ByteObject(_) => dt::BYTE_OBJECT,
            CompressedString(_) => dt::COMPRESSED_STRING,
            CompressedByteObject(_) => dt::COMPRESSED_BYTE_OBJECT,
            DataArray(_) => dt::DATA_ARRAY,
            DataType(_) => dt::DATA_TYPE,
            InfoDirectives(_) => dt::INFO_DIRECTIVES,
            Persist(_) => dt::PERSIST,
            Scope(_) => dt::SCOPE,
            Range(_) => dt::DATA_RANGE,
            Command(_) => dt::COMMAND,
            AllocDirective(_) => dt::ALLOC_DIRECTIVE,
            IofChannel(_) => dt::IOF_CHANNEL,
            Envar(_) => dt::ENVAR,
            DevType(_) => dt::DEVTYPE,
            LocType(_) => dt::LOCTYPE,
            AllocInherit(_) => dt::ALLOC_INHERIT,
            Unmodelled { kind, .. } => *kind,
        }
    }

    /// Writes the payload only (no type tag), as `pack_val` does.
    pub fn pack_payload(&self, enc: &mut Encoder) -> Result<()> {
        use Value::*;
        enc.check_type(self.data_type())?;
        match self {
            Undef => {}
            Bool(b) => enc.put_u8(u8::from(*b)),
            Byte(v) | Uint8(v) | ProcState(v) | JobState(v) | LinkState(v) | Persist(v)
            | Scope(v) | Range(v) | Command(v) | AllocDirective(v) => enc.put_u8(*v),
            Int8(v) => enc.put_u8(*v as u8),
            String(s) | ProcNspace(s) => enc.put_string(Some(s))?,
            NullString => enc.put_string(None)?,
            Size(v) | Uint64(v) | Time(v) | DevType(v) => enc.put_u64(*v),
            Pid(p) => pack_pids(enc, &[*p])?,
            Int(v) | Int32(v) => enc.put_i32(*v),
            Int16(v) => enc.put_i16(*v),
            Int64(v) => enc.put_i64(*v),
            Uint(v) => enc.put_i32(*v as i32),
            Uint16(v) | IofChannel(v) | DataType(v) | LocType(v) => enc.put_u16(*v),
            Uint32(v) | Rank(v) => enc.put_u32(*v),
            Float(f) => enc.put_string(Some(&c_fixed6(f64::from(*f))))?,
            Double(f) => enc.put_string(Some(&c_fixed6(*f)))?,
            Timeval(t) => t.pack_body(enc)?,
            Status(s) => enc.put_i32(s.0),
            Proc(p) => p.pack_body(enc)?,
            ProcInfo(p) => p.pack_body(enc)?,
            ByteObject(b) | CompressedString(b) | CompressedByteObject(b) => enc.put_bytes(b),
            DataArray(a) => a.pack_body(enc)?,
            InfoDirectives(f) => enc.put_u32(f.0),
            Envar(e) => e.pack_body(enc)?,
            AllocInherit(a) => enc.put_u8(a.0),
            Unmodelled { raw, .. } => enc.put_raw(raw),
        }
        Ok(())
    }

    /// Reads the payload of a value whose type tag `t` was already read.
    pub fn unpack_payload(dec: &mut Decoder, t: DataType) -> Result<Value> {
        use Value as V;
        Ok(match t {
            dt::UNDEF => V::Undef,
            dt::BOOL => V::Bool(dec.get_u8()? != 0),
            dt::BYTE => V::Byte(dec.get_u8()?),
            dt::UINT8 => V::Uint8(dec.get_u8()?),
            dt::INT8 => V::Int8(dec.get_u8()? as i8),
            dt::PROC_STATE => V::ProcState(dec.get_u8()?),
            dt::JOB_STATE => V::JobState(dec.get_u8()?),
            dt::LINK_STATE => V::LinkState(dec.get_u8()?),
            dt::PERSIST => V::Persist(dec.get_u8()?),
            dt::SCOPE => V::Scope(dec.get_u8()?),
            dt::DATA_RANGE => V::Range(dec.get_u8()?),
            dt::COMMAND => V::Command(dec.get_u8()?),
            dt::ALLOC_DIRECTIVE => V::AllocDirective(dec.get_u8()?),
            dt::ALLOC_INHERIT => V::AllocInherit(AllocInheritance(dec.get_u8()?)),
            dt::STRING => match dec.get_string()? {
                Some(s) => V::String(s),
                None => V::NullString,
            },
            dt::PROC_NSPACE => V::ProcNspace(dec.get_string()?.unwrap_or_default()),
            dt::SIZE => V::Size(dec.get_u64()?),
            dt::UINT64 => V::Uint64(dec.get_u64()?),
            dt::TIME => V::Time(dec.get_u64()?),
            dt::DEVTYPE => V::DevType(dec.get_u64()?),
            dt::PID => V::Pid(unpack_pids(dec, 1)?.into_iter().next().unwrap_or_default()),
            dt::INT => V::Int(dec.get_i32()?),
            dt::INT32 => V::Int32(dec.get_i32()?),
            dt::INT16 => V::Int16(dec.get_i16()?),
            dt::INT64 => V::Int64(dec.get_i64()?),
            dt::UINT => V::Uint(dec.get_i32()? as u32),
            dt::UINT16 => V::Uint16(dec.get_u16()?),
            dt::IOF_CHANNEL => V::IofChannel(dec.get_u16()?),
            dt::DATA_TYPE => V::DataType(dec.get_u16()?),
            dt::LOCTYPE => V::LocType(dec.get_u16()?),
            dt::UINT32 => V::Uint32(dec.get_u32()?),
            dt::PROC_RANK => V::Rank(dec.get_u32()?),
            dt::FLOAT => V::Float(parse_c_float(dec.get_string()?)? as f32),
            dt::DOUBLE => V::Double(parse_c_float(dec.get_string()?)?),
            dt::TIMEVAL => V::Timeval(Timeval::unpack_body(dec)?),
            dt::STATUS => V::Status(Status(dec.get_i32()?)),
            dt::PROC => V::Proc(Proc::unpack_body(dec)?),
            dt::PROC_INFO => V::ProcInfo(ProcInfo::unpack_body(dec)?),
            dt::BYTE_OBJECT => V::ByteObject(dec.get_bytes()?),
            dt::COMPRESSED_STRING => V::CompressedString(dec.get_bytes()?),
            dt::COMPRESSED_BYTE_OBJECT => V::CompressedByteObject(dec.get_bytes()?),
            dt::DATA_ARRAY => V::DataArray(DataArray::unpack_body(dec)?),
            dt::INFO_DIRECTIVES => V::InfoDirectives(InfoFlags(dec.get_u32()?)),
            dt::ENVAR => V::Envar(Envar::unpack_body(dec)?),
            dt::PROC_CPUSET
            | dt::TOPO
            | dt::COORD
            | dt::GEOMETRY
            | dt::DEVICE_DIST
            | dt::ENDPOINT => {
                let start = dec.position();
                let all = dec.rest();
                skip_unmodelled(dec, t)?;
                V::Unmodelled {
                    kind: t,
                    raw: all[..dec.position() - start].to_vec(),
                }
            }
            other => {
                return Err(Error::new(
                    Status::ERR_UNKNOWN_DATA_TYPE,
                    format!(
                        "values of type {} ({other}) are not modelled by this codec",
                        type_name(other)
                    ),
                ))
            }
        })
    }

    /// The string, for `String` / `ProcNspace`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) | Value::ProcNspace(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an unsigned 64-bit number, for any non-negative integer
    /// variant.
    pub fn as_u64(&self) -> Option<u64> {
        use Value::*;
        match *self {
            Byte(v) | Uint8(v) => Some(u64::from(v)),
            Uint16(v) => Some(u64::from(v)),
            Uint32(v) | Uint(v) | Rank(v) | Pid(v) => Some(u64::from(v)),
            Uint64(v) | Size(v) | Time(v) => Some(v),
            Int8(v) => u64::try_from(v).ok(),
            Int16(v) => u64::try_from(v).ok(),
            Int32(v) | Int(v) => u64::try_from(v).ok(),
            Int64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as `u32`, when an integer variant holds one in range.
    pub fn as_u32(&self) -> Option<u32> {
        self.as_u64().and_then(|v| u32::try_from(v).ok())
    }

    /// The value as a signed 64-bit number, for any integer variant in range.
    pub fn as_i64(&self) -> Option<i64> {
        use Value::*;
        match *self {
            Int8(v) => Some(i64::from(v)),
            Int16(v) => Some(i64::from(v)),
            Int32(v) | Int(v) => Some(i64::from(v)),
            Int64(v) => Some(v),
            Status(s) => Some(i64::from(s.0)),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// The value as `f64`, for floating or integer variants.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Float(f) => Some(f64::from(f)),
            Value::Double(f) => Some(f),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The boolean, for `Bool` only.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The proc, for `Proc`.
    pub fn as_proc(&self) -> Option<&Proc> {
        match self {
            Value::Proc(p) => Some(p),
            _ => None,
        }
    }

    /// The data array, for `DataArray`.
    pub fn as_array(&self) -> Option<&DataArray> {
        match self {
            Value::DataArray(a) => Some(a),
            _ => None,
        }
    }

    /// The bytes of a byte object (plain or compressed).
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::ByteObject(b) | Value::CompressedString(b) | Value::CompressedByteObject(b) => {
                Some(b)
            }
            _ => None,
        }
    }

    /// The status, for `Status`.
    pub fn as_status(&self) -> Option<Status> {
        match *self {
            Value::Status(s) => Some(s),
            _ => None,
        }
    }

    /// Tri-state truth per `PMIx_Info_true` (spec 004): `Some(true)` /
    /// `Some(false)` for a boolean reading, `None` for "not a boolean"
    /// (`PMIX_NON_BOOL`). `Undef` and the NULL / blank string read true;
    /// strings starting with a digit read as that number being non-zero;
    /// "yes", "true", "y", "t", "enable..." read true and "no", "false",
    /// "n", "f", "disable..." false (case-insensitive, leading blanks
    /// skipped). As a Rust convenience integer variants read as non-zero.
    pub fn truth(&self) -> Option<bool> {
        match self {
            Value::Undef | Value::NullString => Some(true),
            Value::Bool(b) => Some(*b),
            Value::String(s) => string_truth(s),
            v => v.as_i64().map(|n| n != 0),
        }
    }

    /// `truth()` with "not a boolean" counted as false.
    pub fn is_true(&self) -> bool {
        self.truth().unwrap_or(false)
    }
}

/// Reads a string as a boolean the way `PMIx_Info_true` does.
fn string_truth(s: &str) -> Option<bool> {
    let t = s.trim_start();
    if t.is_empty() {
        return Some(true);
    }
    if t.as_bytes()[0].is_ascii_digit() {
        let digits: &str = &t[..t.bytes().take_while(u8::is_ascii_digit).count()];
        return Some(digits.bytes().any(|b| b != b'0'));
    }
    let l = t.to_ascii_lowercase();
    if l.starts_with("yes")
        || l.starts_with("true")
        || l == "y"
        || l == "t"
        || l.starts_with("enable")
    {
        Some(true)
    } else if l.starts_with("no")
        || l.starts_with("false")
        || l == "n"
        || l == "f"
        || l.starts_with("disable")
    {
        Some(false)
    } else {
        None
    }
}

impl Pack for Value {
    const DT: DataType = dt::VALUE;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        enc.enter()?;
        let r = enc
            .put_type(self.data_type())
            .and_then(|_| self.pack_payload(enc));
        enc.leave();
        r
    }
}

impl Unpack for Value {
    const DT: DataType = dt::VALUE;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        dec.enter()?;
        let r = dec.get_type().and_then(|t| Value::unpack_payload(dec, t));
        dec.leave();
        r
    }
}

/// `From` conversions into [`Value`].
macro_rules! from_value {
    ($($t:ty => $v:ident),* $(,)?) => {
        $(impl From<$t> for Value {
            fn from(x: $t) -> Self { Value::$v(x) }
        })*
    };
}

from_value!(
    bool => Bool, String => String, u64 => Uint64, u32 => Uint32, u16 => Uint16,
    u8 => Uint8, i64 => Int64, i32 => Int32, i16 => Int16, i8 => Int8, f32 => Float,
    f64 => Double, Proc => Proc, AllocInheritance => AllocInherit, Status => Status,
    DataArray => DataArray, Timeval => Timeval, Envar => Envar, ProcInfo => ProcInfo,
    InfoFlags => InfoDirectives,
);

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_string())
    }
}

impl From<Option<String>> for Value {
    fn from(s: Option<String>) -> Self {
        s.map(Value::String).unwrap_or(Value::NullString)
    }
}

impl From<usize> for Value {
    fn from(n: usize) -> Self {
        Value::Size(n as u64)
    }
}

impl From<()> for Value {
    fn from(_: ()) -> Self {
        Value::Undef
    }
}

/// Read past the payload of a registered type the codec does not model,
/// following OpenPMIx's field order: a cpuset is its CPU list string, a
/// topology its XML string; a coordinate a `UINT8` view, a `SIZE` and that
/// many `UINT32`s; a geometry a `SIZE` fabric id, uuid and OS name strings
/// and a `SIZE`-counted list of coordinates; a device distance uuid and OS
/// name strings, a `DEVTYPE` and two `UINT16`s; an endpoint uuid and OS name
/// strings and a `SIZE`-counted byte run.
fn skip_unmodelled(dec: &mut Decoder, t: DataType) -> Result<()> {
    let coord = |dec: &mut Decoder| -> Result<()> {
        dec.get_u8()?;
        let dims = dec.get_len("coordinate dimensions")?;
        for _ in 0..dims {
            dec.get_u32()?;
        }
        Ok(())
    };
    match t {
        dt::PROC_CPUSET | dt::TOPO => {
            dec.get_string()?;
        }
        dt::COORD => coord(dec)?,
        dt::GEOMETRY => {
            dec.get_u64()?;
            dec.get_string()?;
            dec.get_string()?;
            let n = dec.get_len("geometry coordinates")?;
            for _ in 0..n {
                coord(dec)?;
            }
        }
        dt::DEVICE_DIST => {
            dec.get_string()?;
            dec.get_string()?;
            dec.get_u64()?;
            dec.get_u16()?;
            dec.get_u16()?;
        }
        dt::ENDPOINT => {
            dec.get_string()?;
            dec.get_string()?;
            dec.get_bytes()?;
        }
        other => {
            return Err(Error::new(
                Status::ERR_UNKNOWN_DATA_TYPE,
                format!("no rule to read past {}", type_name(other)),
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthiness() {
        assert!(Value::Undef.is_true());
        assert!(Value::Bool(true).is_true());
        assert!(!Value::Bool(false).is_true());
        assert!(Value::from("TRUE").is_true());
        assert!(Value::from("t").is_true());
        assert!(!Value::from("false").is_true());
        assert!(!Value::from("f").is_true());
        assert!(Value::Uint32(3).is_true());
        assert!(!Value::Int64(0).is_true());
        assert!(!Value::Proc(Proc::new("x", 0)).is_true());
        assert_eq!(Value::from("maybe").truth(), None);
        assert_eq!(Value::from("  ").truth(), Some(true));
        assert_eq!(Value::from("0").truth(), Some(false));
        assert_eq!(Value::from("12").truth(), Some(true));
        assert_eq!(Value::from("Disabled").truth(), Some(false));
        assert_eq!(Value::NullString.truth(), Some(true));
    }

    #[test]
    fn accessors() {
        assert_eq!(Value::Uint8(7).as_u32(), Some(7));
        assert_eq!(Value::Int32(-1).as_u64(), None);
        assert_eq!(Value::Int32(-1).as_i64(), Some(-1));
        assert_eq!(Value::from("x").as_str(), Some("x"));
        assert_eq!(Value::from(None::<String>), Value::NullString);
    }
}
