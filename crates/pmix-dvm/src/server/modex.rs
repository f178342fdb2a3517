//! The data a job's processes exchange through pdvm (the "modex"), without
//! I/O: what each process committed, by scope; the fences under way; and
//! the gets waiting for a value not yet committed (as PMIx's direct modex
//! waits). The handlers in [`super::exchange`] feed it and send what it
//! decides.

use std::collections::HashMap;

use crate::codec::{Bucket, Decoder, Kval, WireVersion};
use crate::error::{Error, Result};
use crate::proto::scope;
use crate::proto::status::Status;

/// A process: namespace and rank.
pub(crate) type ProcKey = (String, u32);

/// Most bytes one process may commit in all (beyond, its commit is refused).
pub(crate) const MAX_COMMITTED: usize = 16 * 1024 * 1024;

/// One committed value: its key and its packed pair, as the client sent it.
#[derive(Debug, Clone)]
struct Entry {
    key: String,
    raw: Vec<u8>,
}

/// What one process committed, as the processes on its node see it
/// (`local`) and as those elsewhere do (`remote`).
#[derive(Debug, Clone, Default)]
struct Committed {
    local: Vec<Entry>,
    remote: Vec<Entry>,
    bytes: usize,
}

impl Committed {
    fn bucket(&self, same_node: bool) -> &[Entry] {
        if same_node {
            &self.local
        } else {
            &self.remote
        }
    }

    fn put(&mut self, scope_code: u8, e: Entry) {
        let into_local = scope_code == scope::LOCAL || scope_code == scope::GLOBAL;
        let into_remote = scope_code == scope::REMOTE || scope_code == scope::GLOBAL;
        self.bytes += e.raw.len();
        if into_local {
            replace_or_push(&mut self.local, e.clone());
        }
        if into_remote {
            replace_or_push(&mut self.remote, e);
        }
    }
}

fn replace_or_push(list: &mut Vec<Entry>, e: Entry) {
    match list.iter_mut().find(|x| x.key == e.key) {
        Some(x) => *x = e,
        None => list.push(e),
    }
}

/// Where an answer goes: a connection and the request's tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Waiter {
    /// The connection.
    pub conn: u64,
    /// The request's tag.
    pub tag: u32,
}

/// A get waiting for its target to commit.
#[derive(Debug, Clone)]
pub(crate) struct PendingGet {
    /// Who waits.
    pub waiter: Waiter,
    /// The asking process.
    pub requester: ProcKey,
    /// Whose data.
    pub target: ProcKey,
    /// The key, when one was named.
    pub key: Option<String>,
}

/// A fence under way: who must enter it, and who did.
#[derive(Debug, Clone, Default)]
struct FenceState {
    need: Vec<ProcKey>,
    arrived: HashMap<ProcKey, Waiter>,
}

/// What a fence entry led to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FenceStep {
    /// Others are still to come.
    Waiting,
    /// Everyone is in: release them all.
    Complete(Vec<Waiter>),
}

/// The exchange's whole state.
#[derive(Debug, Default)]
pub(crate) struct Modex {
    committed: HashMap<ProcKey, Committed>,
    fences: HashMap<Vec<ProcKey>, FenceState>,
    gets: Vec<PendingGet>,
}

impl Modex {
    /// Store what `who` committed: each bucket's pairs, read with the
    /// sender's wire form, under their scope.
    pub(crate) fn commit(
        &mut self,
        who: &ProcKey,
        buckets: &[(u8, Bucket)],
        wire: WireVersion,
        described: bool,
    ) -> Result<()> {
        let mut parsed = Vec::new();
        for (scope_code, b) in buckets {
            for e in split_pairs(&b.bytes, wire, described)? {
                parsed.push((*scope_code, e));
            }
        }
        let c = self.committed.entry(who.clone()).or_default();
        let adding: usize = parsed.iter().map(|(_, e)| e.raw.len()).sum();
        if c.bytes + adding > MAX_COMMITTED {
            return Err(Error::new(
                Status::ERR_OUT_OF_RESOURCE,
                format!("a process may commit at most {MAX_COMMITTED} bytes"),
            ));
        }
        for (s, e) in parsed {
            c.put(s, e);
        }
        Ok(())
    }

    /// The packed pairs `target` committed that a process on the same node
    /// (`same_node`) or elsewhere sees, when they answer a get for `key`
    /// (any committed value answers a get that names no key).
    pub(crate) fn answer(
        &self,
        target: &ProcKey,
        same_node: bool,
        key: Option<&str>,
    ) -> Option<Vec<u8>> {
        let c = self.committed.get(target)?;
        let bucket = c.bucket(same_node);
        let has = match key {
            Some(k) => bucket.iter().any(|e| e.key == k),
            None => true,
        };
        has.then(|| bucket.iter().flat_map(|e| e.raw.iter().copied()).collect())
    }

    /// Keep a get until its target commits.
    pub(crate) fn wait_get(&mut self, g: PendingGet) {
        self.gets.push(g);
    }

    /// The gets waiting on `target` (taken out: the caller answers them or
    /// puts them back with [`Modex::wait_get`]).
    pub(crate) fn take_gets_for(&mut self, target: &ProcKey) -> Vec<PendingGet> {
        let (mine, rest) = std::mem::take(&mut self.gets)
            .into_iter()
            .partition(|g| &g.target == target);
        self.gets = rest;
        mine
    }

    /// The gets waiting on any process of `nspace` (taken out).
    pub(crate) fn take_gets_for_job(&mut self, nspace: &str) -> Vec<PendingGet> {
        let (mine, rest) = std::mem::take(&mut self.gets)
            .into_iter()
            .partition(|g| g.target.0 == nspace);
        self.gets = rest;
        mine
    }

    /// `who` enters the fence `id` (its participants as named), whose
    /// participants one by one are `need`.
    pub(crate) fn enter_fence(
        &mut self,
        id: Vec<ProcKey>,
        need: Vec<ProcKey>,
        who: ProcKey,
        w: Waiter,
    ) -> FenceStep {
        let f = self.fences.entry(id.clone()).or_insert_with(|| FenceState {
            need,
            arrived: HashMap::new(),
        });
        f.arrived.insert(who, w);
        if f.need.iter().all(|p| f.arrived.contains_key(p)) {
            let f = self.fences.remove(&id).unwrap_or_default();
            return FenceStep::Complete(f.arrived.into_values().collect());
        }
        FenceStep::Waiting
    }

    /// `who` ended: the fences it was still to enter can never complete;
    /// their waiters are returned (and the fences dropped).
    pub(crate) fn fail_fences_of(&mut self, who: &ProcKey) -> Vec<Waiter> {
        let doomed: Vec<Vec<ProcKey>> = self
            .fences
            .iter()
            .filter(|(_, f)| f.need.contains(who) && !f.arrived.contains_key(who))
            .map(|(id, _)| id.clone())
            .collect();
        doomed
            .into_iter()
            .filter_map(|id| self.fences.remove(&id))
            .flat_map(|f| f.arrived.into_values())
            .collect()
    }

    /// A connection closed: nothing is answered on it any more.
    pub(crate) fn conn_closed(&mut self, conn: u64) {
        self.gets.retain(|g| g.waiter.conn != conn);
        for f in self.fences.values_mut() {
            f.arrived.retain(|_, w| w.conn != conn);
        }
    }

    /// A job ended: forget what its processes committed.
    pub(crate) fn forget_job(&mut self, nspace: &str) {
        self.committed.retain(|(ns, _), _| ns != nspace);
    }
}

/// Split a buffer of packed key/value pairs into entries, each with its
/// own bytes.
fn split_pairs(bytes: &[u8], wire: WireVersion, described: bool) -> Result<Vec<Entry>> {
    let mut d = if described {
        Decoder::described(bytes, wire)
    } else {
        Decoder::new(bytes, wire)
    };
    let mut out = Vec::new();
    while !d.is_empty() {
        let start = d.position();
        let kv: Kval = d.unpack_one()?;
        out.push(Entry {
            key: kv.key,
            raw: bytes[start..d.position()].to_vec(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Encoder, Value};

    fn bucket(pairs: &[(&str, u32)]) -> Bucket {
        let mut e = Encoder::new(WireVersion::V41);
        for (k, v) in pairs {
            e.pack_one(&Kval::new(k, Value::Uint32(*v))).unwrap();
        }
        Bucket {
            kind: 0,
            bytes: e.into_bytes(),
        }
    }

    fn p(r: u32) -> ProcKey {
        ("job@1".into(), r)
    }

    #[test]
    fn local_values_reach_only_the_same_node() {
        let mut m = Modex::default();
        let b = vec![
            (scope::LOCAL, bucket(&[("shm", 1)])),
            (scope::REMOTE, bucket(&[("tcp", 2)])),
        ];
        m.commit(&p(0), &b, WireVersion::V41, false).unwrap();
        assert!(m.answer(&p(0), true, Some("shm")).is_some());
        assert!(m.answer(&p(0), false, Some("shm")).is_none());
        assert!(m.answer(&p(0), false, Some("tcp")).is_some());
        assert!(m.answer(&p(1), false, None).is_none());
    }

    #[test]
    fn a_fence_completes_when_all_entered_and_fails_when_one_ends() {
        let mut m = Modex::default();
        let id = vec![("job@1".to_string(), u32::MAX)];
        let need = vec![p(0), p(1)];
        let w = |c| Waiter { conn: c, tag: 7 };
        assert_eq!(
            m.enter_fence(id.clone(), need.clone(), p(0), w(1)),
            FenceStep::Waiting
        );
        match m.enter_fence(id.clone(), need.clone(), p(1), w(2)) {
            FenceStep::Complete(ws) => assert_eq!(ws.len(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            m.enter_fence(id.clone(), need, p(0), w(1)),
            FenceStep::Waiting
        );
        assert_eq!(m.fail_fences_of(&p(1)), vec![w(1)]);
    }
}
