//! The connection table: live connections by id, what each holds against
//! its uid's memory budget, connections per peer uid, the handshake
//! deadlines, the partial messages that make no progress, and which
//! connections need attention at the end of a round.
//! Its state is private; the server reaches it through these methods.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::Instant;

use super::ident::ProcName;
use super::peer::{PeerConn, PARTIAL_TIMEOUT};

/// Live connections and their bookkeeping.
#[derive(Default)]
pub(crate) struct ConnTable {
    map: BTreeMap<u64, PeerConn>,
    next: u64,
    per_uid: HashMap<u32, usize>,
    held_by_uid: HashMap<u32, usize>,
    /// Connections holding a partial message, by the deadline at which
    /// they are looked at again.
    stalls: BTreeSet<(Instant, u64)>,
    dirty: Vec<u64>,
    backlog: BTreeSet<u64>,
    preauth: VecDeque<(Instant, u64)>,
    /// Connections registered for each event code, and for every event:
    /// a broadcast visits its listeners only, not every connection.
    listeners: HashMap<i32, BTreeSet<u64>>,
    listen_all: BTreeSet<u64>,
}

impl ConnTable {
    /// An empty table; ids start at 1.
    pub(crate) fn new() -> ConnTable {
        ConnTable {
            next: 1,
            ..ConnTable::default()
        }
    }

    /// The id the next connection will get.
    pub(crate) fn next_id(&self) -> u64 {
        self.next
    }

    /// Connections open.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Connections open for peer uid `uid`.
    pub(crate) fn of_uid(&self, uid: u32) -> usize {
        self.per_uid.get(&uid).copied().unwrap_or(0)
    }

    /// Add an accepted connection (of peer uid `uid`, which must complete
    /// its handshake by `deadline`) under id [`ConnTable::next_id`].
    pub(crate) fn insert(&mut self, mut c: PeerConn, uid: u32, deadline: Instant) -> u64 {
        let id = self.next;
        self.next += 1;
        c.uid = Some(uid);
        *self.per_uid.entry(uid).or_insert(0) += 1;
        self.preauth.push_back((deadline, id));
        self.map.insert(id, c);
        id
    }

    /// Remove a connection and everything counted for it.
    pub(crate) fn remove(&mut self, id: u64) -> Option<PeerConn> {
        self.deregister_events(id);
        let c = self.map.remove(&id)?;
        self.charge_uid(c.uid, c.accounted, 0);
        if let Some(at) = c.stall_at {
            self.stalls.remove(&(at, id));
        }
        self.backlog.remove(&id);
        if let Some(uid) = c.uid {
            if let Some(n) = self.per_uid.get_mut(&uid) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.per_uid.remove(&uid);
                }
            }
        }
        Some(c)
    }

    /// Connection `id`.
    pub(crate) fn get(&self, id: u64) -> Option<&PeerConn> {
        self.map.get(&id)
    }

    /// Connection `id`, mutably.
    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut PeerConn> {
        self.map.get_mut(&id)
    }

    /// Every connection with its id, in id order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &PeerConn)> {
        self.map.iter().map(|(id, c)| (*id, c))
    }

    /// Every connection.
    pub(crate) fn values(&self) -> impl Iterator<Item = &PeerConn> {
        self.map.values()
    }

    /// Every id.
    pub(crate) fn ids(&self) -> Vec<u64> {
        self.map.keys().copied().collect()
    }

    /// Bytes held for the peers of uid `uid`, as last accounted.
    pub(crate) fn held_of_uid(&self, uid: u32) -> usize {
        self.held_by_uid.get(&uid).copied().unwrap_or(0)
    }

    /// Bytes held for the peers of the uid connection `id` belongs to.
    pub(crate) fn held_of_conn_uid(&self, id: u64) -> usize {
        self.map
            .get(&id)
            .and_then(|c| c.uid)
            .map_or(0, |u| self.held_of_uid(u))
    }

    fn charge_uid(&mut self, uid: Option<u32>, was: usize, now: usize) {
        let Some(uid) = uid else {
            return;
        };
        let e = self.held_by_uid.entry(uid).or_insert(0);
        *e = (*e + now).saturating_sub(was);
        if *e == 0 {
            self.held_by_uid.remove(&uid);
        }
    }

    /// Recount what connection `id` holds against the memory budget (its
    /// uid's).
    pub(crate) fn account(&mut self, id: u64) {
        if let Some(c) = self.map.get_mut(&id) {
            let now = c.held();
            let (was, uid) = (c.accounted, c.uid);
            c.accounted = now;
            self.charge_uid(uid, was, now);
        }
    }

    /// Queue or unqueue connection `id` as holding a partial message: a
    /// handshaken peer mid-message is looked at again [`PARTIAL_TIMEOUT`]
    /// after its last input.
    pub(crate) fn watch_partial(&mut self, id: u64) {
        let Some(c) = self.map.get_mut(&id) else {
            return;
        };
        let mid = c.peer.is_some() && !c.closing && c.mid_frame();
        match (mid, c.stall_at) {
            (true, None) => {
                let at = c.last_input + PARTIAL_TIMEOUT;
                c.stall_at = Some(at);
                self.stalls.insert((at, id));
            }
            (false, Some(at)) => {
                c.stall_at = None;
                self.stalls.remove(&(at, id));
            }
            _ => {}
        }
    }

    /// The earliest partial-message deadline queued.
    pub(crate) fn next_partial_deadline(&self) -> Option<Instant> {
        self.stalls.first().map(|(t, _)| *t)
    }

    /// Connections whose partial message made no progress for
    /// [`PARTIAL_TIMEOUT`] by `now`, while pdvm was reading them (a peer
    /// whose replies wait unread, so is not read, is not charged the wait).
    pub(crate) fn partial_overdue(&mut self, now: Instant) -> Vec<u64> {
        let mut late = Vec::new();
        while let Some(&(at, id)) = self.stalls.first() {
            if at > now {
                break;
            }
            self.stalls.remove(&(at, id));
            let Some(c) = self.map.get_mut(&id) else {
                continue;
            };
            c.stall_at = None;
            let next = if c.throttled() {
                now + PARTIAL_TIMEOUT
            } else {
                c.last_input + PARTIAL_TIMEOUT
            };
            if next <= now {
                late.push(id);
            } else {
                c.stall_at = Some(next);
                self.stalls.insert((next, id));
            }
        }
        late
    }

    /// Mark `id` for settling at the end of the round.
    pub(crate) fn touch(&mut self, id: u64) {
        self.dirty.push(id);
    }

    /// Mark every connection for settling.
    pub(crate) fn touch_all(&mut self) {
        self.dirty.extend(self.map.keys().copied());
    }

    /// The connections marked since the last call, each once.
    pub(crate) fn take_touched(&mut self) -> Vec<u64> {
        let mut ids = std::mem::take(&mut self.dirty);
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// True when connections are marked.
    pub(crate) fn any_touched(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// `id` has complete requests left over from its per-round budget.
    pub(crate) fn defer(&mut self, id: u64) {
        self.backlog.insert(id);
    }

    /// True when some connection has requests left over.
    pub(crate) fn has_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// The connections with requests left over (cleared).
    pub(crate) fn take_backlog(&mut self) -> BTreeSet<u64> {
        std::mem::take(&mut self.backlog)
    }

    /// The earliest handshake deadline still queued.
    pub(crate) fn next_handshake_deadline(&self) -> Option<Instant> {
        self.preauth.front().map(|(t, _)| *t)
    }

    /// Connections whose handshake deadline passed by `now` and that have
    /// not completed it (queued in accept order: only the oldest are looked at).
    pub(crate) fn handshake_overdue(&mut self, now: Instant) -> Vec<u64> {
        let mut late = Vec::new();
        while let Some(&(at, id)) = self.preauth.front() {
            if at > now {
                break;
            }
            self.preauth.pop_front();
            if self
                .map
                .get(&id)
                .is_some_and(|c| c.peer.is_none() && !c.closing)
            {
                late.push(id);
            }
        }
        late
    }

    /// Connections whose peer `to` covers (one process, or every process
    /// of a namespace for the wildcard rank).
    pub(crate) fn of(&self, to: &ProcName) -> Vec<u64> {
        self.iter()
            .filter(|(_, c)| c.peer.as_ref().is_some_and(|p| to.covers(&p.name)))
            .map(|(id, _)| id)
            .collect()
    }

    /// Handshaken connections registered for event `code`, in id order.
    pub(crate) fn registered_for(&self, code: i32) -> Vec<u64> {
        let mut ids: Vec<u64> = match self.listeners.get(&code) {
            Some(some) => self.listen_all.union(some).copied().collect(),
            None => self.listen_all.iter().copied().collect(),
        };
        ids.retain(|id| self.map.get(id).is_some_and(|c| c.peer.is_some()));
        ids
    }

    /// Register connection `id` for `codes` (none: every event), on top of
    /// what it registered before.
    pub(crate) fn register_events(&mut self, id: u64, codes: &[i32]) {
        let Some(c) = self.map.get_mut(&id) else {
            return;
        };
        let all_already = matches!(&c.events, Some(l) if l.is_empty());
        if codes.is_empty() || all_already {
            c.events = Some(Vec::new());
            self.listen_all.insert(id);
            for l in self.listeners.values_mut() {
                l.remove(&id);
            }
            return;
        }
        let mut list = c.events.take().unwrap_or_default();
        for &code in codes {
            if !list.contains(&code) {
                list.push(code);
                self.listeners.entry(code).or_default().insert(id);
            }
        }
        c.events = Some(list);
    }

    /// Connection `id` registers for nothing any more.
    pub(crate) fn deregister_events(&mut self, id: u64) {
        let Some(c) = self.map.get_mut(&id) else {
            return;
        };
        if let Some(list) = c.events.take() {
            self.listen_all.remove(&id);
            for code in list {
                if let Some(l) = self.listeners.get_mut(&code) {
                    l.remove(&id);
                    if l.is_empty() {
                        self.listeners.remove(&code);
                    }
                }
            }
        }
    }

    /// True when a live connection holds identity `name`.
    pub(crate) fn identity_held(&self, name: &ProcName) -> bool {
        self.values()
            .any(|c| c.holds_identity() && c.peer.as_ref().is_some_and(|p| &p.name == name))
    }

    /// True when a handshaken connection's peer is of namespace `nspace`.
    pub(crate) fn nspace_connected(&self, nspace: &str) -> bool {
        self.values()
            .any(|c| c.peer.as_ref().is_some_and(|p| p.nspace() == nspace))
    }
}
