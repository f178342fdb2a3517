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

pub use count::{parse_count, parse_count_u32, parse_nonneg_count};
pub use duration::{
    parse_connect_secs, parse_duration_secs, parse_time_limit, parse_time_limit_or_unlimited,
    parse_warn_secs, TimeLimit, DURATION_RULE,
};
pub use env::{parse_env, EnvSpec};
pub use ident::parse_id;
pub use memory::parse_mem_mb;
pub use nodelist::{
    expand_nodelist, parse_hostlist_arg, parse_nodelist, parse_nodelist_arg, NodeList, MAX_NODES,
};
pub use signal::parse_signal;

/// Table-driven checks shared by the parsers' tests: what a parser accepts,
/// and that what it refuses is refused with the valid forms in the message.
#[cfg(test)]
pub(crate) mod cases {
    use std::fmt::Debug;

    /// Asserts that `parse` turns each input into its value.
    pub(crate) fn accepts<T: PartialEq + Debug>(
        parse: impl Fn(&str) -> Result<T, String>,
        cases: &[(&str, T)],
    ) {
        for (input, want) in cases {
            assert_eq!(parse(input).as_ref(), Ok(want), "{input:?}");
        }
    }

    /// Asserts that `parse` refuses each input with a message containing
    /// `forms` (the valid forms it lists).
    pub(crate) fn refuses<T: Debug>(
        parse: impl Fn(&str) -> Result<T, String>,
        bad: &[&str],
        forms: &str,
    ) {
        for input in bad {
            let e = parse(input).expect_err(input);
            assert!(e.contains(forms), "{input:?}: {e}");
        }
    }

    #[test]
    fn inheritance_words() {
        use crate::proto::{parse_inheritance, Inheritance};
        accepts(
            parse_inheritance,
            &[
                ("none", Inheritance::None),
                ("CHILD", Inheritance::Child),
                ("Default", Inheritance::Default),
                ("child_default", Inheritance::ChildDefault),
                (
                    "PMIX_ALLOC_INHERIT_CHILD_DEFAULT",
                    Inheritance::ChildDefault,
                ),
            ],
        );
        refuses(parse_inheritance, &["children", ""], "child-default");
    }
}
