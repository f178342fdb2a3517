//! The DVM's state: nodes, reservations, namespaces.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::sched::{NodeOrigin, Scheduler};

use super::error::DvmError;
use super::jobs::{Genealogy, NsKind};
use super::names::UsedNames;
use super::types::{Effect, Requester, RequesterClass};
use crate::proto::Inheritance;

/// How many ended jobs the model keeps by default (for `pwatch --status
/// --all`, a late `pwatch --job NS`): the last ones to end. An older job
/// is kept only while something needs it (a reservation it owns, or a
/// kept job it started).
pub const JOB_HISTORY: usize = 1000;

/// Start-up configuration of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DvmConfig {
    /// Number of startup nodes (`n001`…), the default session.
    pub nodes: usize,
    /// Slots per node (startup and scheduler nodes alike).
    pub slots: u32,
    /// `--pmix-compat`: behave as a DVM whose PMIx lacks the five attributes
    /// (§8.2.1.10).
    pub compat: bool,
}

/// One node known to the DVM (startup, or scheduler node that joined once).
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub name: String,
    pub slots: u32,
    pub origin: NodeOrigin,
    /// Currently part of the DVM.
    pub member: bool,
    /// `None` = default session, else the reservation id.
    pub session: Option<String>,
    /// The allocation the node belongs to (also set for shared allocations,
    /// whose nodes sit in the default session).
    pub alloc: Option<String>,
    pub in_use: u32,
    /// Namespace index → procs on this node.
    pub jobs: Vec<(u32, u32)>,
}

/// Life stage of a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResStage {
    Queued,
    Active,
}

/// A queued EXTEND waiting for its grant.
#[derive(Debug, Clone)]
pub(crate) struct QueuedExtend {
    pub to: (String, u32),
    pub req_id: Option<String>,
    /// The disposition it asks for: applied only once it is granted, so a
    /// cancelled EXTEND leaves nothing behind.
    pub inherit: Option<Inheritance>,
    /// Its tag in the scheduler's queue.
    pub tag: u64,
    /// Whether it asks for a timeout warning (`PMIX_ALLOC_WARN_TIMEOUT`):
    /// only then does the warning move to its requester.
    pub warns: bool,
}

/// A reservation (or shared allocation) and its bookkeeping.
#[derive(Debug, Clone)]
pub(crate) struct Reservation {
    pub id: String,
    pub seq: u64,
    pub req_id: Option<String>,
    /// The owning namespace (index in the genealogy).
    pub owner: u32,
    /// Owner set, in insertion order, plus a lookup set. A job past the
    /// history of ended jobs leaves it when it is forgotten.
    pub owners: VecDeque<String>,
    pub owner_lookup: HashSet<String>,
    pub inherit: Inheritance,
    pub inherit_given: bool,
    pub share: bool,
    /// Node indices, in grant order.
    pub nodes: Vec<usize>,
    /// Recipient of timeout warnings and grant replies.
    pub requester: (String, u32),
    pub stage: ResStage,
    pub queued_extends: VecDeque<QueuedExtend>,
}

impl QueuedExtend {
    /// The reply owed to its requester when it is dropped ungranted.
    pub(crate) fn dropped(self, alloc_id: &str) -> Effect {
        Effect::RequestDropped {
            to: self.to,
            alloc_id: alloc_id.to_string(),
            req_id: self.req_id,
            cancelled_by: None,
        }
    }
}

impl Reservation {
    /// The reply owed to the requester of this reservation's own NEW when
    /// it is dropped before its first grant.
    pub(crate) fn dropped(&self) -> Effect {
        Effect::RequestDropped {
            to: self.requester.clone(),
            alloc_id: self.id.clone(),
            req_id: self.req_id.clone(),
            cancelled_by: None,
        }
    }

    /// Takes out every queued EXTEND, returning the replies owed to their
    /// requesters, in queue order.
    pub(crate) fn drop_extends(&mut self) -> Vec<Effect> {
        let id = &self.id;
        self.queued_extends
            .drain(..)
            .map(|q| q.dropped(id))
            .collect()
    }

    /// True when `req` may target, extend, release or cancel this reservation:
    /// its own namespace is in the owner set, or it is the scheduler
    /// (§8.2.1.7, §8.2.1.9.1). `PMIX_ALLOC_TARGET` never counts: it names
    /// whose reservation it is, not who is asking.
    pub(crate) fn owned_by(&self, req: &Requester) -> bool {
        req.class == RequesterClass::Scheduler || self.owner_lookup.contains(&req.nspace)
    }

    /// Adds a namespace to the owner set (no-op when present).
    pub(crate) fn add_owner(&mut self, ns: &str) {
        if self.owner_lookup.insert(ns.to_string()) {
            self.owners.push_back(ns.to_string());
        }
    }

    /// Takes a forgotten namespace out of the owner set. Namespaces are
    /// forgotten about in the order they were added, so it is found near
    /// the front.
    pub(crate) fn drop_owner(&mut self, ns: &str) {
        if self.owner_lookup.remove(ns) {
            if let Some(k) = self.owners.iter().position(|o| o == ns) {
                self.owners.remove(k);
            }
        }
    }
}

/// The DVM model: see the [module documentation](super).
#[derive(Debug, Clone)]
pub struct Dvm {
    pub(crate) cfg: DvmConfig,
    pub(crate) nodes: Vec<Node>,
    pub(crate) node_by_name: HashMap<String, usize>,
    pub(crate) res: HashMap<String, Reservation>,
    pub(crate) by_req: HashMap<String, Vec<String>>,
    pub(crate) gen: Genealogy,
    /// The peer-given names of forgotten tool namespaces, in constant
    /// space: such a name is never reused (see [`UsedNames`]).
    pub(crate) used: UsedNames,
    /// The last ended jobs kept (genealogy indexes, oldest first), at most
    /// `history_len` of them.
    pub(crate) history: VecDeque<u32>,
    pub(crate) history_len: usize,
    pub(crate) next_seq: u64,
    pub(crate) torn_down: bool,
}

impl Dvm {
    /// A DVM with `cfg.nodes` startup nodes of `cfg.slots` slots forming the
    /// default session. The startup nodes are handed to `sched` as carvable,
    /// so list requests may reserve them.
    pub fn new(cfg: DvmConfig, sched: &mut Scheduler) -> Self {
        let mut nodes = Vec::with_capacity(cfg.nodes);
        let mut node_by_name = HashMap::with_capacity(cfg.nodes);
        for i in 1..=cfg.nodes {
            let name = crate::sched::node_name('n', i, cfg.nodes);
            node_by_name.insert(name.clone(), nodes.len());
            nodes.push(Node {
                name,
                slots: cfg.slots,
                origin: NodeOrigin::Startup,
                member: true,
                session: None,
                alloc: None,
                in_use: 0,
                jobs: Vec::new(),
            });
        }
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        sched.add_carvable(&names);
        Dvm {
            cfg,
            nodes,
            node_by_name,
            res: HashMap::new(),
            by_req: HashMap::new(),
            gen: Genealogy::default(),
            used: UsedNames::default(),
            history: VecDeque::new(),
            history_len: JOB_HISTORY,
            next_seq: 1,
            torn_down: false,
        }
    }

    /// The configuration the model was built with.
    pub fn config(&self) -> DvmConfig {
        self.cfg
    }

    /// Keeps the last `n` ended jobs (default [`JOB_HISTORY`]); older ones
    /// are forgotten at once when there are more.
    pub fn set_job_history(&mut self, n: usize) {
        self.history_len = n;
        self.age_history();
    }

    /// How many ended jobs are kept ([`Dvm::set_job_history`]).
    pub fn job_history(&self) -> usize {
        self.history_len
    }

    /// True when `nspace` is a namespace here, or a name a tool chose here
    /// before. Job names are the caller's to mint and never recur (pdvm
    /// numbers them), so a job past the history is not remembered.
    pub fn namespace_known(&self, nspace: &str) -> bool {
        self.gen.is_registered(nspace) || self.used.contains(nspace)
    }

    /// Registers a connected tool's namespace (a live genealogy root),
    /// whose name its peer chose: it is never reused, even once forgotten.
    pub fn tool_connected(&mut self, nspace: &str) -> Result<(), DvmError> {
        if self.namespace_known(nspace) {
            return Err(DvmError::Exists(super::error::Rule::NamespaceExists));
        }
        let i = self.gen.ensure(nspace);
        self.gen.start(i, NsKind::Tool, None);
        Ok(())
    }

    /// [`Dvm::tool_connected`] for a name the DVM minted (it never recurs,
    /// so nothing of it is kept once it is forgotten).
    pub fn tool_connected_minted(&mut self, nspace: &str) -> Result<(), DvmError> {
        self.tool_connected(nspace)?;
        if let Some(i) = self.gen.get(nspace) {
            self.gen.at_mut(i).given = false;
        }
        Ok(())
    }

    /// Namespaces the model holds (tools and jobs, live or ended; ended
    /// tools that nothing needs, and ended jobs past the history that
    /// nothing needs, are forgotten).
    pub fn namespaces_held(&self) -> usize {
        self.gen.len()
    }

    /// Job `i` ended: it joins the history, whose oldest job leaves it
    /// when it is full.
    pub(crate) fn remember_ended_job(&mut self, i: u32) {
        self.history.push_back(i);
        self.age_history();
    }

    /// Ends the history's oldest jobs while it holds more than its length:
    /// each is forgotten now, or once nothing needs it any more.
    fn age_history(&mut self) {
        while self.history.len() > self.history_len {
            let Some(i) = self.history.pop_front() else {
                return;
            };
            self.gen.at_mut(i).aged = true;
            self.forget_if_unneeded(i);
        }
    }

    /// Forget namespace `i` if nothing needs it any more (see
    /// [`Genealogy::forgettable`]), then its parent if that was all it
    /// waited for. A peer-given name is remembered ([`UsedNames`]) so it is
    /// never reused; a forgotten job leaves the owner sets it joined.
    pub(crate) fn forget_if_unneeded(&mut self, i: u32) {
        let mut next = Some(i);
        while let Some(i) = next.filter(|&i| self.gen.forgettable(i)) {
            let e = self.gen.forget(i);
            if e.given {
                self.used.insert(&e.name);
            }
            if e.kind == NsKind::Job {
                for r in self.res.values_mut() {
                    r.drop_owner(&e.name);
                }
            }
            next = e.parent;
        }
    }

    /// Makes sure a requester's namespace is known; an unknown one is
    /// registered as a live root of the requester's kind.
    pub(crate) fn ensure_requester(&mut self, req: &Requester) -> u32 {
        if let Some(i) = self.gen.get(&req.nspace) {
            if self.gen.at(i).kind != NsKind::Placeholder {
                return i;
            }
        }
        let i = self.gen.ensure(&req.nspace);
        let kind = match req.class {
            RequesterClass::Application => NsKind::Job,
            _ => NsKind::Tool,
        };
        self.gen.start(i, kind, None);
        i
    }

    /// Index of a node by name, creating the record of a scheduler node the
    /// first time it joins.
    pub(crate) fn node_index(&mut self, name: &str, origin: NodeOrigin) -> usize {
        if let Some(&i) = self.node_by_name.get(name) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(Node {
            name: name.to_string(),
            slots: self.cfg.slots,
            origin,
            member: false,
            session: None,
            alloc: None,
            in_use: 0,
            jobs: Vec::new(),
        });
        self.node_by_name.insert(name.to_string(), i);
        i
    }

    /// Puts granted nodes into allocation `id` (reserved session, or default
    /// session when shared). Emits [`Effect::NodesJoined`] for nodes that were
    /// not yet part of the DVM.
    pub(crate) fn place_nodes(
        &mut self,
        id: &str,
        names: &[String],
        sched: &Scheduler,
        fx: &mut Vec<Effect>,
    ) {
        let Some(share) = self.res.get(id).map(|r| r.share) else {
            return;
        };
        let mut joined = Vec::new();
        let mut idx = Vec::with_capacity(names.len());
        for n in names {
            let origin = sched.node_origin(n).unwrap_or(NodeOrigin::Scheduler);
            let i = self.node_index(n, origin);
            let node = &mut self.nodes[i];
            if !node.member {
                node.member = true;
                joined.push(n.clone());
            }
            node.session = if share { None } else { Some(id.to_string()) };
            node.alloc = Some(id.to_string());
            idx.push(i);
        }
        if let Some(r) = self.res.get_mut(id) {
            r.nodes.extend(idx);
        }
        if !joined.is_empty() {
            fx.push(Effect::NodesJoined {
                alloc_id: id.to_string(),
                nodes: joined,
            });
        }
    }

    /// Removes a node from its allocation. Scheduler nodes leave the DVM and
    /// every job with processes on them is to be killed; startup nodes revert
    /// to the default session and nobody is killed (§8.2.1.9.4).
    /// Report, as one `NodesLeft` effect, those of `nodes` that are no
    /// longer members of the DVM (after a release or reclaim).
    pub(crate) fn report_left(&self, nodes: &[usize], fx: &mut Vec<Effect>) {
        let left: Vec<String> = nodes
            .iter()
            .filter(|&&i| !self.nodes[i].member)
            .map(|&i| self.nodes[i].name.clone())
            .collect();
        if !left.is_empty() {
            fx.push(Effect::NodesLeft { nodes: left });
        }
    }

    /// Report, as one `NodesUnreserved` effect, those of `nodes` (just
    /// detached from allocation `id`) that stay members of the DVM.
    pub(crate) fn report_unreserved(&self, id: &str, nodes: &[usize], fx: &mut Vec<Effect>) {
        let stayed: Vec<String> = nodes
            .iter()
            .filter(|&&i| self.nodes[i].member)
            .map(|&i| self.nodes[i].name.clone())
            .collect();
        if !stayed.is_empty() {
            fx.push(Effect::NodesUnreserved {
                alloc_id: id.to_string(),
                nodes: stayed,
            });
        }
    }

    pub(crate) fn detach_node(&mut self, i: usize, leaves: bool, why: &str, fx: &mut Vec<Effect>) {
        let node = &mut self.nodes[i];
        node.session = None;
        node.alloc = None;
        if !(leaves && node.origin == NodeOrigin::Scheduler) {
            return;
        }
        node.member = false;
        node.in_use = 0;
        let jobs = std::mem::take(&mut node.jobs);
        let name = node.name.clone();
        for (ns, _) in jobs {
            let e = self.gen.at_mut(ns);
            e.placement.retain(|&(n, _)| n != i);
            if e.state == super::jobs::JobState::Running {
                let reason = format!("node {name} left the DVM ({why})");
                e.state = super::jobs::JobState::Killing(reason.clone());
                fx.push(Effect::KillJob {
                    nspace: e.name.clone(),
                    reason,
                });
            }
        }
    }

    /// Finds the reservation named by `alloc_id` (tried first) or `req_id` for
    /// `req`. `Err(true)` = exists but not owned, `Err(false)` = not found.
    pub(crate) fn find_for(
        &self,
        alloc_id: Option<&str>,
        req_id: Option<&str>,
        req: &Requester,
    ) -> Result<String, bool> {
        if let Some(a) = alloc_id {
            // A named allocation that does not exist is not found, whatever
            // request id comes with it.
            let Some(r) = self.res.get(a) else {
                return Err(false);
            };
            return if r.owned_by(req) {
                Ok(a.to_string())
            } else {
                Err(true)
            };
        }
        let Some(q) = req_id else {
            return Err(false);
        };
        let Some(ids) = self.by_req.get(q) else {
            return Err(false);
        };
        let mut exists = false;
        for id in ids.iter().rev() {
            if let Some(r) = self.res.get(id) {
                exists = true;
                if r.owned_by(req) {
                    return Ok(id.clone());
                }
            }
        }
        Err(exists)
    }

    /// Forgets a reservation record and its indexes.
    pub(crate) fn forget(&mut self, id: &str) -> Option<Reservation> {
        let r = self.res.remove(id)?;
        if let Some(q) = &r.req_id {
            if let Some(v) = self.by_req.get_mut(q) {
                v.retain(|x| x != id);
                if v.is_empty() {
                    self.by_req.remove(q);
                }
            }
        }
        self.gen.at_mut(r.owner).owned.retain(|x| x != id);
        self.forget_if_unneeded(r.owner);
        Some(r)
    }
}
