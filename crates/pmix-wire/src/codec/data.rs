//! The PMIx data model's recursive types: a [`Value`] may hold a
//! [`DataArray`], whose elements may be infos, apps, queries or pdata, each
//! holding values again. Their definitions share this file; their wire
//! encoding is in [`super::value`], [`super::darray`] and [`super::info`].

use super::structs::{AllocInheritance, Envar, InfoFlags, Proc, ProcInfo, Timeval};
use super::types::DataType;
use crate::proto::Status;

/// A typed PMIx value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `PMIX_UNDEF`: no value.
    Undef,
    /// `PMIX_BOOL`
    Bool(bool),
    /// `PMIX_BYTE`
    Byte(u8),
    /// `PMIX_STRING`
    String(String),
    /// `PMIX_STRING` holding the NULL string.
    NullString,
    /// `PMIX_SIZE`
    Size(u64),
    /// `PMIX_PID`
    Pid(u32),
    /// `PMIX_INT`
    Int(i32),
    /// `PMIX_INT8`
    Int8(i8),
    /// `PMIX_INT16`
    Int16(i16),
    /// `PMIX_INT32`
    Int32(i32),
    /// `PMIX_INT64`
    Int64(i64),
    /// `PMIX_UINT`
    Uint(u32),
    /// `PMIX_UINT8`
    Uint8(u8),
    /// `PMIX_UINT16`
    Uint16(u16),
    /// `PMIX_UINT32`
    Uint32(u32),
    /// `PMIX_UINT64`
    Uint64(u64),
    /// `PMIX_FLOAT` (sent as `"%f"` text: six decimals survive)
    Float(f32),
    /// `PMIX_DOUBLE` (sent as `"%f"` text: six decimals survive)
    Double(f64),
    /// `PMIX_TIMEVAL`
    Timeval(Timeval),
    /// `PMIX_TIME`
    Time(u64),
    /// `PMIX_STATUS`
    Status(Status),
    /// `PMIX_PROC`
    Proc(Proc),
    /// `PMIX_PROC_RANK`
    Rank(u32),
    /// `PMIX_PROC_NSPACE`
    ProcNspace(String),
    /// `PMIX_PROC_STATE`
    ProcState(u8),
    /// `PMIX_JOB_STATE`
    JobState(u8),
    /// `PMIX_LINK_STATE`
    LinkState(u8),
    /// `PMIX_PROC_INFO`
    ProcInfo(ProcInfo),
    /// `PMIX_BYTE_OBJECT`
    ByteObject(Vec<u8>),
    /// `PMIX_COMPRESSED_STRING` (bytes kept compressed)
    CompressedString(Vec<u8>),
    /// `PMIX_COMPRESSED_BYTE_OBJECT` (bytes kept compressed)
    CompressedByteObject(Vec<u8>),
    /// `PMIX_DATA_ARRAY`
    DataArray(DataArray),
    /// `PMIX_DATA_TYPE`
    DataType(u16),
    /// `PMIX_INFO_DIRECTIVES`
    InfoDirectives(InfoFlags),
    /// `PMIX_PERSIST`
    Persist(u8),
    /// `PMIX_SCOPE`
    Scope(u8),
    /// `PMIX_DATA_RANGE`
    Range(u8),
    /// `PMIX_COMMAND`
    Command(u8),
    /// `PMIX_ALLOC_DIRECTIVE`
    AllocDirective(u8),
    /// `PMIX_IOF_CHANNEL`
    IofChannel(u16),
    /// `PMIX_ENVAR`
    Envar(Envar),
    /// `PMIX_DEVTYPE` (bit mask)
    DevType(u64),
    /// `PMIX_LOCTYPE` (locality bit mask)
    LocType(u16),
    /// `PMIX_ALLOC_INHERIT` (v61 only)
    AllocInherit(AllocInheritance),
    /// A registered type this codec reads past but does not model
    /// (`PMIX_PROC_CPUSET`, `PMIX_TOPO`, `PMIX_COORD`, `PMIX_GEOMETRY`,
    /// `PMIX_DEVICE_DIST`, `PMIX_ENDPOINT`): its type and its payload bytes as
    /// received, which pack back unchanged. A reply carrying one is read
    /// whole instead of failing.
    Unmodelled {
        /// The type tag.
        kind: DataType,
        /// The payload as it was on the wire.
        raw: Vec<u8>,
    },
}

/// A typed array. Decoding yields the specific variant for strings (when
/// none is NULL), procs, infos, values, apps, queries and pdata, and
/// `Scalars` for every other element type.
#[derive(Clone, Debug, PartialEq)]
pub enum DataArray {
    /// `PMIX_STRING` elements.
    Strings(Vec<String>),
    /// `PMIX_PROC` elements.
    Procs(Vec<Proc>),
    /// `PMIX_INFO` elements.
    Infos(Vec<Info>),
    /// `PMIX_VALUE` elements (each carries its own type tag).
    Values(Vec<Value>),
    /// `PMIX_APP` elements.
    Apps(Vec<App>),
    /// `PMIX_QUERY` elements.
    Queries(Vec<Query>),
    /// `PMIX_PDATA` elements.
    PData(Vec<PData>),
    /// Any other element type; every item's [`Value::data_type`] must equal
    /// the element type.
    Scalars(DataType, Vec<Value>),
}

/// A key / value attribute with directive flags (`pmix_info_t`).
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    /// The attribute key (at most `PMIX_MAX_KEYLEN` bytes on a C peer).
    pub key: String,
    /// Directive flags.
    pub flags: InfoFlags,
    /// The value.
    pub value: Value,
}

/// An application to spawn (`pmix_app_t`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct App {
    /// Executable.
    pub cmd: String,
    /// Argument vector (argv\[0\] included).
    pub argv: Vec<String>,
    /// Environment entries `NAME=value`.
    pub env: Vec<String>,
    /// Working directory, if any.
    pub cwd: Option<String>,
    /// Number of processes.
    pub maxprocs: i32,
    /// Per-app attributes.
    pub info: Vec<Info>,
}

/// A query (`pmix_query_t`): keys plus qualifiers.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Query {
    /// The keys asked for.
    pub keys: Vec<String>,
    /// Qualifiers narrowing the query.
    pub qualifiers: Vec<Info>,
}

/// Published data (`pmix_pdata_t`): owner, key, value.
#[derive(Clone, Debug, PartialEq)]
pub struct PData {
    /// Publishing process.
    pub proc: Proc,
    /// Key.
    pub key: String,
    /// Value.
    pub value: Value,
}
