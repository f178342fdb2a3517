//! The encoder and decoder (a `pmix_buffer_t` without I/O) and the
//! [`Pack`] / [`Unpack`] traits every wire type implements.
//!
//! A pack call writes, like `PMIX_BFROPS_PACK(buf, src, n, TYPE)`, the item
//! count as a flex `INT32` and then the items. In a fully described buffer
//! the count is preceded by the `INT32` type tag and the items by the
//! declared type tag; nested fields never carry tags of their own.

use super::flex;
use super::types::{dt, type_name, DataType, WireVersion};
use crate::error::{Error, Result};
use crate::proto::status::Status;

/// Deepest nesting of data arrays / values accepted on decode or encode.
pub const MAX_DEPTH: u32 = 64;
/// Decoded memory allowed per byte of input: a decoder refuses to hold more
/// than `BUDGET_PER_BYTE × input + BUDGET_FLOOR` bytes of elements, so what
/// a peer makes us allocate is proportional to what it sent (the costliest
/// legitimate element, a small `pmix_value_t` in v61, takes about 44 times
/// its wire size).
pub const BUDGET_PER_BYTE: usize = 64;
/// See [`BUDGET_PER_BYTE`].
pub const BUDGET_FLOOR: usize = 1 << 20;
/// Most elements reserved up front for a wire count; beyond it a vector
/// grows only as elements are actually decoded.
pub const PREALLOC_MAX: usize = 1024;

/// The flex-encoded integers, one line a width: `put_*` on [`Encoder`] and
/// `get_*` on [`Decoder`] (a reader refuses a value wider than the type);
/// signed ones are zigzag-folded.
macro_rules! flex_ints {
    ($($(#[$doc:meta])* $put:ident, $get:ident: $t:ident, $bits:literal, $what:literal, $fold:ident;)*) => {
        impl Encoder {
            $(
                $(#[$doc])*
                pub fn $put(&mut self, v: $t) {
                    flex_ints!(@put $fold, self, v);
                }
            )*
        }

        impl Decoder<'_> {
            $(
                $(#[$doc])*
                pub fn $get(&mut self) -> Result<$t> {
                    let v = self.get_flex($bits, $what)?;
                    Ok(flex_ints!(@get $fold, v) as $t)
                }
            )*
        }
    };
    (@put unsigned, $enc:ident, $v:ident) => {
        flex::put_unsigned(&mut $enc.buf, u64::from($v))
    };
    (@put signed, $enc:ident, $v:ident) => {
        flex::put_signed(&mut $enc.buf, i64::from($v))
    };
    (@get unsigned, $v:ident) => {
        $v
    };
    (@get signed, $v:ident) => {
        flex::unfold_signed($v)
    };
}

flex_ints! {
    /// Flex `UINT16`.
    put_u16, get_u16: u16, 16, "a UINT16", unsigned;
    /// Flex `UINT32`.
    put_u32, get_u32: u32, 32, "a UINT32", unsigned;
    /// Flex `UINT64` / `SIZE`.
    put_u64, get_u64: u64, 64, "a UINT64", unsigned;
    /// Flex `INT16`.
    put_i16, get_i16: i16, 16, "an INT16", signed;
    /// Flex `INT32` (also `PMIX_INT`, `PMIX_UINT`, `PMIX_STATUS`).
    put_i32, get_i32: i32, 32, "an INT32", signed;
    /// Flex `INT64`.
    put_i64, get_i64: i64, 64, "an INT64", signed;
}

/// How deep an encoder or decoder is in nested data arrays / values.
#[derive(Debug, Clone, Copy, Default)]
struct Depth(u32);

impl Depth {
    /// One level deeper, refused (with `failure`) beyond [`MAX_DEPTH`].
    fn enter(&mut self, failure: Status) -> Result<()> {
        if self.0 >= MAX_DEPTH {
            return Err(Error::new(
                failure,
                format!("nesting deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.0 += 1;
        Ok(())
    }

    /// One level up.
    fn leave(&mut self) {
        self.0 = self.0.saturating_sub(1);
    }
}

/// A type that can be written to the wire.
pub trait Pack {
    /// The PMIx data type code this Rust type packs as.
    const DT: DataType;
    /// Writes one item's body (no count, no tag).
    fn pack_body(&self, enc: &mut Encoder) -> Result<()>;
    /// Writes a run of items as one `PACK_TYPE` call would. Types whose
    /// encoding is per call rather than per item (`PMIX_PID`) override it.
    fn pack_slice(items: &[Self], enc: &mut Encoder) -> Result<()>
    where
        Self: Sized,
    {
        items.iter().try_for_each(|i| i.pack_body(enc))
    }
}

/// A type that can be read from the wire.
pub trait Unpack: Sized {
    /// The PMIx data type code this Rust type unpacks from.
    const DT: DataType;
    /// Reads one item's body.
    fn unpack_body(dec: &mut Decoder) -> Result<Self>;
    /// Reads `n` items as one `UNPACK_TYPE` call would; `n` has already
    /// been bounded by the bytes remaining.
    fn unpack_many(dec: &mut Decoder, n: usize) -> Result<Vec<Self>> {
        let mut v = dec.alloc::<Self>(n)?;
        for _ in 0..n {
            v.push(Self::unpack_body(dec)?);
        }
        Ok(v)
    }
}

/// Serializes values into a byte buffer for one wire version.
#[derive(Debug, Clone)]
pub struct Encoder {
    buf: Vec<u8>,
    ver: WireVersion,
    described: bool,
    depth: Depth,
}

impl Encoder {
    /// A non-described (default) buffer for `ver`.
    pub fn new(ver: WireVersion) -> Self {
        Encoder {
            buf: Vec::new(),
            ver,
            described: false,
            depth: Depth::default(),
        }
    }

    /// A fully described buffer (type tags before counts and items).
    pub fn described(ver: WireVersion) -> Self {
        Encoder {
            described: true,
            ..Encoder::new(ver)
        }
    }

    /// An empty encoder of the same version and buffer kind as `other`
    /// (for a buffer packed inside another).
    pub fn like(other: &Encoder) -> Self {
        if other.described {
            Encoder::described(other.ver)
        } else {
            Encoder::new(other.ver)
        }
    }

    /// Packs a count followed by `items` (`PMIx_Data_pack(.., n, T::DT)`).
    pub fn pack<T: Pack>(&mut self, items: &[T]) -> Result<()> {
        let n = i32::try_from(items.len())
            .map_err(|_| Error::new(Status::ERR_BAD_PARAM, "too many items for one pack call"))?;
        self.check_type(T::DT)?;
        if self.described {
            self.put_type(dt::INT32)?;
        }
        self.put_i32(n);
        if self.described {
            self.put_type(T::DT)?;
        }
        T::pack_slice(items, self)
    }

    /// Packs a count of 1 and `item`.
    pub fn pack_one<T: Pack>(&mut self, item: &T) -> Result<()> {
        self.pack(std::slice::from_ref(item))
    }

    /// The underlying byte vector, for framing code that writes raw bytes.
    pub fn raw(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// The bytes packed so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Consumes the encoder, returning its bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// The wire version being written.
    pub fn version(&self) -> WireVersion {
        self.ver
    }

    /// Whether this is a fully described buffer.
    pub fn is_described(&self) -> bool {
        self.described
    }

    /// Refuses a type the negotiated version cannot carry.
    pub fn check_type(&self, t: DataType) -> Result<()> {
        if self.ver.supports(t) {
            Ok(())
        } else {
            Err(Error::new(
                Status::ERR_NOT_SUPPORTED,
                format!(
                    "data type {} ({t}) cannot be sent to a {} peer",
                    type_name(t),
                    self.ver.name()
                ),
            ))
        }
    }

    /// Writes a data type tag (flex `UINT16`) after checking the version
    /// can carry it.
    pub fn put_type(&mut self, t: DataType) -> Result<()> {
        self.check_type(t)?;
        self.put_u16(t);
        Ok(())
    }

    /// Writes one raw byte.
    pub fn put_u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// Writes raw bytes.
    pub fn put_raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// A `PMIX_SIZE` holding a length.
    pub fn put_len(&mut self, n: usize) {
        self.put_u64(n as u64);
    }

    /// A `PMIX_STRING`: length (with terminator) then bytes and NUL; `None`
    /// is the NULL string (length 0). Interior NULs are refused.
    pub fn put_string(&mut self, s: Option<&str>) -> Result<()> {
        match s {
            None => {
                self.put_i32(0);
                Ok(())
            }
            Some(s) => {
                if s.as_bytes().contains(&0) {
                    return Err(Error::new(
                        Status::ERR_BAD_PARAM,
                        "string with an embedded NUL cannot be packed",
                    ));
                }
                let n = i32::try_from(s.len() + 1)
                    .map_err(|_| Error::new(Status::ERR_BAD_PARAM, "string too long to pack"))?;
                self.put_i32(n);
                self.put_raw(s.as_bytes());
                self.put_u8(0);
                Ok(())
            }
        }
    }

    /// A `PMIX_BYTE_OBJECT`: size then bytes.
    pub fn put_bytes(&mut self, b: &[u8]) {
        self.put_len(b.len());
        self.put_raw(b);
    }

    /// Enters one nesting level (data array / value), refusing depth beyond
    /// [`MAX_DEPTH`].
    pub(crate) fn enter(&mut self) -> Result<()> {
        self.depth.enter(Status::ERR_PACK_FAILURE)
    }

    /// Leaves a nesting level.
    pub(crate) fn leave(&mut self) {
        self.depth.leave();
    }
}

/// Deserializes values from a byte slice for one wire version.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
    ver: WireVersion,
    described: bool,
    depth: Depth,
    /// Bytes of elements still allowed (see [`BUDGET_PER_BYTE`]).
    budget: usize,
}

/// Shorthand for a read-past-end error.
fn short(what: &str) -> Error {
    Error::new(
        Status::ERR_UNPACK_READ_PAST_END_OF_BUFFER,
        format!("buffer ends inside {what}"),
    )
}

impl<'a> Decoder<'a> {
    /// Reads a non-described buffer.
    pub fn new(bytes: &'a [u8], ver: WireVersion) -> Self {
        Decoder {
            bytes,
            pos: 0,
            ver,
            described: false,
            depth: Depth::default(),
            budget: bytes
                .len()
                .saturating_mul(BUDGET_PER_BYTE)
                .saturating_add(BUDGET_FLOOR),
        }
    }

    /// Reads a fully described buffer.
    pub fn described(bytes: &'a [u8], ver: WireVersion) -> Self {
        Decoder {
            described: true,
            ..Decoder::new(bytes, ver)
        }
    }

    /// Unpacks a count and that many items; the count must be at most
    /// `max` and at most the bytes remaining.
    pub fn unpack<T: Unpack>(&mut self, max: usize) -> Result<Vec<T>> {
        if self.described {
            let t = self.get_type()?;
            if t != dt::INT32 {
                return Err(Error::new(
                    Status::ERR_UNPACK_FAILURE,
                    format!("expected the INT32 count tag, found {}", type_name(t)),
                ));
            }
        }
        let n = self.get_i32()?;
        let n = self.count(i64::from(n), "item count")?;
        if n > max {
            return Err(Error::new(
                Status::ERR_UNPACK_INADEQUATE_SPACE,
                format!("{n} items of {} but room for {max}", type_name(T::DT)),
            ));
        }
        if self.described {
            let t = self.get_type()?;
            if t != T::DT {
                return Err(Error::new(
                    Status::ERR_PACK_MISMATCH,
                    format!("found {} when expecting {}", type_name(t), type_name(T::DT)),
                ));
            }
        }
        T::unpack_many(self, n)
    }

    /// Unpacks exactly one item (the count must be 1).
    pub fn unpack_one<T: Unpack>(&mut self) -> Result<T> {
        let mut v = self.unpack::<T>(1)?;
        match v.pop() {
            Some(x) if v.is_empty() => Ok(x),
            _ => Err(Error::new(
                Status::ERR_UNPACK_FAILURE,
                format!("expected one {}, found none", type_name(T::DT)),
            )),
        }
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// True when every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Offset of the next unread byte.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The unread bytes.
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    /// The wire version being read.
    pub fn version(&self) -> WireVersion {
        self.ver
    }

    /// Whether this is a fully described buffer.
    pub fn is_described(&self) -> bool {
        self.described
    }

    /// Validates a wire-supplied element count: non-negative and no larger
    /// than the bytes remaining (every element costs at least one byte).
    pub fn count(&self, n: i64, what: &str) -> Result<usize> {
        if n < 0 {
            return Err(Error::new(
                Status::ERR_UNPACK_FAILURE,
                format!("negative {what} {n}"),
            ));
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n > self.remaining() {
            return Err(Error::new(
                Status::ERR_UNPACK_READ_PAST_END_OF_BUFFER,
                format!(
                    "{what} {n} exceeds the {} bytes remaining",
                    self.remaining()
                ),
            ));
        }
        Ok(n)
    }

    /// An empty vector for `n` wire-counted elements of `T`: charges
    /// `n × size_of::<T>()` against the decoder's memory budget (refusing a
    /// count that would exceed it) and reserves at most [`PREALLOC_MAX`].
    pub fn alloc<T>(&mut self, n: usize) -> Result<Vec<T>> {
        let cost = n.saturating_mul(std::mem::size_of::<T>().max(1));
        if cost > self.budget {
            return Err(Error::new(
                Status::ERR_UNPACK_INADEQUATE_SPACE,
                format!(
                    "{n} elements would take {cost} bytes, over the {} bytes this {}-byte message may decode into",
                    self.budget,
                    self.bytes.len()
                ),
            ));
        }
        self.budget -= cost;
        Ok(Vec::with_capacity(n.min(PREALLOC_MAX)))
    }

    /// Reads one raw byte.
    pub fn get_u8(&mut self) -> Result<u8> {
        let b = *self.bytes.get(self.pos).ok_or_else(|| short("a byte"))?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads `n` raw bytes.
    pub fn get_raw(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(short("a byte run"));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads a flex value no wider than `bits` bits.
    fn get_flex(&mut self, bits: u32, what: &str) -> Result<u64> {
        let (v, n) = flex::get_unsigned(self.rest()).map_err(|_| short(what))?;
        if bits < 64 && v >> bits != 0 {
            return Err(Error::new(
                Status::ERR_UNPACK_FAILURE,
                format!("{what} value {v} wider than {bits} bits"),
            ));
        }
        self.pos += n;
        Ok(v)
    }

    /// A `PMIX_SIZE` element count, bounded by the bytes remaining.
    pub fn get_len(&mut self, what: &str) -> Result<usize> {
        let n = self.get_u64()?;
        self.count(i64::try_from(n).unwrap_or(i64::MAX), what)
    }

    /// A data type tag; unknown to this version is an error.
    pub fn get_type(&mut self) -> Result<DataType> {
        let t = self.get_u16()?;
        if !self.ver.supports(t) {
            return Err(Error::new(
                Status::ERR_UNKNOWN_DATA_TYPE,
                format!(
                    "type tag {t} ({}) is not part of {}",
                    type_name(t),
                    self.ver
                ),
            ));
        }
        Ok(t)
    }

    /// A `PMIX_STRING`; `None` for the NULL string. Bytes after the first
    /// NUL are dropped; invalid UTF-8 is replaced.
    pub fn get_string(&mut self) -> Result<Option<String>> {
        let n = self.get_i32()?;
        if n == 0 {
            return Ok(None);
        }
        let n = self.count(i64::from(n), "string length")?;
        let raw = self.get_raw(n)?;
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        Ok(Some(String::from_utf8_lossy(&raw[..end]).into_owned()))
    }

    /// A `PMIX_BYTE_OBJECT` body.
    pub fn get_bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.get_len("byte object size")?;
        Ok(self.get_raw(n)?.to_vec())
    }

    /// Enters one nesting level, refusing depth beyond [`MAX_DEPTH`].
    pub(crate) fn enter(&mut self) -> Result<()> {
        self.depth.enter(Status::ERR_UNPACK_FAILURE)
    }

    /// Leaves a nesting level.
    pub(crate) fn leave(&mut self) {
        self.depth.leave();
    }
}
