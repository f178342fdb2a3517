//! Arbitrary bytes through pdvm's whole inbound path, as a peer would send
//! them: the first byte picks the wire version and buffer kind, the rest is
//! a connect-ack followed by steady-state frames, each decoded as a request
//! (`pmix_tools::server::request::decode_stream`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = pmix_tools::server::request::decode_stream(data);
    assert!(s.decoded <= s.frames);
});
