//! Answers to `PMIx_Query_info`.
//!
//! - `pmix.qry.ns` (`PMIX_QUERY_NAMESPACES`): a comma-separated string of
//!   every live namespace (running jobs and connected tools), as PRRTE answers.
//! - `pmix.query.alloc` (`PMIX_QUERY_ALLOC_STATUS`): the reservations,
//!   restricted to the qualifier `pmix.alloc.id` when given;
//! - `pmix.query.allc` (`PMIX_QUERY_ALLOCATION`): the nodes;
//! - `pdvm.qry.jobs`: the jobs and their genealogy (only the live ones
//!   when qualified with `pdvm.qry.live` = true);
//! - `pdvm.qry.sched`: the scheduler's queue (pdvm has one, `default`):
//!   its nodes, the free ones, the requests waiting;
//! - `pmix.qry.ptable` / `pmix.qry.lptable` (`PMIX_QUERY_PROC_TABLE`,
//!   `PMIX_QUERY_LOCAL_PROC_TABLE`): an array of `pmix_proc_info_t` for the
//!   namespace named by the `pmix.nspace` qualifier (every live job when
//!   none is given): a job's real processes (pid, simulated node, executable,
//!   state), or a connected tool's processes (the pid and command line its
//!   connect request carried, on pdvm's own host).
//!
//! Rows use the shared records of [`crate::schema::status`], which is also
//! what `pwatch --status` decodes.

use crate::codec::{dt, DataArray, Info, Proc, ProcInfo, Query, Value, WireVersion};
use crate::proto::keys;
use crate::proto::status::Status;
use crate::schema::status::{
    answer, reservation_infos, JobEntry, NodeEntry, QueueEntry, ReservationRecord, QUERY_JOBS,
    QUERY_LIVE, QUERY_SCHED,
};

use super::jobs::ProcRec;
use super::state::Server;

/// `PMIX_QUERY_LOCAL_PROC_TABLE`: the processes of a namespace on the local
/// node (with pdvm, every node is local).
pub(crate) use crate::proto::keys::QUERY_LOCAL_PROC_TABLE;

use crate::proto::proc_state;

/// The process state of one job process.
fn state_of(p: &ProcRec) -> u8 {
    match (p.pid, p.exit) {
        (None, None) => proc_state::RUNNING,
        (None, Some(_)) => proc_state::FAILED_TO_START,
        (Some(_), None) => proc_state::RUNNING,
        (Some(_), Some(0)) => proc_state::TERMINATED,
        (Some(_), Some(_)) => proc_state::TERM_NON_ZERO,
    }
}

impl Server {
    /// Every live namespace: running jobs and connected tools.
    /// O(n log n) in their number: a crowd of tools asks it once each.
    pub fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = self.jobs.names();
        let mut seen: std::collections::HashSet<String> = v.iter().cloned().collect();
        for c in self.conns.values() {
            if let Some(p) = &c.peer {
                if !seen.contains(p.nspace()) {
                    seen.insert(p.nspace().to_string());
                    v.push(p.nspace().to_string());
                }
            }
        }
        v.sort_by_cached_key(|n| {
            n.rsplit('@')
                .next()
                .and_then(|x| x.parse::<u64>().ok())
                .unwrap_or(u64::MAX)
        });
        v
    }

    /// Whether `nspace` is a live namespace (a job, or a connected peer's).
    pub(crate) fn is_live_namespace(&self, nspace: &str) -> bool {
        self.jobs.contains(nspace)
            || self
                .conns
                .values()
                .any(|c| c.peer.as_ref().is_some_and(|p| p.nspace() == nspace))
    }

    /// The reservations (all, or the one with `only` as id).
    pub fn reservation_records(&self, only: Option<&str>) -> Vec<ReservationRecord> {
        self.model
            .reservations()
            .into_iter()
            .filter(|r| only.is_none_or(|id| r.alloc_id == id))
            .collect()
    }

    /// The nodes.
    pub fn node_records(&self) -> Vec<NodeEntry> {
        self.model
            .dvm()
            .nodes()
            .into_iter()
            .map(|n| NodeEntry {
                name: n.name.clone(),
                session: n.session.clone().unwrap_or_default(),
                slots: n.slots,
                used: n.in_use,
                origin: n.origin.word().to_string(),
            })
            .collect()
    }

    /// The jobs (only those not terminated when `live_only`).
    pub fn job_records(&self, live_only: bool) -> Vec<JobEntry> {
        self.model
            .dvm()
            .jobs()
            .into_iter()
            .filter(|j| !live_only || j.state != "terminated")
            .map(|j| {
                let placed = j.nodes.iter().map(|(_, k)| *k as u64).sum::<u64>();
                let job = self.jobs.get(&j.nspace);
                let started = job.map(|r| r.procs.len() as u64);
                let n = started.unwrap_or(placed).max(placed);
                JobEntry {
                    // An ended job's processes are no longer recorded.
                    nprocs: u32::try_from(n).ok().filter(|&n| n > 0),
                    nspace: j.nspace,
                    parent: j.parent,
                    state: j.state.to_string(),
                    nodes: j.nodes.into_iter().map(|(n, _)| n).collect(),
                    exit_status: j.exit_status,
                    cmdline: job.map(|r| r.cmdline.clone()).filter(|c| !c.is_empty()),
                    uid: job.and_then(|r| r.uid),
                    name: job.and_then(|r| r.name.clone()),
                }
            })
            .collect()
    }

    /// The scheduler's queue: its nodes, the free ones, the requests waiting.
    pub fn queue_records(&self) -> Vec<QueueEntry> {
        let sched = self.model.sched();
        let own = sched.own_node_names();
        vec![QueueEntry {
            queue: "default".into(),
            nodes: u32::try_from(own.len()).unwrap_or(u32::MAX),
            free: own.into_iter().filter(|n| sched.is_free(n)).collect(),
            pending: u32::try_from(sched.queue_len()).unwrap_or(u32::MAX),
            ..QueueEntry::default()
        }]
    }

    /// The process table of `nspace` (of every live job when `None`), in
    /// rank order; `None` when no job or connected tool has that namespace.
    pub fn proc_table(&self, nspace: Option<&str>) -> Option<Vec<ProcInfo>> {
        let Some(ns) = nspace else {
            let mut names = self.jobs.names();
            names.sort();
            return Some(
                names
                    .iter()
                    .filter_map(|n| self.proc_table(Some(n)))
                    .flatten()
                    .collect(),
            );
        };
        if let Some(j) = self.jobs.get(ns) {
            let mut procs: Vec<&ProcRec> = j.procs.iter().collect();
            procs.sort_by_key(|p| p.rank);
            return Some(
                procs
                    .into_iter()
                    .map(|p| ProcInfo {
                        proc: Proc {
                            nspace: ns.to_string(),
                            rank: p.rank,
                        },
                        hostname: Some(p.node.clone()),
                        executable_name: Some(p.exe.clone()),
                        pid: p.pid.and_then(|x| u32::try_from(x).ok()).unwrap_or(0),
                        state: state_of(p),
                    })
                    .collect(),
            );
        }
        if ns == self.ident.nspace {
            return Some(vec![ProcInfo {
                proc: self.me(),
                hostname: Some(self.ident.host.clone()),
                executable_name: std::env::current_exe()
                    .ok()
                    .map(|p| p.to_string_lossy().into_owned()),
                pid: self.ident.pid,
                state: proc_state::RUNNING,
            }]);
        }
        let mut tools: Vec<ProcInfo> = self
            .conns
            .values()
            .filter_map(|c| {
                let p = c.peer.as_ref().filter(|p| p.nspace() == ns)?;
                Some(ProcInfo {
                    proc: p.name.to_proc(),
                    hostname: Some(self.ident.host.clone()),
                    executable_name: c
                        .cmd_line
                        .as_deref()
                        .and_then(|l| l.split_whitespace().next())
                        .map(str::to_string),
                    pid: c.pid.unwrap_or(0),
                    state: proc_state::RUNNING,
                })
            })
            .collect();
        if tools.is_empty() {
            return None;
        }
        tools.sort_by_key(|p| p.proc.rank);
        Some(tools)
    }

    /// Answer a list of queries for a peer speaking `wire`: status and the
    /// infos found.
    pub fn answer_queries(&self, queries: &[Query], wire: WireVersion) -> (Status, Vec<Info>) {
        let mut out = Vec::new();
        let mut asked = 0usize;
        for q in queries {
            let only = q
                .qualifiers
                .iter()
                .find(|i| i.key == keys::ALLOC_ID)
                .and_then(|i| i.value.as_str());
            for k in &q.keys {
                asked += 1;
                match k.as_str() {
                    keys::QUERY_NAMESPACES => out.push(Info::new(
                        keys::QUERY_NAMESPACES,
                        self.namespaces().join(","),
                    )),
                    keys::QUERY_ALLOCATION => out.push(answer(
                        keys::QUERY_ALLOCATION,
                        self.node_records()
                            .iter()
                            .map(NodeEntry::to_value)
                            .collect(),
                    )),
                    keys::QUERY_ALLOC_STATUS => out.push(answer(
                        keys::QUERY_ALLOC_STATUS,
                        self.reservation_records(only)
                            .iter()
                            .map(|r| Value::DataArray(DataArray::infos(reservation_infos(r, wire))))
                            .collect(),
                    )),
                    keys::QUERY_PROC_TABLE | QUERY_LOCAL_PROC_TABLE => {
                        let ns = q
                            .qualifiers
                            .iter()
                            .find(|i| i.key == keys::NSPACE)
                            .and_then(|i| i.value.as_str());
                        if let Some(table) = self.proc_table(ns) {
                            out.push(Info::new(
                                k.as_str(),
                                Value::DataArray(DataArray::scalars(
                                    dt::PROC_INFO,
                                    table.into_iter().map(Value::ProcInfo).collect(),
                                )),
                            ));
                        }
                    }
                    QUERY_JOBS => {
                        let live = q
                            .qualifiers
                            .iter()
                            .any(|i| i.key == QUERY_LIVE && i.value.is_true());
                        out.push(answer(
                            QUERY_JOBS,
                            self.job_records(live)
                                .iter()
                                .map(JobEntry::to_value)
                                .collect(),
                        ))
                    }
                    QUERY_SCHED => out.push(answer(
                        QUERY_SCHED,
                        self.queue_records()
                            .iter()
                            .map(QueueEntry::to_value)
                            .collect(),
                    )),
                    _ => {}
                }
            }
        }
        let st = if asked > 0 && out.is_empty() {
            Status::ERR_NOT_FOUND
        } else {
            Status::SUCCESS
        };
        (st, out)
    }
}
