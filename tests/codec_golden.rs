//! Golden vectors: bytes produced by a real OpenPMIx (v41: Debian's 4.2.2,
//! via tests/golden/gen_vectors.c) decoded by our codec, compared with the
//! value each test builds independently, and re-encoded byte for byte.
//!
//! `PMIx_Data_pack` with a NULL target produced non-described buffers (no
//! type tags: the first byte of every vector is the flex count), so v41
//! vectors are read with `Decoder::new`.
//!
//! The v61 vectors (type 75, PMIX_ALLOC_INHERIT) are hand-assembled from the
//! layout in OpenPMIx master's source (`pmix_bfrops_base_pack_alloc_inheritance`
//! packs one UINT8; type tags are flex UINT16; counts flex INT32), because
//! no v61 library is installed here.

use pmix_tools::codec::*;
use pmix_tools::status::Status;
use std::fmt::Debug;
use std::path::PathBuf;

fn golden_path(ver: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(ver)
        .join(format!("{name}.hex"))
}

fn load(ver: &str, name: &str) -> Vec<u8> {
    let p = golden_path(ver, name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let t = text.trim();
    assert!(t.len() % 2 == 0, "{name}: odd hex length");
    (0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&t[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Decodes vector `name` as `T`s, compares with `expected`, re-encodes.
fn check<T: Pack + Unpack + PartialEq + Debug>(ver: WireVersion, name: &str, expected: Vec<T>) {
    let bytes = load(ver.name(), name);
    let mut dec = Decoder::new(&bytes, ver);
    let got: Vec<T> = dec
        .unpack(1024)
        .unwrap_or_else(|e| panic!("{name}: decode: {e}"));
    assert_eq!(got, expected, "{name}: decoded value");
    assert!(dec.is_empty(), "{name}: {} trailing bytes", dec.remaining());
    let mut enc = Encoder::new(ver);
    enc.pack(&expected)
        .unwrap_or_else(|e| panic!("{name}: encode: {e}"));
    assert_eq!(enc.bytes(), &bytes[..], "{name}: re-encoding differs");
}

const V41: WireVersion = WireVersion::V41;

#[test]
fn golden_v41_scalars() {
    check(V41, "bool_true", vec![true]);
    check(V41, "bool_false", vec![false]);
    check(V41, "bool_three", vec![true, false, true]);
    check(V41, "byte_pair", vec![0u8, 255]);
    check(V41, "int8_pair", vec![i8::MIN, i8::MAX]);
    check(V41, "uint8_max", vec![255u8]);
    check(V41, "int16_set", vec![0i16, -1, i16::MAX, i16::MIN]);
    check(V41, "uint16_set", vec![0u16, 300, u16::MAX]);
    check(
        V41,
        "int32_set",
        vec![0i32, 1, -1, 63, 64, -65, i32::MAX, i32::MIN],
    );
    check(
        V41,
        "uint32_set",
        vec![0u32, 127, 128, RANK_WILDCARD, u32::MAX],
    );
    check(V41, "int64_set", vec![0i64, -1, i64::MAX, i64::MIN]);
    check(
        V41,
        "uint64_set",
        vec![0u64, 1, (1 << 56) - 1, 1 << 56, u64::MAX],
    );
    check(V41, "int_set", vec![Int(-5), Int(i32::MAX), Int(i32::MIN)]);
    check(V41, "uint_set", vec![Uint(7), Uint(u32::MAX)]);
    check(V41, "size_set", vec![Size(0), Size(1000), Size(u64::MAX)]);
    check(V41, "pid_set", vec![Pid(0), Pid(12345), Pid(2147483647)]);
    check(V41, "float_set", vec![1.5f32, -0.25, 0.0]);
    check(V41, "double_set", vec![3.25f64, -1e10, 0.125]);
    check(
        V41,
        "timeval_pair",
        vec![
            Timeval {
                sec: 1_700_000_000,
                usec: 123_456,
            },
            Timeval::default(),
        ],
    );
    check(V41, "time_one", vec![Time(1_700_000_000)]);
    check(
        V41,
        "status_set",
        vec![
            Status::SUCCESS,
            Status::ERR_NOT_SUPPORTED,
            Status::EVENT_JOB_END,
            Status::ALLOC_TIMEOUT_WARNING,
        ],
    );
}

#[test]
fn golden_v41_strings_and_bytes() {
    check(V41, "string_hello", vec!["hello".to_string()]);
    check(V41, "string_empty", vec![String::new()]);
    check(V41, "string_null", vec![NullableString(None)]);
    check(
        V41,
        "string_four",
        vec![
            NullableString(Some("hello".into())),
            NullableString(Some(String::new())),
            NullableString(None),
            NullableString(Some("pmix.alloc.id".into())),
        ],
    );
    check(
        V41,
        "bo_pair",
        vec![ByteObject(vec![]), ByteObject(vec![0, 1, 2, 0xff])],
    );
    check(V41, "nspace_x", vec![ProcNspace("nspace-x".into())]);
}

#[test]
fn golden_v41_enums_and_ids() {
    let ns = "prterun-host-1234@1";
    check(
        V41,
        "proc_three",
        vec![
            Proc::new(ns, 0),
            Proc::new(ns, RANK_WILDCARD),
            Proc::new("", RANK_UNDEF),
        ],
    );
    check(
        V41,
        "rank_set",
        vec![Rank(0), Rank(4096), Rank(RANK_WILDCARD)],
    );
    check(V41, "pstate_running", vec![ProcState(5)]);
    check(V41, "jstate_running", vec![JobState(3)]);
    check(V41, "persist_session", vec![Persist(4)]);
    check(V41, "scope_global", vec![Scope(3)]);
    check(V41, "range_namespace", vec![Range(3)]);
    check(V41, "command_seven", vec![Cmd(7)]);
    check(
        V41,
        "datatype_pair",
        vec![DataTypeTag(dt::STRING), DataTypeTag(500)],
    );
    check(
        V41,
        "infodir_pair",
        vec![InfoFlags::REQD, InfoFlags::DIR_RESERVED],
    );
    check(V41, "allocdir_extend", vec![AllocDirective(2)]);
    check(V41, "iof_outerr", vec![IofChannel(0x2 | 0x4)]);
    check(
        V41,
        "envar_path",
        vec![Envar {
            name: "PATH".into(),
            value: "/usr/bin".into(),
            separator: b':',
        }],
    );
    check(
        V41,
        "pinfo_one",
        vec![ProcInfo {
            proc: Proc::new("job-7", 3),
            hostname: Some("node01".into()),
            executable_name: Some("/bin/sleep".into()),
            pid: 4242,
            state: 5,
        }],
    );
}

#[test]
fn golden_v41_structs() {
    check(
        V41,
        "info_four",
        vec![
            Info::required("pmix.alloc.nnodes", 4u64),
            Info::new("pmix.alloc.id", "alloc-1"),
            Info::new("pmix.nullstr", Value::NullString),
            Info::new("pmix.undef", Value::Undef),
        ],
    );
    check(
        V41,
        "pdata_one",
        vec![PData {
            proc: Proc::new("pub-ns", 2),
            key: "pub.key".into(),
            value: Value::Int32(-9),
        }],
    );
    check(
        V41,
        "app_full",
        vec![App {
            cmd: "/bin/hostname".into(),
            argv: vec!["hostname".into(), "-s".into()],
            env: vec!["FOO=bar".into()],
            cwd: Some("/tmp".into()),
            maxprocs: 4,
            info: vec![Info::new("pmix.ppr", "1:node")],
        }],
    );
    check(
        V41,
        "app_min",
        vec![App {
            cmd: "a.out".into(),
            maxprocs: 1,
            ..App::default()
        }],
    );
    check(
        V41,
        "query_one",
        vec![Query {
            keys: vec!["pmix.qry.ns".into(), "pmix.qry.jst".into()],
            qualifiers: vec![Info::new("pmix.nspace", "job-7")],
        }],
    );
}

#[test]
fn golden_v41_values() {
    let v = |name: &str, val: Value| check(V41, name, vec![val]);
    v("value_bool", Value::Bool(true));
    v("value_int", Value::Int(-3));
    v("value_uint32", Value::Uint32(70000));
    v("value_size", Value::Size(12));
    v("value_string", Value::from("abc"));
    v("value_proc", Value::Proc(Proc::new("ns-v", 5)));
    v("value_rank", Value::Rank(RANK_WILDCARD));
    v("value_status", Value::Status(Status::ERR_TIMEOUT));
    v("value_double", Value::Double(2.5));
    v("value_timeval", Value::Timeval(Timeval { sec: 5, usec: 6 }));
    v("value_bo", Value::ByteObject(b"xyz".to_vec()));
    v(
        "value_cstring",
        Value::CompressedString(vec![0x78, 0x9c, 0x01]),
    );
    v(
        "value_cbo",
        Value::CompressedByteObject(vec![0x78, 0x9c, 0x01]),
    );
    v(
        "value_envar",
        Value::Envar(Envar {
            name: "LD_LIBRARY_PATH".into(),
            value: "/opt/lib".into(),
            separator: b':',
        }),
    );
    v("value_jstate", Value::JobState(20));
    v("value_dtype", Value::DataType(dt::INFO));
    v("value_nspace", Value::ProcNspace("ns-n".into()));
    v("value_undef", Value::Undef);
    v(
        "value_darray_strings",
        Value::DataArray(DataArray::strings(["n1", "n2", ""])),
    );
}

#[test]
fn golden_v41_data_arrays() {
    check(
        V41,
        "darray_strings",
        vec![DataArray::strings(["n1", "n2", ""])],
    );
    check(
        V41,
        "darray_procs",
        vec![DataArray::procs(vec![
            Proc::new("job-a", 0),
            Proc::new("job-a", 1),
        ])],
    );
    check(
        V41,
        "darray_uint32",
        vec![DataArray::scalars(
            dt::UINT32,
            vec![
                Value::Uint32(1),
                Value::Uint32(200),
                Value::Uint32(u32::MAX),
            ],
        )],
    );
    check(V41, "darray_empty_infos", vec![DataArray::infos(vec![])]);
    check(
        V41,
        "darray_values",
        vec![DataArray::values(vec![
            Value::from("str"),
            Value::Int16(-7),
        ])],
    );
    let nested = DataArray::infos(vec![
        Info::new("outer.name", "top"),
        Info::new(
            "outer.nested",
            DataArray::infos(vec![
                Info::new("inner.flag", true),
                Info::new("inner.list", DataArray::strings(["x", "y"])),
            ]),
        ),
    ]);
    check(V41, "darray_nested_infos", vec![nested.clone()]);
    check(
        V41,
        "info_with_darray",
        vec![Info::new("pmix.alloc.req", nested)],
    );
}

#[test]
fn golden_v61_alloc_inherit() {
    let v61 = WireVersion::V61;
    check(
        v61,
        "alloc_inherit_set",
        vec![
            AllocInheritance::NONE,
            AllocInheritance::CHILD,
            AllocInheritance::DEFAULT,
            AllocInheritance::CHILD_DEFAULT,
            AllocInheritance(9),
        ],
    );
    check(
        v61,
        "value_alloc_inherit",
        vec![Value::AllocInherit(AllocInheritance::CHILD)],
    );
    check(
        v61,
        "info_alloc_inherit",
        vec![Info::required(
            "pmix.alloc.inhrt",
            AllocInheritance::CHILD_DEFAULT,
        )],
    );
    check(
        v61,
        "darray_alloc_inherit",
        vec![DataArray::scalars(
            dt::ALLOC_INHERIT,
            vec![
                Value::AllocInherit(AllocInheritance::NONE),
                Value::AllocInherit(AllocInheritance::DEFAULT),
            ],
        )],
    );
    // the same bytes are refused by a v41 / v51 decoder: type 75 is unknown there
    for ver in [WireVersion::V41, WireVersion::V51] {
        let b = load("v61", "value_alloc_inherit");
        let err = Decoder::new(&b, ver).unpack_one::<Value>().unwrap_err();
        assert_eq!(err.status, Status::ERR_UNKNOWN_DATA_TYPE);
    }
}

#[test]
fn alloc_inherit_refused_for_old_peers() {
    for ver in [WireVersion::V41, WireVersion::V51] {
        for described in [false, true] {
            let mut enc = if described {
                Encoder::described(ver)
            } else {
                Encoder::new(ver)
            };
            let err = enc
                .pack_one(&Info::new("pmix.alloc.inhrt", AllocInheritance::CHILD))
                .unwrap_err();
            assert_eq!(err.status, Status::ERR_NOT_SUPPORTED);
            assert!(
                err.context.contains("PMIX_ALLOC_INHERIT"),
                "{}",
                err.context
            );
            assert!(err.context.contains(ver.name()), "{}", err.context);
            let err = enc.pack_one(&AllocInheritance::NONE).unwrap_err();
            assert_eq!(err.status, Status::ERR_NOT_SUPPORTED);
            let nested = DataArray::infos(vec![Info::new("x", AllocInheritance::DEFAULT)]);
            let err = enc.pack_one(&Value::DataArray(nested)).unwrap_err();
            assert_eq!(err.status, Status::ERR_NOT_SUPPORTED);
        }
    }
}

#[test]
fn every_vector_is_checked() {
    // guards against a vector being generated but never asserted on
    let src = include_str!("codec_golden.rs");
    for ver in ["v41", "v61"] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(ver);
        for e in std::fs::read_dir(&dir).expect("golden dir") {
            let p = e.expect("entry").path();
            if p.extension().and_then(|x| x.to_str()) == Some("hex") {
                let stem = p.file_stem().and_then(|x| x.to_str()).unwrap_or_default();
                assert!(
                    src.contains(&format!("\"{stem}\"")),
                    "vector {ver}/{stem} has no check"
                );
            }
        }
    }
}

#[test]
fn described_buffers_carry_tags() {
    // fully described: INT32 tag, count, declared type tag, then items
    let mut enc = Encoder::described(V41);
    enc.pack(&[5i32]).unwrap();
    assert_eq!(enc.bytes(), [dt::INT32 as u8, 0x02, dt::INT32 as u8, 0x0a]);
    let mut enc = Encoder::described(V41);
    let infos = vec![
        Info::required("pmix.alloc.nnodes", 4u64),
        Info::new("k", "v"),
    ];
    enc.pack(&infos).unwrap();
    enc.pack_one(&Size(3)).unwrap();
    let mut dec = Decoder::described(enc.bytes(), V41);
    assert_eq!(dec.unpack::<Info>(8).unwrap(), infos);
    assert_eq!(dec.unpack_one::<Size>().unwrap(), Size(3));
    assert!(dec.is_empty());
    // a type mismatch is reported, not misread
    let mut dec = Decoder::described(enc.bytes(), V41);
    assert_eq!(
        dec.unpack::<Proc>(8).unwrap_err().status,
        Status::ERR_PACK_MISMATCH
    );
    // non-described bytes of the same infos are the described ones minus the 2 tag bytes
    let mut plain = Encoder::new(V41);
    plain.pack(&infos).unwrap();
    let mut d2 = Encoder::described(V41);
    d2.pack(&infos).unwrap();
    assert_eq!(d2.bytes().len(), plain.bytes().len() + 2);
}

#[test]
fn display_and_json() {
    let p = Proc::new("job", RANK_WILDCARD);
    assert_eq!(p.to_string(), "job:WILDCARD");
    let i = Info::required("pmix.alloc.inhrt", AllocInheritance::CHILD_DEFAULT);
    assert_eq!(i.to_string(), "pmix.alloc.inhrt=CHILD_DEFAULT (required)");
    assert_eq!(
        Value::AllocInherit(AllocInheritance(77)).to_string(),
        "UNSPECIFIED"
    );
    let j = serde_json::to_value(&i).unwrap();
    assert_eq!(j["value"], "CHILD_DEFAULT");
    assert_eq!(j["key"], "pmix.alloc.inhrt");
    let j = serde_json::to_value(Value::Proc(Proc::new("ns", 3))).unwrap();
    assert_eq!(j, serde_json::json!({"nspace": "ns", "rank": 3}));
    let j = serde_json::to_value(Value::DataArray(DataArray::strings(["a", "b"]))).unwrap();
    assert_eq!(j, serde_json::json!(["a", "b"]));
    assert_eq!(
        serde_json::to_value(Value::Uint64(9)).unwrap(),
        serde_json::json!(9)
    );
}
