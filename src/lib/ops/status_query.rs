//! Status queries for reservations, nodes and jobs: the records `pwatch
//! --status` renders and `pdvm` answers with, and how they travel.
//!
//! Keys: `PMIX_QUERY_ALLOC_STATUS` (`pmix.query.alloc`) answers with one entry
//! per reservation (qualify with `PMIX_ALLOC_ID` or `PMIX_ALLOC_REQ_ID` for
//! one); `PMIX_QUERY_ALLOCATION` (`pmix.query.allc`) with one entry per node,
//! each a `PMIX_NODE_INFO` block whose first element is `PMIX_HOSTNAME`;
//! `pdvm.qry.jobs` with one entry per job (only the live ones when
//! qualified with `pdvm.qry.live` = true); `pdvm.qry.sched` with one entry
//! per scheduler queue (nodes, free nodes, pending requests: what `sinfo`
//! answers). [`status`] asks for several of them in one request. Each answer is a data array of
//! values, each value a data array of infos using standard keys where the
//! PMIx headers define one.

use serde::{Deserialize, Serialize};

use crate::codec::{AllocInheritance, DataArray, Info, Query, Value, WireVersion};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::query::query;
use super::session::Session;
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
pub const NODE_SLOTS: &str = "pmix.node.slots";
/// Job field: state word.
pub const JOB_STATE: &str = "pdvm.job.state";
/// What a field holds when the DVM does not report it.
pub const UNKNOWN: &str = "unknown";
/// Job field: parent namespace.
pub const JOB_PARENT: &str = "pdvm.job.parent";

pub use crate::render::records::ReservationRecord;

/// One node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
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

/// One job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
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
}

/// One scheduler queue: its capacity and what is free now.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueRecord {
    /// Queue name (`PMIX_ALLOC_QUEUE`).
    pub queue: String,
    /// Nodes the scheduler manages in this queue.
    pub nodes: u32,
    /// Names of the nodes free for a grant.
    pub free: Vec<String>,
    /// Requests waiting.
    pub pending: u32,
}

impl QueueRecord {
    /// Encode one entry.
    pub fn to_value(&self) -> Value {
        Value::DataArray(DataArray::infos(vec![
            s(keys::ALLOC_QUEUE, &self.queue),
            Info::new(SCHED_NODES, Value::Uint32(self.nodes)),
            s(SCHED_FREE, self.free.join(",")),
            Info::new(SCHED_PENDING, Value::Uint32(self.pending)),
        ]))
    }

    /// Decode one entry.
    pub fn from_infos(infos: &[Info]) -> QueueRecord {
        let mut q = QueueRecord::default();
        for i in infos {
            match i.key.as_str() {
                keys::ALLOC_QUEUE => q.queue = text(&i.value),
                SCHED_NODES => q.nodes = i.value.as_u64().unwrap_or(0) as u32,
                SCHED_FREE => q.free = list(&i.value),
                SCHED_PENDING => q.pending = i.value.as_u64().unwrap_or(0) as u32,
                _ => {}
            }
        }
        q
    }
}

fn s(key: &str, v: impl Into<String>) -> Info {
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
            _ => {}
        }
    }
    // A DVM that reports no rule applies its default (§8.2.1.9.2).
    r.inherit = inherit.unwrap_or(Some(Inheritance::Default));
    r
}

/// Seconds since the Unix epoch.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl NodeRecord {
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
    pub fn from_infos(infos: &[Info]) -> NodeRecord {
        let mut n = NodeRecord::default();
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

impl JobRecord {
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
        Value::DataArray(DataArray::infos(v))
    }

    /// Decode one `PMIX_JOB_INFO_ARRAY` block of a
    /// `PMIX_QUERY_NAMESPACE_INFO` answer (PRRTE): namespace, size, and a
    /// `PMIX_PROC_INFO_ARRAY` per process naming its host.
    pub fn from_namespace_info(infos: &[Info]) -> JobRecord {
        let mut j = JobRecord {
            state: "running".into(),
            ..Default::default()
        };
        for i in infos {
            match i.key.as_str() {
                keys::NSPACE => j.nspace = text(&i.value),
                keys::JOB_SIZE => j.nprocs = i.value.as_u64().map(|n| n as u32),
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
    pub fn from_infos(infos: &[Info]) -> JobRecord {
        let mut j = JobRecord::default();
        for i in infos {
            match i.key.as_str() {
                keys::NSPACE => j.nspace = text(&i.value),
                JOB_STATE => j.state = text(&i.value),
                keys::NODE_LIST => j.nodes = list(&i.value),
                JOB_PARENT => j.parent = Some(text(&i.value)),
                keys::EXIT_CODE => j.exit_status = i.value.as_i64().map(|x| x as i32),
                keys::JOB_SIZE => j.nprocs = i.value.as_u64().map(|n| n as u32),
                _ => {}
            }
        }
        j
    }
}

fn text(v: &Value) -> String {
    v.as_str()
        .map(String::from)
        .unwrap_or_else(|| v.to_string())
}

fn list(v: &Value) -> Vec<String> {
    crate::codec::helpers::value_list(v)
}

/// Pack a list of entries as the answer to one status key.
pub fn answer(key: &str, entries: Vec<Value>) -> Info {
    Info::new(key, Value::DataArray(DataArray::values(entries)))
}

/// The entries of the answer to `key`. Two shapes are read: pdvm's (an
/// array of values, each an array of infos) and PRRTE's (an array of
/// infos, each entry an info whose value is an array of infos, e.g.
/// `PMIX_NODE_INFO` blocks; infos of other shapes, such as PRRTE's
/// `PMIX_HWLOC_XML_V2` strings, are not entries).
fn entries<'a>(infos: &'a [Info], key: &str) -> Result<Vec<&'a [Info]>> {
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

/// One query, one key, optional qualifiers; the answer's infos.
fn ask(sess: &Session, key: &str, qualifiers: Vec<Info>) -> Result<Vec<Info>> {
    query(
        sess,
        &[Query {
            keys: vec![key.into()],
            qualifiers,
        }],
    )
}

/// Ask for the reservations (all, or the one with `alloc_id`).
///
/// pdvm answers `PMIX_QUERY_ALLOC_STATUS` with full records. PRRTE master
/// does not; there the reservations are its allocation ids
/// (`PMIX_QUERY_ALLOC_IDS`), each with the nodes `PMIX_QUERY_ALLOCATION`
/// reports for it, and nothing else is known (owner, rule and time are
/// left empty).
pub fn reservations(sess: &Session, alloc_id: Option<&str>) -> Result<Vec<ReservationRecord>> {
    let qualifiers = alloc_id
        .map(|id| vec![s(keys::ALLOC_ID, id)])
        .unwrap_or_default();
    match ask(sess, keys::QUERY_ALLOC_STATUS, qualifiers) {
        Ok(infos) => {
            let found = entries(&infos, keys::QUERY_ALLOC_STATUS)?;
            if !found.is_empty() || infos.iter().any(|i| i.key == keys::QUERY_ALLOC_STATUS) {
                let now = unix_now();
                return Ok(found
                    .into_iter()
                    .map(|i| reservation_from_infos(i, now))
                    .collect());
            }
        }
        Err(e) if is_hard_failure(&e) => return Err(e),
        Err(_) => {}
    }
    let ids = match alloc_id {
        Some(id) => vec![id.to_string()],
        None => allocation_ids(sess)?,
    };
    let mut out = Vec::with_capacity(ids.len().min(1024));
    for id in ids {
        let nodes = nodes_of(sess, Some(&id))?;
        out.push(ReservationRecord {
            alloc_id: id,
            nodes: nodes
                .into_iter()
                .map(|n| n.name)
                .filter(|n| !n.is_empty())
                .collect(),
            state: "active".into(),
            inherit: None,
            ..Default::default()
        });
    }
    Ok(out)
}

/// The DVM's allocation ids (`PMIX_QUERY_ALLOC_IDS`: infos, each a
/// `PMIX_ALLOC_ID`).
pub fn allocation_ids(sess: &Session) -> Result<Vec<String>> {
    let infos = ask(sess, keys::QUERY_ALLOC_IDS, vec![])?;
    let Some(Value::DataArray(a)) = infos
        .iter()
        .find(|i| i.key == keys::QUERY_ALLOC_IDS)
        .map(|i| &i.value)
    else {
        return Err(Error::new(
            Status::ERR_NOT_SUPPORTED,
            "the DVM reports no allocation ids",
        ));
    };
    Ok(a.as_infos()
        .map(|l| {
            l.iter()
                .filter(|i| i.key == keys::ALLOC_ID)
                .map(|i| text(&i.value))
                .collect()
        })
        .or_else(|| a.as_strings().map(<[String]>::to_vec))
        .unwrap_or_default())
}

/// Ask for the nodes (all of the DVM's).
pub fn nodes(sess: &Session) -> Result<Vec<NodeRecord>> {
    nodes_of(sess, None)
}

/// The nodes of the DVM, or of one allocation.
fn nodes_of(sess: &Session, alloc_id: Option<&str>) -> Result<Vec<NodeRecord>> {
    let qualifiers = alloc_id
        .map(|id| vec![s(keys::ALLOC_ID, id)])
        .unwrap_or_default();
    let infos = ask(sess, keys::QUERY_ALLOCATION, qualifiers)?;
    Ok(entries(&infos, keys::QUERY_ALLOCATION)?
        .into_iter()
        .map(NodeRecord::from_infos)
        .collect())
}

/// Ask for the jobs: pdvm's job table, else the standard namespace
/// information (`PMIX_QUERY_NAMESPACE_INFO`: namespace, size and where
/// each process runs).
pub fn jobs(sess: &Session) -> Result<Vec<JobRecord>> {
    match ask(sess, QUERY_JOBS, vec![]) {
        Ok(infos) if infos.iter().any(|i| i.key == QUERY_JOBS) => {
            let found = entries(&infos, QUERY_JOBS)?;
            return Ok(found.into_iter().map(JobRecord::from_infos).collect());
        }
        Err(e) if is_hard_failure(&e) => return Err(e),
        _ => {}
    }
    namespace_info(sess)
}

/// Whether a failed query says nothing about what the DVM knows, but that
/// the asking itself failed (no answer in time, the connection lost, an
/// unreadable answer, our queue full): then no other way of asking is
/// tried, and the status is a failure.
pub fn is_hard_failure(e: &Error) -> bool {
    matches!(
        e.status,
        Status::ERR_TIMEOUT
            | Status::ERR_LOST_CONNECTION
            | Status::ERR_UNREACH
            | Status::ERR_OUT_OF_RESOURCE
            | Status::ERR_UNPACK_FAILURE
    )
}

/// The standard namespace information (PRRTE).
fn namespace_info(sess: &Session) -> Result<Vec<JobRecord>> {
    let infos = ask(sess, keys::QUERY_NAMESPACE_INFO, vec![])?;
    Ok(entries(&infos, keys::QUERY_NAMESPACE_INFO)?
        .into_iter()
        .map(JobRecord::from_namespace_info)
        .collect())
}

/// Every status record one query answer carries, decoded as `pwatch
/// --status` reads them (reservations, nodes, jobs in pdvm's table or as
/// namespace information, allocation ids), without I/O: the client fuzz
/// target's entry point ([`super::inbound`]). Returns how many records.
pub fn decode_answer(infos: &[Info]) -> Result<usize> {
    use std::hint::black_box;
    let now = unix_now();
    let mut n = 0;
    for i in entries(infos, keys::QUERY_ALLOC_STATUS)? {
        black_box(reservation_from_infos(i, now));
        n += 1;
    }
    for i in entries(infos, keys::QUERY_ALLOCATION)? {
        black_box(NodeRecord::from_infos(i));
        n += 1;
    }
    for i in entries(infos, QUERY_JOBS)? {
        black_box(JobRecord::from_infos(i));
        n += 1;
    }
    for i in entries(infos, keys::QUERY_NAMESPACE_INFO)? {
        black_box(JobRecord::from_namespace_info(i));
        n += 1;
    }
    Ok(n)
}

/// Which tables one [`status`] request asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Want {
    /// Reservations.
    pub reservations: bool,
    /// Jobs.
    pub jobs: bool,
    /// Also the jobs that ended (else only live ones are asked for).
    pub ended_jobs: bool,
    /// Nodes.
    pub nodes: bool,
    /// Scheduler queues.
    pub sched: bool,
}

/// The answers of one [`status`] request; `None` where not asked.
#[derive(Debug, Default)]
pub struct Answers {
    /// Reservations, or why not.
    pub reservations: Option<Result<Vec<ReservationRecord>>>,
    /// Jobs, or why not.
    pub jobs: Option<Result<Vec<JobRecord>>>,
    /// Nodes, or why not.
    pub nodes: Option<Result<Vec<NodeRecord>>>,
    /// Scheduler queues, or why not.
    pub sched: Option<Result<Vec<QueueRecord>>>,
}

/// Ask for every table `want` names in one request (one round trip to
/// pdvm). Tables the DVM leaves unanswered (PRRTE knows none of pdvm's
/// keys) are then asked for the standard way, one by one.
pub fn status(sess: &Session, want: Want) -> Answers {
    let mut qs = Vec::with_capacity(4);
    let mut q = |key: &str, qualifiers: Vec<Info>| {
        qs.push(Query {
            keys: vec![key.into()],
            qualifiers,
        })
    };
    if want.reservations {
        q(keys::QUERY_ALLOC_STATUS, vec![]);
    }
    if want.jobs {
        let live = if want.ended_jobs {
            vec![]
        } else {
            vec![Info::new(QUERY_LIVE, true)]
        };
        q(QUERY_JOBS, live);
    }
    if want.nodes {
        q(keys::QUERY_ALLOCATION, vec![]);
    }
    if want.sched {
        q(QUERY_SCHED, vec![]);
    }
    let infos = if qs.is_empty() {
        Vec::new()
    } else {
        match query(sess, &qs) {
            Ok(infos) => infos,
            // No answer (or none readable): asking table by table would
            // only wait as long again for each.
            Err(e) if is_hard_failure(&e) => {
                fn fail<T>(asked: bool, e: &Error) -> Option<Result<Vec<T>>> {
                    asked.then(|| Err(e.clone()))
                }
                return Answers {
                    reservations: fail(want.reservations, &e),
                    jobs: fail(want.jobs, &e),
                    nodes: fail(want.nodes, &e),
                    sched: fail(want.sched, &e),
                };
            }
            Err(_) => Vec::new(),
        }
    };
    let has = |k: &str| infos.iter().any(|i| i.key == k);
    let decode = |k: &str| entries(&infos, k);
    let mut a = Answers::default();
    if want.reservations {
        a.reservations = Some(if has(keys::QUERY_ALLOC_STATUS) {
            decode(keys::QUERY_ALLOC_STATUS).map(|v| {
                let now = unix_now();
                v.into_iter()
                    .map(|i| reservation_from_infos(i, now))
                    .collect()
            })
        } else {
            reservations(sess, None)
        });
    }
    if want.jobs {
        a.jobs = Some(if has(QUERY_JOBS) {
            decode(QUERY_JOBS).map(|v| v.into_iter().map(JobRecord::from_infos).collect())
        } else {
            namespace_info(sess)
        });
    }
    if want.nodes {
        a.nodes = Some(if has(keys::QUERY_ALLOCATION) {
            decode(keys::QUERY_ALLOCATION)
                .map(|v| v.into_iter().map(NodeRecord::from_infos).collect())
        } else {
            nodes(sess)
        });
    }
    if want.sched {
        a.sched = Some(if has(QUERY_SCHED) {
            decode(QUERY_SCHED).map(|v| v.into_iter().map(QueueRecord::from_infos).collect())
        } else {
            Err(Error::new(
                Status::ERR_NOT_SUPPORTED,
                "the DVM reports no scheduler queues",
            ))
        });
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_round_trips() {
        let q = QueueRecord {
            queue: "default".into(),
            nodes: 4,
            free: vec!["s002".into(), "s004".into()],
            pending: 1,
        };
        let Value::DataArray(a) = q.to_value() else {
            panic!()
        };
        assert_eq!(QueueRecord::from_infos(a.as_infos().unwrap()), q);
    }

    #[test]
    fn reservation_round_trips_on_both_wires() {
        let r = ReservationRecord {
            alloc_id: "alloc.1".into(),
            request_id: Some("r1".into()),
            session_id: Some(3),
            owner_nspace: "job@1".into(),
            owners: vec!["job@1".into(), "job@2".into()],
            inherit: Some(Inheritance::ChildDefault),
            share: false,
            nodes: vec!["s001".into(), "s002".into()],
            expires_at: Some(1090),
            expires_in: Some(90),
            warn_secs: Some(30),
            warn_to: None,
            state: "active".into(),
        };
        for wire in [WireVersion::V41, WireVersion::V61] {
            let entry = Value::DataArray(DataArray::infos(reservation_infos(&r, wire)));
            let info = answer(keys::QUERY_ALLOC_STATUS, vec![entry]);
            let mut e = crate::codec::Encoder::new(wire);
            e.pack_one(&info).unwrap();
            let bytes = e.into_bytes();
            let back: Info = crate::codec::Decoder::new(&bytes, wire)
                .unpack_one()
                .unwrap();
            let got = entries(std::slice::from_ref(&back), keys::QUERY_ALLOC_STATUS).unwrap();
            assert_eq!(reservation_from_infos(got[0], 1000), r, "{wire:?}");
        }
    }

    #[test]
    fn node_and_job_round_trip() {
        let n = NodeRecord {
            name: "n001".into(),
            session: "alloc.1".into(),
            slots: 4,
            used: 1,
            origin: "startup".into(),
        };
        let Value::DataArray(a) = n.to_value() else {
            panic!()
        };
        assert_eq!(NodeRecord::from_infos(a.as_infos().unwrap()), n);
        let j = JobRecord {
            nspace: "j@1".into(),
            parent: Some("t@1".into()),
            state: "ended".into(),
            nodes: vec!["n001".into()],
            exit_status: Some(3),
            nprocs: Some(2),
        };
        let Value::DataArray(a) = j.to_value() else {
            panic!()
        };
        assert_eq!(JobRecord::from_infos(a.as_infos().unwrap()), j);
    }
}
