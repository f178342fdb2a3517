//! Hostile and broken input: truncation at every offset, huge counts,
//! nonsense type tags, unterminated flex integers, runaway nesting.
//! Every case must come back as a typed error, never a panic.

use pmix_tools::codec::*;
use pmix_tools::proto::status::Status;
use std::path::PathBuf;

type DecodeFn = fn(&[u8], WireVersion) -> Result<(), pmix_tools::error::Error>;

fn dec<T: Unpack>(b: &[u8], v: WireVersion) -> Result<(), pmix_tools::error::Error> {
    let mut d = Decoder::new(b, v);
    d.unpack::<T>(usize::MAX).map(|_| ())
}

/// The Rust type each golden vector decodes as, keyed by name prefix.
fn decoder_for(name: &str) -> DecodeFn {
    let table: &[(&str, DecodeFn)] = &[
        ("bool_", dec::<bool>),
        ("byte_", dec::<u8>),
        ("uint8_", dec::<u8>),
        ("int8_", dec::<i8>),
        ("int16_", dec::<i16>),
        ("uint16_", dec::<u16>),
        ("int32_", dec::<i32>),
        ("uint32_", dec::<u32>),
        ("int64_", dec::<i64>),
        ("uint64_", dec::<u64>),
        ("int_set", dec::<Int>),
        ("uint_set", dec::<Uint>),
        ("size_", dec::<Size>),
        ("pid_", dec::<Pid>),
        ("float_", dec::<f32>),
        ("double_", dec::<f64>),
        ("timeval_", dec::<Timeval>),
        ("time_", dec::<Time>),
        ("status_", dec::<Status>),
        ("string_", dec::<NullableString>),
        ("bo_", dec::<ByteObject>),
        ("nspace_", dec::<ProcNspace>),
        ("proc_", dec::<Proc>),
        ("rank_", dec::<Rank>),
        ("pstate_", dec::<ProcState>),
        ("jstate_", dec::<JobState>),
        ("persist_", dec::<Persist>),
        ("scope_", dec::<Scope>),
        ("range_", dec::<Range>),
        ("command_", dec::<Cmd>),
        ("datatype_", dec::<DataTypeTag>),
        ("infodir_", dec::<InfoFlags>),
        ("allocdir_", dec::<AllocDirective>),
        ("iof_", dec::<IofChannel>),
        ("envar_", dec::<Envar>),
        ("pinfo_", dec::<ProcInfo>),
        ("info_", dec::<Info>),
        ("pdata_", dec::<PData>),
        ("app_", dec::<App>),
        ("query_", dec::<Query>),
        ("value_", dec::<Value>),
        ("darray_", dec::<DataArray>),
        ("inherit_", dec::<AllocInheritance>),
        ("unmodelled_", dec::<Value>),
    ];
    table
        .iter()
        .find(|(p, _)| name.starts_with(p))
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no decoder for vector {name}"))
}

fn vectors() -> Vec<(String, WireVersion, Vec<u8>)> {
    let mut out = Vec::new();
    for ver in [WireVersion::V41, WireVersion::V61] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(ver.name());
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("golden dir")
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            if p.extension().and_then(|x| x.to_str()) != Some("hex") {
                continue;
            }
            let name = p
                .file_stem()
                .and_then(|x| x.to_str())
                .unwrap_or_default()
                .to_string();
            let t = std::fs::read_to_string(&p)
                .expect("read")
                .trim()
                .to_string();
            let bytes = (0..t.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&t[i..i + 2], 16).expect("hex"))
                .collect();
            out.push((name, ver, bytes));
        }
    }
    assert!(out.len() > 70, "golden vectors missing");
    out
}

#[test]
fn whole_vectors_decode() {
    for (name, ver, b) in vectors() {
        decoder_for(&name)(&b, ver).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn every_truncation_is_an_error() {
    for (name, ver, b) in vectors() {
        let f = decoder_for(&name);
        for cut in 0..b.len() {
            assert!(
                f(&b[..cut], ver).is_err(),
                "{name} truncated at {cut} decoded"
            );
        }
    }
}

#[test]
fn every_single_byte_corruption_is_survived() {
    // no assertion on the outcome (some corruptions are still valid data);
    // the point is that nothing panics or over-allocates
    for (name, ver, b) in vectors() {
        let f = decoder_for(&name);
        for i in 0..b.len() {
            for x in [0x00u8, 0x7f, 0x80, 0xff] {
                let mut c = b.clone();
                c[i] = x;
                let _ = f(&c, ver);
                let _ = dec::<Value>(&c, ver);
            }
        }
    }
}

fn flex_u(v: u64) -> Vec<u8> {
    let mut o = Vec::new();
    flex::put_unsigned(&mut o, v);
    o
}

fn flex_i(v: i64) -> Vec<u8> {
    let mut o = Vec::new();
    flex::put_signed(&mut o, v);
    o
}

#[test]
fn huge_counts_are_refused_without_allocating() {
    let v = WireVersion::V41;
    // item count at the i32 limit with three bytes behind it
    let mut b = flex_i(i64::from(i32::MAX));
    b.extend_from_slice(&[1, 2, 3]);
    let e = Decoder::new(&b, v).unpack::<u64>(usize::MAX).unwrap_err();
    assert_eq!(e.status, Status::ERR_UNPACK_READ_PAST_END_OF_BUFFER);
    // a count of 2^31 does not even fit the INT32 it is packed as
    let mut b = flex_i(1 << 31);
    b.extend_from_slice(&[1, 2, 3]);
    assert!(Decoder::new(&b, v).unpack::<u8>(usize::MAX).is_err());
    // negative count
    let b = flex_i(-5);
    assert!(Decoder::new(&b, v).unpack::<u8>(usize::MAX).is_err());
    // count above the caller's room
    let mut b = flex_i(3);
    b.extend_from_slice(&[1, 2, 3]);
    let e = Decoder::new(&b, v).unpack::<u8>(2).unwrap_err();
    assert_eq!(e.status, Status::ERR_UNPACK_INADEQUATE_SPACE);

    // 2^40-element data array of INT64 in a twenty-byte message
    for n in [1u64 << 31, 1u64 << 40, u64::MAX] {
        let mut b = flex_i(1);
        b.extend(flex_u(u64::from(dt::INT64)));
        b.extend(flex_u(n));
        b.extend_from_slice(&[0; 8]);
        assert!(dec::<DataArray>(&b, v).is_err(), "darray size {n}");
        // byte object of 2^40 bytes
        let mut b = flex_i(1);
        b.extend(flex_u(n));
        b.extend_from_slice(b"abc");
        assert!(dec::<ByteObject>(&b, v).is_err(), "bo size {n}");
        // app with 2^40 infos
        let mut b = flex_i(1);
        b.extend(flex_i(2));
        b.extend_from_slice(b"a\0");
        b.extend(flex_i(0));
        b.extend(flex_i(0));
        b.extend(flex_i(0));
        b.extend(flex_i(1));
        b.extend(flex_u(n));
        assert!(dec::<App>(&b, v).is_err(), "app ninfo {n}");
    }
    // a string claiming 2^30 bytes
    let mut b = flex_i(1);
    b.extend(flex_i(1 << 30));
    b.extend_from_slice(b"xy");
    assert!(dec::<String>(&b, v).is_err());
    // query with i32::MAX keys
    let mut b = flex_i(1);
    b.extend(flex_i(i64::from(i32::MAX)));
    assert!(dec::<Query>(&b, v).is_err());
}

#[test]
fn nonsense_type_tags_are_errors() {
    for ver in WireVersion::all() {
        for tag in [29u64, 44, 76, 99, 500, 65535, 1 << 20] {
            let mut b = flex_i(1);
            b.extend(flex_u(tag));
            b.extend_from_slice(&[0; 4]);
            assert!(dec::<Value>(&b, ver).is_err(), "{ver} value tag {tag}");
            let mut b = flex_i(1);
            b.extend(flex_u(tag));
            b.extend(flex_u(1));
            b.extend_from_slice(&[0; 4]);
            assert!(dec::<DataArray>(&b, ver).is_err(), "{ver} darray tag {tag}");
        }
        // registered but not modelled types are read past by their layout
        // (a topology is one string; here the NULL string) …
        let mut b = flex_i(1);
        b.extend(flex_u(u64::from(dt::TOPO)));
        b.extend(flex_i(0));
        let v: Value = Decoder::new(&b, ver)
            .unpack_one()
            .expect("topology read past");
        assert_eq!(
            v,
            Value::Unmodelled {
                kind: dt::TOPO,
                raw: flex_i(0)
            }
        );
        // … and a truncated one is still an error
        let mut b = flex_i(1);
        b.extend(flex_u(u64::from(dt::TOPO)));
        b.extend(flex_i(100));
        b.extend_from_slice(&[b'x'; 4]);
        let e = dec::<Value>(&b, ver).unwrap_err();
        assert_eq!(e.status, Status::ERR_UNPACK_READ_PAST_END_OF_BUFFER);
        // described buffer whose count tag is wrong
        let b = [dt::STRING as u8, 0x02, dt::INT32 as u8, 0x0a];
        assert!(Decoder::described(&b, ver).unpack::<i32>(4).is_err());
        // described buffer whose item tag is nonsense
        let b = [dt::INT32 as u8, 0x02, 0x7f, 0x0a];
        assert!(Decoder::described(&b, ver).unpack::<i32>(4).is_err());
        // a PMIX_UNDEF data array that claims elements
        let mut b = flex_i(1);
        b.extend(flex_u(0));
        b.extend(flex_u(3));
        assert!(dec::<DataArray>(&b, ver).is_err());
        // a pid packed under a non-integer tag
        let mut b = flex_i(1);
        b.extend(flex_u(u64::from(dt::STRING)));
        b.push(0);
        assert!(dec::<Pid>(&b, ver).is_err());
    }
}

#[test]
fn unterminated_flex_is_an_error() {
    let v = WireVersion::V41;
    for b in [
        &[0x80u8][..],
        &[0x02, 0x80],
        &[0x02, 0xff, 0xff],
        &[0x02, 0x80, 0x80, 0x80],
    ] {
        assert!(dec::<u32>(b, v).is_err(), "{b:?}");
        assert!(dec::<u64>(b, v).is_err(), "{b:?}");
        assert!(dec::<i64>(b, v).is_err(), "{b:?}");
    }
    // values too wide for their type
    let mut b = flex_i(1);
    b.extend(flex_u(1 << 16));
    assert!(dec::<u16>(&b, v).is_err());
    let mut b = flex_i(1);
    b.extend(flex_u(1 << 32));
    assert!(dec::<u32>(&b, v).is_err());
    assert!(dec::<i32>(&b, v).is_err());
}

/// Bytes of one PMIX_VALUE holding `depth` nested data arrays of values.
fn nested_value_bytes(depth: usize) -> Vec<u8> {
    let mut b = flex_i(1);
    for _ in 0..depth {
        b.extend(flex_u(u64::from(dt::DATA_ARRAY))); // value tag
        b.extend(flex_u(u64::from(dt::VALUE))); // element type
        b.extend(flex_u(1)); // one element
    }
    b.extend(flex_u(u64::from(dt::BOOL)));
    b.push(1);
    b
}

#[test]
fn nesting_depth_is_bounded() {
    let v = WireVersion::V41;
    assert!(dec::<Value>(&nested_value_bytes(20), v).is_ok());
    let e = dec::<Value>(&nested_value_bytes(MAX_DEPTH as usize + 5), v).unwrap_err();
    assert_eq!(e.status, Status::ERR_UNPACK_FAILURE);
    assert!(dec::<Value>(&nested_value_bytes(100_000), v).is_err());

    // encoding refuses runaway depth too
    let mut val = Value::Bool(true);
    for _ in 0..(MAX_DEPTH + 5) {
        val = Value::DataArray(DataArray::values(vec![val]));
    }
    assert!(Encoder::new(v).pack_one(&val).is_err());
    let mut ok = Value::Bool(true);
    for _ in 0..20 {
        ok = Value::DataArray(DataArray::values(vec![ok]));
    }
    let mut enc = Encoder::new(v);
    enc.pack_one(&ok).unwrap();
    assert_eq!(
        Decoder::new(enc.bytes(), v).unpack_one::<Value>().unwrap(),
        ok
    );
}

#[test]
fn bad_input_to_the_encoder_is_refused() {
    let v = WireVersion::V61;
    let mixed = DataArray::scalars(dt::UINT32, vec![Value::Uint32(1), Value::from("x")]);
    assert_eq!(
        Encoder::new(v).pack_one(&mixed).unwrap_err().status,
        Status::ERR_BAD_PARAM
    );
    let undef = DataArray::scalars(dt::UNDEF, vec![Value::Undef]);
    assert!(Encoder::new(v).pack_one(&undef).is_err());
    assert!(Encoder::new(v)
        .pack_one(&"nul\0inside".to_string())
        .is_err());
}

#[test]
fn names_a_c_peer_would_truncate_are_refused() {
    let v = WireVersion::V41;
    let long_key = Info::new("k".repeat(512), true);
    assert_eq!(
        Encoder::new(v).pack_one(&long_key).unwrap_err().status,
        Status::ERR_BAD_PARAM
    );
    assert!(Encoder::new(v)
        .pack_one(&Info::new("k".repeat(511), true))
        .is_ok());
    let long_ns = Proc::new("n".repeat(256), 0);
    assert_eq!(
        Encoder::new(v).pack_one(&long_ns).unwrap_err().status,
        Status::ERR_BAD_PARAM
    );
    assert!(Encoder::new(v)
        .pack_one(&Proc::new("n".repeat(255), 0))
        .is_ok());
}
