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

/// A request is NEW unless it says otherwise.
impl Default for Directive {
    fn default() -> Self {
        Self::New
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_is_named() {
        // Codes round-trip: `proto::enums`.
        assert_eq!(Directive::ReqCancel.code(), 5);
        assert_eq!(Directive::received(9), crate::proto::Received::Unknown(9));
        assert_eq!(Directive::ReqCancel.pmix_name(), "PMIX_ALLOC_REQ_CANCEL");
    }
}
