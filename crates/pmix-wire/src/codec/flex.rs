//! The "flex128" variable-length integer encoding used by the modern bfrops
//! components for every integer wider than a byte.
//!
//! Unsigned values are written 7 bits at a time, least significant group
//! first, with the high bit of each byte flagging that another byte
//! follows. After eight such bytes (56 bits) a ninth byte, if needed, holds
//! the remaining 8 bits whole, so a 64-bit value never takes more than nine
//! bytes. Signed values are first folded so that small magnitudes of either
//! sign stay short: `n >= 0` becomes `2n`, `n < 0` becomes `2(!n) + 1`,
//! computed on the 64-bit sign extension of the value.

/// Longest encoding of a 64-bit value.
pub const MAX_FLEX_LEN: usize = 9;

/// Appends the encoding of `v` to `out`.
pub fn put_unsigned(out: &mut Vec<u8>, mut v: u64) {
    let mut n = 0;
    loop {
        let mut b = (v & 0x7f) as u8;
        v >>= 7;
        if v != 0 {
            b |= 0x80;
        }
        out.push(b);
        n += 1;
        if v == 0 || n == 8 {
            break;
        }
    }
    if n == 8 && v != 0 {
        out.push(v as u8);
    }
}

/// Folds a signed value into the unsigned form that is flex-encoded.
pub fn fold_signed(v: i64) -> u64 {
    let u = v as u64;
    if v < 0 {
        ((!u) << 1) | 1
    } else {
        u << 1
    }
}

/// Inverse of [`fold_signed`].
pub fn unfold_signed(u: u64) -> i64 {
    let sign = u & 1;
    let mut t = u >> 1;
    if sign != 0 {
        t = !t;
    }
    t as i64
}

/// Appends the encoding of a signed value.
pub fn put_signed(out: &mut Vec<u8>, v: i64) {
    put_unsigned(out, fold_signed(v));
}

/// Why a flex integer could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlexError {
    /// The input ended before the value did (including a continuation flag
    /// on the last available byte).
    Truncated,
}

/// Decodes one value from the front of `input`, returning it and the number
/// of bytes consumed. Never reads past `input`.
pub fn get_unsigned(input: &[u8]) -> Result<(u64, usize), FlexError> {
    let mut value: u64 = 0;
    for i in 0..8 {
        let b = *input.get(i).ok_or(FlexError::Truncated)?;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    let b = *input.get(8).ok_or(FlexError::Truncated)?;
    value |= u64::from(b) << 56;
    Ok((value, MAX_FLEX_LEN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: u64) -> Vec<u8> {
        let mut o = Vec::new();
        put_unsigned(&mut o, v);
        o
    }

    #[test]
    fn known_unsigned_encodings() {
        assert_eq!(enc(0), [0x00]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(128), [0x80, 0x01]);
        assert_eq!(enc(1000), [0xe8, 0x07]);
        assert_eq!(enc(u32::MAX as u64), [0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(
            enc((1 << 56) - 1),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]
        );
        assert_eq!(
            enc(1 << 56),
            [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]
        );
        assert_eq!(enc(u64::MAX), [0xff; 9]);
    }

    #[test]
    fn known_signed_folds() {
        assert_eq!(fold_signed(0), 0);
        assert_eq!(fold_signed(-1), 1);
        assert_eq!(fold_signed(1), 2);
        assert_eq!(fold_signed(-65), 129);
        assert_eq!(fold_signed(i64::MAX), u64::MAX - 1);
        assert_eq!(fold_signed(i64::MIN), u64::MAX);
        for v in [0, 1, -1, 63, -64, i64::MAX, i64::MIN, i32::MIN as i64] {
            assert_eq!(unfold_signed(fold_signed(v)), v);
        }
    }

    #[test]
    fn decode_round_trip_and_truncation() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            1 << 40,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
        ] {
            let e = enc(v);
            assert_eq!(get_unsigned(&e), Ok((v, e.len())));
            for cut in 0..e.len() {
                assert_eq!(get_unsigned(&e[..cut]), Err(FlexError::Truncated));
            }
        }
        // continuation flag on the last byte
        assert_eq!(get_unsigned(&[0x80]), Err(FlexError::Truncated));
        assert_eq!(get_unsigned(&[0xff, 0xff]), Err(FlexError::Truncated));
        // trailing data is not consumed
        assert_eq!(get_unsigned(&[0x05, 0x99]), Ok((5, 1)));
    }
}
