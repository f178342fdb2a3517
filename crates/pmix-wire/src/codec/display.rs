//! Human-readable `Display` for values, infos, procs and friends.

use super::data::{DataArray, Info, Value};
use super::structs::{AllocInheritance, Envar, Proc, ProcInfo, Timeval};
use super::types::{
    type_name, RANK_INVALID, RANK_LOCAL_NODE, RANK_LOCAL_PEERS, RANK_UNDEF, RANK_WILDCARD,
};
use std::fmt;

/// Writes a rank, naming the sentinels.
pub(crate) fn fmt_rank(f: &mut fmt::Formatter<'_>, r: u32) -> fmt::Result {
    match r {
        RANK_UNDEF => f.write_str("UNDEF"),
        RANK_WILDCARD => f.write_str("WILDCARD"),
        RANK_LOCAL_NODE => f.write_str("LOCAL_NODE"),
        RANK_INVALID => f.write_str("INVALID"),
        RANK_LOCAL_PEERS => f.write_str("LOCAL_PEERS"),
        r => write!(f, "{r}"),
    }
}

/// Writes bytes as lowercase hex.
fn fmt_hex(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    b.iter().try_for_each(|x| write!(f, "{x:02x}"))
}

/// Writes a comma-separated list.
fn fmt_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    f.write_str("[")?;
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{x}")?;
    }
    f.write_str("]")
}

impl fmt::Display for Proc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.nspace)?;
        fmt_rank(f, self.rank)
    }
}

impl fmt::Display for AllocInheritance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Timeval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}", self.sec, self.usec)
    }
}

impl fmt::Display for Envar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={} (sep '{}')",
            self.name,
            self.value,
            char::from(self.separator)
        )
    }
}

impl fmt::Display for ProcInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} host={} exe={} pid={} state={}",
            self.proc,
            self.hostname.as_deref().unwrap_or("(null)"),
            self.executable_name.as_deref().unwrap_or("(null)"),
            self.pid,
            self.state
        )
    }
}

impl fmt::Display for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)?;
        if self.is_required() {
            f.write_str(" (required)")?;
        }
        Ok(())
    }
}

impl fmt::Display for DataArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataArray::Strings(v) => fmt_list(f, v),
            DataArray::Procs(v) => fmt_list(f, v),
            DataArray::Infos(v) => fmt_list(f, v),
            DataArray::Values(v) | DataArray::Scalars(_, v) => fmt_list(f, v),
            DataArray::Apps(v) => write!(f, "[{} app(s)]", v.len()),
            DataArray::Queries(v) => write!(f, "[{} query(ies)]", v.len()),
            DataArray::PData(v) => write!(f, "[{} pdata]", v.len()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Value::*;
        match self {
            Undef => f.write_str("(undef)"),
            NullString => f.write_str("(null)"),
            Bool(b) => write!(f, "{b}"),
            String(s) | ProcNspace(s) => f.write_str(s),
            Byte(v) | Uint8(v) | ProcState(v) | JobState(v) | LinkState(v) | Persist(v)
            | Scope(v) | Range(v) | Command(v) | AllocDirective(v) => write!(f, "{v}"),
            Int8(v) => write!(f, "{v}"),
            Int16(v) => write!(f, "{v}"),
            Int(v) | Int32(v) => write!(f, "{v}"),
            Int64(v) => write!(f, "{v}"),
            Uint16(v) | IofChannel(v) | LocType(v) => write!(f, "{v}"),
            Uint(v) | Uint32(v) | Pid(v) => write!(f, "{v}"),
            Size(v) | Uint64(v) | Time(v) | DevType(v) => write!(f, "{v}"),
            Rank(r) => fmt_rank(f, *r),
            Float(x) => write!(f, "{x}"),
            Double(x) => write!(f, "{x}"),
            Timeval(t) => write!(f, "{t}"),
            Status(s) => write!(f, "{s}"),
            Proc(p) => write!(f, "{p}"),
            ProcInfo(p) => write!(f, "{p}"),
            ByteObject(b) => fmt_hex(f, b),
            CompressedString(b) | CompressedByteObject(b) => {
                f.write_str("compressed:")?;
                fmt_hex(f, b)
            }
            DataArray(a) => write!(f, "{a}"),
            DataType(t) => f.write_str(type_name(*t)),
            InfoDirectives(d) => write!(f, "{:#x}", d.0),
            Envar(e) => write!(f, "{e}"),
            AllocInherit(a) => write!(f, "{a}"),
            Unmodelled { kind, raw } => write!(f, "<{}: {} bytes>", type_name(*kind), raw.len()),
        }
    }
}
