//! Identifiers: allocation ids, request ids, namespaces.

/// PMIx namespaces and our ids are bounded at 255 bytes (`PMIX_MAX_NSLEN`).
pub const MAX_ID_LEN: usize = 255;

/// Parse a non-empty identifier without whitespace or control characters,
/// at most [`MAX_ID_LEN`] bytes.
pub fn parse_id(s: &str) -> Result<String, String> {
    const FORMS: &str = "a non-empty identifier of at most 255 bytes without spaces, \
such as an allocation id printed by palloc";
    if s.is_empty() {
        return Err(format!("an empty id is not valid: expected {FORMS}"));
    }
    if s.len() > MAX_ID_LEN {
        return Err(format!(
            "`{}…` is too long: expected {FORMS}",
            &s[..s.floor_char_boundary_compat(16)]
        ));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "`{s}` contains spaces or control characters: expected {FORMS}"
        ));
    }
    Ok(s.to_string())
}

/// `str::floor_char_boundary` is unstable; this is the small piece we need.
trait FloorBoundary {
    fn floor_char_boundary_compat(&self, at: usize) -> usize;
}

impl FloorBoundary for str {
    fn floor_char_boundary_compat(&self, at: usize) -> usize {
        let mut i = at.min(self.len());
        while i > 0 && !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert_eq!(parse_id("alloc.7"), Ok("alloc.7".to_string()));
        assert!(parse_id("").is_err());
        assert!(parse_id("a b").is_err());
        assert!(parse_id(&"é".repeat(200)).unwrap_err().contains("too long"));
    }
}
