//! Answers to `PMIx_Query_info`.
//!
//! Standard keys:
//! - `pmix.qry.ns` (`PMIX_QUERY_NAMESPACES`): a comma-separated string of
//!   every live namespace (running jobs and connected tools), as PRRTE answers.
//! - `pmix.query.allc` (`PMIX_QUERY_ALLOCATION`): the node table, as below.
//! - `pmix.query.alloc` (`PMIX_QUERY_ALLOC_STATUS`): the reservation table,
//!   restricted to the qualifier `pmix.alloc.id` when given.
//!
//! pdvm's own tables, each answered as one info whose value is a data array
//! of infos, one per row; each row's value is itself a data array of infos:
//! - [`QUERY_RESERVATIONS`] `pdvm.qry.resv`, rows keyed [`ROW_RESERVATION`]
//!   with fields `pmix.alloc.id`, `pmix.alloc.reqid` (when given),
//!   `pdvm.resv.owner`, `pdvm.resv.owners` (string array),
//!   `pmix.alloc.inhrt` (the inheritance word), `pmix.alloc.share` (bool),
//!   `pdvm.resv.nodes` (string array), `pmix.time.remaining` (u32 seconds,
//!   when bounded), `pmix.alloc.wtmo` (u32, when set), `pdvm.resv.requester`
//!   (proc), `pdvm.resv.state` (`Queued`/`Active`/`Draining`);
//! - [`QUERY_NODES`] `pdvm.qry.nodes`, rows keyed [`ROW_NODE`] with
//!   `pmix.hname`, `pdvm.node.slots` (u32), `pdvm.node.inuse` (u32),
//!   `pdvm.node.origin` (`Startup`/`Scheduler`), `pdvm.node.session`
//!   (reservation id, or `""` for the default session), `pmix.alloc.id` (when
//!   part of one), `pdvm.node.jobs` (string array);
//! - [`QUERY_JOBS`] `pdvm.qry.jobs`, rows keyed [`ROW_JOB`] with
//!   `pmix.nspace`, `pmix.parent` (namespace, when any), `pdvm.job.state`,
//!   `pmix.exit.code` (when ended), `pdvm.job.nodes` (string array of
//!   `node:procs`).

use crate::codec::{DataArray, Info, Proc, Query, Value};
use crate::ops::keys;
use crate::status::Status;

use super::state::Server;

/// Query key: pdvm's reservation table.
pub const QUERY_RESERVATIONS: &str = "pdvm.qry.resv";
/// Query key: pdvm's node table.
pub const QUERY_NODES: &str = "pdvm.qry.nodes";
/// Query key: pdvm's job table (the spawn genealogy).
pub const QUERY_JOBS: &str = "pdvm.qry.jobs";
/// Row key of a reservation.
pub const ROW_RESERVATION: &str = "pdvm.resv";
/// Row key of a node.
pub const ROW_NODE: &str = "pdvm.node";
/// Row key of a job.
pub const ROW_JOB: &str = "pdvm.job";

fn strings(v: &[String]) -> Value {
    Value::DataArray(DataArray::strings(v.to_vec()))
}

fn table(key: &str, rows: Vec<Vec<Info>>, row_key: &str) -> Info {
    let rows: Vec<Info> = rows
        .into_iter()
        .map(|r| Info::new(row_key, Value::DataArray(DataArray::infos(r))))
        .collect();
    Info::new(key, Value::DataArray(DataArray::infos(rows)))
}

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

    fn reservation_rows(&self, only: Option<&str>) -> Vec<Vec<Info>> {
        let now = self.clock.now_ms();
        self.dvm
            .reservations(&self.sched, now)
            .into_iter()
            .filter(|r| only.map_or(true, |id| r.alloc_id == id))
            .map(|r| {
                let mut row = vec![Info::new(keys::ALLOC_ID, r.alloc_id.as_str())];
                if let Some(q) = &r.req_id {
                    row.push(Info::new(keys::ALLOC_REQ_ID, q.as_str()));
                }
                row.push(Info::new("pdvm.resv.owner", r.owner.as_str()));
                row.push(Info::new("pdvm.resv.owners", strings(&r.owners)));
                row.push(Info::new(keys::ALLOC_INHERITANCE, r.inheritance));
                row.push(Info::new(keys::ALLOC_SHARE, r.share));
                row.push(Info::new("pdvm.resv.nodes", strings(&r.nodes)));
                if let Some(s) = r.remaining_secs {
                    row.push(Info::new(
                        keys::TIME_REMAINING,
                        Value::Uint32(s.min(u32::MAX as u64) as u32),
                    ));
                }
                if let Some(w) = r.warn_secs {
                    row.push(Info::new(keys::ALLOC_WARN_TIMEOUT, Value::Uint32(w)));
                }
                row.push(Info::new(
                    "pdvm.resv.requester",
                    Value::Proc(Proc {
                        nspace: r.requester.0.clone(),
                        rank: r.requester.1,
                    }),
                ));
                row.push(Info::new("pdvm.resv.state", format!("{:?}", r.state)));
                row
            })
            .collect()
    }

    fn node_rows(&self) -> Vec<Vec<Info>> {
        self.dvm
            .nodes()
            .into_iter()
            .map(|n| {
                let mut row = vec![
                    Info::new(keys::HOSTNAME, n.name.as_str()),
                    Info::new("pdvm.node.slots", Value::Uint32(n.slots)),
                    Info::new("pdvm.node.inuse", Value::Uint32(n.in_use)),
                    Info::new("pdvm.node.origin", format!("{:?}", n.origin)),
                    Info::new("pdvm.node.session", n.session.clone().unwrap_or_default()),
                ];
                if let Some(a) = &n.alloc {
                    row.push(Info::new(keys::ALLOC_ID, a.as_str()));
                }
                row.push(Info::new("pdvm.node.jobs", strings(&n.jobs)));
                row
            })
            .collect()
    }

    fn job_rows(&self) -> Vec<Vec<Info>> {
        self.dvm
            .jobs()
            .into_iter()
            .map(|j| {
                let mut row = vec![Info::new(keys::NSPACE, j.nspace.as_str())];
                if let Some(p) = &j.parent {
                    row.push(Info::new(keys::PARENT_ID, p.as_str()));
                }
                row.push(Info::new("pdvm.job.state", j.state));
                if let Some(s) = j.exit_status {
                    row.push(Info::new(keys::EXIT_CODE, Value::Int(s)));
                }
                let nodes: Vec<String> = j.nodes.iter().map(|(n, c)| format!("{n}:{c}")).collect();
                row.push(Info::new("pdvm.job.nodes", strings(&nodes)));
                row
            })
            .collect()
    }

    /// Answer a list of queries: status and the infos found.
    pub fn answer_queries(&self, queries: &[Query]) -> (Status, Vec<Info>) {
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
                    keys::QUERY_ALLOCATION => {
                        out.push(table(keys::QUERY_ALLOCATION, self.node_rows(), ROW_NODE))
                    }
                    QUERY_NODES => out.push(table(QUERY_NODES, self.node_rows(), ROW_NODE)),
                    keys::QUERY_ALLOC_STATUS => out.push(table(
                        keys::QUERY_ALLOC_STATUS,
                        self.reservation_rows(only),
                        ROW_RESERVATION,
                    )),
                    QUERY_RESERVATIONS => out.push(table(
                        QUERY_RESERVATIONS,
                        self.reservation_rows(only),
                        ROW_RESERVATION,
                    )),
                    QUERY_JOBS => out.push(table(QUERY_JOBS, self.job_rows(), ROW_JOB)),
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
