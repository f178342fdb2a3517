//! The codec: a pure (no I/O) implementation of OpenPMIx's "modern" bfrops
//! wire format for versions `v41`, `v51` and `v61`, in both buffer kinds
//! (non-described and fully described).
//!
//! ```
//! use pmix_wire::codec::{Decoder, Encoder, Info, WireVersion};
//! let mut enc = Encoder::new(WireVersion::V41);
//! enc.pack(&[Info::required("pmix.alloc.nnodes", 4u64)]).unwrap();
//! let mut dec = Decoder::new(enc.bytes(), WireVersion::V41);
//! let infos: Vec<Info> = dec.unpack(16).unwrap();
//! assert_eq!(infos[0].value.as_u64(), Some(4));
//! ```

pub mod alloc;
pub mod alloc_message;
pub mod attrs;
mod buffer;
mod darray;
mod data;
mod display;
pub mod event_message;
pub mod flex;
pub mod handshake;
pub mod helpers;
mod info;
mod json;
mod kval;
pub mod query_message;
mod scalars;
pub mod spawn_message;
mod structs;
mod types;
mod value;

pub use buffer::{
    Decoder, Encoder, Pack, Unpack, BUDGET_FLOOR, BUDGET_PER_BYTE, MAX_DEPTH, PREALLOC_MAX,
};
pub use data::{App, DataArray, Info, PData, Query, Value};
pub use kval::{Bucket, Kval};
pub use scalars::{
    AllocDirective, ByteObject, Cmd, DataTypeTag, Int, IofChannel, JobState, NullableString,
    Persist, Pid, ProcNspace, ProcState, Range, Rank, Scope, Size, Time, Uint,
};
pub use structs::{AllocInheritance, Envar, InfoFlags, Proc, ProcInfo, Timeval};
pub use types::{
    dt, type_name, DataType, WireVersion, RANK_INVALID, RANK_LOCAL_NODE, RANK_LOCAL_PEERS,
    RANK_UNDEF, RANK_VALID, RANK_WILDCARD,
};
