//! The status query's entries (reservations, nodes, jobs, scheduler queues)
//! and how they travel: what pdvm answers with and `pwatch --status`
//! decodes (`ops::status_query` asks).
//!
//! Keys: `PMIX_QUERY_ALLOC_STATUS` (`pmix.query.alloc`) answers with one entry
//! per reservation (qualify with `PMIX_ALLOC_ID` or `PMIX_ALLOC_REQ_ID` for
//! one); `PMIX_QUERY_ALLOCATION` (`pmix.query.allc`) with one entry per node,
//! each a `PMIX_NODE_INFO` block whose first element is `PMIX_HOSTNAME`;
//! `pdvm.qry.jobs` with one entry per job (only the live ones when
//! qualified with `pdvm.qry.live` = true); `pdvm.qry.sched` with one entry
//! per scheduler queue (nodes, free nodes, pending requests: what `sinfo`
//! answers). `ops::status_query::status` asks for several of them in one request. Each answer is a data array of
//! values, each value a data array of infos using standard keys where the
//! PMIx headers define one.

use serde::{Deserialize, Serialize};

use crate::codec::{AllocInheritance, DataArray, Info, Value, WireVersion};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use crate::proto::{keys, Inheritance};

/// Query key answered with the job table (pdvm's own; no standard key exists).
pub const QUERY_JOBS: &str = "pdvm.qry.jobs";
/// Query key answered with the scheduler's queues (pdvm's own).
pub const QUERY_SCHED: &str = "pdvm.qry.sched";
/// Qualifier of [`QUERY_JOBS`]: `true` leaves out the jobs that ended.
pub const QUERY_LIVE: &str = "pdvm.qry.live";
/// Queue field: the scheduler's nodes in the queue.
pub const SCHED_NODES: &str = "pdvm.sched.nodes";
/// Queue field: the names of the free nodes, comma-separated.
pub const SCHED_FREE: &str = "pdvm.sched.free";
/// Queue field: requests waiting in the queue.
pub const SCHED_PENDING: &str = "pdvm.sched.pending";
/// Info key (string) of a queue entry: the queue's state as its scheduler
/// says (psched on Slurm: the partition's `up`, `down`, `drain`, `inact`).
pub const SCHED_STATE: &str = "pdvm.sched.state";
/// Info key (string, comma-separated) of a queue entry: all its nodes.
pub const SCHED_NODE_NAMES: &str = "pdvm.sched.nodelist";
/// Reservation field: the owner set, comma-separated.
pub const OWNERS: &str = "pdvm.alloc.owners";
/// Reservation field: state word (`queued`, `active`, `draining`).
pub const STATE: &str = "pdvm.alloc.state";
/// Node field: the reservation a node belongs to ("" = default session).
pub const NODE_SESSION: &str = "pdvm.node.session";
/// Node field: slots in use.
pub const NODE_SLOTS_USED: &str = "pdvm.node.used";
/// Node field: where the node came from (`startup`, `scheduler`).
pub const NODE_ORIGIN: &str = "pdvm.node.origin";
/// Node field: total slots.
pub use crate::proto::keys::NODE_SLOTS;
/// Job field: state word.
pub const JOB_STATE: &str = "pdvm.job.state";
/// What a field holds when the DVM does not report it.
pub const UNKNOWN: &str = "unknown";
/// Job field: parent namespace.
pub const JOB_PARENT: &str = "pdvm.job.parent";

pub use super::records::ReservationRecord;

/// One node as a DVM's status answer carries it (pwatch renders it as
/// `render::NodeRecord`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeEntry {
    /// Node name.
    pub name: String,
    /// Reservation it belongs to; empty for the default session.
    pub session: String,
    /// Total slots.
    pub slots: u32,
    /// Slots in use.
    pub used: u32,
    /// `startup` or `scheduler`.
    pub origin: String,
}

/// One job as a DVM's status answer carries it (pwatch renders it as
/// `render::NamespaceRecord`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobEntry {
    /// The job's namespace.
    pub nspace: String,
    /// Namespace that spawned it.
    pub parent: Option<String>,
    /// State word (`running`, `ended`, ...).
    pub state: String,
    /// Nodes its processes run on.
    pub nodes: Vec<String>,
    /// Exit status once ended.
    pub exit_status: Option<i32>,
    /// Number of processes, when reported.
    pub nprocs: Option<u32>,
    /// The command line it runs (`PMIX_CMD_LINE`), when reported.
    #[serde(default)]
    pub cmdline: Option<String>,
    /// The uid that spawned it (`PMIX_USERID`), when reported.
    #[serde(default)]
    pub uid: Option<u32>,
    /// Its name (`pspawn -J`, `pdvm.job.name`), when given.
    #[serde(default)]
    pub name: Option<String>,
}

/// One scheduler queue, its capacity and what is free now, as a status
/// answer carries it (pwatch renders it as `render::QueueRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueEntry {
    /// Queue name (`PMIX_ALLOC_QUEUE`).
    pub queue: String,
    /// Nodes the scheduler manages in this queue.
    pub nodes: u32,
    /// Names of the nodes free for a grant.
    pub free: Vec<String>,
    /// Requests waiting.
    pub pending: u32,
    /// The queue's state as its scheduler says (Slurm's partition
    /// availability: `up`, `down`, `drain`, `inact`), when it says.
    pub state: Option<String>,
    /// Every node of the queue, when the scheduler lists them.
    pub node_names: Vec<String>,
}

impl QueueEntry {
    /// Encode one entry.
    pub fn to_value(&self) -> Value {
        Value::DataArray(DataArray::infos(vec![
            s(keys::ALLOC_QUEUE, &self.queue),
            Info::new(SCHED_NODES, Value::Uint32(self.nodes)),
            s(SCHED_FREE, self.free.join(",")),
            Info::new(SCHED_PENDING, Value::Uint32(self.pending)),
            s(SCHED_STATE, self.state.as_deref().unwrap_or_default()),
            s(SCHED_NODE_NAMES, self.node_names.join(",")),
        ]))
    }

    /// Decode one entry.
    pub fn from_infos(infos: &[Info]) -> QueueEntry {
        let mut q = QueueEntry::default();
        for i in infos {
            match i.key.as_str() {
                keys::ALLOC_QUEUE => q.queue = text(&i.value),
                SCHED_NODES => q.nodes = i.value.as_u64().unwrap_or(0) as u32,
                SCHED_FREE => q.free = list(&i.value),
                SCHED_PENDING => q.pending = i.value.as_u64().unwrap_or(0) as u32,
                SCHED_STATE => q.state = Some(text(&i.value)).filter(|t| !t.is_empty()),
                SCHED_NODE_NAMES => q.node_names = list(&i.value),
                _ => {}
            }
        }
        q
    }
}

/// A string info: `key` = `v`.
pub fn s(key: &str, v: impl Into<String>) -> Info {
    Info::new(key, Value::from(v.into()))
}

/// A reservation as pdvm's `PMIX_QUERY_ALLOC_STATUS` answer carries it
/// (the inheritance travels as type 75 to peers that have it, else as its
/// word). pdvm's answers to allocation requests carry the same fields.
pub fn reservation_infos(r: &ReservationRecord, wire: WireVersion) -> Vec<Info> {
    let mut v = vec![s(keys::ALLOC_ID, &r.alloc_id)];
    if let Some(q) = &r.request_id {
        v.push(s(keys::ALLOC_REQ_ID, q));
    }
    if let Some(n) = r.session_id {
        v.push(Info::new(keys::SESSION_ID, Value::Uint32(n)));
    }
    v.push(s(keys::ALLOC_TARGET, &r.owner_nspace));
    v.push(s(OWNERS, r.owners.join(",")));
    if let Some(i) = r.inherit {
        v.push(inheritance_info(i, wire));
    }
    v.push(Info::new(keys::ALLOC_SHARE, r.share));
    v.push(s(keys::NODE_LIST, r.nodes.join(",")));
    if let Some(t) = r.expires_in {
        v.push(Info::new(
            keys::TIME_REMAINING,
            Value::Uint32(t.min(u32::MAX as u64) as u32),
        ));
    }
    if let Some(w) = r.warn_secs {
        v.push(Info::new(keys::ALLOC_WARN_TIMEOUT, Value::Uint32(w)));
    }
    v.push(s(STATE, &r.state));
    if let Some(why) = &r.reason {
        v.push(s(keys::PENDING_REASON, why));
    }
    v
}

/// `PMIX_ALLOC_INHERITANCE` for `wire`: type 75 where the peer has it, else
/// the spec word.
pub fn inheritance_info(rule: Inheritance, wire: WireVersion) -> Info {
    let i = AllocInheritance(rule.code());
    if wire.supports(crate::codec::dt::ALLOC_INHERIT) {
        Info::new(keys::ALLOC_INHERITANCE, Value::AllocInherit(i))
    } else {
        s(keys::ALLOC_INHERITANCE, i.as_str())
    }
}

/// Decode one reservation; `now` (Unix seconds) turns the time left into
/// an expiry time.
pub fn reservation_from_infos(infos: &[Info], now: u64) -> ReservationRecord {
    let mut r = ReservationRecord::default();
    let mut inherit = None;
    for i in infos {
        match i.key.as_str() {
            keys::ALLOC_ID => r.alloc_id = text(&i.value),
            keys::ALLOC_REQ_ID => r.request_id = Some(text(&i.value)),
            keys::SESSION_ID => r.session_id = i.value.as_u64().map(|n| n as u32),
            keys::ALLOC_TARGET => r.owner_nspace = text(&i.value),
            OWNERS => r.owners = list(&i.value),
            keys::ALLOC_INHERITANCE => {
                inherit = Some(match &i.value {
                    Value::AllocInherit(a) => a.rule(),
                    v => Inheritance::from_word(&text(v)),
                })
            }
            keys::ALLOC_SHARE => r.share = i.value.is_true(),
            keys::NODE_LIST => r.nodes = list(&i.value),
            keys::TIME_REMAINING => {
                r.expires_in = i.value.as_u64();
                r.expires_at = r.expires_in.map(|t| now + t);
            }
            keys::ALLOC_WARN_TIMEOUT => r.warn_secs = i.value.as_u64().map(|n| n as u32),
            STATE => r.state = text(&i.value),
            keys::PENDING_REASON => r.reason = Some(text(&i.value)),
            _ => {}
        }
    }
    // A DVM that reports no rule applies its default (§8.2.1.9.2).
    r.inherit = inherit.unwrap_or(Some(Inheritance::Default));
    r
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl NodeEntry {
    /// Encode as a `PMIX_NODE_INFO` block (hostname first).
    pub fn to_value(&self) -> Value {
        Value::DataArray(DataArray::infos(vec![
            s(keys::HOSTNAME, &self.name),
            s(NODE_SESSION, &self.session),
            Info::new(NODE_SLOTS, Value::Uint32(self.slots)),
            Info::new(NODE_SLOTS_USED, Value::Uint32(self.used)),
            s(NODE_ORIGIN, &self.origin),
        ]))
    }

    /// Decode one entry.
    pub fn from_infos(infos: &[Info]) -> NodeEntry {
        let mut n = NodeEntry::default();
        for i in infos {
            match i.key.as_str() {
                keys::HOSTNAME => n.name = text(&i.value),
                NODE_SESSION => n.session = text(&i.value),
                NODE_SLOTS | keys::NUM_SLOTS => n.slots = i.value.as_u64().unwrap_or(0) as u32,
                NODE_SLOTS_USED => n.used = i.value.as_u64().unwrap_or(0) as u32,
                NODE_ORIGIN => n.origin = text(&i.value),
                _ => {}
            }
        }
        n
    }
}

impl JobEntry {
    /// Encode one entry.
    pub fn to_value(&self) -> Value {
        let mut v = vec![
            s(keys::NSPACE, &self.nspace),
            s(JOB_STATE, &self.state),
            s(keys::NODE_LIST, self.nodes.join(",")),
        ];
        if let Some(p) = &self.parent {
            v.push(s(JOB_PARENT, p));
        }
        if let Some(x) = self.exit_status {
            v.push(Info::new(keys::EXIT_CODE, Value::Int(x)));
        }
        if let Some(n) = self.nprocs {
            v.push(Info::new(keys::JOB_SIZE, Value::Uint32(n)));
        }
        if let Some(c) = &self.cmdline {
            v.push(s(keys::CMD_LINE, c));
        }
        if let Some(u) = self.uid {
            v.push(Info::new(keys::USERID, Value::Uint32(u)));
        }
        if let Some(n) = &self.name {
            v.push(s(keys::JOB_NAME, n));
        }
        Value::DataArray(DataArray::infos(v))
    }

    /// Decode one `PMIX_JOB_INFO_ARRAY` block of a
    /// `PMIX_QUERY_NAMESPACE_INFO` answer (PRRTE): namespace, size, and a
    /// `PMIX_PROC_INFO_ARRAY` per process naming its host.
    pub fn from_namespace_info(infos: &[Info]) -> JobEntry {
        let mut j = JobEntry {
            state: "running".into(),
            ..Default::default()
        };
        for i in infos {
            match i.key.as_str() {
                keys::NSPACE => j.nspace = text(&i.value),
                keys::JOB_SIZE => j.nprocs = i.value.as_u64().map(|n| n as u32),
                keys::CMD_LINE => j.cmdline = Some(text(&i.value)),
                keys::PROC_INFO_ARRAY => {
                    let host = match &i.value {
                        Value::DataArray(a) => a
                            .as_infos()
                            .and_then(|l| l.iter().find(|x| x.key == keys::HOSTNAME))
                            .map(|x| text(&x.value)),
                        _ => None,
                    };
                    if let Some(h) = host {
                        if !j.nodes.contains(&h) {
                            j.nodes.push(h);
                        }
                    }
                }
                _ => {}
            }
        }
        j
    }

    /// Decode one entry.
    pub fn from_infos(infos: &[Info]) -> JobEntry {
        let mut j = JobEntry::default();
        for i in infos {
            match i.key.as_str() {
                keys::NSPACE => j.nspace = text(&i.value),
                JOB_STATE => j.state = text(&i.value),
                keys::NODE_LIST => j.nodes = list(&i.value),
                JOB_PARENT => j.parent = Some(text(&i.value)),
                keys::EXIT_CODE => j.exit_status = i.value.as_i64().map(|x| x as i32),
                keys::JOB_SIZE => j.nprocs = i.value.as_u64().map(|n| n as u32),
                keys::CMD_LINE => j.cmdline = Some(text(&i.value)),
                keys::USERID => j.uid = i.value.as_u64().and_then(|u| u32::try_from(u).ok()),
                keys::JOB_NAME => j.name = Some(text(&i.value)),
                _ => {}
            }
        }
        j
    }
}

/// A value as text: the string it holds, else its display form.
pub fn text(v: &Value) -> String {
    v.as_str()
        .map(String::from)
        .unwrap_or_else(|| v.to_string())
}

pub(crate) fn list(v: &Value) -> Vec<String> {
    crate::codec::helpers::value_list(v)
}

/// Pack a list of entries as the answer to one status key.
pub fn answer(key: &str, entries: Vec<Value>) -> Info {
    Info::new(key, Value::DataArray(DataArray::values(entries)))
}

/// The process table in a `PMIX_QUERY_PROC_TABLE` answer's infos (one
/// `pmix_proc_info_t` per process, alone or in an array).
pub fn proc_table(infos: &[Info]) -> Vec<crate::codec::ProcInfo> {
    let mut out = Vec::new();
    for i in infos.iter().filter(|i| i.key == keys::QUERY_PROC_TABLE) {
        match &i.value {
            Value::ProcInfo(p) => out.push(p.clone()),
            Value::DataArray(DataArray::Scalars(_, items))
            | Value::DataArray(DataArray::Values(items)) => {
                out.extend(items.iter().filter_map(|v| match v {
                    Value::ProcInfo(p) => Some(p.clone()),
                    _ => None,
                }))
            }
            _ => {}
        }
    }
    out
}

/// The entries of the answer to `key`. Two shapes are read: pdvm's (an
/// array of values, each an array of infos) and PRRTE's (an array of
/// infos, each entry an info whose value is an array of infos, e.g.
/// `PMIX_NODE_INFO` blocks; infos of other shapes, such as PRRTE's
/// `PMIX_HWLOC_XML_V2` strings, are not entries).
pub fn entries<'a>(infos: &'a [Info], key: &str) -> Result<Vec<&'a [Info]>> {
    let Some(v) = infos.iter().find(|i| i.key == key).map(|i| &i.value) else {
        return Ok(Vec::new());
    };
    let Value::DataArray(a) = v else {
        return Err(Error::new(
            Status::ERR_UNPACK_FAILURE,
            format!("{key}: expected an array"),
        ));
    };
    let nested = |x: &'a Value| match x {
        Value::DataArray(d) => d.as_infos(),
        _ => None,
    };
    if let Some(vals) = a.as_values() {
        return Ok(vals.iter().filter_map(nested).collect());
    }
    if let Some(list) = a.as_infos() {
        let blocks: Vec<&[Info]> = list.iter().filter_map(|i| nested(&i.value)).collect();
        return Ok(if blocks.is_empty() && !list.is_empty() {
            vec![list]
        } else {
            blocks
        });
    }
    Ok(Vec::new())
}

/// Every status record one query answer carries, decoded as `pwatch
/// --status` reads them (reservations, nodes, jobs in pdvm's table or as
/// namespace information, allocation ids), without I/O: the client fuzz
/// target's entry point (`ops::inbound`). Returns how many records.
pub fn decode_answer(infos: &[Info]) -> Result<usize> {
    use std::hint::black_box;
    let now = unix_now();
    let mut n = 0;
    for i in entries(infos, keys::QUERY_ALLOC_STATUS)? {
        black_box(reservation_from_infos(i, now));
        n += 1;
    }
    for i in entries(infos, keys::QUERY_ALLOCATION)? {
        black_box(NodeEntry::from_infos(i));
        n += 1;
    }
    for i in entries(infos, QUERY_JOBS)? {
        black_box(JobEntry::from_infos(i));
        n += 1;
    }
    for i in entries(infos, keys::QUERY_NAMESPACE_INFO)? {
        black_box(JobEntry::from_namespace_info(i));
        n += 1;
    }
    Ok(n)
}
