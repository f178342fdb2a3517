//! Events a DVM sends again. A PMIx server keeps the notifications it sent
//! and replays them to each new registration; PRRTE master does so on
//! every spawn a tool makes (a busy retry too), so a holder relaying for
//! sixteen waiting steps heard each past job end over a hundred times
//! (63,000 messages in 30 s), relayed each to every step registered for
//! job ends, and a step's own job end came so late behind them that the
//! step had taken it for lost. A holder passes each event on once
//! ([`Replays::first_time`]); the same bytes again are a replay.

use std::collections::{HashSet, VecDeque};

/// Events remembered (their digests): a replay of an older one is passed
/// on again, as any DVM may send it.
const KEPT: usize = 65_536;

/// The digests of the events passed on, oldest first out.
#[derive(Default)]
pub(crate) struct Replays {
    seen: HashSet<[u8; 16]>,
    order: VecDeque<[u8; 16]>,
}

impl Replays {
    /// Whether `payload` (a notification as received) is new: false for
    /// the same bytes again.
    pub(crate) fn first_time(&mut self, payload: &[u8]) -> bool {
        use sha2::Digest;
        let full = sha2::Sha256::digest(payload);
        let mut d = [0u8; 16];
        d.copy_from_slice(&full[..16]);
        if !self.seen.insert(d) {
            return false;
        }
        self.order.push_back(d);
        if self.order.len() > KEPT {
            if let Some(old) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_again_are_a_replay_until_forgotten() {
        let mut r = Replays::default();
        assert!(r.first_time(b"job 1 ended"));
        assert!(r.first_time(b"job 2 ended"));
        assert!(!r.first_time(b"job 1 ended"));
        for i in 0..KEPT {
            assert!(r.first_time(format!("event {i}").as_bytes()));
        }
        assert!(r.first_time(b"job 1 ended"), "forgotten after KEPT more");
        assert!(r.seen.len() <= KEPT && r.order.len() <= KEPT);
    }
}
