//! `pmix_alloc_inheritance_t` (`PMIX_ALLOC_INHERITANCE`): what happens to a
//! reservation when its owner ends; the one model used by the flags, the wire
//! values, pdvm's rules and the output.

use super::enums::pmix_enum;

pmix_enum! {
    /// The four dispositions of spec 001 §8.2.1.9.2, with their PMIx codes
    /// (`pmix_alloc_inheritance_t`: NONE=1, CHILD=2, DEFAULT=3, CHILD_DEFAULT=4).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Inheritance: u8 {
        /// Released to the scheduler when the owning namespace ends.
        None = 1 => ["none", "PMIX_ALLOC_INHERIT_NONE", "NONE"],
        /// Released to the scheduler when the last derived child ends.
        Child = 2 => ["child", "PMIX_ALLOC_INHERIT_CHILD", "CHILD"],
        /// Unreserved in the session when the owning namespace ends (the default).
        Default = 3 => ["default", "PMIX_ALLOC_INHERIT_DEFAULT", "DEFAULT"],
        /// Unreserved in the session when the last derived child ends.
        ChildDefault = 4 => [
            "child-default",
            "PMIX_ALLOC_INHERIT_CHILD_DEFAULT",
            "CHILD_DEFAULT",
        ],
    }
    strings {
        /// The lower-case word used on our command lines and in JSON.
        word,
        /// The PMIx constant name.
        pmix_name,
        /// The word `PMIx_Alloc_inheritance_string` gives (`NONE`, `CHILD`,
        /// `DEFAULT`, `CHILD_DEFAULT`).
        spec_word,
    }
}

/// The valid words, quoted in error messages.
pub const INHERIT_FORMS: &str = "none, child, default or child-default \
(case-insensitive; `_` may replace `-`; the PMIX_ALLOC_INHERIT_ prefix is allowed)";

impl Inheritance {
    /// The rule named by any accepted spelling: our word, the spec word, or
    /// the PMIx constant name (case-insensitive, `_` for `-`).
    pub fn from_word(s: &str) -> Option<Self> {
        let norm = s.trim().to_ascii_lowercase().replace('_', "-");
        let word = norm.strip_prefix("pmix-alloc-inherit-").unwrap_or(&norm);
        Self::ALL.into_iter().find(|i| i.word() == word)
    }

    /// The spec word of a raw wire code, `UNSPECIFIED` for any other value.
    pub fn spec_word_of(code: u8) -> &'static str {
        Self::from_code(code).map_or("UNSPECIFIED", Self::spec_word)
    }

    /// Whether the disposition waits for the last derived child.
    pub fn waits_for_children(self) -> bool {
        matches!(self, Self::Child | Self::ChildDefault)
    }

    /// Whether the disposition returns the nodes to the scheduler (as
    /// opposed to leaving them unreserved in the session).
    pub fn returns_to_scheduler(self) -> bool {
        matches!(self, Self::None | Self::Child)
    }
}

/// Parse an inheritance word (any accepted spelling) into its rule.
pub fn parse_inheritance(s: &str) -> Result<Inheritance, String> {
    Inheritance::from_word(s)
        .ok_or_else(|| format!("`{s}` is not an inheritance rule: expected {INHERIT_FORMS}"))
}

/// In JSON a rule is its word (`"child-default"`), as on the command line.
impl serde::Serialize for Inheritance {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.word())
    }
}

/// Read back from its word (any accepted spelling).
impl<'de> serde::Deserialize<'de> for Inheritance {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::from_word(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("`{s}`: expected {INHERIT_FORMS}")))
    }
}

/// The rule a DVM applies when none is asked for (§8.2.1.9.2).
impl Default for Inheritance {
    fn default() -> Self {
        Self::Default
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `parse_inheritance` as a flag parser is checked with the others, in
    // `cli::parse`; codes round-trip: `proto::enums`.
    #[test]
    fn words() {
        assert_eq!(Inheritance::ChildDefault.spec_word(), "CHILD_DEFAULT");
        assert_eq!(Inheritance::spec_word_of(200), "UNSPECIFIED");
        assert_eq!(
            Inheritance::from_word("CHILD_DEFAULT"),
            Some(Inheritance::ChildDefault)
        );
        assert_eq!(Inheritance::from_word("sometimes"), None);
    }
}
