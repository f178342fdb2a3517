//! `serde::Serialize` for values, infos and procs: scalars as JSON scalars,
//! arrays as arrays, a proc as `{"nspace","rank"}`, inheritance as its word.

use super::darray::DataArray;
use super::structs::{App, Envar, Info, PData, Proc, ProcInfo, Query, Timeval};
use super::types::type_name;
use super::value::Value;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// Lowercase hex of a byte run.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Serialize for Proc {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Proc", 2)?;
        st.serialize_field("nspace", &self.nspace)?;
        st.serialize_field("rank", &self.rank)?;
        st.end()
    }
}

impl Serialize for Timeval {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Timeval", 2)?;
        st.serialize_field("sec", &self.sec)?;
        st.serialize_field("usec", &self.usec)?;
        st.end()
    }
}

impl Serialize for Envar {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Envar", 3)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("value", &self.value)?;
        st.serialize_field("separator", &char::from(self.separator).to_string())?;
        st.end()
    }
}

impl Serialize for ProcInfo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ProcInfo", 5)?;
        st.serialize_field("proc", &self.proc)?;
        st.serialize_field("hostname", &self.hostname)?;
        st.serialize_field("executable", &self.executable_name)?;
        st.serialize_field("pid", &self.pid)?;
        st.serialize_field("state", &self.state)?;
        st.end()
    }
}

impl Serialize for Info {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Info", 4)?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("type", type_name(self.value.data_type()))?;
        st.serialize_field("value", &self.value)?;
        st.serialize_field("required", &self.is_required())?;
        st.end()
    }
}

impl Serialize for App {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("App", 6)?;
        st.serialize_field("cmd", &self.cmd)?;
        st.serialize_field("argv", &self.argv)?;
        st.serialize_field("env", &self.env)?;
        st.serialize_field("cwd", &self.cwd)?;
        st.serialize_field("maxprocs", &self.maxprocs)?;
        st.serialize_field("info", &self.info)?;
        st.end()
    }
}

impl Serialize for Query {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Query", 2)?;
        st.serialize_field("keys", &self.keys)?;
        st.serialize_field("qualifiers", &self.qualifiers)?;
        st.end()
    }
}

impl Serialize for PData {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PData", 3)?;
        st.serialize_field("proc", &self.proc)?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("value", &self.value)?;
        st.end()
    }
}

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
