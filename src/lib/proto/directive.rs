//! `pmix_alloc_directive_t`: what an allocation request asks for.

use super::enums::pmix_enum;

pmix_enum! {
    /// The allocation directives of spec 001 §8.2.1 with their PMIx codes
    /// (1..=5).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Directive: u8 {
        /// `PMIX_ALLOC_NEW`: mint a new reservation.
        New = 1 => ["PMIX_ALLOC_NEW"],
        /// `PMIX_ALLOC_EXTEND`: add to an existing one.
        Extend = 2 => ["PMIX_ALLOC_EXTEND"],
        /// `PMIX_ALLOC_RELEASE`: give back (whole or part).
        Release = 3 => ["PMIX_ALLOC_RELEASE"],
        /// `PMIX_ALLOC_REAQUIRE`: take back what was lent.
        Reaquire = 4 => ["PMIX_ALLOC_REAQUIRE"],
        /// `PMIX_ALLOC_REQ_CANCEL`: cancel a queued request.
        ReqCancel = 5 => ["PMIX_ALLOC_REQ_CANCEL"],
    }
    strings {
        /// The constant's name as in the headers.
        pmix_name,
    }
}

/// The header name of a wire code, `PMIX_ALLOC_UNKNOWN` for any other value.
pub fn name(code: u8) -> &'static str {
    Directive::from_code(code).map_or("PMIX_ALLOC_UNKNOWN", Directive::pmix_name)
}

/// `PMIX_ALLOC_NEW` (1).
pub const NEW: u8 = Directive::New as u8;
/// `PMIX_ALLOC_EXTEND` (2).
pub const EXTEND: u8 = Directive::Extend as u8;
/// `PMIX_ALLOC_RELEASE` (3).
pub const RELEASE: u8 = Directive::Release as u8;
/// `PMIX_ALLOC_REAQUIRE` (4).
pub const REAQUIRE: u8 = Directive::Reaquire as u8;
/// `PMIX_ALLOC_REQ_CANCEL` (5).
pub const REQ_CANCEL: u8 = Directive::ReqCancel as u8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_is_named() {
        // Codes round-trip: `proto::enums`.
        for d in Directive::ALL {
            assert_eq!(name(d.code()), d.pmix_name());
        }
        assert_eq!(name(9), "PMIX_ALLOC_UNKNOWN");
        assert_eq!(REQ_CANCEL, 5);
    }
}
