//! Status queries for reservations, nodes and jobs, over a session: what
//! `pwatch --status` asks. The entries and their wire form are the schema
//! layer's ([`crate::schema::status`]).

use crate::codec::{Info, Query, Value};
use crate::error::{Error, Result};
use crate::proto::keys;
use crate::proto::status::Status;

pub use crate::schema::status::*;

use super::query::query;
use super::session::Session;

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
pub fn nodes(sess: &Session) -> Result<Vec<NodeEntry>> {
    nodes_of(sess, None)
}

/// The nodes of the DVM, or of one allocation.
fn nodes_of(sess: &Session, alloc_id: Option<&str>) -> Result<Vec<NodeEntry>> {
    let qualifiers = alloc_id
        .map(|id| vec![s(keys::ALLOC_ID, id)])
        .unwrap_or_default();
    let infos = ask(sess, keys::QUERY_ALLOCATION, qualifiers)?;
    Ok(entries(&infos, keys::QUERY_ALLOCATION)?
        .into_iter()
        .map(NodeEntry::from_infos)
        .collect())
}

/// Ask for the jobs: pdvm's job table, else the standard namespace
/// information (`PMIX_QUERY_NAMESPACE_INFO`: namespace, size and where
/// each process runs).
pub fn jobs(sess: &Session) -> Result<Vec<JobEntry>> {
    match ask(sess, QUERY_JOBS, vec![]) {
        Ok(infos) if infos.iter().any(|i| i.key == QUERY_JOBS) => {
            let found = entries(&infos, QUERY_JOBS)?;
            return Ok(found.into_iter().map(JobEntry::from_infos).collect());
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
fn namespace_info(sess: &Session) -> Result<Vec<JobEntry>> {
    let infos = ask(sess, keys::QUERY_NAMESPACE_INFO, vec![])?;
    Ok(entries(&infos, keys::QUERY_NAMESPACE_INFO)?
        .into_iter()
        .map(JobEntry::from_namespace_info)
        .collect())
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
    pub jobs: Option<Result<Vec<JobEntry>>>,
    /// Nodes, or why not.
    pub nodes: Option<Result<Vec<NodeEntry>>>,
    /// Scheduler queues, or why not.
    pub sched: Option<Result<Vec<QueueEntry>>>,
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
            decode(QUERY_JOBS).map(|v| v.into_iter().map(JobEntry::from_infos).collect())
        } else {
            namespace_info(sess)
        });
    }
    if want.nodes {
        a.nodes = Some(if has(keys::QUERY_ALLOCATION) {
            decode(keys::QUERY_ALLOCATION)
                .map(|v| v.into_iter().map(NodeEntry::from_infos).collect())
        } else {
            nodes(sess)
        });
    }
    if want.sched {
        a.sched = Some(if has(QUERY_SCHED) {
            decode(QUERY_SCHED).map(|v| v.into_iter().map(QueueEntry::from_infos).collect())
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
    use crate::codec::{DataArray, WireVersion};
    use crate::proto::Inheritance;

    #[test]
    fn queue_round_trips() {
        let q = QueueEntry {
            queue: "default".into(),
            nodes: 4,
            free: vec!["s002".into(), "s004".into()],
            pending: 1,
            state: Some("up".into()),
            node_names: vec!["s001".into(), "s002".into(), "s004".into()],
        };
        let Value::DataArray(a) = q.to_value() else {
            panic!()
        };
        assert_eq!(QueueEntry::from_infos(a.as_infos().unwrap()), q);
    }

    #[test]
    fn reservation_round_trips_on_both_wires() {
        let r = ReservationRecord {
            reason: Some("Resources".into()),
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
        let n = NodeEntry {
            name: "n001".into(),
            session: "alloc.1".into(),
            slots: 4,
            used: 1,
            origin: "startup".into(),
        };
        let Value::DataArray(a) = n.to_value() else {
            panic!()
        };
        assert_eq!(NodeEntry::from_infos(a.as_infos().unwrap()), n);
        let j = JobEntry {
            nspace: "j@1".into(),
            parent: Some("t@1".into()),
            state: "ended".into(),
            nodes: vec!["n001".into()],
            exit_status: Some(3),
            nprocs: Some(2),
            cmdline: Some("sh -c true : hostname".into()),
            uid: Some(1000),
            name: Some("solver".into()),
        };
        let Value::DataArray(a) = j.to_value() else {
            panic!()
        };
        assert_eq!(JobEntry::from_infos(a.as_infos().unwrap()), j);
    }
}
