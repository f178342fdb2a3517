//! pdvm's allocation and node events, broadcast to every connection that
//! registered for their code (`pwatch --event alloc`, `--event node`).
//!
//! | change | code | payload |
//! | --- | --- | --- |
//! | allocation `granted`, `extended` | `PMIX_NOTIFY_ALLOC_COMPLETE` (-105) | `PMIX_ALLOC_ID`, `PMIX_ALLOC_REQ_ID`, `PMIX_NSPACE` (owner), `PMIX_NODE_LIST` (nodes added) |
//! | allocation `released`, `expired`, `unreserved`, `cancelled` | `PMIX_EVENT_SESSION_END` (-193) | `PMIX_ALLOC_ID`, `PMIX_ALLOC_REQ_ID`, `PMIX_NSPACE` (owner), `PMIX_EVENT_TEXT_MESSAGE` (why) |
//! | node `joined` (granted by the scheduler) | pdvm's `PDVM_EVENT_NODE_CHANGE` (-3001) | `PMIX_ALLOC_ID`, `PMIX_NODE_LIST` |
//! | node `left` (back to the scheduler) | `PMIX_EVENT_NODE_OFFLINE` (-232) | `PMIX_NODE_LIST` |
//! | node `unreserved` (stays, joins the default session) | pdvm's `PDVM_EVENT_NODE_CHANGE` (-3001) | `PMIX_ALLOC_ID`, `PMIX_NODE_LIST` |
//!
//! Every one also carries [`crate::proto::keys::CHANGE`] naming the change.
//! The timeout warning is not broadcast: it stays directed to the requester
//! (§8.2.1.9.5, §8.2.1.11 (6)).

use crate::codec::Info;
use crate::dvm::{EndHow, EndWhy};
use crate::proto::keys;
use crate::proto::status::Status;
use crate::proto::{keys::CHANGE, status::NODE_CHANGE};

use crate::codec::{Proc, WireVersion};

use super::state::{Server, TAG_NOTIFY};

impl Server {
    /// Send `code` with `info` to every connection registered for it.
    pub fn broadcast(&mut self, code: Status, info: &[Info]) {
        let targets = self.conns.registered_for(code.0);
        let me = self.me();
        self.notify_many(&targets, code, &me, info);
    }

    /// Send one notification to many connections, encoded once per wire
    /// version and buffer kind (a crowd of peers costs one encoding, not
    /// one per peer).
    pub fn notify_many(&mut self, targets: &[u64], code: Status, source: &Proc, info: &[Info]) {
        let mut encoded: Vec<((WireVersion, bool), Vec<u8>)> = Vec::new();
        for &t in targets {
            let Some(c) = self.conns.get(t) else {
                continue;
            };
            let kind = (c.wire, c.described);
            let bytes = match encoded.iter().find(|(k, _)| *k == kind) {
                Some((_, b)) => b.clone(),
                None => match self.notification_bytes(t, code, source, info) {
                    Some(b) => {
                        encoded.push((kind, b.clone()));
                        b
                    }
                    None => continue,
                },
            };
            self.send(t, TAG_NOTIFY, &bytes);
        }
    }

    /// Nodes were added to allocation `alloc_id`: `granted` when they are
    /// all it has, else `extended`.
    pub fn emit_granted(&mut self, alloc_id: &str, req_id: Option<&str>, nodes: &[String]) {
        let view = self.model.reservation(alloc_id);
        let (owner, total) = view
            .as_ref()
            .map(|v| (Some(v.owner_nspace.clone()), v.nodes.len()))
            .unwrap_or((None, nodes.len()));
        if let Some(o) = &owner {
            self.model
                .remember_grant(alloc_id, req_id.map(String::from), o.clone());
        }
        let change = if total > nodes.len() {
            "extended"
        } else {
            "granted"
        };
        let mut info = vec![
            Info::new(keys::ALLOC_ID, alloc_id),
            Info::new(CHANGE, change),
        ];
        if let Some(r) = req_id {
            info.push(Info::new(keys::ALLOC_REQ_ID, r));
        }
        if let Some(o) = owner {
            info.push(Info::new(keys::NSPACE, o));
        }
        if !nodes.is_empty() {
            info.push(Info::new(keys::NODE_LIST, nodes.join(",")));
        }
        self.broadcast(Status::NOTIFY_ALLOC_COMPLETE, &info);
    }

    /// Allocation `alloc_id` ended.
    pub fn emit_ended(&mut self, alloc_id: &str, how: EndHow, why: EndWhy) {
        let (change, text) = match (how, why) {
            (EndHow::Cancelled, _) => ("cancelled", "the queued request was cancelled"),
            (_, EndWhy::Expired) => (
                "expired",
                "the time limit was reached: the scheduler reclaimed it",
            ),
            (_, EndWhy::Teardown) => ("released", "the DVM is tearing down"),
            (_, EndWhy::OwnerRelease) => ("released", "released by an owner"),
            (_, EndWhy::SchedulerRelease) => ("released", "the scheduler released it"),
            (EndHow::Unreserved, _) => (
                "unreserved",
                "its owning namespace ended: the nodes joined the default session",
            ),
            _ => (
                "released",
                "its inheritance disposition returned the nodes to the scheduler",
            ),
        };
        let mut info = vec![
            Info::new(keys::ALLOC_ID, alloc_id),
            Info::new(CHANGE, change),
            Info::new(keys::EVENT_TEXT_MESSAGE, text),
        ];
        if let Some((req, owner)) = self.model.forget_grant(alloc_id) {
            if let Some(r) = req {
                info.push(Info::new(keys::ALLOC_REQ_ID, r));
            }
            info.push(Info::new(keys::NSPACE, owner));
        }
        self.broadcast(Status::EVENT_SESSION_END, &info);
    }

    /// Nodes changed: `joined`, `left` or `unreserved`.
    pub fn emit_nodes(&mut self, change: &str, alloc_id: Option<&str>, nodes: &[String]) {
        let code = if change == "left" {
            Status::EVENT_NODE_OFFLINE
        } else {
            NODE_CHANGE
        };
        let mut info = vec![
            Info::new(CHANGE, change),
            Info::new(keys::NODE_LIST, nodes.join(",")),
        ];
        if let Some(a) = alloc_id {
            info.push(Info::new(keys::ALLOC_ID, a));
        }
        self.broadcast(code, &info);
    }
}
