//! `serde::Serialize` for values, infos and procs: scalars as JSON scalars,
//! arrays as arrays, a proc as `{"nspace","rank"}`, inheritance as its word.

use super::data::{App, DataArray, Info, PData, Query, Value};
use super::structs::{Envar, Proc, ProcInfo, Timeval};
use super::types::type_name;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// Lowercase hex of a byte run.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `Serialize` for a struct as a JSON object: `|o| { "field": expr, ... }`,
/// each expression reading the struct through `o`, in output order.
macro_rules! json_object {
    ($ty:ident, |$o:ident| { $($name:literal: $val:expr),* $(,)? }) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let $o = self;
                let mut st = s.serialize_struct(stringify!($ty), [$($name),*].len())?;
                $(st.serialize_field($name, &$val)?;)*
                st.end()
            }
        }
    };
}

json_object!(Proc, |p| { "nspace": p.nspace, "rank": p.rank });
json_object!(Timeval, |t| { "sec": t.sec, "usec": t.usec });
json_object!(Envar, |e| {
    "name": e.name,
    "value": e.value,
    "separator": char::from(e.separator).to_string(),
});
json_object!(ProcInfo, |p| {
    "proc": p.proc,
    "hostname": p.hostname,
    "executable": p.executable_name,
    "pid": p.pid,
    "state": p.state,
});
json_object!(Info, |i| {
    "key": i.key,
    "type": type_name(i.value.data_type()),
    "value": i.value,
    "required": i.is_required(),
});
json_object!(App, |a| {
    "cmd": a.cmd,
    "argv": a.argv,
    "env": a.env,
    "cwd": a.cwd,
    "maxprocs": a.maxprocs,
    "info": a.info,
});
json_object!(Query, |q| { "keys": q.keys, "qualifiers": q.qualifiers });
json_object!(PData, |d| { "proc": d.proc, "key": d.key, "value": d.value });

impl Serialize for DataArray {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DataArray::Strings(v) => v.serialize(s),
            DataArray::Procs(v) => v.serialize(s),
            DataArray::Infos(v) => v.serialize(s),
            DataArray::Values(v) | DataArray::Scalars(_, v) => v.serialize(s),
            DataArray::Apps(v) => v.serialize(s),
            DataArray::Queries(v) => v.serialize(s),
            DataArray::PData(v) => v.serialize(s),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use Value::*;
        match self {
            Undef | NullString => s.serialize_none(),
            Bool(b) => s.serialize_bool(*b),
            String(x) | ProcNspace(x) => s.serialize_str(x),
            Byte(v) | Uint8(v) | ProcState(v) | JobState(v) | LinkState(v) | Persist(v)
            | Scope(v) | Range(v) | Command(v) | AllocDirective(v) => s.serialize_u8(*v),
            Int8(v) => s.serialize_i8(*v),
            Int16(v) => s.serialize_i16(*v),
            Int(v) | Int32(v) => s.serialize_i32(*v),
            Int64(v) => s.serialize_i64(*v),
            Uint16(v) | IofChannel(v) | LocType(v) => s.serialize_u16(*v),
            Uint(v) | Uint32(v) | Pid(v) | Rank(v) => s.serialize_u32(*v),
            Size(v) | Uint64(v) | Time(v) | DevType(v) => s.serialize_u64(*v),
            Float(x) => s.serialize_f32(*x),
            Double(x) => s.serialize_f64(*x),
            Timeval(t) => t.serialize(s),
            Status(st) => s.serialize_str(st.name()),
            Proc(p) => p.serialize(s),
            ProcInfo(p) => p.serialize(s),
            ByteObject(b) | CompressedString(b) | CompressedByteObject(b) => {
                s.serialize_str(&hex(b))
            }
            DataArray(a) => a.serialize(s),
            DataType(t) => s.serialize_str(type_name(*t)),
            InfoDirectives(d) => s.serialize_u32(d.0),
            Envar(e) => e.serialize(s),
            AllocInherit(a) => s.serialize_str(a.as_str()),
            Unmodelled { raw, .. } => s.serialize_str(&hex(raw)),
        }
    }
}
