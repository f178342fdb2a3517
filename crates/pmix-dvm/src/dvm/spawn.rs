//! Spawn targeting (§8.2.1.6), the ownership check (§8.2.1.7) and placement.
//!
//! Placement policy ([`MapBy`], from `PMIX_MAPBY`): the candidate pool is
//! the targeted reservations in target order, then the default pool when
//! included, each in node order; an app with `PMIX_HOST` is placed on those
//! of its hosts only (a host the DVM does not have is `PMIX_ERR_NOT_FOUND`,
//! a host outside the pool `PMIX_ERR_JOB_FAILED_TO_MAP`).
//!
//! - `slot` (the default; `core` and `hwthread` mean the same here, one slot
//!   being one CPU): fill free slots node by node;
//! - `node`: one process per node in turn;
//! - `ppr:N:node`: N processes on each node in turn.
//!
//! Each process takes one slot, or N with `PMIX_CPUS_PER_PROC` = N (the
//! `PE=N` modifier of the policy, as PRRTE's `--map-by :PE=N`); a process
//! never straddles nodes.
//!
//! A job may have at most as many processes on a node as the node has slots
//! (N for `ppr`), counting its own processes only (jobs of a session share
//! its nodes: a busy slot is avoided, not refused); more is refused with
//! `PMIX_ERR_JOB_FAILED_TO_MAP` unless the policy carries `:OVERSUBSCRIBE`,
//! which places the rest round-robin over the pool. A policy that is none of
//! these is `PMIX_ERR_BAD_PARAM`; PRRTE policies pdvm does not model
//! (`numa`, `package`, `l1cache`…`l3cache`, `seq`, `dist`, `rankfile`,
//! `pe-list`) are `PMIX_ERR_NOT_SUPPORTED`. A pool with no slot at all is
//! refused with `PMIX_ERR_OUT_OF_RESOURCE`.

use std::collections::HashMap;

use serde::Serialize;

use super::error::{DvmError, Rule};
use super::jobs::NsKind;
use super::model::{Dvm, ResStage};
use super::types::{Requester, RequesterClass};

/// Upper bound on the processes of one job (the count comes from the wire).
pub const MAX_PROCS: u64 = 1 << 20;

/// How processes are spread over nodes (`PMIX_MAPBY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MapPolicy {
    /// Fill each node's slots before the next.
    Slot,
    /// One process per node in turn.
    Node,
    /// This many processes per node in turn.
    PerNode(u32),
}

/// A parsed `PMIX_MAPBY`: policy and whether oversubscription is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MapBy {
    /// The policy.
    pub policy: MapPolicy,
    /// `:OVERSUBSCRIBE` given.
    pub oversubscribe: bool,
    /// Slots (CPUs) each process takes: the `PE=N` modifier or
    /// `PMIX_CPUS_PER_PROC`; 1 by default.
    pub pe: u32,
}

impl Default for MapBy {
    fn default() -> Self {
        MapBy {
            policy: MapPolicy::Slot,
            oversubscribe: false,
            pe: 1,
        }
    }
}

impl MapBy {
    /// Parses `POLICY[:MOD[,MOD…]]` (`ppr:N:node[:MOD…]`), case-insensitive;
    /// an empty policy (`:OVERSUBSCRIBE`) keeps `slot`.
    pub fn parse(s: &str) -> Result<MapBy, DvmError> {
        let bad = DvmError::BadParam(Rule::MapByInvalid);
        let parts: Vec<String> = s
            .split(':')
            .map(|p| p.trim().to_ascii_lowercase())
            .collect();
        let (policy, mods) = match parts[0].as_str() {
            "" | "slot" | "core" | "hwthread" => (MapPolicy::Slot, &parts[1..]),
            "node" => (MapPolicy::Node, &parts[1..]),
            "ppr" => {
                let n = parts
                    .get(1)
                    .and_then(|n| n.parse::<u32>().ok())
                    .filter(|&n| n > 0)
                    .ok_or(bad)?;
                match parts.get(2).map(String::as_str) {
                    Some("node") => {}
                    Some(
                        "numa" | "package" | "l1cache" | "l2cache" | "l3cache" | "core"
                        | "hwthread",
                    ) => return Err(DvmError::NotSupported(Rule::MapByNotModelled)),
                    _ => return Err(bad),
                }
                (MapPolicy::PerNode(n), parts.get(3..).unwrap_or(&[]))
            }
            "numa" | "package" | "l1cache" | "l2cache" | "l3cache" | "seq" | "dist"
            | "rankfile" | "pe-list" => return Err(DvmError::NotSupported(Rule::MapByNotModelled)),
            _ => return Err(bad),
        };
        let mut m = MapBy {
            policy,
            oversubscribe: false,
            pe: 1,
        };
        for md in mods.iter().flat_map(|x| x.split(',')) {
            match md.trim() {
                "" => {}
                "oversubscribe" => m.oversubscribe = true,
                "nooversubscribe" => m.oversubscribe = false,
                pe if pe.starts_with("pe=") => {
                    m.pe = pe[3..].parse().ok().filter(|&n| n > 0).ok_or(bad)?;
                }
                _ => return Err(bad),
            }
        }
        Ok(m)
    }
}

/// One app of a spawn as placement sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppAsk {
    /// Processes.
    pub nprocs: u32,
    /// `PMIX_HOST`: the nodes it may use (empty: the whole pool).
    pub hosts: Vec<String>,
}

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
    /// Slots each process takes (see [`MapBy::pe`]).
    pub slots_per_proc: u32,
}

impl Dvm {
    /// Validates a spawn and places its processes without changing anything.
    ///
    /// `targets`: `PMIX_SPAWN_TARGET` entries; `""` is the default session.
    /// `nprocs`: processes per app context. A target naming a shared
    /// allocation resolves to the default session where its nodes live.
    ///
    /// This form places as pdvm always did: `slot` with oversubscription
    /// allowed, no host lists (see [`Dvm::plan_spawn_with`]).
    pub fn plan_spawn(
        &self,
        req: &Requester,
        targets: Option<&[String]>,
        nprocs: &[u32],
    ) -> Result<Placement, DvmError> {
        let apps: Vec<AppAsk> = nprocs
            .iter()
            .map(|&n| AppAsk {
                nprocs: n,
                hosts: Vec::new(),
            })
            .collect();
        let map = MapBy {
            policy: MapPolicy::Slot,
            oversubscribe: true,
            pe: 1,
        };
        self.plan_spawn_with(req, targets, &apps, map)
    }

    /// Validates a spawn and places its processes by `map`, each app on its
    /// hosts when it names some, without changing anything.
    pub fn plan_spawn_with(
        &self,
        req: &Requester,
        targets: Option<&[String]>,
        apps: &[AppAsk],
        map: MapBy,
    ) -> Result<Placement, DvmError> {
        let nprocs: Vec<u32> = apps.iter().map(|a| a.nprocs).collect();
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
        let cands = self.candidates(apps, &pool)?;
        let mut planned = vec![0u32; pool.len()];
        let procs = self.place(&pool, &cands, &nprocs, map, &mut planned)?;
        Ok(Placement {
            sessions,
            default_pool,
            pool: pool.iter().map(|&i| self.nodes[i].name.clone()).collect(),
            procs,
            slots_per_proc: map.pe.max(1),
        })
    }

    /// Each app's candidate nodes (indexes into `pool`): the pool, or the
    /// app's hosts, each of which must be a node of the pool.
    fn candidates(&self, apps: &[AppAsk], pool: &[usize]) -> Result<Vec<Vec<usize>>, DvmError> {
        let mut cands: Vec<Vec<usize>> = Vec::with_capacity(apps.len());
        for a in apps {
            if a.hosts.is_empty() {
                cands.push((0..pool.len()).collect());
                continue;
            }
            let mut c = Vec::with_capacity(a.hosts.len());
            for h in &a.hosts {
                let i = self
                    .node_by_name
                    .get(h)
                    .copied()
                    .filter(|&i| self.nodes[i].member)
                    .ok_or(DvmError::NotFound(Rule::SpawnUnknownHost))?;
                let k = pool
                    .iter()
                    .position(|&p| p == i)
                    .ok_or(DvmError::FailedToMap(Rule::SpawnHostOutsidePool))?;
                if !c.contains(&k) {
                    c.push(k);
                }
            }
            cands.push(c);
        }
        Ok(cands)
    }

    /// Placement by `map` (see the [module documentation](self)); `slot`
    /// with oversubscription is pdvm's historical placement: fill free slots
    /// node by node, then round-robin over the candidates.
    fn place(
        &self,
        pool: &[usize],
        cands: &[Vec<usize>],
        nprocs: &[u32],
        map: MapBy,
        planned: &mut [u32],
    ) -> Result<Vec<ProcSlot>, DvmError> {
        // `planned` counts slots: each process takes `pe` of them.
        let pe = map.pe.max(1);
        let legacy = map.oversubscribe && map.policy == MapPolicy::Slot;
        let slots = |k: usize| self.nodes[pool[k]].slots;
        let limit = |k: usize| match map.policy {
            MapPolicy::PerNode(n) if map.oversubscribe => n.saturating_mul(pe),
            MapPolicy::PerNode(n) => n.saturating_mul(pe).min(slots(k)),
            _ => slots(k),
        };
        let room = |k: usize, planned: &[u32]| planned[k].saturating_add(pe) <= limit(k);
        let free = |k: usize, planned: &[u32]| {
            self.nodes[pool[k]]
                .in_use
                .saturating_add(planned[k])
                .saturating_add(pe)
                <= slots(k)
        };
        let total: u64 = nprocs.iter().map(|&n| u64::from(n)).sum();
        let mut procs = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        let mut rank = 0u32;
        let mut rr = 0usize;
        for (app, &n) in nprocs.iter().enumerate() {
            let c = &cands[app];
            // Where the app's search resumes (legacy and `node` only).
            let mut next = 0usize;
            for _ in 0..n {
                let pick = match map.policy {
                    MapPolicy::Slot if legacy => {
                        while next < c.len() && !free(c[next], planned) {
                            next += 1;
                        }
                        c.get(next).copied()
                    }
                    MapPolicy::Slot => c
                        .iter()
                        .copied()
                        .find(|&k| room(k, planned) && free(k, planned))
                        .or_else(|| c.iter().copied().find(|&k| room(k, planned))),
                    MapPolicy::PerNode(_) => c.iter().copied().find(|&k| room(k, planned)),
                    MapPolicy::Node => (0..c.len())
                        .map(|d| (next + d) % c.len())
                        .find(|&j| room(c[j], planned))
                        .map(|j| {
                            next = j + 1;
                            c[j]
                        }),
                };
                let k = match pick {
                    Some(k) => k,
                    None if map.oversubscribe => {
                        let k = c[rr % c.len()];
                        rr += 1;
                        k
                    }
                    None => return Err(DvmError::FailedToMap(Rule::SpawnNotEnoughSlots)),
                };
                planned[k] = planned[k].saturating_add(pe);
                procs.push(ProcSlot {
                    app,
                    rank,
                    node: self.nodes[pool[k]].name.clone(),
                });
                rank = rank.wrapping_add(1);
            }
        }
        Ok(procs)
    }

    /// Records a planned job: namespace `nspace` (child of `parent`, a tool or
    /// job namespace, or `None` for a root job such as pdvm's own command),
    /// its processes on their nodes, and its membership in the owner set of
    /// every targeted reservation (never transitively).
    ///
    /// `nspace` is minted by the caller and must never recur (pdvm numbers
    /// its jobs): a name still held is refused, but once the job has left
    /// the history of ended jobs nothing of its name is kept.
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
        self.gen.at_mut(me).given = false;
        let per = plan.slots_per_proc.max(1);
        for &(i, c) in &per_node {
            let node = &mut self.nodes[i];
            node.in_use = node.in_use.saturating_add(c.saturating_mul(per));
            node.jobs.push((me, c));
        }
        self.gen.at_mut(me).placement = per_node;
        self.gen.at_mut(me).slots_per_proc = per;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pe_modifier_sets_slots_per_process() {
        assert_eq!(MapBy::parse("slot").unwrap().pe, 1);
        let m = MapBy::parse("node:PE=3,OVERSUBSCRIBE").unwrap();
        assert_eq!(
            (m.policy, m.pe, m.oversubscribe),
            (MapPolicy::Node, 3, true)
        );
        assert_eq!(MapBy::parse(":pe=2").unwrap().pe, 2);
        assert!(MapBy::parse("slot:PE=0").is_err());
        assert!(MapBy::parse("slot:PE=x").is_err());
    }
}
