//! The tools' inbound path (the handshake answer, replies, notifications,
//! forwarded output, status records) on random input, the same entry point
//! the client fuzz target drives (`fuzz/fuzz_targets/tool_inbound.rs`): it
//! never panics, and what it takes is consistent with what it was given.

use crate::support::fake::tool_welcome;

use pmix_tools::codec::{ByteObject, Cmd, DataArray, Encoder, Info, IofChannel, Proc, Size, Value};
use pmix_tools::codec::{WireVersion, RANK_WILDCARD};
use pmix_tools::conn::frame::{Header, TAG_IOF, TAG_NOTIFY};
use pmix_tools::ops::inbound::decode_server_stream;
use pmix_tools::ops::status_query::{answer, reservation_infos, ReservationRecord};
use pmix_tools::proto::status::Status;
use pmix_tools::proto::{cmd, keys};
use proptest::prelude::*;

const WIRE: WireVersion = WireVersion::V41;

fn frame(tag: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Header {
        pindex: 0,
        tag,
        nbytes: payload.len() as u32,
    }
    .encode()
    .to_vec();
    v.extend_from_slice(payload);
    v
}

/// A query answer holding one reservation record, as pdvm sends it.
fn status_reply() -> Vec<u8> {
    let rec = ReservationRecord {
        alloc_id: "pdvm-h-1@a1".into(),
        state: "active".into(),
        inherit: Some(pmix_tools::proto::Inheritance::None),
        nodes: vec!["n1".into()],
        ..Default::default()
    };
    let entry = Value::DataArray(DataArray::infos(reservation_infos(&rec, WIRE)));
    let mut e = Encoder::new(WIRE);
    e.pack_one(&Status::SUCCESS).unwrap();
    pmix_tools::codec::attrs::write_infos(&mut e, &[answer(keys::QUERY_ALLOC_STATUS, vec![entry])])
        .unwrap();
    e.into_bytes()
}

/// A job-end notification, as pdvm sends it.
fn notification() -> Vec<u8> {
    let mut e = Encoder::new(WIRE);
    e.pack_one(&Cmd(cmd::NOTIFY)).unwrap();
    e.pack_one(&Status::EVENT_JOB_END).unwrap();
    e.pack_one(&Proc {
        nspace: "pdvm-h-1@0".into(),
        rank: 0,
    })
    .unwrap();
    let info = [Info::new(
        keys::EVENT_AFFECTED_PROC,
        Value::Proc(Proc {
            nspace: "pdvm-h-1@2".into(),
            rank: RANK_WILDCARD,
        }),
    )];
    pmix_tools::codec::attrs::write_infos(&mut e, &info).unwrap();
    e.into_bytes()
}

/// A chunk of forwarded stdout.
fn output() -> Vec<u8> {
    let mut e = Encoder::new(WIRE);
    e.pack_one(&Proc {
        nspace: "pdvm-h-1@2".into(),
        rank: 0,
    })
    .unwrap();
    e.pack_one(&IofChannel(2)).unwrap();
    e.pack_one(&Size(0)).unwrap();
    pmix_tools::codec::attrs::write_infos(&mut e, &[]).unwrap();
    e.pack_one(&ByteObject(b"hello\n".to_vec())).unwrap();
    e.into_bytes()
}

/// A spawn answer: success and the job's namespace.
fn spawn_reply() -> Vec<u8> {
    let mut e = Encoder::new(WIRE);
    e.pack_one(&Status::SUCCESS).unwrap();
    e.pack_one(&"pdvm-h-1@2".to_string()).unwrap();
    e.into_bytes()
}

/// A well-formed stream as a tool (V41, non-described) reads it.
fn good_stream() -> Vec<u8> {
    let mut v = vec![0u8];
    v.extend(tool_welcome());
    v.extend(frame(100, &status_reply()));
    v.extend(frame(TAG_NOTIFY, &notification()));
    v.extend(frame(TAG_IOF, &output()));
    v.extend(frame(101, &spawn_reply()));
    v
}

#[test]
fn a_well_formed_stream_decodes() {
    let s = decode_server_stream(&good_stream());
    assert!(s.welcomed, "{s:?}");
    assert!(!s.fatal, "{s:?}");
    assert_eq!(s.frames, 4, "{s:?}");
    assert_eq!((s.notifications, s.output, s.replies), (1, 1, 2), "{s:?}");
    assert_eq!(s.records, 1, "{s:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    /// Arbitrary bytes: no panic, and no more frames than bytes allow.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let s = decode_server_stream(&bytes);
        prop_assert!(s.notifications + s.output + s.replies <= s.frames);
        prop_assert!(s.frames * 16 <= bytes.len());
    }

    /// A valid welcome followed by random frames (valid headers, random
    /// payloads, any tag): each whole frame is taken, none panics.
    #[test]
    fn random_payloads_after_a_welcome(
        frames in proptest::collection::vec(
            (prop_oneof![Just(TAG_NOTIFY), Just(TAG_IOF), 100u32..200], proptest::collection::vec(any::<u8>(), 0..512)),
            0..16,
        ),
        sel in any::<u8>(),
    ) {
        let mut bytes = vec![sel & !0b1100];
        bytes.extend(tool_welcome());
        for (tag, p) in &frames {
            bytes.extend(frame(*tag, p));
        }
        let s = decode_server_stream(&bytes);
        prop_assert!(s.welcomed);
        prop_assert!(!s.fatal);
        prop_assert_eq!(s.frames, frames.len());
    }

    /// A well-formed stream with bytes flipped: no panic.
    #[test]
    fn mutated_streams_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..16)) {
        let mut bytes = good_stream();
        let n = bytes.len();
        for (i, b) in flips {
            bytes[1 + i % (n - 1)] ^= b;
        }
        let s = decode_server_stream(&bytes);
        prop_assert!(s.notifications + s.output + s.replies <= s.frames);
    }
}
