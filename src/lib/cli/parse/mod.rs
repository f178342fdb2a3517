//! Value parsers for the tools' flags.
//!
//! Every parser is a plain `fn(&str) -> Result<T, String>` so it can be used
//! as a clap `value_parser` and from hand-written parsing (pspawn's MPMD
//! segments). Error messages always list the valid forms, so a user who typed
//! something wrong learns what would have been accepted. All of them are pure
//! except [`nodelist::parse_nodelist`] with a `file:PATH` argument, which reads
//! that file (bounded in size).

pub mod count;
pub mod duration;
pub mod env;
pub mod ident;
pub mod memory;
pub mod nodelist;
pub mod signal;

pub use crate::proto::inherit::{parse_inheritance, Inheritance};
pub use count::{parse_count, parse_count_u32, parse_nonneg_count};
pub use duration::{
    parse_connect_secs, parse_duration_secs, parse_time_limit, parse_time_limit_or_unlimited,
    parse_warn_secs, TimeLimit, DURATION_RULE,
};
pub use env::{parse_env, EnvSpec};
pub use ident::parse_id;
pub use memory::parse_mem_mb;
pub use nodelist::{expand_nodelist, parse_nodelist, parse_nodelist_arg, NodeList, MAX_NODES};
pub use signal::parse_signal;
