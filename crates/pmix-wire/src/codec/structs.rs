//! The composite wire structures that carry no value: proc, info flags,
//! envar, timeval, proc info, and the allocation-inheritance enum (info,
//! app, query and pdata, which carry values, are in [`super::info`]).

use super::buffer::{Decoder, Encoder, Pack, Unpack};
use super::scalars::{pack_pids, unpack_pids, wire_as_inner, wire_fields};
use super::types::{dt, DataType, RANK_UNDEF};
use crate::error::{Error, Result};
use crate::proto::{Inheritance, Status};

use super::helpers::MAX_NSLEN;

/// Refuses a string a C peer would silently truncate.
pub(super) fn check_len(what: &str, s: &str, max: usize) -> Result<()> {
    if s.len() > max {
        return Err(Error::new(
            Status::ERR_BAD_PARAM,
            format!("{what} of {} bytes exceeds the {max}-byte limit", s.len()),
        ));
    }
    Ok(())
}

/// A process identifier (`pmix_proc_t`): namespace and rank.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Proc {
    /// Namespace (at most `PMIX_MAX_NSLEN` bytes on a C peer).
    pub nspace: String,
    /// Rank, or one of the `RANK_*` sentinels.
    pub rank: u32,
}

impl Proc {
    /// Builds a proc.
    pub fn new(nspace: impl Into<String>, rank: u32) -> Self {
        Proc {
            nspace: nspace.into(),
            rank,
        }
    }
}

impl Default for Proc {
    fn default() -> Self {
        Proc::new("", RANK_UNDEF)
    }
}

impl Pack for Proc {
    const DT: DataType = dt::PROC;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        check_len("namespace", &self.nspace, MAX_NSLEN)?;
        enc.put_string(Some(&self.nspace))?;
        enc.put_u32(self.rank);
        Ok(())
    }
}

impl Unpack for Proc {
    const DT: DataType = dt::PROC;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        let nspace = dec.get_string()?.unwrap_or_default();
        let rank = dec.get_u32()?;
        Ok(Proc { nspace, rank })
    }
}

/// Info directive flags (`pmix_info_directives_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct InfoFlags(pub u32);

impl InfoFlags {
    /// No flags.
    pub const NONE: InfoFlags = InfoFlags(0);
    /// `PMIX_INFO_REQD`: the receiver must honour the attribute.
    pub const REQD: InfoFlags = InfoFlags(0x0000_0001);
    /// `PMIX_INFO_ARRAY_END`: marks the last element of an info array.
    pub const ARRAY_END: InfoFlags = InfoFlags(0x0000_0002);
    /// `PMIX_INFO_REQD_PROCESSED`: a required attribute was processed.
    pub const REQD_PROCESSED: InfoFlags = InfoFlags(0x0000_0004);
    /// `PMIX_INFO_QUALIFIER`: qualifies the primary value.
    pub const QUALIFIER: InfoFlags = InfoFlags(0x0000_0008);
    /// `PMIX_INFO_PERSISTENT`: do not release the included value.
    pub const PERSISTENT: InfoFlags = InfoFlags(0x0000_0010);
    /// `PMIX_INFO_DIR_RESERVED`: bits reserved for host environments.
    pub const DIR_RESERVED: InfoFlags = InfoFlags(0xffff_0000);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: InfoFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Union of both flag sets.
    pub fn with(self, other: InfoFlags) -> InfoFlags {
        InfoFlags(self.0 | other.0)
    }
}

impl std::ops::BitOr for InfoFlags {
    type Output = InfoFlags;
    fn bitor(self, rhs: InfoFlags) -> InfoFlags {
        self.with(rhs)
    }
}

wire_as_inner!(InfoFlags(u32), dt::INFO_DIRECTIVES);

/// An environment-variable directive (`pmix_envar_t`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Envar {
    /// Variable name.
    pub name: String,
    /// Value.
    pub value: String,
    /// Separator used when prepending / appending (e.g. `b':'`).
    pub separator: u8,
}

wire_fields!(Envar, dt::ENVAR, name, value, separator);

/// A `struct timeval` (packed as two flex `INT64`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Timeval {
    /// Seconds.
    pub sec: i64,
    /// Microseconds.
    pub usec: i64,
}

wire_fields!(Timeval, dt::TIMEVAL, sec, usec);

/// Process information (`pmix_proc_info_t`; the exit code is not sent).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ProcInfo {
    /// The process.
    pub proc: Proc,
    /// Host it runs on.
    pub hostname: Option<String>,
    /// Executable name.
    pub executable_name: Option<String>,
    /// OS pid.
    pub pid: u32,
    /// `pmix_proc_state_t`.
    pub state: u8,
}

impl Pack for ProcInfo {
    const DT: DataType = dt::PROC_INFO;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        self.proc.pack_body(enc)?;
        enc.put_string(self.hostname.as_deref())?;
        enc.put_string(self.executable_name.as_deref())?;
        pack_pids(enc, &[self.pid])?;
        enc.put_u8(self.state);
        Ok(())
    }
}

impl Unpack for ProcInfo {
    const DT: DataType = dt::PROC_INFO;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        let proc = Proc::unpack_body(dec)?;
        let hostname = dec.get_string()?;
        let executable_name = dec.get_string()?;
        let pid = unpack_pids(dec, 1)?.into_iter().next().unwrap_or_default();
        let state = dec.get_u8()?;
        Ok(ProcInfo {
            proc,
            hostname,
            executable_name,
            pid,
            state,
        })
    }
}

/// Allocation inheritance rule (`pmix_alloc_inheritance_t`, type 75, one
/// byte on the wire; v61 only): the raw byte, so that values outside the
/// four rules of [`Inheritance`] survive decoding and can be refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AllocInheritance(pub u8);

impl AllocInheritance {
    /// `PMIX_ALLOC_INHERIT_NONE`.
    pub const NONE: AllocInheritance = AllocInheritance(Inheritance::None as u8);
    /// `PMIX_ALLOC_INHERIT_CHILD`.
    pub const CHILD: AllocInheritance = AllocInheritance(Inheritance::Child as u8);
    /// `PMIX_ALLOC_INHERIT_DEFAULT`.
    pub const DEFAULT: AllocInheritance = AllocInheritance(Inheritance::Default as u8);
    /// `PMIX_ALLOC_INHERIT_CHILD_DEFAULT`.
    pub const CHILD_DEFAULT: AllocInheritance = AllocInheritance(Inheritance::ChildDefault as u8);

    /// The converter word: `"NONE"`, `"CHILD"`, `"DEFAULT"`,
    /// `"CHILD_DEFAULT"`, or `"UNSPECIFIED"` for any other value.
    pub fn as_str(self) -> &'static str {
        Inheritance::spec_word_of(self.0)
    }

    /// Parses any spelling [`Inheritance::from_word`] accepts, or a number
    /// 1..=4.
    pub fn from_word(s: &str) -> Option<AllocInheritance> {
        Inheritance::from_word(s)
            .or_else(|| s.trim().parse().ok().and_then(Inheritance::from_code))
            .map(AllocInheritance::from)
    }

    /// The rule, when the value is one of the four defined ones.
    pub fn rule(self) -> Option<Inheritance> {
        Inheritance::from_code(self.0)
    }

    /// Whether the value is one of the four defined rules.
    pub fn is_known(self) -> bool {
        self.rule().is_some()
    }
}

impl From<Inheritance> for AllocInheritance {
    fn from(i: Inheritance) -> Self {
        AllocInheritance(i.code())
    }
}

wire_as_inner!(AllocInheritance(u8), dt::ALLOC_INHERIT);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inheritance_words() {
        for (v, word) in [
            (AllocInheritance::NONE, "NONE"),
            (AllocInheritance::CHILD, "CHILD"),
            (AllocInheritance::DEFAULT, "DEFAULT"),
            (AllocInheritance::CHILD_DEFAULT, "CHILD_DEFAULT"),
        ] {
            assert_eq!(v.as_str(), word);
        }
        for v in [0u8, 5, 42, 255] {
            assert_eq!(AllocInheritance(v).as_str(), "UNSPECIFIED");
        }
        for (word, code) in [
            ("child-default", 4),
            ("CHILD_DEFAULT", 4),
            ("pmix_alloc_inherit_none", 1),
            ("child", 2),
        ] {
            assert_eq!(
                AllocInheritance::from_word(word),
                Some(AllocInheritance(code)),
                "{word}"
            );
        }
        assert_eq!(AllocInheritance::from_word("sometimes"), None);
        assert_eq!(AllocInheritance(200).0, 200);
    }
}
