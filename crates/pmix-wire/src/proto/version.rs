//! PMIx versions as servers announce them (`4.2.2`, `v5.0.11rc1`,
//! `6.1.0a1`): one parser, and one rule for a server that announced none.

/// A PMIx release's major and minor numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PmixVersion {
    /// Major number.
    pub major: u32,
    /// Minor number (0 when not given).
    pub minor: u32,
}

impl PmixVersion {
    /// What a server that announced no version is taken for: the oldest
    /// release the tools speak to (OpenPMIx 4.1), so that nothing newer is
    /// assumed of it.
    pub const OLDEST: PmixVersion = PmixVersion::new(4, 1);

    /// A version from its numbers.
    pub const fn new(major: u32, minor: u32) -> Self {
        PmixVersion { major, minor }
    }

    /// Parses an announced version; `None` when it does not start with a
    /// number (after an optional `v`).
    pub fn parse(s: &str) -> Option<PmixVersion> {
        let mut parts = s
            .trim()
            .trim_start_matches('v')
            .split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
        Some(PmixVersion { major, minor })
    }

    /// The version of a server that may not have announced one
    /// ([`Self::OLDEST`] then, or when the text is not a version).
    pub fn of(announced: Option<&str>) -> PmixVersion {
        announced
            .and_then(PmixVersion::parse)
            .unwrap_or(PmixVersion::OLDEST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announced_forms() {
        assert_eq!(PmixVersion::parse("4.2.2"), Some(PmixVersion::new(4, 2)));
        assert_eq!(
            PmixVersion::parse("v5.0.11rc1"),
            Some(PmixVersion::new(5, 0))
        );
        assert_eq!(PmixVersion::parse("6.1.0a1"), Some(PmixVersion::new(6, 1)));
        assert_eq!(PmixVersion::parse("7"), Some(PmixVersion::new(7, 0)));
        assert_eq!(PmixVersion::parse("master"), None);
        assert_eq!(PmixVersion::parse(""), None);
        assert_eq!(PmixVersion::of(None), PmixVersion::OLDEST);
        assert_eq!(PmixVersion::of(Some("x")), PmixVersion::OLDEST);
        assert!(PmixVersion::new(6, 1) > PmixVersion::new(5, 9));
    }
}
