//! Arbitrary bytes as a DVM would send them to psched: the first byte picks
//! the wire version, the rest is a stream of frames, each decoded and
//! served by psched's state (`pmix_tools::psched::drive::drive_stream`),
//! which panics if a node is ever granted twice.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let r = pmix_tools::psched::drive::drive_stream(data);
    assert!(r.frames <= data.len());
});
