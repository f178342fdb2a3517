//! Which value of an allocation request a `PMIX_ERR_BAD_PARAM` refusal is
//! about, and why: decided from the request palloc sent and what the DVM
//! lists (its nodes, its scheduler's free nodes), never from the refusal's
//! text (the DVM sends only the status).

use std::collections::BTreeSet;

use crate::cli::request::AllocAsk;
use crate::ops::session::Session;
use crate::ops::status_query::{self, Want};
use crate::proto::Directive;

/// The sentence that names the bad value of `req` and why; `None` when
/// nothing in the request explains the refusal.
/// When the DVM `said` why, nothing is guessed: only a bad value the
/// request or the DVM's node list shows is named.
pub(crate) fn explain(s: &Session, req: &AllocAsk, said: bool) -> Option<String> {
    if let Some(why) = explain_request(req) {
        return Some(why);
    }
    if req.attrs.nodes_named().is_empty() {
        return (!said).then(|| sent_values(req));
    }
    let known = known_nodes(s)?;
    let unknown: Vec<&String> = req
        .attrs
        .nodes_named()
        .iter()
        .filter(|n| !known.contains(*n))
        .collect();
    if unknown.is_empty() {
        return (!said).then(|| sent_values(req));
    }
    let names: Vec<&str> = unknown.iter().map(|n| n.as_str()).collect();
    let all: Vec<&str> = known.iter().map(String::as_str).collect();
    Some(format!(
        "-w {}: no such node in this DVM or its scheduler's pool (its nodes: {}); \
name nodes it has, or ask for a count with -N",
        names.join(","),
        all.join(", ")
    ))
}

/// What the request alone shows to be wrong (no DVM knowledge needed).
pub(crate) fn explain_request(req: &AllocAsk) -> Option<String> {
    let counted = req.attrs.num_nodes.is_some_and(|n| n > 0);
    if req.directive == Directive::New && !counted && req.attrs.nodes_named().is_empty() {
        let what = resources_named(req);
        let example = if what == "the request" {
            "palloc -N 1".to_string()
        } else {
            format!("palloc -N 1 {what}")
        };
        return Some(format!(
            "the request names no nodes: {what} alone reserves nothing (PMIX_ALLOC_NUM_NODES \
and PMIX_ALLOC_NODE_LIST absent); add -N COUNT or -w NODES, as `{example}`"
        ));
    }
    if let (Some(n), false) = (req.attrs.num_nodes, req.attrs.nodes_named().is_empty()) {
        if n as usize != req.attrs.nodes_named().len() {
            return Some(format!(
                "-N {n} and -w {} name different node counts ({}); give one of them",
                req.attrs.nodes_named().join(","),
                req.attrs.nodes_named().len()
            ));
        }
    }
    let mut seen = BTreeSet::new();
    if let Some(dup) = req
        .attrs
        .nodes_named()
        .iter()
        .find(|n| !seen.insert(n.as_str()))
    {
        return Some(format!("-w names {dup} twice; name each node once"));
    }
    if req.attrs.time_secs == Some(0) {
        return Some("-t 0: a time limit of zero reserves nothing; give a positive time".into());
    }
    None
}

/// The resource flags the request carried, as typed (`-c 5 --mem 100`), or
/// `the request` when none.
fn resources_named(req: &AllocAsk) -> String {
    let mut v = Vec::new();
    if let Some(c) = req.attrs.num_cpus {
        v.push(format!("-c {c}"));
    }
    if let Some(m) = req.attrs.mem_mb {
        v.push(format!("--mem {m}"));
    }
    if let Some(t) = req.attrs.time_secs {
        v.push(format!("-t {t}s"));
    }
    if v.is_empty() {
        "the request".to_string()
    } else {
        v.join(" ")
    }
}

/// The values sent, for a refusal nothing above explains.
fn sent_values(req: &AllocAsk) -> String {
    let mut v = Vec::new();
    if let Some(n) = req.attrs.num_nodes {
        v.push(format!("-N {n}"));
    }
    if !req.attrs.nodes_named().is_empty() {
        v.push(format!("-w {}", req.attrs.nodes_named().join(",")));
    }
    if !req.attrs.nodes_excluded().is_empty() {
        v.push(format!(
            "--exclude {}",
            req.attrs.nodes_excluded().join(",")
        ));
    }
    let r = resources_named(req);
    if r != "the request" {
        v.push(r);
    }
    if let Some(q) = &req.attrs.queue {
        v.push(format!("-p {q}"));
    }
    format!(
        "the DVM does not say which value it refused; the request carried {}",
        if v.is_empty() {
            "no resource values".to_string()
        } else {
            v.join(" ")
        }
    )
}

/// Every node name the DVM lists, with its scheduler's free nodes; `None`
/// when it answers neither.
fn known_nodes(s: &Session) -> Option<BTreeSet<String>> {
    let a = status_query::status(
        s,
        Want {
            nodes: true,
            sched: true,
            ..Want::default()
        },
    );
    let mut known = BTreeSet::new();
    let mut answered = false;
    if let Some(Ok(nodes)) = a.nodes {
        answered = true;
        known.extend(nodes.into_iter().map(|n| n.name));
    }
    if let Some(Ok(queues)) = a.sched {
        answered = true;
        known.extend(queues.into_iter().flat_map(|q| q.free));
    }
    answered.then_some(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_alone_names_its_bad_value() {
        let cpus = AllocAsk {
            directive: Directive::New,
            attrs: crate::proto::AllocAttrs {
                num_cpus: Some(5),
                ..Default::default()
            },
        };
        let m = explain_request(&cpus).unwrap();
        assert!(m.contains("-c 5") && m.contains("-N"), "{m}");
        let twice = AllocAsk {
            directive: Directive::New,
            attrs: crate::proto::AllocAttrs {
                node_list: Some(vec!["a".into(), "a".into()]),
                ..Default::default()
            },
        };
        assert!(explain_request(&twice).unwrap().contains("a twice"));
        let fine = AllocAsk {
            directive: Directive::New,
            attrs: crate::proto::AllocAttrs {
                num_nodes: Some(1),
                ..Default::default()
            },
        };
        assert_eq!(explain_request(&fine), None);
    }
}
