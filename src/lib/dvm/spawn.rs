//! Spawn targeting (§8.2.1.6), the ownership check (§8.2.1.7) and placement.
//!
//! Placement policy: processes fill free slots node by node over the
//! candidate pool (targeted reservations in target order, then the default
//! pool when included, each in node order). When every slot of the pool is
//! taken the remaining processes are oversubscribed round-robin over the same
//! pool, starting from its first node. A pool with no slot at all is refused
//! with `PMIX_ERR_OUT_OF_RESOURCE`.

use std::collections::HashMap;

use serde::Serialize;

use super::error::{DvmError, Rule};
use super::jobs::NsKind;
use super::model::{Dvm, ResStage};
use super::types::{Requester, RequesterClass};

/// Upper bound on the processes of one job (the count comes from the wire).
pub const MAX_PROCS: u64 = 1 << 20;

/// Where one process goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcSlot {
    /// Index of the app context.
    pub app: usize,
    /// Rank within the job.
    pub rank: u32,
    /// Node name.
    pub node: String,
}

/// A validated spawn plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// Reservation ids the job targets (its namespace joins their owner sets).
    pub sessions: Vec<String>,
    /// True when the default session is part of the candidate pool.
    pub default_pool: bool,
    /// The candidate pool: exactly the union of the targeted sessions.
    pub pool: Vec<String>,
    /// One entry per process.
    pub procs: Vec<ProcSlot>,
}

impl Dvm {
    /// Validates a spawn and places its processes without changing anything.
    ///
    /// `targets`: `PMIX_SPAWN_TARGET` entries; `""` is the default session.
    /// `nprocs`: processes per app context. A target naming a shared
    /// allocation resolves to the default session where its nodes live.
    pub fn plan_spawn(
        &self,
        req: &Requester,
        targets: Option<&[String]>,
        nprocs: &[u32],
    ) -> Result<Placement, DvmError> {
        let total: u64 = nprocs.iter().map(|&n| u64::from(n)).sum();
        if total == 0 {
            return Err(DvmError::BadParam(Rule::SpawnNoProcs));
        }
        if total > MAX_PROCS {
            return Err(DvmError::BadParam(Rule::SpawnTooManyProcs));
        }
        let mut sessions: Vec<String> = Vec::new();
        let mut default_pool = false;
        // §8.2.1.10: a compat DVM does not know SPAWN_TARGET.
        let targets = if self.cfg.compat { None } else { targets };
        match targets {
            None => default_pool = true,
            Some(t) if t.iter().all(|e| e.is_empty()) => default_pool = true,
            Some(t) => {
                for e in t {
                    if e.is_empty() {
                        default_pool = true;
                        continue;
                    }
                    let r = self
                        .res
                        .get(e)
                        .filter(|r| r.stage == ResStage::Active)
                        .ok_or(DvmError::NotFound(Rule::SpawnTargetNotFound))?;
                    if r.share {
                        default_pool = true;
                        continue;
                    }
                    if req.class != RequesterClass::Scheduler
                        && !r.owner_lookup.contains(&req.nspace)
                    {
                        return Err(DvmError::NoPermissions(Rule::SpawnTargetNotOwner));
                    }
                    if !sessions.contains(e) {
                        sessions.push(e.clone());
                    }
                }
            }
        }
        let mut pool: Vec<usize> = Vec::new();
        for s in &sessions {
            if let Some(r) = self.res.get(s) {
                pool.extend(r.nodes.iter().copied().filter(|&i| self.nodes[i].member));
            }
        }
        if default_pool {
            pool.extend(
                self.nodes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| n.member && n.session.is_none())
                    .map(|(i, _)| i),
            );
        }
        let capacity: u64 = pool.iter().map(|&i| u64::from(self.nodes[i].slots)).sum();
        if capacity == 0 {
            return Err(DvmError::OutOfResource(Rule::SpawnNoSlots));
        }
        let mut planned = vec![0u32; pool.len()];
        let mut cursor = 0usize;
        let mut rr = 0usize;
        let mut procs = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        let mut rank = 0u32;
        for (app, &n) in nprocs.iter().enumerate() {
            for _ in 0..n {
                while cursor < pool.len() {
                    let node = &self.nodes[pool[cursor]];
                    if node.in_use.saturating_add(planned[cursor]) < node.slots {
                        break;
                    }
                    cursor += 1;
                }
                let k = if cursor < pool.len() {
                    cursor
                } else {
                    let k = rr % pool.len();
                    rr += 1;
                    k
                };
                planned[k] += 1;
                procs.push(ProcSlot {
                    app,
                    rank,
                    node: self.nodes[pool[k]].name.clone(),
                });
                rank = rank.wrapping_add(1);
            }
        }
        Ok(Placement {
            sessions,
            default_pool,
            pool: pool.iter().map(|&i| self.nodes[i].name.clone()).collect(),
            procs,
        })
    }

    /// Records a planned job: namespace `nspace` (child of `parent`, a tool or
    /// job namespace, or `None` for a root job such as pdvm's own command),
    /// its processes on their nodes, and its membership in the owner set of
    /// every targeted reservation (never transitively).
    pub fn commit_spawn(
        &mut self,
        plan: &Placement,
        nspace: &str,
        parent: Option<&str>,
    ) -> Result<(), DvmError> {
        if self.gen.is_registered(nspace) {
            return Err(DvmError::Exists(Rule::NamespaceExists));
        }
        // The plan must still hold: targeted reservations active, nodes present.
        for s in &plan.sessions {
            if !self.res.get(s).is_some_and(|r| r.stage == ResStage::Active) {
                return Err(DvmError::NotFound(Rule::SpawnTargetNotFound));
            }
        }
        let mut counts: HashMap<usize, u32> = HashMap::new();
        for p in &plan.procs {
            let i = self
                .node_by_name
                .get(&p.node)
                .copied()
                .filter(|&i| self.nodes[i].member)
                .ok_or(DvmError::NotFound(Rule::SpawnTargetNotFound))?;
            *counts.entry(i).or_default() += 1;
        }
        let mut per_node: Vec<(usize, u32)> = counts.into_iter().collect();
        per_node.sort_unstable();
        let parent_idx = parent.map(|p| self.gen.ensure(p));
        let me = self.gen.ensure(nspace);
        self.gen.start(me, NsKind::Job, parent_idx);
        for &(i, c) in &per_node {
            let node = &mut self.nodes[i];
            node.in_use = node.in_use.saturating_add(c);
            node.jobs.push((me, c));
        }
        self.gen.at_mut(me).placement = per_node;
        for s in &plan.sessions {
            if let Some(r) = self.res.get_mut(s) {
                r.add_owner(nspace);
            }
        }
        Ok(())
    }

    /// Plans and commits in one step; the new job's parent is the requester's
    /// namespace.
    pub fn spawn(
        &mut self,
        req: &Requester,
        nspace: &str,
        targets: Option<&[String]>,
        nprocs: &[u32],
    ) -> Result<Placement, DvmError> {
        let plan = self.plan_spawn(req, targets, nprocs)?;
        self.commit_spawn(&plan, nspace, Some(&req.nspace))?;
        Ok(plan)
    }
}
