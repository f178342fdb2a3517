//! pdvm's inbound path (framing, connect-ack parsing, request decoding) on
//! random input, the same entry point the fuzz target drives
//! (`fuzz/fuzz_targets/pdvm_requests.rs`): it never panics, and what it
//! takes is consistent with what it was given.

use pmix_tools::codec::{Cmd, Encoder, Info, Size, WireVersion};
use pmix_tools::conn::frame::Header;
use pmix_tools::conn::handshake::{build_connect_ack, tool_info_blob, Hello, Identity};
use pmix_tools::proto::{cmd, keys};
use pmix_tools::server::request::decode_stream;
use proptest::prelude::*;

fn hello() -> Vec<u8> {
    build_connect_ack(&Hello {
        identity: Identity::Tool,
        version: "5.0.11".into(),
        bfrops: "v41".into(),
        buffer_kind: 1,
        uid: 1000,
        gid: 1000,
        info_blob: tool_info_blob(WireVersion::V41, "prop", 1).expect("blob"),
    })
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = Header {
        pindex: 0,
        tag: 7,
        nbytes: payload.len() as u32,
    }
    .encode()
    .to_vec();
    v.extend_from_slice(payload);
    v
}

/// A well-formed session: connect-ack and an ALLOC request.
fn good_session() -> Vec<u8> {
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&Cmd(cmd::ALLOC)).expect("cmd");
    e.pack_one(&pmix_tools::codec::AllocDirective(1))
        .expect("dir");
    e.pack_one(&Size(1)).expect("n");
    e.pack(&[Info::new(keys::ALLOC_NUM_NODES, 1u64)])
        .expect("info");
    let mut v = vec![0u8]; // V41, non-described
    v.extend(hello());
    v.extend(frame(&e.into_bytes()));
    v
}

#[test]
fn a_well_formed_session_decodes() {
    let s = decode_stream(&good_session());
    assert!(s.connected, "{s:?}");
    assert_eq!((s.frames, s.decoded, s.fatal), (1, 1, false));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    /// Arbitrary bytes: no panic, and no more frames than bytes allow.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let s = decode_stream(&bytes);
        prop_assert!(s.decoded <= s.frames);
        prop_assert!(s.frames * 16 <= bytes.len());
    }

    /// A valid handshake followed by random frames (valid headers, random
    /// payloads): each whole frame is taken, none panics.
    #[test]
    fn random_payloads_after_a_handshake(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..512), 0..16),
        sel in any::<u8>(),
    ) {
        let mut bytes = vec![sel & !3];
        bytes.extend(hello());
        for p in &payloads {
            bytes.extend(frame(p));
        }
        let s = decode_stream(&bytes);
        prop_assert!(s.connected);
        prop_assert!(!s.fatal);
        prop_assert_eq!(s.frames, payloads.len());
    }

    /// A well-formed session with bytes flipped: no panic.
    #[test]
    fn mutated_sessions_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..16)) {
        let mut bytes = good_session();
        let n = bytes.len();
        for (i, b) in flips {
            bytes[1 + i % (n - 1)] ^= b;
        }
        let s = decode_stream(&bytes);
        prop_assert!(s.decoded <= s.frames);
    }
}
