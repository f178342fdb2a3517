//! Data type codes, their names, wire versions and which types each
//! version registers.

use std::fmt;

/// A PMIx data type code (`pmix_data_type_t`, a `uint16_t`).
pub type DataType = u16;

/// Data type codes, as in `pmix_common.h` (minus the `PMIX_` prefix).
pub mod dt {
    /// `PMIX_UNDEF`
    pub const UNDEF: u16 = 0;
    /// `PMIX_BOOL`
    pub const BOOL: u16 = 1;
    /// `PMIX_BYTE`
    pub const BYTE: u16 = 2;
    /// `PMIX_STRING`
    pub const STRING: u16 = 3;
    /// `PMIX_SIZE`
    pub const SIZE: u16 = 4;
    /// `PMIX_PID`
    pub const PID: u16 = 5;
    /// `PMIX_INT`
    pub const INT: u16 = 6;
    /// `PMIX_INT8`
    pub const INT8: u16 = 7;
    /// `PMIX_INT16`
    pub const INT16: u16 = 8;
    /// `PMIX_INT32`
    pub const INT32: u16 = 9;
    /// `PMIX_INT64`
    pub const INT64: u16 = 10;
    /// `PMIX_UINT`
    pub const UINT: u16 = 11;
    /// `PMIX_UINT8`
    pub const UINT8: u16 = 12;
    /// `PMIX_UINT16`
    pub const UINT16: u16 = 13;
    /// `PMIX_UINT32`
    pub const UINT32: u16 = 14;
    /// `PMIX_UINT64`
    pub const UINT64: u16 = 15;
    /// `PMIX_FLOAT`
    pub const FLOAT: u16 = 16;
    /// `PMIX_DOUBLE`
    pub const DOUBLE: u16 = 17;
    /// `PMIX_TIMEVAL`
    pub const TIMEVAL: u16 = 18;
    /// `PMIX_TIME`
    pub const TIME: u16 = 19;
    /// `PMIX_STATUS`
    pub const STATUS: u16 = 20;
    /// `PMIX_VALUE`
    pub const VALUE: u16 = 21;
    /// `PMIX_PROC`
    pub const PROC: u16 = 22;
    /// `PMIX_APP`
    pub const APP: u16 = 23;
    /// `PMIX_INFO`
    pub const INFO: u16 = 24;
    /// `PMIX_PDATA`
    pub const PDATA: u16 = 25;
    /// `PMIX_BUFFER` (internal)
    pub const BUFFER: u16 = 26;
    /// `PMIX_BYTE_OBJECT`
    pub const BYTE_OBJECT: u16 = 27;
    /// `PMIX_KVAL`
    pub const KVAL: u16 = 28;
    /// `PMIX_PERSIST`
    pub const PERSIST: u16 = 30;
    /// `PMIX_POINTER`
    pub const POINTER: u16 = 31;
    /// `PMIX_SCOPE`
    pub const SCOPE: u16 = 32;
    /// `PMIX_DATA_RANGE`
    pub const DATA_RANGE: u16 = 33;
    /// `PMIX_COMMAND`
    pub const COMMAND: u16 = 34;
    /// `PMIX_INFO_DIRECTIVES`
    pub const INFO_DIRECTIVES: u16 = 35;
    /// `PMIX_DATA_TYPE`
    pub const DATA_TYPE: u16 = 36;
    /// `PMIX_PROC_STATE`
    pub const PROC_STATE: u16 = 37;
    /// `PMIX_PROC_INFO`
    pub const PROC_INFO: u16 = 38;
    /// `PMIX_DATA_ARRAY`
    pub const DATA_ARRAY: u16 = 39;
    /// `PMIX_PROC_RANK`
    pub const PROC_RANK: u16 = 40;
    /// `PMIX_QUERY`
    pub const QUERY: u16 = 41;
    /// `PMIX_COMPRESSED_STRING`
    pub const COMPRESSED_STRING: u16 = 42;
    /// `PMIX_ALLOC_DIRECTIVE`
    pub const ALLOC_DIRECTIVE: u16 = 43;
    /// `PMIX_IOF_CHANNEL`
    pub const IOF_CHANNEL: u16 = 45;
    /// `PMIX_ENVAR`
    pub const ENVAR: u16 = 46;
    /// `PMIX_COORD`
    pub const COORD: u16 = 47;
    /// `PMIX_REGATTR`
    pub const REGATTR: u16 = 48;
    /// `PMIX_REGEX`
    pub const REGEX: u16 = 49;
    /// `PMIX_JOB_STATE`
    pub const JOB_STATE: u16 = 50;
    /// `PMIX_LINK_STATE`
    pub const LINK_STATE: u16 = 51;
    /// `PMIX_PROC_CPUSET`
    pub const PROC_CPUSET: u16 = 52;
    /// `PMIX_GEOMETRY`
    pub const GEOMETRY: u16 = 53;
    /// `PMIX_DEVICE_DIST`
    pub const DEVICE_DIST: u16 = 54;
    /// `PMIX_ENDPOINT`
    pub const ENDPOINT: u16 = 55;
    /// `PMIX_TOPO`
    pub const TOPO: u16 = 56;
    /// `PMIX_DEVTYPE`
    pub const DEVTYPE: u16 = 57;
    /// `PMIX_LOCTYPE`
    pub const LOCTYPE: u16 = 58;
    /// `PMIX_COMPRESSED_BYTE_OBJECT`
    pub const COMPRESSED_BYTE_OBJECT: u16 = 59;
    /// `PMIX_PROC_NSPACE`
    pub const PROC_NSPACE: u16 = 60;
    /// `PMIX_PROC_STATS` (v41 only)
    pub const PROC_STATS: u16 = 61;
    /// `PMIX_DISK_STATS` (v41 only)
    pub const DISK_STATS: u16 = 62;
    /// `PMIX_NET_STATS` (v41 only)
    pub const NET_STATS: u16 = 63;
    /// `PMIX_NODE_STATS` (v41 only)
    pub const NODE_STATS: u16 = 64;
    /// `PMIX_DATA_BUFFER`
    pub const DATA_BUFFER: u16 = 65;
    /// `PMIX_STOR_MEDIUM`
    pub const STOR_MEDIUM: u16 = 66;
    /// `PMIX_STOR_ACCESS`
    pub const STOR_ACCESS: u16 = 67;
    /// `PMIX_STOR_PERSIST`
    pub const STOR_PERSIST: u16 = 68;
    /// `PMIX_STOR_ACCESS_TYPE`
    pub const STOR_ACCESS_TYPE: u16 = 69;
    /// `PMIX_DEVICE` (v51+)
    pub const DEVICE: u16 = 70;
    /// `PMIX_RESBLOCK_DIRECTIVE` (v51+)
    pub const RESBLOCK_DIRECTIVE: u16 = 71;
    /// `PMIX_RESOURCE_UNIT` (v51+)
    pub const RESOURCE_UNIT: u16 = 72;
    /// `PMIX_NODE_PID` (v61)
    pub const NODE_PID: u16 = 73;
    /// `PMIX_REGEX2` (v61)
    pub const REGEX2: u16 = 74;
    /// `PMIX_ALLOC_INHERIT` (v61)
    pub const ALLOC_INHERIT: u16 = 75;
}

/// (code, name) of every type code this crate knows a name for.
const TYPE_NAMES: &[(DataType, &str)] = &[
    (dt::UNDEF, "PMIX_UNDEF"),
    (dt::BOOL, "PMIX_BOOL"),
    (dt::BYTE, "PMIX_BYTE"),
    (dt::STRING, "PMIX_STRING"),
    (dt::SIZE, "PMIX_SIZE"),
    (dt::PID, "PMIX_PID"),
    (dt::INT, "PMIX_INT"),
    (dt::INT8, "PMIX_INT8"),
    (dt::INT16, "PMIX_INT16"),
    (dt::INT32, "PMIX_INT32"),
    (dt::INT64, "PMIX_INT64"),
    (dt::UINT, "PMIX_UINT"),
    (dt::UINT8, "PMIX_UINT8"),
    (dt::UINT16, "PMIX_UINT16"),
    (dt::UINT32, "PMIX_UINT32"),
    (dt::UINT64, "PMIX_UINT64"),
    (dt::FLOAT, "PMIX_FLOAT"),
    (dt::DOUBLE, "PMIX_DOUBLE"),
    (dt::TIMEVAL, "PMIX_TIMEVAL"),
    (dt::TIME, "PMIX_TIME"),
    (dt::STATUS, "PMIX_STATUS"),
    (dt::VALUE, "PMIX_VALUE"),
    (dt::PROC, "PMIX_PROC"),
    (dt::APP, "PMIX_APP"),
    (dt::INFO, "PMIX_INFO"),
    (dt::PDATA, "PMIX_PDATA"),
    (dt::BUFFER, "PMIX_BUFFER"),
    (dt::BYTE_OBJECT, "PMIX_BYTE_OBJECT"),
    (dt::KVAL, "PMIX_KVAL"),
    (dt::PERSIST, "PMIX_PERSIST"),
    (dt::POINTER, "PMIX_POINTER"),
    (dt::SCOPE, "PMIX_SCOPE"),
    (dt::DATA_RANGE, "PMIX_DATA_RANGE"),
    (dt::COMMAND, "PMIX_COMMAND"),
    (dt::INFO_DIRECTIVES, "PMIX_INFO_DIRECTIVES"),
    (dt::DATA_TYPE, "PMIX_DATA_TYPE"),
    (dt::PROC_STATE, "PMIX_PROC_STATE"),
    (dt::PROC_INFO, "PMIX_PROC_INFO"),
    (dt::DATA_ARRAY, "PMIX_DATA_ARRAY"),
    (dt::PROC_RANK, "PMIX_PROC_RANK"),
    (dt::QUERY, "PMIX_QUERY"),
    (dt::COMPRESSED_STRING, "PMIX_COMPRESSED_STRING"),
    (dt::ALLOC_DIRECTIVE, "PMIX_ALLOC_DIRECTIVE"),
    (dt::IOF_CHANNEL, "PMIX_IOF_CHANNEL"),
    (dt::ENVAR, "PMIX_ENVAR"),
    (dt::COORD, "PMIX_COORD"),
    (dt::REGATTR, "PMIX_REGATTR"),
    (dt::REGEX, "PMIX_REGEX"),
    (dt::JOB_STATE, "PMIX_JOB_STATE"),
    (dt::LINK_STATE, "PMIX_LINK_STATE"),
    (dt::PROC_CPUSET, "PMIX_PROC_CPUSET"),
    (dt::GEOMETRY, "PMIX_GEOMETRY"),
    (dt::DEVICE_DIST, "PMIX_DEVICE_DIST"),
    (dt::ENDPOINT, "PMIX_ENDPOINT"),
    (dt::TOPO, "PMIX_TOPO"),
    (dt::DEVTYPE, "PMIX_DEVTYPE"),
    (dt::LOCTYPE, "PMIX_LOCTYPE"),
    (dt::COMPRESSED_BYTE_OBJECT, "PMIX_COMPRESSED_BYTE_OBJECT"),
    (dt::PROC_NSPACE, "PMIX_PROC_NSPACE"),
    (dt::PROC_STATS, "PMIX_PROC_STATS"),
    (dt::DISK_STATS, "PMIX_DISK_STATS"),
    (dt::NET_STATS, "PMIX_NET_STATS"),
    (dt::NODE_STATS, "PMIX_NODE_STATS"),
    (dt::DATA_BUFFER, "PMIX_DATA_BUFFER"),
    (dt::STOR_MEDIUM, "PMIX_STOR_MEDIUM"),
    (dt::STOR_ACCESS, "PMIX_STOR_ACCESS"),
    (dt::STOR_PERSIST, "PMIX_STOR_PERSIST"),
    (dt::STOR_ACCESS_TYPE, "PMIX_STOR_ACCESS_TYPE"),
    (dt::DEVICE, "PMIX_DEVICE"),
    (dt::RESBLOCK_DIRECTIVE, "PMIX_RESBLOCK_DIRECTIVE"),
    (dt::RESOURCE_UNIT, "PMIX_RESOURCE_UNIT"),
    (dt::NODE_PID, "PMIX_NODE_PID"),
    (dt::REGEX2, "PMIX_REGEX2"),
    (dt::ALLOC_INHERIT, "PMIX_ALLOC_INHERIT"),
];

/// The header name of a data type (`"PMIX_STRING"`), or `"UNKNOWN"`.
pub fn type_name(t: DataType) -> &'static str {
    TYPE_NAMES
        .iter()
        .find(|(c, _)| *c == t)
        .map(|(_, n)| *n)
        .unwrap_or("UNKNOWN")
}

/// `PMIX_RANK_UNDEF`
pub const RANK_UNDEF: u32 = u32::MAX;
/// `PMIX_RANK_WILDCARD`: every rank of a namespace.
pub const RANK_WILDCARD: u32 = u32::MAX - 1;
/// `PMIX_RANK_LOCAL_NODE`: every rank on the local node.
pub const RANK_LOCAL_NODE: u32 = u32::MAX - 2;
/// `PMIX_RANK_INVALID`
pub const RANK_INVALID: u32 = u32::MAX - 3;
/// `PMIX_RANK_LOCAL_PEERS`: every rank of the namespace on the local node.
pub const RANK_LOCAL_PEERS: u32 = u32::MAX - 4;
/// `PMIX_RANK_VALID`: ranks below this are real ranks.
pub const RANK_VALID: u32 = u32::MAX - 50;

crate::proto::enums::pmix_enum! {
    /// A bfrops wire-format version ("modern" family, flex-encoded integers).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum WireVersion {
        /// `v41`: OpenPMIx 4.1 – 5.0 (PRRTE 3.0.x runs 5.0.x).
        V41 => ["v41"],
        /// `v51`: OpenPMIx 5.1 / 6.0.
        V51 => ["v51"],
        /// `v61`: OpenPMIx master (adds `PMIX_ALLOC_INHERIT`).
        V61 => ["v61"],
    }
    strings {
        /// The version string used in the handshake (`"v41"` ...).
        name,
    }
}

/// Types registered by the v41 component (OpenPMIx v5.0.11).
fn v41_registers(t: DataType) -> bool {
    matches!(t, 1..=28 | 30..=43 | 45..=69)
}

/// Types registered by the v51 component (OpenPMIx master).
fn v51_registers(t: DataType) -> bool {
    matches!(t, 1..=28 | 30..=43 | 45..=60 | 65..=72)
}

/// Types registered by the v61 component (OpenPMIx master).
fn v61_registers(t: DataType) -> bool {
    matches!(t, 1..=28 | 30..=43 | 45..=60 | 65..=75)
}

impl WireVersion {
    /// What a fuzz input's first byte selects: the wire version (bit 0:
    /// `v41` or `v61`) and whether buffers are fully described (bit 1).
    /// Both ends' whole-stream fuzz entry points read it so.
    pub fn fuzz_selector(sel: u8) -> (WireVersion, bool) {
        let wire = if sel & 1 == 0 {
            WireVersion::V41
        } else {
            WireVersion::V61
        };
        (wire, sel & 2 != 0)
    }

    /// Parses `"v41"`, `"v51"`, `"v61"` (case-insensitive).
    pub fn from_name(s: &str) -> Option<WireVersion> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s))
    }

    /// The newest version this crate speaks.
    pub fn newest() -> WireVersion {
        WireVersion::V61
    }

    /// Every supported version, oldest first.
    pub fn all() -> [WireVersion; 3] {
        Self::ALL
    }

    /// Whether a peer speaking this version can carry data type `t`
    /// (the version's component registers it). `PMIX_UNDEF` is always
    /// allowed as a value tag.
    pub fn supports(self, t: DataType) -> bool {
        t == dt::UNDEF
            || match self {
                WireVersion::V41 => v41_registers(t),
                WireVersion::V51 => v51_registers(t),
                WireVersion::V61 => v61_registers(t),
            }
    }
}

impl fmt::Display for WireVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_tables() {
        assert!(WireVersion::V41.supports(dt::PROC_STATS));
        assert!(!WireVersion::V61.supports(dt::PROC_STATS));
        assert!(!WireVersion::V41.supports(dt::ALLOC_INHERIT));
        assert!(!WireVersion::V51.supports(dt::ALLOC_INHERIT));
        assert!(WireVersion::V61.supports(dt::ALLOC_INHERIT));
        assert!(!WireVersion::V61.supports(29));
        assert!(!WireVersion::V61.supports(44));
        assert!(!WireVersion::V61.supports(76));
        assert_eq!(WireVersion::from_name("V51"), Some(WireVersion::V51));
        assert_eq!(WireVersion::from_name("v3"), None);
        assert_eq!(WireVersion::newest().name(), "v61");
        assert_eq!(type_name(dt::ALLOC_INHERIT), "PMIX_ALLOC_INHERIT");
        assert_eq!(type_name(999), "UNKNOWN");
    }
}
