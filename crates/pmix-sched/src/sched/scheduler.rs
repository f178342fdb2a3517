//! The scheduler's inventory, FIFO queue and allocation clocks.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use super::types::{
    NodeAsk, NodeOrigin, SchedAllocView, SchedError, SchedEvent, SchedPendingView, SchedRequest,
    Submit,
};

/// State of one node in the scheduler's books.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NodeState {
    /// Available for a grant.
    Free,
    /// Part of the named allocation.
    Granted(String),
    /// Left in the DVM after its allocation was unreserved; returns only at
    /// teardown.
    Retained,
}

#[derive(Debug, Clone)]
struct SNode {
    name: String,
    origin: NodeOrigin,
    state: NodeState,
}

/// A request after validation: node indices instead of names.
#[derive(Debug, Clone)]
enum Resolved {
    Nothing,
    Count(u32, HashSet<usize>),
    List(Vec<usize>),
}

#[derive(Debug, Clone)]
struct Pending {
    alloc_id: String,
    want: Resolved,
    time_secs: Option<u32>,
    warn_secs: Option<u32>,
    extend: bool,
    /// Caller's tag of an EXTEND (0 for NEW), for cancelling just that one.
    tag: u64,
}

#[derive(Debug, Clone, Default)]
struct Alloc {
    nodes: Vec<usize>,
    expires: Option<u64>,
    warn_secs: Option<u32>,
    warn_at: Option<u64>,
    /// The expiry instant whose warning was already delivered: a grant that
    /// leaves the deadline there does not warn again.
    warned_for: Option<u64>,
    queued: bool,
}

const KIND_WARN: u8 = 0;
const KIND_EXPIRE: u8 = 1;

/// The simulated scheduler: see the [module documentation](super).
#[derive(Debug, Clone)]
pub struct Scheduler {
    nodes: Vec<SNode>,
    by_name: HashMap<String, usize>,
    free_own: BTreeSet<usize>,
    own_total: usize,
    allocs: HashMap<String, Alloc>,
    queue: VecDeque<Pending>,
    deadlines: BTreeSet<(u64, u8, String)>,
    next_id: u64,
}

impl Scheduler {
    /// A scheduler owning `m_nodes` nodes named `s<start_index>`… (zero-padded
    /// to the width of the last index, at least three digits).
    pub fn new(m_nodes: usize, start_index: usize) -> Self {
        let last = start_index + m_nodes.saturating_sub(1);
        let mut s = Scheduler {
            nodes: Vec::with_capacity(m_nodes),
            by_name: HashMap::with_capacity(m_nodes),
            free_own: BTreeSet::new(),
            own_total: m_nodes,
            allocs: HashMap::new(),
            queue: VecDeque::new(),
            deadlines: BTreeSet::new(),
            next_id: 1,
        };
        for i in 0..m_nodes {
            let name = super::node_name('s', start_index + i, last);
            s.by_name.insert(name.clone(), i);
            s.free_own.insert(i);
            s.nodes.push(SNode {
                name,
                origin: NodeOrigin::Scheduler,
                state: NodeState::Free,
            });
        }
        s
    }

    /// Hands startup nodes of the DVM to the scheduler so list requests may
    /// carve them out of the default session. Names already known are skipped.
    pub fn add_carvable(&mut self, names: &[String]) {
        for n in names {
            if self.by_name.contains_key(n) {
                continue;
            }
            self.by_name.insert(n.clone(), self.nodes.len());
            self.nodes.push(SNode {
                name: n.clone(),
                origin: NodeOrigin::Startup,
                state: NodeState::Free,
            });
        }
    }

    /// The scheduler's own node names, in index order.
    pub fn own_node_names(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.origin == NodeOrigin::Scheduler)
            .map(|n| n.name.clone())
            .collect()
    }

    /// Origin of a node the scheduler manages.
    pub fn node_origin(&self, name: &str) -> Option<NodeOrigin> {
        self.by_name.get(name).map(|&i| self.nodes[i].origin)
    }

    /// True when the node is free for a grant.
    pub fn is_free(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|&i| self.nodes[i].state == NodeState::Free)
    }

    /// Number of own nodes currently free.
    pub fn free_own_count(&self) -> usize {
        self.free_own.len()
    }

    /// The id the next accepted NEW request will receive.
    pub fn peek_next_id(&self) -> String {
        format!("alloc.{}", self.next_id)
    }

    /// Number of requests waiting in the queue.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// A view of one allocation, if known.
    pub fn allocation(&self, alloc_id: &str) -> Option<SchedAllocView> {
        let a = self.allocs.get(alloc_id)?;
        Some(SchedAllocView {
            alloc_id: alloc_id.to_string(),
            nodes: a
                .nodes
                .iter()
                .map(|&i| self.nodes[i].name.clone())
                .collect(),
            expires_at_ms: a.expires,
            warn_secs: a.warn_secs,
            queued: a.queued,
        })
    }

    /// The next instant (ms) at which [`Scheduler::advance`] has work to do.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadlines.first().map(|d| d.0)
    }

    /// Checks a request without changing anything. Returns the same error a
    /// submission would.
    pub fn check(&self, req: &SchedRequest) -> Result<(), SchedError> {
        self.resolve(req).map(|_| ())
    }

    fn resolve(&self, req: &SchedRequest) -> Result<Resolved, SchedError> {
        if req.time_secs == Some(0) {
            return Err(SchedError::ZeroTime);
        }
        let mut excluded = HashSet::new();
        for e in &req.exclude {
            // Unknown names in an exclusion list exclude nothing.
            if let Some(&i) = self.by_name.get(e) {
                excluded.insert(i);
            }
        }
        match &req.ask {
            NodeAsk::Nothing | NodeAsk::Count(0) => Ok(Resolved::Nothing),
            NodeAsk::Count(k) => {
                let own_excluded = excluded
                    .iter()
                    .filter(|&&i| self.nodes[i].origin == NodeOrigin::Scheduler)
                    .count();
                if *k as usize > self.own_total - own_excluded {
                    return Err(SchedError::TooMany);
                }
                Ok(Resolved::Count(*k, excluded))
            }
            NodeAsk::List(names) => {
                let mut seen = HashSet::with_capacity(names.len());
                let mut idx = Vec::with_capacity(names.len());
                for n in names {
                    let &i = self.by_name.get(n).ok_or(SchedError::UnknownNode)?;
                    if !seen.insert(i) || excluded.contains(&i) {
                        return Err(SchedError::DuplicateNode);
                    }
                    idx.push(i);
                }
                Ok(Resolved::List(idx))
            }
        }
    }

    /// Picks the nodes for `want` if all are free now.
    fn pick(&self, want: &Resolved) -> Option<Vec<usize>> {
        match want {
            Resolved::Nothing => Some(Vec::new()),
            Resolved::Count(k, excl) => {
                let got: Vec<usize> = self
                    .free_own
                    .iter()
                    .filter(|i| !excl.contains(i))
                    .take(*k as usize)
                    .copied()
                    .collect();
                (got.len() == *k as usize).then_some(got)
            }
            // A retained node sits unreserved in the DVM's default session:
            // a list request may carve it again, as it may a startup node.
            Resolved::List(idx) => idx
                .iter()
                .all(|&i| matches!(self.nodes[i].state, NodeState::Free | NodeState::Retained))
                .then(|| idx.clone()),
        }
    }

    /// Submits a NEW request. The allocation id is minted only once the request
    /// is valid, so a refused request costs nothing.
    pub fn submit_new(
        &mut self,
        req: &SchedRequest,
        now: u64,
    ) -> Result<(String, Submit), SchedError> {
        let want = self.resolve(req)?;
        let id = format!("alloc.{}", self.next_id);
        self.next_id += 1;
        self.allocs.insert(
            id.clone(),
            Alloc {
                queued: true,
                ..Alloc::default()
            },
        );
        let p = Pending {
            alloc_id: id.clone(),
            want,
            time_secs: req.time_secs,
            warn_secs: req.warn_secs,
            extend: false,
            tag: 0,
        };
        Ok((id, self.enqueue_or_grant(p, now)))
    }

    /// Submits an EXTEND of an active allocation: more nodes and/or more time
    /// and/or a renewed warning threshold.
    pub fn submit_extend(
        &mut self,
        alloc_id: &str,
        req: &SchedRequest,
        now: u64,
    ) -> Result<Submit, SchedError> {
        self.submit_extend_tagged(alloc_id, req, now, 0)
    }

    /// [`Scheduler::submit_extend`] with a caller-chosen `tag`, so a queued
    /// EXTEND can later be cancelled alone ([`Scheduler::cancel_tagged`]).
    pub fn submit_extend_tagged(
        &mut self,
        alloc_id: &str,
        req: &SchedRequest,
        now: u64,
        tag: u64,
    ) -> Result<Submit, SchedError> {
        let a = self
            .allocs
            .get(alloc_id)
            .ok_or(SchedError::NoSuchAllocation)?;
        if a.queued {
            return Err(SchedError::StillQueued);
        }
        let want = self.resolve(req)?;
        let p = Pending {
            alloc_id: alloc_id.to_string(),
            want,
            time_secs: req.time_secs,
            warn_secs: req.warn_secs,
            extend: true,
            tag,
        };
        if matches!(p.want, Resolved::Nothing) {
            let nodes = self.grant(p, now);
            return Ok(Submit::Granted(nodes));
        }
        Ok(self.enqueue_or_grant(p, now))
    }

    fn enqueue_or_grant(&mut self, p: Pending, now: u64) -> Submit {
        if self.queue.is_empty() && self.pick(&p.want).is_some() {
            Submit::Granted(self.grant(p, now))
        } else {
            self.queue.push_back(p);
            Submit::Queued
        }
    }

    /// Grants a pending request whose nodes are free; returns node names.
    fn grant(&mut self, p: Pending, now: u64) -> Vec<String> {
        let picked = self.pick(&p.want).unwrap_or_default();
        // Deadlines are keyed by their instants: drop them before they move.
        self.disarm(&p.alloc_id);
        for &i in &picked {
            self.nodes[i].state = NodeState::Granted(p.alloc_id.clone());
            self.free_own.remove(&i);
        }
        let names = picked.iter().map(|&i| self.nodes[i].name.clone()).collect();
        if let Some(a) = self.allocs.get_mut(&p.alloc_id) {
            a.nodes.extend(picked);
            a.queued = false;
            if let Some(t) = p.time_secs {
                let base = match (p.extend, a.expires) {
                    (true, Some(e)) => e.max(now),
                    _ => now,
                };
                a.expires = Some(base.saturating_add(u64::from(t) * 1000));
            }
            if p.warn_secs.is_some() {
                a.warn_secs = p.warn_secs;
            }
        }
        self.arm(&p.alloc_id);
        names
    }

    /// (Re)registers the warning and expiry deadlines of an allocation.
    /// The caller must have disarmed the old deadlines before changing them.
    fn arm(&mut self, alloc_id: &str) {
        let Some(a) = self.allocs.get_mut(alloc_id) else {
            return;
        };
        let Some(exp) = a.expires else {
            a.warn_at = None;
            return;
        };
        self.deadlines
            .insert((exp, KIND_EXPIRE, alloc_id.to_string()));
        a.warn_at = if a.warned_for == Some(exp) {
            None
        } else {
            a.warn_secs.map(|w| exp.saturating_sub(u64::from(w) * 1000))
        };
        if let Some(w) = a.warn_at {
            self.deadlines.insert((w, KIND_WARN, alloc_id.to_string()));
        }
    }

    fn disarm(&mut self, alloc_id: &str) {
        if let Some(a) = self.allocs.get(alloc_id) {
            if let Some(e) = a.expires {
                self.deadlines
                    .remove(&(e, KIND_EXPIRE, alloc_id.to_string()));
            }
            if let Some(w) = a.warn_at {
                self.deadlines.remove(&(w, KIND_WARN, alloc_id.to_string()));
            }
        }
    }

    /// Grants waiting requests from the head of the queue while they fit.
    fn pump(&mut self, now: u64, out: &mut Vec<SchedEvent>) {
        while let Some(front) = self.queue.front() {
            if self.pick(&front.want).is_none() {
                break;
            }
            let Some(p) = self.queue.pop_front() else {
                break;
            };
            let alloc_id = p.alloc_id.clone();
            let extend = p.extend;
            let nodes = self.grant(p, now);
            out.push(SchedEvent::QueuedGranted {
                alloc_id,
                nodes,
                extend,
            });
        }
    }

    /// Removes every queued request of `alloc_id`. Returns how many were
    /// removed, whether the allocation itself was still waiting (and is now
    /// gone), and the grants this unblocked.
    pub fn cancel(
        &mut self,
        alloc_id: &str,
        now: u64,
    ) -> Result<(usize, bool, Vec<SchedEvent>), SchedError> {
        let before = self.queue.len();
        self.queue.retain(|p| p.alloc_id != alloc_id);
        let removed = before - self.queue.len();
        if removed == 0 {
            return Err(SchedError::NothingQueued);
        }
        let was_new = self.allocs.get(alloc_id).is_some_and(|a| a.queued);
        if was_new {
            self.allocs.remove(alloc_id);
        }
        let mut ev = Vec::new();
        self.pump(now, &mut ev);
        Ok((removed, was_new, ev))
    }

    /// Removes the one queued EXTEND of `alloc_id` submitted with `tag`.
    /// Returns the grants this unblocked.
    pub fn cancel_tagged(
        &mut self,
        alloc_id: &str,
        tag: u64,
        now: u64,
    ) -> Result<Vec<SchedEvent>, SchedError> {
        let i = self
            .queue
            .iter()
            .position(|p| p.extend && p.tag == tag && p.alloc_id == alloc_id)
            .ok_or(SchedError::NothingQueued)?;
        self.queue.remove(i);
        let mut ev = Vec::new();
        self.pump(now, &mut ev);
        Ok(ev)
    }

    /// Returns nodes of an allocation to the scheduler: all of them (`None`,
    /// the allocation ends) or the listed ones. Own nodes become free; carved
    /// startup nodes become carvable again. Returns the returned names and the
    /// queued grants this unblocked.
    pub fn release(
        &mut self,
        alloc_id: &str,
        nodes: Option<&[String]>,
        now: u64,
    ) -> Result<(Vec<String>, Vec<SchedEvent>), SchedError> {
        let a = self
            .allocs
            .get(alloc_id)
            .ok_or(SchedError::NoSuchAllocation)?;
        let which: Vec<usize> = match nodes {
            None => a.nodes.clone(),
            Some(list) => {
                let mut v = Vec::with_capacity(list.len());
                for n in list {
                    let i = *self.by_name.get(n).ok_or(SchedError::NotInAllocation)?;
                    if !a.nodes.contains(&i) || v.contains(&i) {
                        return Err(SchedError::NotInAllocation);
                    }
                    v.push(i);
                }
                v
            }
        };
        let whole = nodes.is_none();
        let names = self.free_nodes(&which);
        if whole {
            self.drop_alloc(alloc_id);
        } else if let Some(a) = self.allocs.get_mut(alloc_id) {
            a.nodes.retain(|i| !which.contains(i));
        }
        let mut ev = Vec::new();
        self.pump(now, &mut ev);
        Ok((names, ev))
    }

    /// Ends an allocation without taking its nodes back (the DVM keeps them in
    /// its default session): own nodes become retained until teardown, carved
    /// startup nodes become carvable again.
    pub fn unreserve(&mut self, alloc_id: &str, now: u64) -> Vec<SchedEvent> {
        let Some(a) = self.allocs.get(alloc_id) else {
            return Vec::new();
        };
        let nodes = a.nodes.clone();
        for i in nodes {
            match self.nodes[i].origin {
                NodeOrigin::Scheduler => self.nodes[i].state = NodeState::Retained,
                NodeOrigin::Startup => self.nodes[i].state = NodeState::Free,
            }
        }
        self.drop_alloc(alloc_id);
        let mut ev = Vec::new();
        self.pump(now, &mut ev);
        ev
    }

    fn free_nodes(&mut self, which: &[usize]) -> Vec<String> {
        let mut names = Vec::with_capacity(which.len());
        for &i in which {
            self.nodes[i].state = NodeState::Free;
            if self.nodes[i].origin == NodeOrigin::Scheduler {
                self.free_own.insert(i);
            }
            names.push(self.nodes[i].name.clone());
        }
        names
    }

    fn drop_alloc(&mut self, alloc_id: &str) {
        self.disarm(alloc_id);
        self.allocs.remove(alloc_id);
        self.queue.retain(|p| p.alloc_id != alloc_id);
    }

    /// Fires every deadline at or before `now`, in time order: warnings
    /// ([`SchedEvent::WarnDue`]), expiries ([`SchedEvent::Expired`], nodes
    /// reclaimed) and the queued grants that the reclaimed nodes allow.
    pub fn advance(&mut self, now: u64) -> Vec<SchedEvent> {
        let mut ev = Vec::new();
        while let Some(first) = self.deadlines.first().cloned() {
            if first.0 > now {
                break;
            }
            self.deadlines.remove(&first);
            let (_, kind, id) = first;
            if kind == KIND_WARN {
                let Some(a) = self.allocs.get_mut(&id) else {
                    continue;
                };
                a.warn_at = None;
                a.warned_for = a.expires;
                let left = a.expires.unwrap_or(now).saturating_sub(now);
                let secs = u32::try_from(left.div_ceil(1000)).unwrap_or(u32::MAX);
                ev.push(SchedEvent::WarnDue {
                    alloc_id: id,
                    remaining_secs: secs,
                });
            } else {
                let Some(a) = self.allocs.get(&id) else {
                    continue;
                };
                let nodes = a.nodes.clone();
                let names = self.free_nodes(&nodes);
                self.drop_alloc(&id);
                ev.push(SchedEvent::Expired {
                    alloc_id: id,
                    nodes: names,
                });
                self.pump(now, &mut ev);
            }
        }
        ev
    }

    /// A scheduler owning exactly the nodes `names` (psched's pool, e.g.
    /// `node03`…`node08`), in that order; duplicates are kept once.
    pub fn with_names(names: &[String]) -> Self {
        let mut s = Scheduler::new(0, 1);
        for n in names {
            if s.by_name.contains_key(n) {
                continue;
            }
            let i = s.nodes.len();
            s.by_name.insert(n.clone(), i);
            s.free_own.insert(i);
            s.nodes.push(SNode {
                name: n.clone(),
                origin: NodeOrigin::Scheduler,
                state: NodeState::Free,
            });
            s.own_total += 1;
        }
        s
    }

    /// Ids minted from now on are `alloc.N` with N at least `n` (a restarted
    /// scheduler never reuses an id it gave out before).
    pub fn set_next_id(&mut self, n: u64) {
        self.next_id = self.next_id.max(n);
    }

    /// The number the next minted id will carry.
    pub fn next_id_number(&self) -> u64 {
        self.next_id
    }

    /// Re-enters a grant recorded before a restart: its nodes are taken
    /// (they must all be known and free), its deadlines armed again.
    pub fn restore(
        &mut self,
        alloc_id: &str,
        nodes: &[String],
        expires_at_ms: Option<u64>,
        warn_secs: Option<u32>,
    ) -> Result<(), SchedError> {
        if self.allocs.contains_key(alloc_id) {
            return Err(SchedError::DuplicateNode);
        }
        let mut idx = Vec::with_capacity(nodes.len());
        for n in nodes {
            let i = *self.by_name.get(n).ok_or(SchedError::UnknownNode)?;
            if self.nodes[i].state != NodeState::Free || idx.contains(&i) {
                return Err(SchedError::DuplicateNode);
            }
            idx.push(i);
        }
        for &i in &idx {
            self.nodes[i].state = NodeState::Granted(alloc_id.to_string());
            self.free_own.remove(&i);
        }
        self.allocs.insert(
            alloc_id.to_string(),
            Alloc {
                nodes: idx,
                expires: expires_at_ms,
                warn_secs,
                ..Alloc::default()
            },
        );
        self.arm(alloc_id);
        Ok(())
    }

    /// The names of the nodes left in the DVM by an unreserved allocation
    /// ([`Scheduler::unreserve`]), in pool order.
    pub fn retained_names(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.state == NodeState::Retained)
            .map(|n| n.name.clone())
            .collect()
    }

    /// Marks free nodes `names` as retained by the DVM (a restart re-entering
    /// what the DVM kept); unknown or busy names are skipped.
    pub fn restore_retained(&mut self, names: &[String]) {
        for n in names {
            let Some(&i) = self.by_name.get(n) else {
                continue;
            };
            if self.nodes[i].state == NodeState::Free {
                self.nodes[i].state = NodeState::Retained;
                self.free_own.remove(&i);
            }
        }
    }

    /// Every retained node becomes free again (the DVM that kept them is
    /// gone); returns their names and the queued grants this unblocked.
    pub fn free_retained(&mut self, now: u64) -> (Vec<String>, Vec<SchedEvent>) {
        let which: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].state == NodeState::Retained)
            .collect();
        let names = self.free_nodes(&which);
        let mut ev = Vec::new();
        self.pump(now, &mut ev);
        (names, ev)
    }

    /// The requests waiting in the queue, first first.
    pub fn pending(&self) -> Vec<SchedPendingView> {
        self.queue
            .iter()
            .map(|p| SchedPendingView {
                alloc_id: p.alloc_id.clone(),
                nodes: match &p.want {
                    Resolved::Nothing => 0,
                    Resolved::Count(n, _) => *n,
                    Resolved::List(l) => l.len() as u32,
                },
                time_secs: p.time_secs,
                extend: p.extend,
                reason: None,
            })
            .collect()
    }

    /// Every allocation, granted or queued, sorted by id.
    pub fn allocations(&self) -> Vec<SchedAllocView> {
        let mut ids: Vec<&String> = self.allocs.keys().collect();
        ids.sort();
        ids.into_iter()
            .filter_map(|id| self.allocation(id))
            .collect()
    }

    /// The names of the free own nodes, in pool order.
    pub fn free_names(&self) -> Vec<String> {
        self.free_own
            .iter()
            .map(|&i| self.nodes[i].name.clone())
            .collect()
    }

    /// Ends everything: every allocation, the queue, retained nodes. Returns
    /// the ids of the allocations that were still known.
    pub fn teardown(&mut self) -> Vec<String> {
        let ids: Vec<String> = self.allocs.keys().cloned().collect();
        self.allocs.clear();
        self.queue.clear();
        self.deadlines.clear();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.state = NodeState::Free;
            if n.origin == NodeOrigin::Scheduler {
                self.free_own.insert(i);
            }
        }
        ids
    }
}
