//! Events as the tools show them: the fields of a notification
//! ([`EventFields`]), the kinds pwatch selects with `--event`, filters,
//! the `--exec` hook's environment, and the JSON-lines rendering path
//! (also used by `pwatch --bench-render`).

use std::io::Write;
use std::time::{Duration, Instant};

use crate::cli::request::{EventKind, EventWatch};
use crate::codec::Value;
use crate::ops::events::Event;
use crate::proto::keys;
use crate::proto::status::Status;
use crate::proto::{
    keys::CHANGE,
    status::{NODE_CHANGE, NODE_CHANGE_NAME},
};
use crate::render::{EventRecord, EventWriter};

/// Event codes counted as allocation changes: pdvm's grants and
/// extensions (`PMIX_NOTIFY_ALLOC_COMPLETE`) and ends
/// (`PMIX_EVENT_SESSION_END`), sessions starting, PRRTE master's
/// DVM-modification results (`PMIX_DVM_IS_READY`, `PMIX_ERR_DVM_MOD`,
/// directed to the requester), and the timeout warning, which reaches only
/// the requester (§8.2.1.9.5).
pub const ALLOC_CODES: [Status; 6] = [
    Status::NOTIFY_ALLOC_COMPLETE,
    Status::EVENT_SESSION_START,
    Status::EVENT_SESSION_END,
    Status::DVM_IS_READY,
    Status::ERR_DVM_MOD,
    Status::ALLOC_TIMEOUT_WARNING,
];
/// Event codes counted as node changes: PMIx's node down/offline (pdvm:
/// nodes returned to the scheduler) and pdvm's own node-change code
/// (joined, unreserved).
pub const NODE_CODES: [Status; 3] = [
    Status::EVENT_NODE_DOWN,
    Status::EVENT_NODE_OFFLINE,
    NODE_CHANGE,
];

/// The registrations `kinds` need, each a list of codes (empty: a default
/// handler's, every event). Every event kind (`any`) is the codes the tools
/// know by name, then a default registration for the rest: the tools' and
/// psched's own events are sent for handlers of their code alone
/// (`PMIX_EVENT_NON_DEFAULT`), which a default registration does not get
/// on PRRTE master.
pub fn registrations_for(kinds: &[EventKind]) -> Vec<Vec<Status>> {
    let codes = codes_for(kinds);
    if !codes.is_empty() {
        return vec![codes];
    }
    let mut known = vec![Status::EVENT_JOB_END];
    known.extend(ALLOC_CODES);
    known.extend(NODE_CODES);
    known.extend([
        crate::proto::status::NODES_LOST,
        crate::proto::status::JOB_CANCELLED,
        crate::proto::status::JOB_NODES_LOST,
        crate::proto::status::SOURCE_UNREACHABLE,
        crate::proto::status::SOURCE_BACK,
    ]);
    vec![known, Vec::new()]
}

/// The codes to register for `kinds`; empty means every event.
pub fn codes_for(kinds: &[EventKind]) -> Vec<Status> {
    if kinds.is_empty() || kinds.contains(&EventKind::Any) {
        return Vec::new();
    }
    let mut v = Vec::new();
    for k in kinds {
        match k {
            EventKind::TimeoutWarning => v.push(Status::ALLOC_TIMEOUT_WARNING),
            EventKind::JobEnd => v.push(Status::EVENT_JOB_END),
            EventKind::Alloc => v.extend(ALLOC_CODES),
            EventKind::Node => v.extend(NODE_CODES),
            EventKind::Any => {}
        }
    }
    let mut uniq = Vec::with_capacity(v.len());
    for c in v {
        if !uniq.contains(&c) {
            uniq.push(c);
        }
    }
    uniq
}

/// The kind an event code belongs to, if one.
pub fn kind_of(st: Status) -> Option<EventKind> {
    if st == Status::ALLOC_TIMEOUT_WARNING {
        Some(EventKind::TimeoutWarning)
    } else if st == Status::EVENT_JOB_END {
        Some(EventKind::JobEnd)
    } else if ALLOC_CODES.contains(&st) {
        Some(EventKind::Alloc)
    } else if NODE_CODES.contains(&st) {
        Some(EventKind::Node)
    } else {
        None
    }
}

/// The name of an event code pdvm, psched or the tools defined (PMIx
/// has none for them).
pub fn own_name(st: Status) -> Option<&'static str> {
    use crate::proto::status as own;
    [
        (NODE_CHANGE, NODE_CHANGE_NAME),
        (own::PENDING_REASON, own::PENDING_REASON_NAME),
        (own::NODES_LOST, own::NODES_LOST_NAME),
        (own::JOB_CANCELLED, own::JOB_CANCELLED_NAME),
        (own::JOB_NODES_LOST, own::JOB_NODES_LOST_NAME),
        (own::SOURCE_UNREACHABLE, own::SOURCE_UNREACHABLE_NAME),
        (own::SOURCE_BACK, own::SOURCE_BACK_NAME),
        (own::REQUEST_LOST, own::REQUEST_LOST_NAME),
    ]
    .into_iter()
    .find(|(c, _)| *c == st)
    .map(|(_, n)| n)
}

/// The fields of one event, owned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventFields {
    /// `timeout-warning`, `job-end`, `alloc`, `node`, or the status name.
    pub event: String,
    /// Reception time, Unix seconds.
    pub time: f64,
    /// `PMIX_ALLOC_ID`.
    pub alloc_id: Option<String>,
    /// `PMIX_ALLOC_REQ_ID`.
    pub request_id: Option<String>,
    /// The namespace concerned.
    pub nspace: Option<String>,
    /// `PMIX_TIME_REMAINING`.
    pub time_remaining: Option<u32>,
    /// Status name carried (the event code's name, or the job's termination status).
    pub status: Option<String>,
    /// A job's exit code.
    pub exit_code: Option<i32>,
    /// Nodes concerned.
    pub nodes: Option<Vec<String>>,
    /// What changed (pdvm's allocation and node events; `warning` for a
    /// timeout warning), else `None`.
    pub change: Option<String>,
    /// The DVM's words about the event (`PMIX_EVENT_TEXT_MESSAGE`).
    pub message: Option<String>,
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(String::from)
}

impl EventFields {
    /// Read the fields of `ev` received at `time`.
    pub fn from_event(ev: &Event, time: f64) -> EventFields {
        let kind = kind_of(ev.status);
        let nspace = ev
            .affected_nspace()
            .map(String::from)
            .or_else(|| ev.get(keys::NSPACE).and_then(text));
        let exit_code = if kind == Some(EventKind::JobEnd) {
            crate::ops::job::job_end_of(ev, nspace.as_deref().unwrap_or("")).map(|e| e.exit_status)
        } else {
            ev.get(keys::EXIT_CODE)
                .and_then(Value::as_i64)
                .map(|x| x as i32)
        };
        // A job's termination status is a PMIx status when <= 0, else an exit code.
        let status = match ev.get(keys::JOB_TERM_STATUS) {
            Some(Value::Status(s)) if s.0 <= 0 => Some(s.name().to_string()),
            _ => Some(own_name(ev.status).unwrap_or(ev.status.name()).to_string()),
        };
        let change = ev.get(CHANGE).and_then(text).or_else(|| {
            (ev.status == Status::ALLOC_TIMEOUT_WARNING).then(|| "warning".to_string())
        });
        let nodes = ev.get(keys::NODE_LIST).map(|v| match v {
            Value::DataArray(a) => a.as_strings().map(<[String]>::to_vec).unwrap_or_default(),
            v => v
                .as_str()
                .unwrap_or_default()
                .split(',')
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect(),
        });
        EventFields {
            event: kind
                .map(|k| k.name().to_string())
                .unwrap_or_else(|| own_name(ev.status).unwrap_or(ev.status.name()).to_string()),
            time,
            alloc_id: ev.get(keys::ALLOC_ID).and_then(text),
            request_id: ev.get(keys::ALLOC_REQ_ID).and_then(text),
            nspace,
            time_remaining: ev.get(keys::TIME_REMAINING).and_then(Value::as_u32),
            status,
            exit_code,
            nodes,
            change,
            message: ev.get(keys::EVENT_TEXT_MESSAGE).and_then(text),
        }
    }

    /// The borrowed JSON record.
    pub fn record(&self) -> EventRecord<'_> {
        EventRecord {
            event: &self.event,
            time: self.time,
            alloc_id: self.alloc_id.as_deref(),
            request_id: self.request_id.as_deref(),
            nspace: self.nspace.as_deref(),
            time_remaining: self.time_remaining,
            status: self.status.as_deref(),
            exit_code: self.exit_code,
            nodes: self.nodes.as_deref(),
            change: self.change.as_deref(),
        }
    }

    /// One human line, e.g.
    /// `timeout-warning alloc.3 (request r1): 5m 00s left`.
    pub fn human(&self) -> String {
        let mut s = self.event.clone();
        if let (Some(c), false) = (&self.change, self.event == "timeout-warning") {
            s.push(' ');
            s.push_str(c);
        }
        if let Some(a) = &self.alloc_id {
            s.push(' ');
            s.push_str(a);
        }
        if let Some(r) = &self.request_id {
            s.push_str(&format!(" (request {r})"));
        }
        if let Some(n) = &self.nspace {
            let what = if self.event == "alloc" {
                "owner"
            } else {
                "job"
            };
            s.push_str(&format!(" {what} {n}"));
        }
        if let Some(t) = self.time_remaining {
            s.push_str(&format!(
                ": {} left",
                crate::render::human::duration(u64::from(t))
            ));
        }
        if let Some(c) = self.exit_code {
            s.push_str(&format!(" exit {c}"));
        }
        if let Some(n) = &self.nodes {
            if !n.is_empty() {
                s.push_str(&format!(
                    " nodes {}",
                    crate::render::human::compact_nodes(n)
                ));
            }
        }
        if let (Some(m), true) = (&self.message, self.event == "alloc") {
            s.push_str(&format!(" ({m})"));
        }
        s
    }

    /// Whether the event passes the `--alloc`, `--request-id`, `--job` and
    /// `--event` filters of `w` (an empty filter passes everything).
    pub fn matches(&self, w: &EventWatch) -> bool {
        // `--event alloc` covers the timeout warning too (it is an
        // allocation change that reaches only its requester).
        let kind_ok = w.events.is_empty()
            || w.events.contains(&EventKind::Any)
            || w.events.iter().any(|k| {
                k.name() == self.event
                    || (*k == EventKind::Alloc && self.event == "timeout-warning")
            });
        let in_list = |list: &[String], v: &Option<String>| {
            list.is_empty() || v.as_ref().is_some_and(|v| list.contains(v))
        };
        kind_ok
            && in_list(&w.alloc_ids, &self.alloc_id)
            && in_list(&w.request_ids, &self.request_id)
            && in_list(&w.nspaces, &self.nspace)
    }

    /// The `--exec` hook's environment: `PWATCH_*` (as documented) and the
    /// `PMIX_*`-style names (`PMIX_EVENT`, `PMIX_ALLOC_ID`,
    /// `PMIX_ALLOC_REQ_ID`, `PMIX_TIME_REMAINING`, `PMIX_NSPACE`,
    /// `PMIX_EXIT_STATUS`, `PMIX_NODES`, `PMIX_EVENT_STATUS`).
    pub fn hook_env(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        let mut put = |pw: &str, px: &str, val: Option<String>| {
            let val = val.unwrap_or_default();
            v.push((format!("PWATCH_{pw}"), val.clone()));
            v.push((format!("PMIX_{px}"), val));
        };
        put("EVENT", "EVENT", Some(self.event.clone()));
        put("ALLOC_ID", "ALLOC_ID", self.alloc_id.clone());
        put("REQUEST_ID", "ALLOC_REQ_ID", self.request_id.clone());
        put("NSPACE", "NSPACE", self.nspace.clone());
        put(
            "TIME_REMAINING",
            "TIME_REMAINING",
            self.time_remaining.map(|t| t.to_string()),
        );
        put("STATUS", "EVENT_STATUS", self.status.clone());
        put(
            "EXIT_CODE",
            "EXIT_STATUS",
            self.exit_code.map(|c| c.to_string()),
        );
        put("NODES", "NODES", self.nodes.as_ref().map(|n| n.join(",")));
        v
    }
}

/// Feed `n` synthetic events through the JSON-lines writer pwatch uses, into
/// `out`; returns the time taken. Events alternate between timeout warnings
/// and job ends with varying fields, so the serialiser does real work.
pub fn render_synthetic<W: Write>(n: u64, out: W) -> std::io::Result<Duration> {
    let ids: Vec<String> = (0..64).map(|i| format!("alloc.{i}")).collect();
    let nss: Vec<String> = (0..64).map(|i| format!("prte-vm-4242@{i}")).collect();
    let mut w = EventWriter::new(out);
    let t0 = Instant::now();
    let base = super::now_secs();
    for i in 0..n {
        let k = (i % 64) as usize;
        let warn = i % 2 == 0;
        let rec = EventRecord {
            event: if warn { "timeout-warning" } else { "job-end" },
            time: base + i as f64 * 1e-4,
            alloc_id: warn.then(|| ids[k].as_str()),
            request_id: (warn && i % 3 == 0).then_some("nightly"),
            nspace: Some(nss[k].as_str()),
            time_remaining: warn.then_some((i % 3600) as u32),
            status: Some(if warn {
                "PMIX_ALLOC_TIMEOUT_WARNING"
            } else {
                "PMIX_EVENT_JOB_END"
            }),
            exit_code: (!warn).then_some((i % 5) as i32),
            nodes: None,
            change: warn.then_some("warning"),
        };
        w.write(&rec)?;
    }
    w.flush()?;
    Ok(t0.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Info, Proc};

    fn warning() -> Event {
        Event {
            status: Status::ALLOC_TIMEOUT_WARNING,
            source: Proc {
                nspace: "prte@0".into(),
                rank: 0,
            },
            info: vec![
                Info::new(keys::ALLOC_ID, "alloc.3"),
                Info::new(keys::ALLOC_REQ_ID, "r1"),
                Info::new(keys::TIME_REMAINING, Value::Uint32(300)),
            ],
        }
    }

    #[test]
    fn fields_filters_and_hook_env() {
        let f = EventFields::from_event(&warning(), 1.5);
        assert_eq!(f.event, "timeout-warning");
        assert_eq!(f.alloc_id.as_deref(), Some("alloc.3"));
        assert_eq!(f.time_remaining, Some(300));
        assert_eq!(
            f.human(),
            "timeout-warning alloc.3 (request r1): 5m 00s left"
        );
        let mut w = EventWatch {
            events: vec![EventKind::TimeoutWarning],
            ..Default::default()
        };
        assert!(f.matches(&w));
        w.alloc_ids = vec!["alloc.4".into()];
        assert!(!f.matches(&w));
        w.alloc_ids = vec!["alloc.3".into()];
        w.events = vec![EventKind::JobEnd];
        assert!(!f.matches(&w));
        let env = f.hook_env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("PWATCH_TIME_REMAINING"), Some("300"));
        assert_eq!(get("PMIX_ALLOC_REQ_ID"), Some("r1"));
        assert_eq!(get("PMIX_EXIT_STATUS"), Some(""));
        let j: serde_json::Value =
            serde_json::from_str(&crate::render::json::to_line(&f.record())).unwrap();
        assert_eq!(j["type"], "event");
        assert_eq!(j["time_remaining"], 300);
    }

    #[test]
    fn codes() {
        assert!(codes_for(&[EventKind::Any]).is_empty());
        let any = registrations_for(&[EventKind::Any]);
        assert_eq!(any.len(), 2);
        assert!(any[0].contains(&Status::EVENT_SESSION_END) && any[1].is_empty());
        assert_eq!(
            registrations_for(&[EventKind::JobEnd]),
            [vec![Status::EVENT_JOB_END]]
        );
        assert_eq!(
            codes_for(&[EventKind::JobEnd, EventKind::TimeoutWarning]),
            [Status::EVENT_JOB_END, Status::ALLOC_TIMEOUT_WARNING]
        );
        assert_eq!(kind_of(Status(-231)), Some(EventKind::Node));
    }

    #[test]
    fn synthetic_render_is_valid_json_lines() {
        let mut out = Vec::new();
        render_synthetic(1000, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1000);
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["type"], "event");
        }
    }
}
