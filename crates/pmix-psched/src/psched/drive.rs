//! psched's decisions fed from raw bytes, with no DVM and no clock: the
//! entry point of the `psched_requests` fuzz target and of the hostile-DVM
//! tests, through the same core the serving loop runs ([`Core`]). Whatever the bytes, psched's state must hold its one invariant:
//! no node is granted twice, or both granted and free.

use std::collections::HashSet;

use crate::codec::WireVersion;
use crate::conn::frame::FrameDecoder;

use super::core::Core;
use super::dvm::OWN_TAG_BASE;
use super::dvm::{Dvm, Send};
use super::ledger::{DvmBook, Ledger};
use super::requests::Requests;
use super::state::State;
use super::Partition;

/// Largest frame the driver accepts (psched's connection accepts more; the
/// decoding is the same).
const MAX_FRAME: u32 = 1 << 20;

/// What a run of [`drive_stream`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Driven {
    /// Frames read.
    pub frames: usize,
    /// Answers and messages psched produced.
    pub sent: usize,
}

/// Feed `data` to a psched over four nodes: the first byte picks the wire
/// version, the rest is a stream of frames, each served by the one core
/// psched runs ([`Core`]) as a message from the DVM on its tag, and again
/// as the DVM's answer to psched's latest message of its own
/// (confirmations, owner checks, its own requests, its reconcile
/// question). A frame's `pindex` advances the clock by that many seconds
/// (deadlines fire, the core's turn runs); an odd one also reconciles with
/// an empty DVM. Panics if a node ends up granted twice.
pub fn drive_stream(data: &[u8]) -> Driven {
    let wire = match data.first() {
        Some(b) if b & 1 == 1 => WireVersion::V61,
        _ => WireVersion::V41,
    };
    let pool: Vec<String> = (1..=4).map(|i| format!("n{i}")).collect();
    let part = Partition {
        name: "batch".into(),
        default_secs: Some(60),
        max_secs: Some(600),
    };
    let mut ledger = Ledger::default();
    let pool_source = State::new(&pool, vec![part], &mut ledger);
    let mut st = Requests::new(Box::new(pool_source), ledger);
    st.attach("fuzz@0", wire, 0);
    let mut dvm = Dvm::new(
        wire,
        "psched@0",
        "fuzz@0",
        DvmBook::default(),
        0,
        OWN_TAG_BASE,
    );
    dvm.warm(&st.idle());
    let mut now = 1_000_000u64;
    let mut core = Core::new(&mut st, &mut dvm, wire, now);
    let mut d = FrameDecoder::new(MAX_FRAME);
    d.feed(data.get(1..).unwrap_or_default());
    let mut out = Driven::default();
    while let Ok(Some((h, payload))) = d.next_frame() {
        out.frames += 1;
        now += 1000 * u64::from(h.pindex.unsigned_abs() % 256);
        let mut sends = Vec::new();
        let _ = core.on_frame(h.tag, &payload, now, &mut sends);
        let _ = core.turn(now, Vec::new(), &mut sends);
        if h.pindex % 2 != 0 {
            let _ = core.reconcile(&[], now, 0, &mut sends);
        }
        let last_own = sends.iter().rev().find_map(|s| match s {
            Send::Own(t, _) => Some(*t),
            Send::Answer(..) => None,
        });
        if let Some(t) = last_own {
            let _ = core.on_frame(t, &payload, now, &mut sends);
        }
        let _ = core.take_log();
        out.sent += sends.len();
        core.keep_books();
        check(core.requests(), &pool);
    }
    out
}

/// The invariant: every node is in at most one grant, and a granted or
/// retained node is not free; every node named is one of the pool's.
fn check(st: &Requests, pool: &[String]) {
    let l = st.ledger();
    let free: HashSet<String> = st.idle().into_iter().collect();
    let mut seen = HashSet::new();
    for n in l.grants.iter().flat_map(|g| &g.nodes).chain(&l.retained) {
        assert!(pool.contains(n), "{n} is not a pool node");
        assert!(seen.insert(n.clone()), "{n} granted twice: {l:?}");
        assert!(!free.contains(n), "{n} granted and free: {l:?}");
    }
}
