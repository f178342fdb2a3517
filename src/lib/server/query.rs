//! Answers to `PMIx_Query_info`.
//!
//! - `pmix.qry.ns` (`PMIX_QUERY_NAMESPACES`): a comma-separated string of
//!   every live namespace (running jobs and connected tools), as PRRTE answers.
//! - `pmix.query.alloc` (`PMIX_QUERY_ALLOC_STATUS`): the reservations,
//!   restricted to the qualifier `pmix.alloc.id` when given;
//! - `pmix.query.allc` (`PMIX_QUERY_ALLOCATION`): the nodes;
//! - `pdvm.qry.jobs`: the jobs and their genealogy.
//!
//! Rows use the shared records of [`crate::ops::status_query`], which is also
//! what `pwatch --status` decodes.

use crate::codec::{Info, Query, WireVersion};
use crate::ops::keys;
use crate::ops::status_query::{answer, JobRecord, NodeRecord, ReservationRecord, QUERY_JOBS};
use crate::status::Status;

use super::state::Server;

impl Server {
    /// Every live namespace: running jobs and connected tools.
    pub fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = self.jobs.keys().cloned().collect();
        for c in self.conns.values() {
            if let Some(p) = &c.peer {
                if !v.contains(&p.nspace) {
                    v.push(p.nspace.clone());
                }
            }
        }
        v.sort_by_key(|n| {
            n.rsplit('@')
                .next()
                .and_then(|x| x.parse::<u64>().ok())
                .unwrap_or(u64::MAX)
        });
        v
    }

    /// The reservations (all, or the one with `only` as id).
    pub fn reservation_records(&self, only: Option<&str>) -> Vec<ReservationRecord> {
        let now = self.clock.now_ms();
        self.dvm
            .reservations(&self.sched, now)
            .into_iter()
            .filter(|r| only.is_none_or(|id| r.alloc_id == id))
            .map(|r| ReservationRecord {
                alloc_id: r.alloc_id.clone(),
                request_id: r.req_id.clone(),
                owner: r.owner.clone(),
                owners: r.owners.clone(),
                inheritance: r.inheritance.to_string(),
                share: r.share,
                nodes: r.nodes.clone(),
                expires_in: r.remaining_secs.map(|s| s.min(u32::MAX as u64) as u32),
                state: format!("{:?}", r.state).to_lowercase(),
            })
            .collect()
    }

    /// The nodes.
    pub fn node_records(&self) -> Vec<NodeRecord> {
        self.dvm
            .nodes()
            .into_iter()
            .map(|n| NodeRecord {
                name: n.name.clone(),
                session: n.session.clone().unwrap_or_default(),
                slots: n.slots,
                used: n.in_use,
                origin: format!("{:?}", n.origin).to_lowercase(),
            })
            .collect()
    }

    /// The jobs.
    pub fn job_records(&self) -> Vec<JobRecord> {
        self.dvm
            .jobs()
            .into_iter()
            .map(|j| JobRecord {
                nspace: j.nspace.clone(),
                parent: j.parent.clone(),
                state: j.state.to_string(),
                nodes: j.nodes.iter().map(|(n, _)| n.clone()).collect(),
                exit_status: j.exit_status,
                nprocs: u32::try_from(j.nodes.iter().map(|(_, k)| *k as u64).sum::<u64>()).ok(),
            })
            .collect()
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
                            .map(NodeRecord::to_value)
                            .collect(),
                    )),
                    keys::QUERY_ALLOC_STATUS => out.push(answer(
                        keys::QUERY_ALLOC_STATUS,
                        self.reservation_records(only)
                            .iter()
                            .map(|r| r.to_value(wire))
                            .collect(),
                    )),
                    QUERY_JOBS => out.push(answer(
                        QUERY_JOBS,
                        self.job_records().iter().map(JobRecord::to_value).collect(),
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
