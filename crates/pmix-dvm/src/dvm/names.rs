//! The names tools chose for themselves, remembered in constant space once
//! the tool is forgotten, so that none is ever taken again (a namespace is
//! never reused within a DVM's life).
//!
//! A name the DVM mints comes from a counter and never recurs, so nothing of
//! it needs keeping; a name a peer chose may come back, so it is written
//! into a Bloom filter of fixed size. A Bloom filter never forgets a name
//! written into it (no false negative): a name once used is refused for
//! ever, which is the guarantee. Its only error goes the safe way: a name
//! never used may be refused as used (`PMIX_EXISTS`), with probability
//! about (1 − e^(−kn/m))^k for n names written: below 1 in 10^7 after
//! 100,000 chosen names, about 2 % after a million. Minted identities (what
//! the tools use unless told `--tool-id`) never depend on it.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// Bits of the filter (m = 2^23: 1 MiB, allocated when the first chosen
/// name is written).
const BITS: usize = 1 << 23;
/// Bits set per name (k).
const PROBES: u64 = 7;

/// Chosen names of forgotten namespaces: see the [module documentation](self).
#[derive(Clone)]
pub(crate) struct UsedNames {
    /// The filter, empty until the first name is written.
    bits: Vec<u64>,
    /// Keyed per DVM, so no peer can precompute names that collide.
    keys: RandomState,
    /// Names written, for logs and tests.
    written: u64,
}

impl std::fmt::Debug for UsedNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsedNames")
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl Default for UsedNames {
    fn default() -> Self {
        UsedNames {
            bits: Vec::new(),
            keys: RandomState::new(),
            written: 0,
        }
    }
}

impl UsedNames {
    /// Remember `name` as used, for ever.
    pub(crate) fn insert(&mut self, name: &str) {
        if self.bits.is_empty() {
            self.bits = vec![0; BITS / 64];
        }
        for b in self.probes(name) {
            self.bits[b / 64] |= 1 << (b % 64);
        }
        self.written += 1;
    }

    /// True when `name` was (or, rarely, may have been) written.
    pub(crate) fn contains(&self, name: &str) -> bool {
        !self.bits.is_empty()
            && self
                .probes(name)
                .all(|b| self.bits[b / 64] & (1 << (b % 64)) != 0)
    }

    /// The k bit positions of `name` (double hashing over one keyed hash).
    fn probes(&self, name: &str) -> impl Iterator<Item = usize> {
        let h = self.keys.hash_one(name);
        let (h1, h2) = (h & 0xffff_ffff, (h >> 32) | 1);
        (0..PROBES).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) as usize) % BITS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_name_is_always_found_and_the_size_stays_put() {
        let mut u = UsedNames::default();
        assert!(!u.contains("a"));
        for i in 0..50_000 {
            u.insert(&format!("given-{i}"));
        }
        assert_eq!(u.bits.len(), BITS / 64);
        assert!((0..50_000).all(|i| u.contains(&format!("given-{i}"))));
        let wrong = (0..50_000)
            .filter(|i| u.contains(&format!("other-{i}")))
            .count();
        assert!(wrong < 5, "{wrong} names never used read as used");
    }
}
