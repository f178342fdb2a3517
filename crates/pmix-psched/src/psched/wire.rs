//! psched's side of the scheduler protocol, as bytes: what the DVM asks
//! (`PMIX_ALLOC_CMD`, `PMIX_SESSION_CTRL_CMD`) and what psched sends back
//! or on its own (answers, timeout warnings, session terminations).

use crate::codec::alloc_message::AllocMessage;
use crate::codec::attrs::read_request_infos;
use crate::codec::attrs::write_infos;
use crate::codec::event_message::NotifyRequest;
use crate::codec::query_message::QueryMessage;
use crate::codec::{Cmd, DataArray, Decoder, Encoder, Info, Proc, Value, WireVersion};
use crate::error::Result;
use crate::proto::status::Status;
use crate::proto::{cmd, keys, AllocAttrs};

pub use crate::proto::cmd::SESSION_CTRL;
/// `PMIX_EVENT_CUSTOM_RANGE`: the targets of a `PMIX_RANGE_CUSTOM` event.
pub use crate::proto::keys::EVENT_CUSTOM_RANGE;
pub use crate::proto::proc_state::{
    RUNNING as PROC_STATE_RUNNING, UNTERMINATED as PROC_STATE_UNTERMINATED,
};
pub use crate::proto::range::{CUSTOM as RANGE_CUSTOM, GLOBAL as RANGE_GLOBAL, RM as RANGE_RM};

/// A message the DVM sent to psched.
#[derive(Debug, Clone)]
pub enum Inbound {
    /// An allocation request forwarded by the DVM.
    Alloc(Box<Forwarded>),
    /// Session control from the DVM (e.g. `PMIX_SESSION_COMPLETE`).
    Session {
        /// The DVM's session number.
        session: u32,
        /// The directives.
        infos: Vec<Info>,
    },
    /// Anything else (answered with an error status).
    Other(u8),
}

/// An allocation request as the DVM forwarded it, in typed form.
#[derive(Debug, Clone, Default)]
pub struct Forwarded {
    /// The directive as sent (a code outside the vocabulary is refused).
    pub directive: crate::proto::Received<crate::proto::Directive>,
    /// What it asks.
    pub attrs: AllocAttrs,
    /// The infos psched echoes back (request id, target, share, inheritance).
    pub echo: Vec<Info>,
    /// `PMIX_REQUESTOR`, which PRRTE adds to what it forwards: who asked.
    pub requestor: Option<Box<Info>>,
}

impl Forwarded {
    /// The process that asked, when PRRTE said (`PMIX_REQUESTOR`).
    pub fn requester(&self) -> Option<Proc> {
        match &self.requestor.as_ref()?.value {
            Value::Proc(p) => Some(p.clone()),
            _ => None,
        }
    }
}

/// Decode one message from the DVM.
pub fn decode(wire: WireVersion, payload: &[u8]) -> Result<Inbound> {
    let mut d = Decoder::new(payload, wire);
    let Cmd(c) = d.unpack_one()?;
    match c {
        cmd::ALLOC => {
            let m = AllocMessage::decode_body(&mut d)?;
            Ok(Inbound::Alloc(Box::new(ask_from(m.directive, &m.infos))))
        }
        SESSION_CTRL => {
            let session: u32 = d.unpack_one()?;
            let infos = read_request_infos(&mut d)?;
            Ok(Inbound::Session { session, infos })
        }
        other => Ok(Inbound::Other(other)),
    }
}

/// Map the request's infos onto a [`Forwarded`].
pub fn ask_from(
    directive: crate::proto::Received<crate::proto::Directive>,
    infos: &[Info],
) -> Forwarded {
    const ECHOED: [&str; 4] = [
        keys::ALLOC_REQ_ID,
        keys::ALLOC_INHERITANCE,
        keys::ALLOC_TARGET,
        keys::ALLOC_SHARE,
    ];
    Forwarded {
        directive,
        attrs: AllocAttrs::from_infos(infos),
        echo: infos
            .iter()
            .filter(|i| ECHOED.contains(&i.key.as_str()))
            .cloned()
            .collect(),
        requestor: infos
            .iter()
            .find(|i| i.key == keys::REQUESTOR)
            .map(|i| Box::new(i.clone())),
    }
}

/// The answer to a request: status, then the infos PRRTE reads (node list,
/// allocation id, the echoed request id, target, share and inheritance).
pub fn answer(
    wire: WireVersion,
    status: Status,
    alloc_id: Option<&str>,
    nodes: &[String],
    echo: &[Info],
) -> Result<Vec<u8>> {
    let mut infos = Vec::with_capacity(echo.len() + 2);
    if status.is_success() {
        if !nodes.is_empty() {
            infos.push(Info::new(keys::ALLOC_NODE_LIST, nodes.join(",").as_str()));
        }
        if let Some(id) = alloc_id {
            infos.push(Info::new(keys::ALLOC_ID, id));
        }
        infos.extend(echo.iter().cloned());
    }
    let mut e = Encoder::new(wire);
    e.pack_one(&status)?;
    write_infos(&mut e, &infos)?;
    Ok(e.into_bytes())
}

/// A refusal with `status` saying why in the scheduler's words
/// (`PMIX_EVENT_TEXT_MESSAGE`): PRRTE hands the answer's infos to the
/// requester, so palloc can show Slurm's reason.
pub fn refusal(wire: WireVersion, status: Status, why: &str) -> Result<Vec<u8>> {
    let infos = [Info::new(keys::EVENT_TEXT_MESSAGE, why)];
    let mut e = Encoder::new(wire);
    e.pack_one(&status)?;
    write_infos(&mut e, &infos)?;
    Ok(e.into_bytes())
}

/// The answer to a queued request withdrawn by a `PMIX_ALLOC_REQ_CANCEL`:
/// `PMIX_ERR_JOB_CANCELED` with the request's own echo (its request id) and
/// who cancelled it (`PMIX_REQUESTOR`), so its requester can say so.
pub fn cancelled(wire: WireVersion, echo: &[Info], by: Option<&Info>) -> Result<Vec<u8>> {
    let mut infos: Vec<Info> = echo.to_vec();
    infos.extend(by.cloned());
    let mut e = Encoder::new(wire);
    e.pack_one(&Status::ERR_JOB_CANCELED)?;
    write_infos(&mut e, &infos)?;
    Ok(e.into_bytes())
}

/// `PMIX_ALLOC_TIMEOUT_WARNING` for `alloc_id`, range RM, with the time left.
pub fn warning(wire: WireVersion, alloc_id: &str, remaining_secs: u32) -> Result<Vec<u8>> {
    let infos = [
        Info::new(keys::ALLOC_ID, alloc_id),
        Info::new(keys::TIME_REMAINING, Value::Uint32(remaining_secs)),
    ];
    let mut e = Encoder::new(wire);
    NotifyRequest::new(Status::ALLOC_TIMEOUT_WARNING, RANGE_RM, &infos).encode(&mut e)?;
    Ok(e.into_bytes())
}

/// `PMIX_SESSION_TERMINATE` of the DVM's session `session` (carrying
/// `alloc_id` too, so the DVM can tell which reservation is meant).
pub fn terminate(wire: WireVersion, session: u32, alloc_id: &str) -> Result<Vec<u8>> {
    let infos = [
        Info::new(crate::proto::keys::SESSION_TERMINATE, Value::Bool(true)),
        Info::new(keys::ALLOC_ID, alloc_id),
    ];
    let mut e = Encoder::new(wire);
    e.pack_one(&Cmd(SESSION_CTRL))?;
    e.pack_one(&session)?;
    write_infos(&mut e, &infos)?;
    Ok(e.into_bytes())
}

/// A plain status answer (to session control, or to what psched does not serve).
pub fn status_only(wire: WireVersion, status: Status) -> Result<Vec<u8>> {
    let mut e = Encoder::new(wire);
    e.pack_one(&status)?;
    write_infos(&mut e, &[])?;
    Ok(e.into_bytes())
}

/// A query of the DVM's allocation ids (`PMIX_QUERY_ALLOC_IDS`), how psched
/// learns which of its grants the DVM ended by itself.
pub fn query_alloc_ids(wire: WireVersion) -> Result<Vec<u8>> {
    let q = crate::codec::Query {
        keys: vec![keys::QUERY_ALLOC_IDS.to_string()],
        qualifiers: Vec::new(),
    };
    let mut e = Encoder::new(wire);
    QueryMessage::new(&[q]).encode(&mut e)?;
    Ok(e.into_bytes())
}

/// The ids in the answer to [`query_alloc_ids`]; `None` when the DVM
/// refused or answered something else (then nothing is reconciled).
pub fn alloc_ids_answer(wire: WireVersion, payload: &[u8]) -> Option<Vec<String>> {
    let mut d = Decoder::new(payload, wire);
    let st: Status = d.unpack_one().ok()?;
    // "Not found": the DVM holds no allocation at all.
    if st == Status::ERR_NOT_FOUND {
        return Some(Vec::new());
    }
    if !st.is_success() {
        return None;
    }
    let infos = read_request_infos(&mut d).ok()?;
    let v = &infos.iter().find(|i| i.key == keys::QUERY_ALLOC_IDS)?.value;
    let Value::DataArray(a) = v else {
        return None;
    };
    if let Some(l) = a.as_infos() {
        return Some(
            l.iter()
                .filter(|i| i.key == keys::ALLOC_ID)
                .filter_map(|i| i.value.as_str().map(String::from))
                .collect(),
        );
    }
    a.as_strings().map(<[String]>::to_vec)
}

/// `echo` with its inheritance rule as PRRTE must apply it: NONE becomes
/// DEFAULT and CHILD becomes CHILD_DEFAULT (no rule: DEFAULT). PRRTE master
/// ends a NONE or CHILD reservation by ordering its nodes' daemons away
/// without resetting the nodes, so a node granted again has no daemon
/// (docs/conformance.md, P6); under the DEFAULT rules it keeps them and
/// psched takes the nodes back itself, at the same moment.
pub fn echo_for_dvm(echo: &[Info]) -> Vec<Info> {
    use crate::proto::Inheritance;
    let mut out: Vec<Info> = echo
        .iter()
        .filter(|i| i.key != keys::ALLOC_INHERITANCE)
        .cloned()
        .collect();
    let asked = AllocAttrs::from_infos(echo).inheritance();
    let kept = match asked {
        Some(Inheritance::Child | Inheritance::ChildDefault) => Inheritance::ChildDefault,
        _ => Inheritance::Default,
    };
    out.push(Info::new(
        keys::ALLOC_INHERITANCE,
        Value::AllocInherit(kept.into()),
    ));
    out
}

/// psched's own allocation request to the DVM (its reservation of idle
/// nodes): `directive` with `infos`.
pub fn own_request(
    wire: WireVersion,
    directive: crate::proto::Directive,
    infos: &[Info],
) -> Result<Vec<u8>> {
    let mut e = Encoder::new(wire);
    AllocMessage::new(directive, infos).encode(&mut e)?;
    Ok(e.into_bytes())
}

/// A query of `key` with `qualifiers`.
pub fn query(wire: WireVersion, key: &str, qualifiers: Vec<Info>) -> Result<Vec<u8>> {
    let q = crate::codec::Query {
        keys: vec![key.to_string()],
        qualifiers,
    };
    let mut e = Encoder::new(wire);
    QueryMessage::new(&[q]).encode(&mut e)?;
    Ok(e.into_bytes())
}

/// The status and infos of a query's answer (none when it does not decode).
pub fn query_answer(wire: WireVersion, payload: &[u8]) -> Option<(Status, Vec<Info>)> {
    let mut d = Decoder::new(payload, wire);
    let st: Status = d.unpack_one().ok()?;
    let infos = if st.is_success() {
        read_request_infos(&mut d).ok()?
    } else {
        Vec::new()
    };
    Some((st, infos))
}

/// Where namespace `nspace`'s processes run, from the answer to a
/// `PMIX_QUERY_NAMESPACE_INFO`: `None` when the DVM lists no such
/// namespace, an empty list for one with no process (a tool).
pub fn namespace_hosts(infos: &[Info], nspace: &str) -> Option<Vec<String>> {
    let blocks = crate::schema::status::entries(infos, keys::QUERY_NAMESPACE_INFO).ok()?;
    let block = blocks.into_iter().find(|b| {
        b.iter()
            .any(|i| i.key == keys::NSPACE && i.value.as_str() == Some(nspace))
    })?;
    Some(
        block
            .iter()
            .filter(|i| i.key == keys::PROC_INFO_ARRAY)
            .filter_map(|i| match &i.value {
                Value::DataArray(d) => d.as_infos(),
                _ => None,
            })
            .filter_map(|p| {
                p.iter()
                    .find(|i| i.key == keys::HOSTNAME)
                    .and_then(|i| i.value.as_str().map(String::from))
            })
            .collect(),
    )
}

/// `code` sent to `to` alone (`PMIX_RANGE_CUSTOM`) with `infos`: how psched
/// tells an allocation's requester of its end, and warns it, whoever
/// extended the allocation since.
pub fn notify_one(wire: WireVersion, code: Status, to: &Proc, infos: &[Info]) -> Result<Vec<u8>> {
    let mut all = Vec::with_capacity(infos.len() + 1);
    all.push(Info::new(
        EVENT_CUSTOM_RANGE,
        Value::DataArray(DataArray::procs(vec![to.clone()])),
    ));
    all.extend(infos.iter().cloned());
    all.extend(crate::codec::attrs::quiet_event_flags());
    let mut e = Encoder::new(wire);
    NotifyRequest::new(code, RANGE_CUSTOM, &all).encode(&mut e)?;
    Ok(e.into_bytes())
}

/// `code` for every process and tool of the DVM (`PMIX_RANGE_GLOBAL`) that
/// registered for it, with `infos` (never cached, never for a default
/// handler: [`crate::codec::attrs::quiet_event_flags`]): how psched announces that an allocation ended, as pdvm does
/// (the holder, `pwatch` and any other listener hear it).
pub fn notify_all(wire: WireVersion, code: Status, infos: &[Info]) -> Result<Vec<u8>> {
    let mut all = infos.to_vec();
    all.extend(crate::codec::attrs::quiet_event_flags());
    let mut e = Encoder::new(wire);
    NotifyRequest::new(code, RANGE_GLOBAL, &all).encode(&mut e)?;
    Ok(e.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_memory_and_slurm_options_are_kept_typed() {
        let infos = [
            Info::new(keys::ALLOC_NUM_NODES, 1u64),
            Info::new(keys::ALLOC_NUM_CPUS, 2u64),
            Info::new(keys::ALLOC_MEM_SIZE, Value::Float(256.0)),
            Info::new(keys::ALLOC_ACCOUNT, "phys"),
            Info::new(keys::ALLOC_QOS, "low"),
            Info::new(keys::ALLOC_RESERVATION, "maint"),
            Info::new(keys::ALLOC_CONSTRAINT, "gpu"),
            Info::new(keys::ALLOC_EXCLUSIVE, true),
        ];
        let a = ask_from(crate::proto::Directive::received(0), &infos);
        assert_eq!(a.attrs.num_nodes, Some(1));
        assert_eq!((a.attrs.num_cpus, a.attrs.mem_mb), (Some(2), Some(256)));
        assert_eq!(
            a.attrs.rm,
            crate::proto::RmOptions {
                account: Some("phys".into()),
                qos: Some("low".into()),
                reservation: Some("maint".into()),
                constraint: Some("gpu".into()),
                exclusive: true,
            }
        );
    }

    #[test]
    fn a_refusal_says_why() {
        let b = refusal(WireVersion::V41, Status::ERR_BAD_PARAM, "Slurm: no").unwrap();
        let mut d = Decoder::new(&b, WireVersion::V41);
        let st: Status = d.unpack_one().unwrap();
        assert_eq!(st, Status::ERR_BAD_PARAM);
        let infos = read_request_infos(&mut d).unwrap();
        assert_eq!(infos[0].key, keys::EVENT_TEXT_MESSAGE);
        assert_eq!(infos[0].value.as_str(), Some("Slurm: no"));
    }
}
