//! Queries (`PMIx_Query_info`).

use crate::codec::{Info, Query, Size};
use crate::error::Result;

use super::session::{read_infos, read_status, Session};
use super::{cmd, keys};

/// Run one or more queries; returns every info the server answered with.
pub fn query(s: &Session, queries: &[Query]) -> Result<Vec<Info>> {
    for q in queries {
        s.check_infos(&q.qualifiers)?;
    }
    let mut e = s.request(cmd::QUERY)?;
    e.pack_one(&Size(queries.len() as u64))?;
    e.pack(queries)?;
    let reply = s.call(e)?;
    let mut d = s.decoder(&reply);
    read_status(&mut d)?;
    read_infos(&mut d)
}

/// The namespaces the server knows (running jobs and connected tools).
pub fn namespaces(s: &Session) -> Result<Vec<String>> {
    let q = Query {
        keys: vec![keys::QUERY_NAMESPACES.into()],
        qualifiers: vec![],
    };
    let infos = query(s, &[q])?;
    Ok(infos
        .iter()
        .filter(|i| i.key == keys::QUERY_NAMESPACES)
        .filter_map(|i| i.value.as_str())
        .flat_map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect())
}
