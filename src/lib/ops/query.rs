//! Queries (`PMIx_Query_info`).

use std::time::Duration;

use crate::codec::query_message::QueryMessage;
use crate::codec::{Info, ProcInfo, Query};
use crate::error::Result;

use super::session::{read_infos, read_status, Session};
use crate::proto::{cmd, keys};

/// Run one or more queries; returns every info the server answered with.
pub fn query(s: &Session, queries: &[Query]) -> Result<Vec<Info>> {
    query_within(s, queries, s.timeout())
}

/// [`query`] answered within `timeout` (a check that may be skipped).
pub fn query_within(s: &Session, queries: &[Query], timeout: Duration) -> Result<Vec<Info>> {
    for q in queries {
        s.check_infos(&q.qualifiers)?;
    }
    let mut e = s.request(cmd::QUERY)?;
    QueryMessage::new(queries).encode_body(&mut e)?;
    let reply = s.call_within(e, timeout)?;
    let mut d = s.decoder(&reply);
    read_status(&mut d)?;
    read_infos(&mut d)
}

/// Whether the DVM's daemon on `node` has reported in: PRRTE answers a
/// node's `PMIX_SERVER_URI` only once its daemon called back. Any error
/// or an empty answer is "no".
pub fn daemon_up(s: &Session, node: &str) -> bool {
    let q = Query {
        keys: vec![keys::SERVER_URI.into()],
        qualifiers: vec![Info::new(keys::HOSTNAME, node)],
    };
    query(s, &[q]).is_ok_and(|infos| crate::codec::helpers::names_server_uri(&infos))
}

/// Send a cheap query (the namespaces) without waiting: a barrier. A PMIx
/// server handles one connection's requests in order, so once the
/// barrier's reply (its tag, returned) has come, every request sent before
/// it has been handled: one that is still unanswered is queued, not
/// refused at once.
pub fn begin_barrier(s: &Session) -> Result<u32> {
    let q = Query {
        keys: vec![keys::QUERY_NAMESPACES.into()],
        qualifiers: vec![],
    };
    let mut e = s.request(cmd::QUERY)?;
    QueryMessage::new(&[q]).encode_body(&mut e)?;
    s.conn().begin(e.bytes())
}

/// The namespaces the server knows (running jobs and connected tools).
pub fn namespaces(s: &Session) -> Result<Vec<String>> {
    namespaces_within(s, s.timeout())
}

/// [`namespaces`] answered within `timeout`.
pub fn namespaces_within(s: &Session, timeout: Duration) -> Result<Vec<String>> {
    let q = Query {
        keys: vec![keys::QUERY_NAMESPACES.into()],
        qualifiers: vec![],
    };
    let infos = query_within(s, &[q], timeout)?;
    Ok(namespaces_in(&infos))
}

/// The namespaces a barrier's reply ([`begin_barrier`]) lists.
pub fn barrier_namespaces(s: &Session, reply: &[u8]) -> Result<Vec<String>> {
    let mut d = s.decoder(reply);
    read_status(&mut d)?;
    Ok(namespaces_in(&read_infos(&mut d)?))
}

/// The namespaces listed in a `PMIX_QUERY_NAMESPACES` answer.
fn namespaces_in(infos: &[Info]) -> Vec<String> {
    infos
        .iter()
        .filter(|i| i.key == keys::QUERY_NAMESPACES)
        .filter_map(|i| i.value.as_str())
        .flat_map(crate::codec::helpers::split_list)
        .collect()
}

/// The process table of job `nspace` (`PMIX_QUERY_PROC_TABLE` qualified by
/// `PMIX_NSPACE`): one entry per process with its host, pid and
/// `pmix_proc_state_t`. PRRTE 3.0.14 and master answer it for a live job
/// and refuse it (`PMIX_ERR_NOT_FOUND`) once the job is gone; pdvm does not
/// answer it.
pub fn proc_table(s: &Session, nspace: &str) -> Result<Vec<ProcInfo>> {
    proc_table_within(s, nspace, s.timeout())
}

/// [`proc_table`] answered within `timeout`.
pub fn proc_table_within(s: &Session, nspace: &str, timeout: Duration) -> Result<Vec<ProcInfo>> {
    let q = Query {
        keys: vec![keys::QUERY_PROC_TABLE.into()],
        qualifiers: vec![Info::new(keys::NSPACE, nspace)],
    };
    let infos = query_within(s, &[q], timeout)?;
    Ok(crate::schema::status::proc_table(&infos))
}
