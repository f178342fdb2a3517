//! psched's decisions fed from raw bytes, with no DVM and no clock: the
//! entry point of the `psched_requests` fuzz target and of the hostile-DVM
//! tests. Whatever the bytes, psched's state must hold its one invariant:
//! no node is granted twice, or both granted and free.

use std::collections::HashSet;

use crate::codec::WireVersion;
use crate::conn::frame::FrameDecoder;

use super::dvm::{Dvm, Send, Verdict};
use super::ledger::{DvmBook, Ledger};
use super::state::{Out, State};
use super::wire::{self, Inbound};
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
/// version, the rest is a stream of frames, each decoded as a message from
/// the DVM and served through the DVM side ([`super::dvm`]) and the pool
/// backend; each frame is also taken as the DVM's answer to psched's
/// latest message of its own (confirmations, owner checks, its own
/// requests). A frame's `pindex` advances the clock by that many seconds
/// (deadlines fire); an odd one also reconciles with an empty DVM. Panics
/// if a node ends up granted twice.
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
    let mut st = State::new(&pool, vec![part], Ledger::default());
    st.attach("fuzz@0", wire);
    let mut dvm = Dvm::new(
        wire,
        "psched@0",
        "fuzz@0",
        DvmBook::default(),
        0,
        super::serve::OWN_TAG_BASE,
    );
    dvm.warm(&st.free_nodes());
    let mut d = FrameDecoder::new(MAX_FRAME);
    d.feed(data.get(1..).unwrap_or_default());
    let mut out = Driven::default();
    let mut now = 1_000_000u64;
    while let Ok(Some((h, payload))) = d.next_frame() {
        out.frames += 1;
        now += 1000 * u64::from(h.pindex.unsigned_abs() % 256);
        let mut sends = Vec::new();
        let outs = serve_one(&mut st, &mut dvm, wire, h.tag, &payload, now, &mut sends);
        let _ = dvm.push(outs, &mut sends);
        let _ = dvm.push(st.tick(now).unwrap_or_default(), &mut sends);
        if h.pindex % 2 != 0 {
            let _ = dvm.push(st.reconcile(&[], now, 0).unwrap_or_default(), &mut sends);
        }
        let _ = dvm.tick(now, &mut sends);
        let last_own = sends.iter().rev().find_map(|s| match s {
            Send::Own(t, _) => Some(*t),
            Send::Answer(..) => None,
        });
        if let Some(t) = last_own {
            let nodes = |_: &str| Vec::new();
            if let Ok(passed) = dvm.on_own_answer(t, &payload, now, &nodes, &mut sends) {
                for (tag, ask) in passed {
                    let _ = dvm.push(st.on_alloc(tag, ask, now).unwrap_or_default(), &mut sends);
                }
            }
        }
        for id in dvm.take_refused() {
            let _ = dvm.push(st.on_session_done(&id, now).unwrap_or_default(), &mut sends);
        }
        out.sent += sends.len();
        check(&st, &pool);
    }
    out
}

fn serve_one(
    st: &mut State,
    d: &mut Dvm,
    wire: WireVersion,
    tag: u32,
    payload: &[u8],
    now: u64,
    sends: &mut Vec<Send>,
) -> Vec<Out> {
    match wire::decode(wire, payload) {
        Ok(Inbound::Alloc(ask)) => match d.on_request(tag, *ask, &|_| None, sends) {
            Ok(Verdict::Pass(ask)) => st.on_alloc(tag, *ask, now).unwrap_or_default(),
            _ => Vec::new(),
        },
        Ok(Inbound::Session { infos, .. }) => infos
            .iter()
            .find(|i| i.key == crate::proto::keys::ALLOC_ID)
            .and_then(|i| i.value.as_str().map(String::from))
            .map(|id| st.on_session_done(&id, now).unwrap_or_default())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The invariant: every node is in at most one grant, and a granted or
/// retained node is not free; every node named is one of the pool's.
fn check(st: &State, pool: &[String]) {
    let l = st.ledger();
    let free: HashSet<String> = st.free_nodes().into_iter().collect();
    let mut seen = HashSet::new();
    for n in l.grants.iter().flat_map(|g| &g.nodes).chain(&l.retained) {
        assert!(pool.contains(n), "{n} is not a pool node");
        assert!(seen.insert(n.clone()), "{n} granted twice: {l:?}");
        assert!(!free.contains(n), "{n} granted and free: {l:?}");
    }
}
