//! A spawn refused for its placement names the requested hosts the DVM
//! does not have: pdvm answers `PMIX_ERR_NOT_FOUND` (which alone reads as a
//! missing program) and PRRTE master a mapping failure (which alone reads
//! as too few slots); either way the DVM's node list says what happened.

use crate::cli::exit::Exit;
use crate::cli::request::SpawnRequest;
use crate::error::Error;
use crate::ops::status_query::nodes;
use crate::ops::Session;
use crate::proto::status::Status;

use crate::app::Failure;

/// The host names of every app's -H/-w, without a `:SLOTS` suffix.
fn requested_hosts(req: &SpawnRequest) -> Vec<String> {
    let mut hosts: Vec<String> = req
        .apps
        .iter()
        .flat_map(|a| a.hosts.iter())
        .map(|h| h.split_once(':').map_or(h.as_str(), |(n, _)| n).to_string())
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// When `e` refused a spawn that named hosts, and some of them are not
/// nodes of the DVM: the failure that names them and lists the nodes.
pub(crate) fn unknown_host_failure(s: &Session, req: &SpawnRequest, e: &Error) -> Option<Failure> {
    let placement = matches!(
        e.status,
        Status::ERR_NOT_FOUND
            | Status::ERR_JOB_FAILED_TO_MAP
            | Status::ERR_JOB_INSUFFICIENT_RESOURCES
            | Status::ERR_BAD_PARAM
    );
    let wanted = requested_hosts(req);
    if !placement || wanted.is_empty() {
        return None;
    }
    let known: Vec<String> = nodes(s).ok()?.into_iter().map(|n| n.name).collect();
    let missing: Vec<&String> = wanted.iter().filter(|h| !known.contains(h)).collect();
    if missing.is_empty() || known.is_empty() {
        return None;
    }
    let names: Vec<&str> = missing.iter().map(|h| h.as_str()).collect();
    Some(Failure::with(
        Exit::NotFound,
        Some(e.status),
        format!(
            "no such host: {} {} not a node of this DVM (its nodes: {}); nothing was launched. \
Check -H/-w (`pwatch --status --what nodes` lists the nodes)",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            known.join(", ")
        ),
    ))
}
