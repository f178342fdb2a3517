//! Rust equivalents of the OpenPMIx helper APIs of spec 004 (key, nspace,
//! rank and proc checks, value comparison, info truth).

use super::{Info, Proc, Value, RANK_INVALID, RANK_WILDCARD};
use std::cmp::Ordering;

/// `PMIX_MAX_NSLEN`: longest namespace a C peer stores.
pub const MAX_NSLEN: usize = 255;
/// `PMIX_MAX_KEYLEN`: longest key a C peer stores.
pub const MAX_KEYLEN: usize = 511;
/// The invalid-namespace sentinel: the empty namespace.
pub const NSPACE_INVALID: &str = "";

/// `PMIx_Info_true`: the info's value read as a boolean ("not a boolean"
/// counts as false). See [`Value::truth`].
pub fn info_true(info: &Info) -> bool {
    info.value.is_true()
}

/// Tri-state variant of [`info_true`]: `None` is `PMIX_NON_BOOL`.
pub fn info_bool(info: &Info) -> Option<bool> {
    info.value.truth()
}

/// Result of [`value_compare`] (`pmix_value_cmp_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueCmp {
    /// `PMIX_EQUAL`
    Equal,
    /// `PMIX_VALUE1_GREATER`: the left value is greater.
    Left,
    /// `PMIX_VALUE2_GREATER`: the right value is greater.
    Right,
    /// `PMIX_VALUE_TYPE_DIFFERENT`: the values have different types.
    TypeDifferent,
    /// `PMIX_VALUE_INCOMPATIBLE_OBJECTS`: same type, but not comparable
    /// objects (e.g. data arrays of different element types).
    IncompatibleObjects,
    /// `PMIX_VALUE_COMPARISON_NOT_AVAIL`: unequal and unordered.
    ComparisonNotAvail,
}

impl From<Ordering> for ValueCmp {
    fn from(o: Ordering) -> Self {
        match o {
            Ordering::Less => ValueCmp::Right,
            Ordering::Equal => ValueCmp::Equal,
            Ordering::Greater => ValueCmp::Left,
        }
    }
}

/// `PMIx_Value_compare`: orders two values of the same type. Numbers
/// compare numerically, strings bytewise (the NULL string sorts first),
/// byte objects by size then bytes, procs by nspace then rank, timevals by
/// time; other structured values are only tested for equality.
pub fn value_compare(a: &Value, b: &Value) -> ValueCmp {
    use Value as V;
    if a.data_type() != b.data_type() {
        return ValueCmp::TypeDifferent;
    }
    match (a, b) {
        (V::Undef, V::Undef) => ValueCmp::Equal,
        (V::NullString, V::NullString) => ValueCmp::Equal,
        (V::NullString, V::String(_)) => ValueCmp::Right,
        (V::String(_), V::NullString) => ValueCmp::Left,
        (V::String(x), V::String(y)) | (V::ProcNspace(x), V::ProcNspace(y)) => x.cmp(y).into(),
        (V::Bool(x), V::Bool(y)) => x.cmp(y).into(),
        (V::Float(x), V::Float(y)) => float_cmp(f64::from(*x), f64::from(*y)),
        (V::Double(x), V::Double(y)) => float_cmp(*x, *y),
        (V::ByteObject(x), V::ByteObject(y))
        | (V::CompressedString(x), V::CompressedString(y))
        | (V::CompressedByteObject(x), V::CompressedByteObject(y)) => {
            x.len().cmp(&y.len()).then_with(|| x.cmp(y)).into()
        }
        (V::Proc(x), V::Proc(y)) => x.nspace.cmp(&y.nspace).then(x.rank.cmp(&y.rank)).into(),
        (V::Timeval(x), V::Timeval(y)) => (x.sec, x.usec).cmp(&(y.sec, y.usec)).into(),
        (V::Status(x), V::Status(y)) => x.0.cmp(&y.0).into(),
        (V::AllocInherit(x), V::AllocInherit(y)) => x.0.cmp(&y.0).into(),
        (V::InfoDirectives(x), V::InfoDirectives(y)) => x.0.cmp(&y.0).into(),
        (V::DataArray(x), V::DataArray(y)) => {
            if x.elem_type() != y.elem_type() {
                ValueCmp::IncompatibleObjects
            } else if x == y {
                ValueCmp::Equal
            } else {
                ValueCmp::ComparisonNotAvail
            }
        }
        _ => match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
            (_, _, Some(x), Some(y)) => x.cmp(&y).into(),
            (Some(x), Some(y), _, _) => x.cmp(&y).into(),
            _ if a == b => ValueCmp::Equal,
            _ => ValueCmp::ComparisonNotAvail,
        },
    }
}

/// Orders floats; NaN is unordered.
fn float_cmp(x: f64, y: f64) -> ValueCmp {
    x.partial_cmp(&y)
        .map(ValueCmp::from)
        .unwrap_or(ValueCmp::ComparisonNotAvail)
}

/// `PMIx_Check_key`: keys match when their first `MAX_KEYLEN` bytes agree.
pub fn check_key(a: &str, b: &str) -> bool {
    prefix(a, MAX_KEYLEN) == prefix(b, MAX_KEYLEN)
}

/// `PMIx_Check_reserved_key`: keys in the "pmix" namespace are reserved.
pub fn check_reserved_key(key: &str) -> bool {
    key.starts_with("pmix")
}

/// `PMIx_Nspace_invalid`: the empty namespace is invalid.
pub fn nspace_invalid(ns: &str) -> bool {
    ns.is_empty()
}

/// `PMIx_Check_nspace`: an invalid (empty) namespace on either side
/// matches anything; otherwise the first `MAX_NSLEN` bytes must agree.
pub fn check_nspace(a: &str, b: &str) -> bool {
    nspace_invalid(a) || nspace_invalid(b) || prefix(a, MAX_NSLEN) == prefix(b, MAX_NSLEN)
}

/// `PMIx_Check_rank`: equal ranks match, and `RANK_WILDCARD` matches any.
pub fn check_rank(a: u32, b: u32) -> bool {
    a == b || a == RANK_WILDCARD || b == RANK_WILDCARD
}

/// `PMIx_Check_procid`: namespaces and ranks both match.
pub fn check_procid(a: &Proc, b: &Proc) -> bool {
    check_nspace(&a.nspace, &b.nspace) && check_rank(a.rank, b.rank)
}

/// `PMIx_Procid_invalid`: empty namespace or `RANK_INVALID`.
pub fn procid_invalid(p: &Proc) -> bool {
    nspace_invalid(&p.nspace) || p.rank == RANK_INVALID
}

/// The first `n` bytes of `s` (a C `strncmp` window).
fn prefix(s: &str, n: usize) -> &[u8] {
    let b = s.as_bytes();
    &b[..b.len().min(n)]
}

/// Whether the answer to a node's `PMIX_SERVER_URI` query names one:
/// PRRTE answers it only once the node's daemon has reported in.
pub fn names_server_uri(infos: &[Info]) -> bool {
    infos.iter().any(|i| {
        i.key == crate::proto::keys::SERVER_URI && i.value.as_str().is_some_and(|u| !u.is_empty())
    })
}

/// `PMIx_Argv_split` on `,`: the trimmed, non-empty items of a
/// comma-separated list (how PMIx servers send node and namespace lists).
pub fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

/// The names a list value carries: a string array, or one comma-separated
/// string; empty names are dropped.
pub fn value_list(v: &Value) -> Vec<String> {
    match v {
        Value::DataArray(a) => a
            .as_strings()
            .map(|s| s.iter().filter(|x| !x.is_empty()).cloned().collect())
            .unwrap_or_default(),
        v => split_list(&v.as_str().map_or_else(|| v.to_string(), String::from)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_from_strings_and_arrays() {
        assert_eq!(split_list(" a, ,b,"), vec!["a", "b"]);
        assert_eq!(value_list(&Value::from("n1,n2")), vec!["n1", "n2"]);
        assert!(value_list(&Value::from("")).is_empty());
    }
    use crate::codec::{DataArray, RANK_UNDEF};

    #[test]
    fn checks() {
        assert!(check_key("pmix.a", "pmix.a"));
        assert!(!check_key("pmix.a", "pmix.b"));
        let long_a = "k".repeat(600);
        let long_b = format!("{}x", "k".repeat(599));
        assert!(check_key(&long_a, &long_b));
        assert!(check_reserved_key("pmix.alloc.id"));
        assert!(!check_reserved_key("my.key"));
        assert!(nspace_invalid(NSPACE_INVALID));
        assert!(check_nspace("", "abc"));
        assert!(check_nspace("abc", "abc"));
        assert!(!check_nspace("abc", "abd"));
        assert!(check_rank(3, 3));
        assert!(check_rank(RANK_WILDCARD, 3));
        assert!(!check_rank(RANK_UNDEF, 3));
        assert!(procid_invalid(&Proc::new("", 0)));
        assert!(procid_invalid(&Proc::new("a", RANK_INVALID)));
        assert!(!procid_invalid(&Proc::new("a", 0)));
        assert!(check_procid(
            &Proc::new("a", 1),
            &Proc::new("a", RANK_WILDCARD)
        ));
    }

    #[test]
    fn compare() {
        assert_eq!(
            value_compare(&Value::Uint32(1), &Value::Uint32(2)),
            ValueCmp::Right
        );
        assert_eq!(
            value_compare(&Value::Int64(-1), &Value::Int64(-5)),
            ValueCmp::Left
        );
        assert_eq!(
            value_compare(&Value::from("a"), &Value::from("a")),
            ValueCmp::Equal
        );
        assert_eq!(
            value_compare(&Value::NullString, &Value::from("a")),
            ValueCmp::Right
        );
        assert_eq!(
            value_compare(&Value::Uint32(1), &Value::Int32(1)),
            ValueCmp::TypeDifferent
        );
        assert_eq!(
            value_compare(&Value::Double(f64::NAN), &Value::Double(1.0)),
            ValueCmp::ComparisonNotAvail
        );
        let a = Value::DataArray(DataArray::strings(["x"]));
        let b = Value::DataArray(DataArray::procs(vec![]));
        assert_eq!(value_compare(&a, &b), ValueCmp::IncompatibleObjects);
        assert_eq!(value_compare(&a, &a.clone()), ValueCmp::Equal);
        assert!(info_true(&Info::new("flag", ())));
        assert_eq!(info_bool(&Info::new("flag", "perhaps")), None);
    }
}
