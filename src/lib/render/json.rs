//! One JSON object per line.

use serde::Serialize;
use std::io::{self, Write};

/// Write `value` as one compact JSON object followed by `\n`.
pub(crate) fn write_line<W: Write + ?Sized, T: Serialize + ?Sized>(
    w: &mut W,
    value: &T,
) -> io::Result<()> {
    serde_json::to_writer(&mut *w, value).map_err(io::Error::other)?;
    w.write_all(b"\n")
}

/// `value` as one compact JSON line (without the newline).
#[cfg(test)]
pub(crate) fn to_line<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("our records serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let mut out = Vec::new();
        write_line(&mut out, &serde_json::json!({"a": 1})).unwrap();
        write_line(&mut out, &serde_json::json!({"b": "x"})).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"a\":1}\n{\"b\":\"x\"}\n"
        );
        assert_eq!(to_line(&serde_json::json!([1])), "[1]");
    }
}
