//! Arbitrary bytes through the tools' whole inbound path, as a server would
//! send them: the first byte picks the wire version, buffer kind and the
//! identity the tool claimed; the rest is the handshake answer followed by
//! frames, each decoded as the tools decode replies, notifications,
//! forwarded output and status records
//! (`pmix_tools::ops::inbound::decode_server_stream`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = pmix_tools::ops::inbound::decode_server_stream(data);
    assert!(s.notifications + s.output + s.replies <= s.frames);
    assert!(s.welcomed || s.frames == 0);
});
