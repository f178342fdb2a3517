//! Property tests: random bytes through every unpacker never panic, and
//! arbitrary values survive encode → decode unchanged in every version and
//! both buffer kinds.

use pmix_tools::codec::*;
use pmix_tools::proto::status::Status;
use proptest::prelude::*;

/// Runs `bytes` through the unpacker of every type, in both buffer kinds.
fn decode_everything(bytes: &[u8], ver: WireVersion) {
    macro_rules! all {
        ($($t:ty),*) => {$(
            let _ = Decoder::new(bytes, ver).unpack::<$t>(usize::MAX);
            let _ = Decoder::described(bytes, ver).unpack::<$t>(usize::MAX);
            let _ = Decoder::new(bytes, ver).unpack_one::<$t>();
            let _ = <$t as Unpack>::unpack_body(&mut Decoder::new(bytes, ver));
        )*};
    }
    all!(
        bool,
        u8,
        i8,
        u16,
        i16,
        u32,
        i32,
        u64,
        i64,
        f32,
        f64,
        String,
        NullableString,
        Status,
        Size,
        Pid,
        Int,
        Uint,
        Rank,
        Cmd,
        DataTypeTag,
        ProcState,
        JobState,
        AllocDirective,
        IofChannel,
        Time,
        Persist,
        Scope,
        Range,
        ByteObject,
        ProcNspace,
        Proc,
        Value,
        Info,
        App,
        Query,
        Envar,
        DataArray,
        Timeval,
        ProcInfo,
        PData,
        AllocInheritance,
        InfoFlags
    );
}

fn arb_string() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ._:@/=-]{0,12}"
}

fn arb_proc() -> impl Strategy<Value = Proc> {
    (arb_string(), any::<u32>()).prop_map(|(n, r)| Proc::new(n, r))
}

/// Floats that survive the "%f" text encoding exactly.
fn arb_f64() -> impl Strategy<Value = f64> {
    (-1_000_000_000i64..1_000_000_000).prop_map(|n| n as f64 / 64.0)
}

fn arb_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Undef),
        any::<bool>().prop_map(Value::Bool),
        any::<u8>().prop_map(Value::Byte),
        arb_string().prop_map(Value::String),
        Just(Value::NullString),
        any::<u64>().prop_map(Value::Size),
        any::<u32>().prop_map(Value::Pid),
        any::<i32>().prop_map(Value::Int),
        any::<i8>().prop_map(Value::Int8),
        any::<i16>().prop_map(Value::Int16),
        any::<i32>().prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        any::<u32>().prop_map(Value::Uint),
        any::<u8>().prop_map(Value::Uint8),
        any::<u16>().prop_map(Value::Uint16),
        any::<u32>().prop_map(Value::Uint32),
        any::<u64>().prop_map(Value::Uint64),
        (-100_000i32..100_000).prop_map(|n| Value::Float(n as f32 / 8.0)),
        arb_f64().prop_map(Value::Double),
        (any::<i64>(), any::<i64>()).prop_map(|(sec, usec)| Value::Timeval(Timeval { sec, usec })),
        any::<u64>().prop_map(Value::Time),
        any::<i32>().prop_map(|s| Value::Status(Status(s))),
        arb_proc().prop_map(Value::Proc),
        any::<u32>().prop_map(Value::Rank),
        arb_string().prop_map(Value::ProcNspace),
        any::<u8>().prop_map(Value::ProcState),
        any::<u8>().prop_map(Value::JobState),
        any::<u8>().prop_map(Value::LinkState),
        (
            arb_proc(),
            proptest::option::of(arb_string()),
            proptest::option::of(arb_string()),
            any::<u32>(),
            any::<u8>()
        )
            .prop_map(
                |(proc, hostname, executable_name, pid, state)| Value::ProcInfo(ProcInfo {
                    proc,
                    hostname,
                    executable_name,
                    pid,
                    state
                })
            ),
        proptest::collection::vec(any::<u8>(), 0..16).prop_map(Value::ByteObject),
        proptest::collection::vec(any::<u8>(), 0..16).prop_map(Value::CompressedString),
        proptest::collection::vec(any::<u8>(), 0..16).prop_map(Value::CompressedByteObject),
        any::<u16>().prop_map(Value::DataType),
        any::<u32>().prop_map(|f| Value::InfoDirectives(InfoFlags(f))),
        any::<u8>().prop_map(Value::Persist),
        any::<u8>().prop_map(Value::Scope),
        any::<u8>().prop_map(Value::Range),
        any::<u8>().prop_map(Value::Command),
        any::<u8>().prop_map(Value::AllocDirective),
        any::<u16>().prop_map(Value::IofChannel),
        (arb_string(), arb_string(), any::<u8>()).prop_map(|(name, value, separator)| {
            Value::Envar(Envar {
                name,
                value,
                separator,
            })
        }),
        any::<u64>().prop_map(Value::DevType),
        any::<u16>().prop_map(Value::LocType),
        any::<u8>().prop_map(|a| Value::AllocInherit(AllocInheritance(a))),
    ]
}

fn arb_info(inner: impl Strategy<Value = Value>) -> impl Strategy<Value = Info> {
    (arb_string(), any::<u32>(), inner).prop_map(|(key, f, value)| Info {
        key,
        flags: InfoFlags(f),
        value,
    })
}

fn arb_value() -> impl Strategy<Value = Value> {
    arb_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5)
                .prop_map(|v| Value::DataArray(DataArray::values(v))),
            proptest::collection::vec(arb_info(inner.clone()), 0..4)
                .prop_map(|v| Value::DataArray(DataArray::infos(v))),
            proptest::collection::vec(arb_string(), 0..5)
                .prop_map(|v| Value::DataArray(DataArray::strings(v))),
            proptest::collection::vec(arb_proc(), 0..4)
                .prop_map(|v| Value::DataArray(DataArray::procs(v))),
            proptest::collection::vec(any::<u32>(), 0..5).prop_map(|v| Value::DataArray(
                DataArray::scalars(dt::UINT32, v.into_iter().map(Value::Uint32).collect())
            )),
            proptest::collection::vec(any::<u32>(), 1..5).prop_map(|v| Value::DataArray(
                DataArray::scalars(dt::PID, v.into_iter().map(Value::Pid).collect())
            )),
            proptest::collection::vec(proptest::option::of(arb_string()), 1..4)
                .prop_filter("needs a NULL", |v| v.iter().any(Option::is_none))
                .prop_map(|v| Value::DataArray(DataArray::scalars(
                    dt::STRING,
                    v.into_iter().map(Value::from).collect()
                ))),
        ]
    })
}

fn arb_app() -> impl Strategy<Value = App> {
    (
        arb_string(),
        proptest::collection::vec(arb_string(), 0..4),
        proptest::collection::vec(arb_string(), 0..3),
        proptest::option::of(arb_string()),
        any::<i32>(),
        proptest::collection::vec(arb_info(arb_leaf()), 0..3),
    )
        .prop_map(|(cmd, argv, env, cwd, maxprocs, info)| App {
            cmd,
            argv,
            env,
            cwd,
            maxprocs,
            info,
        })
}

fn round_trip<T: Pack + Unpack + PartialEq + std::fmt::Debug>(items: &[T], ver: WireVersion) {
    for described in [false, true] {
        let mut enc = if described {
            Encoder::described(ver)
        } else {
            Encoder::new(ver)
        };
        enc.pack(items).unwrap();
        let bytes = enc.into_bytes();
        let mut dec = if described {
            Decoder::described(&bytes, ver)
        } else {
            Decoder::new(&bytes, ver)
        };
        let back: Vec<T> = dec.unpack(items.len()).unwrap();
        assert_eq!(back, items);
        assert!(dec.is_empty());
    }
}

/// Drops AllocInherit from values meant for versions that cannot carry it.
fn carries_inherit(v: &Value) -> bool {
    match v {
        Value::AllocInherit(_) => true,
        Value::DataArray(DataArray::Values(vs)) => vs.iter().any(carries_inherit),
        Value::DataArray(DataArray::Infos(is)) => is.iter().any(|i| carries_inherit(&i.value)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        for ver in WireVersion::all() {
            decode_everything(&bytes, ver);
        }
    }

    #[test]
    fn plausible_prefixes_never_panic(
        tag in 0u8..80, count in 0u8..6, rest in proptest::collection::vec(any::<u8>(), 0..48)
    ) {
        // a valid-looking count and type tag up front drive the decoders deeper
        let mut bytes = vec![count << 1, tag];
        bytes.extend(rest);
        for ver in WireVersion::all() {
            decode_everything(&bytes, ver);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]

    #[test]
    fn values_round_trip(vals in proptest::collection::vec(arb_value(), 0..4)) {
        round_trip(&vals, WireVersion::V61);
        if !vals.iter().any(carries_inherit) {
            round_trip(&vals, WireVersion::V41);
            round_trip(&vals, WireVersion::V51);
        } else {
            let err = Encoder::new(WireVersion::V41).pack(&vals).unwrap_err();
            prop_assert_eq!(err.status, Status::ERR_NOT_SUPPORTED);
        }
    }

    #[test]
    fn infos_apps_queries_round_trip(
        infos in proptest::collection::vec(arb_info(arb_value()), 0..4),
        apps in proptest::collection::vec(arb_app(), 0..3),
        keys in proptest::collection::vec(arb_string(), 0..4),
    ) {
        let v = WireVersion::V61;
        round_trip(&infos, v);
        round_trip(&apps, v);
        round_trip(&[Query { keys, qualifiers: infos.clone() }], v);
        let pd: Vec<PData> = infos
            .iter()
            .map(|i| PData { proc: Proc::new(i.key.clone(), 1), key: i.key.clone(), value: i.value.clone() })
            .collect();
        round_trip(&pd, v);
    }

    #[test]
    fn integers_round_trip(a in any::<i64>(), b in any::<u64>(), c in any::<i16>(), d in any::<u32>()) {
        let v = WireVersion::V41;
        round_trip(&[a], v);
        round_trip(&[b], v);
        round_trip(&[c], v);
        round_trip(&[d], v);
        round_trip(&[Size(b)], v);
        round_trip(&[Pid(d), Pid(d / 2)], v);
        round_trip(&[Uint(d)], v);
    }
}
