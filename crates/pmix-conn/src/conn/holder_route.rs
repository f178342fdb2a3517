//! What a holder reads in the messages it relays, to send each client only
//! what is its own: the kind of a client's request, the namespace a spawn
//! reply names, the job a piece of forwarded output comes from, and what an
//! event is about. Pure decoding; nothing here does I/O.

use crate::codec::alloc_message::AllocMessage;
use crate::codec::attrs::MAX_REQUEST_INFOS;
use crate::codec::event_message::Notification;
use crate::codec::spawn_message::SpawnMessage;
use crate::codec::{Cmd, Decoder, Info, Proc, Size, Value, WireVersion};
use crate::proto::status::Status;
use crate::proto::{cmd, keys, Directive, Received};

/// What a client's request is, as far as routing is concerned.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    /// A spawn: its reply names the job whose output and events are the
    /// client's; `targets` are the allocation ids of `PMIX_SPAWN_TARGET`
    /// (the invalid namespace, an empty string, is the default pool).
    Spawn {
        /// `PMIX_SPAWN_TARGET`'s allocation ids.
        targets: Vec<String>,
    },
    /// An event registration for these codes (none: every event).
    RegEvents(Vec<i32>),
    /// An allocation request.
    Alloc {
        /// The directive sent.
        directive: Received<Directive>,
        /// `PMIX_ALLOC_ID`, when given.
        alloc_id: Option<String>,
        /// Whether it asks for a timeout warning (`PMIX_ALLOC_WARN_TIMEOUT`).
        warn: bool,
        /// Whether it names no nodes (`-N`, `-w`): a RELEASE of all.
        whole: bool,
    },
    /// Anything else (queries, job control, stdin, …).
    Other,
    /// The holder's own request pausing or resuming a job's output.
    Pause,
}

/// The job-control request pausing (`pause`) or resuming the output of
/// job `nspace` (pdvm's `pdvm.iof.pause`).
pub(crate) fn pause_request(nspace: &str, pause: bool, wire: WireVersion) -> Option<Vec<u8>> {
    let mut e = crate::codec::Encoder::new(wire);
    e.pack_one(&Cmd(cmd::JOB_CONTROL)).ok()?;
    let all = Proc {
        nspace: nspace.to_string(),
        rank: crate::codec::RANK_WILDCARD,
    };
    crate::codec::attrs::write_sized(&mut e, &[all]).ok()?;
    crate::codec::attrs::write_infos(&mut e, &[Info::new(keys::IOF_PAUSE, pause)]).ok()?;
    Some(e.into_bytes())
}

fn find<'a>(infos: &'a [Info], key: &str) -> Option<&'a Value> {
    infos.iter().find(|i| i.key == key).map(|i| &i.value)
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::DataArray(a) => a.as_strings().map(<[String]>::to_vec).unwrap_or_default(),
        other => other
            .as_str()
            .map(|s| vec![s.to_string()])
            .unwrap_or_default(),
    }
}

/// Classify a client's request payload.
pub(crate) fn classify(payload: &[u8], wire: WireVersion) -> Kind {
    let mut d = Decoder::new(payload, wire);
    let Ok(Cmd(c)) = d.unpack_one::<Cmd>() else {
        return Kind::Other;
    };
    match c {
        cmd::SPAWN => {
            let targets = SpawnMessage::decode_job_info(&mut d)
                .ok()
                .and_then(|i| find(&i, keys::SPAWN_TARGET).map(strings))
                .unwrap_or_default();
            Kind::Spawn { targets }
        }
        cmd::REGEVENTS => {
            let codes = match d.unpack_one::<Size>() {
                Ok(Size(0)) | Err(_) => Vec::new(),
                Ok(Size(n)) if n <= MAX_REQUEST_INFOS as u64 => d
                    .unpack::<Status>(n as usize)
                    .map(|v| v.into_iter().map(|s| s.0).collect())
                    .unwrap_or_default(),
                Ok(_) => Vec::new(),
            };
            Kind::RegEvents(codes)
        }
        cmd::ALLOC => {
            let Ok(m) = AllocMessage::decode_body(&mut d) else {
                return Kind::Other;
            };
            let infos = m.infos;
            Kind::Alloc {
                directive: m.directive,
                alloc_id: find(&infos, keys::ALLOC_ID)
                    .and_then(Value::as_str)
                    .map(String::from),
                warn: find(&infos, keys::ALLOC_WARN_TIMEOUT).is_some(),
                whole: find(&infos, keys::ALLOC_NODE_LIST).is_none()
                    && find(&infos, keys::ALLOC_NUM_NODES).is_none(),
            }
        }
        _ => Kind::Other,
    }
}

/// Whether an allocation directive acts on an existing allocation (and so
/// must name the holder's own).
pub(crate) fn acts_on_existing(d: Received<Directive>) -> bool {
    matches!(
        d,
        Received::Known(Directive::Extend | Directive::Release | Directive::Reaquire)
    )
}

/// The namespace a successful spawn reply names.
pub(crate) fn spawned_nspace(reply: &[u8], wire: WireVersion) -> Option<String> {
    let mut d = Decoder::new(reply, wire);
    let st: Status = d.unpack_one().ok()?;
    if !st.is_success() {
        return None;
    }
    d.unpack_one::<String>().ok()
}

/// The namespace of the process that wrote a piece of forwarded output.
pub(crate) fn output_nspace(payload: &[u8], wire: WireVersion) -> Option<String> {
    Decoder::new(payload, wire)
        .unpack_one::<Proc>()
        .ok()
        .map(|p| p.nspace)
}

/// What an event notification is about.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct EventView {
    /// The event code.
    pub(crate) code: i32,
    /// The job it is about (`PMIX_EVENT_AFFECTED_PROC(S)`).
    pub(crate) job: Option<String>,
    /// The allocation it is about (`PMIX_ALLOC_ID`).
    pub(crate) alloc_id: Option<String>,
}

/// Read an event notification's code and subject.
pub(crate) fn event_view(payload: &[u8], wire: WireVersion) -> Option<EventView> {
    let n = Notification::decode(&mut Decoder::new(payload, wire)).ok()?;
    let (st, infos) = (n.code, n.infos);
    let job = match find(&infos, keys::EVENT_AFFECTED_PROC) {
        Some(Value::Proc(p)) => Some(p.nspace.clone()),
        _ => match find(&infos, keys::EVENT_AFFECTED_PROCS) {
            Some(Value::DataArray(a)) => a
                .as_procs()
                .and_then(|p| p.first())
                .map(|p| p.nspace.clone()),
            _ => None,
        },
    };
    Some(EventView {
        code: st.0,
        job,
        alloc_id: find(&infos, keys::ALLOC_ID)
            .and_then(Value::as_str)
            .map(String::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::attrs::{write_infos, write_sized};
    use crate::codec::Encoder;

    #[test]
    fn requests_are_classified() {
        for wire in [WireVersion::V41, WireVersion::V61] {
            let mut e = Encoder::new(wire);
            e.pack_one(&Cmd(cmd::SPAWN)).unwrap();
            write_infos(&mut e, &[Info::new(keys::SPAWN_TARGET, "alloc.3")]).unwrap();
            assert_eq!(
                classify(&e.into_bytes(), wire),
                Kind::Spawn {
                    targets: vec!["alloc.3".into()]
                }
            );
            let mut e = Encoder::new(wire);
            e.pack_one(&Cmd(cmd::REGEVENTS)).unwrap();
            write_sized(&mut e, &[Status::EVENT_JOB_END]).unwrap();
            write_infos(&mut e, &[]).unwrap();
            assert_eq!(
                classify(&e.into_bytes(), wire),
                Kind::RegEvents(vec![Status::EVENT_JOB_END.0])
            );
            let mut e = Encoder::new(wire);
            let infos = [
                Info::new(keys::ALLOC_ID, "a1"),
                Info::new(keys::ALLOC_WARN_TIMEOUT, Value::Uint32(5)),
            ];
            AllocMessage::new(Directive::Extend, &infos)
                .encode(&mut e)
                .unwrap();
            assert_eq!(
                classify(&e.into_bytes(), wire),
                Kind::Alloc {
                    directive: Received::Known(Directive::Extend),
                    alloc_id: Some("a1".into()),
                    warn: true,
                    whole: true
                }
            );
        }
    }

    #[test]
    fn events_name_their_job_and_allocation() {
        let wire = WireVersion::V61;
        let mut e = Encoder::new(wire);
        e.pack_one(&Cmd(cmd::NOTIFY)).unwrap();
        e.pack_one(&Status::EVENT_JOB_END).unwrap();
        e.pack_one(&Proc {
            nspace: "dvm".into(),
            rank: 0,
        })
        .unwrap();
        write_infos(
            &mut e,
            &[Info::new(
                keys::EVENT_AFFECTED_PROC,
                Value::Proc(Proc {
                    nspace: "job@4".into(),
                    rank: 0,
                }),
            )],
        )
        .unwrap();
        let v = event_view(&e.into_bytes(), wire).unwrap();
        assert_eq!(v.code, Status::EVENT_JOB_END.0);
        assert_eq!(v.job.as_deref(), Some("job@4"));
        assert_eq!(v.alloc_id, None);
    }
}
