//! An allocation request's attributes ([`AllocAttrs`]) both ways: the
//! infos palloc sends and the typed form pdvm and psched read back. Reading
//! is tolerant of the forms peers send (a count as a string, a list as a
//! string or a string array, a time in seconds or `D:HH:MM:SS`, the
//! inheritance as its own type, an integer or a word); unknown keys are
//! left out, as a PMIx server ignores optional attributes it does not know.

use super::attrs::{alloc_time_value, parse_alloc_time};
use super::{AllocInheritance, Info, Value};
use crate::proto::{keys, AllocAttrs, Inheritance, Received};

impl AllocAttrs {
    /// The attributes carried by `infos`.
    pub fn from_infos(infos: &[Info]) -> Self {
        let mut a = AllocAttrs::default();
        for i in infos {
            a.read(i);
        }
        a
    }

    /// Read one info into these attributes (an unknown key is ignored).
    fn read(&mut self, i: &Info) {
        let v = &i.value;
        let text = || v.as_str().map(String::from);
        match i.key.as_str() {
            keys::ALLOC_TARGET => self.target = text(),
            keys::ALLOC_SHARE => self.share = Some(v.is_true()),
            keys::ALLOC_INHERITANCE => self.inherit = inheritance(v),
            keys::ALLOC_WARN_TIMEOUT => self.warn_timeout = secs(v),
            keys::ALLOC_ID => self.alloc_id = text(),
            keys::ALLOC_REQ_ID => self.req_id = text(),
            keys::ALLOC_NUM_NODES => self.num_nodes = count(v).map(saturate),
            keys::ALLOC_NODE_LIST => self.node_list = names(v),
            keys::ALLOC_EXCLUDE => self.exclude = names(v),
            keys::ALLOC_NUM_CPUS => self.num_cpus = count(v),
            keys::ALLOC_MEM_SIZE => self.mem_mb = v.as_f64().map(|f| f.max(0.0).ceil() as u64),
            keys::ALLOC_TIME => self.time_secs = secs(v),
            keys::ALLOC_QUEUE => self.queue = text(),
            keys::ALLOC_EXCLUSIVE => self.rm.exclusive = v.is_true(),
            other => {
                self.rm.set(other, text());
            }
        }
    }

    /// The infos that carry these attributes to a server of version
    /// `server_version` (which decides the form of `PMIX_ALLOC_TIME`). An
    /// empty node list or exclusion is not sent.
    pub fn to_infos(&self, server_version: Option<&str>) -> Vec<Info> {
        let mut v = Vec::new();
        let mut put = |key: &str, value: Value| v.push(Info::new(key, value));
        if let Some(n) = self.num_nodes {
            put(keys::ALLOC_NUM_NODES, Value::Uint64(u64::from(n)));
        }
        if let Some(l) = self.node_list.as_ref().filter(|l| !l.is_empty()) {
            put(keys::ALLOC_NODE_LIST, Value::from(l.join(",")));
        }
        if let Some(l) = self.exclude.as_ref().filter(|l| !l.is_empty()) {
            put(keys::ALLOC_EXCLUDE, Value::from(l.join(",")));
        }
        if let Some(c) = self.num_cpus {
            put(keys::ALLOC_NUM_CPUS, Value::Uint64(c));
        }
        if let Some(m) = self.mem_mb {
            put(keys::ALLOC_MEM_SIZE, Value::Float(m as f32));
        }
        if let Some(t) = self.time_secs {
            put(
                keys::ALLOC_TIME,
                alloc_time_value(server_version, u64::from(t)),
            );
        }
        if let Some(q) = &self.queue {
            put(keys::ALLOC_QUEUE, Value::from(q.as_str()));
        }
        for (k, val) in self.rm.given() {
            put(k, Value::from(val));
        }
        if self.rm.exclusive {
            put(keys::ALLOC_EXCLUSIVE, Value::Bool(true));
        }
        let ids = [
            (keys::ALLOC_ID, &self.alloc_id),
            (keys::ALLOC_REQ_ID, &self.req_id),
            (keys::ALLOC_TARGET, &self.target),
        ];
        for (k, val) in ids {
            if let Some(s) = val {
                put(k, Value::from(s.as_str()));
            }
        }
        if let Some(s) = self.share {
            put(keys::ALLOC_SHARE, Value::Bool(s));
        }
        if let Some(i) = self.inherit {
            let code = match i {
                Received::Known(k) => k.code(),
                Received::Unknown(c) => c,
            };
            put(
                keys::ALLOC_INHERITANCE,
                Value::AllocInherit(AllocInheritance(code)),
            );
        }
        if let Some(w) = self.warn_timeout {
            put(keys::ALLOC_WARN_TIMEOUT, Value::Uint32(w));
        }
        v
    }
}

/// A count: an integer, or an integer written as a string.
fn count(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn saturate(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// A duration in seconds, in either `PMIX_ALLOC_TIME` form.
fn secs(v: &Value) -> Option<u32> {
    parse_alloc_time(v).map(saturate)
}

/// Node names: one string (split on commas or white space) or a string
/// array (each element split the same way); empty names are dropped.
fn names(v: &Value) -> Option<Vec<String>> {
    let split = |s: &str| -> Vec<String> {
        s.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    };
    if let Some(s) = v.as_str() {
        return Some(split(s));
    }
    v.as_array()
        .and_then(|a| a.as_strings())
        .map(|s| s.iter().flat_map(|x| split(x)).collect())
}

/// The inheritance in any form a peer may send: the v61 type, an integer
/// (v41 peers cannot carry type 75), or the rule's word; an unknown code
/// (or word) is kept as such.
fn inheritance(v: &Value) -> Option<Received<Inheritance>> {
    let code = match v {
        Value::AllocInherit(AllocInheritance(x)) => *x,
        _ => match v.as_str() {
            Some(s) => AllocInheritance::from_word(s).map_or(0, |a| a.0),
            None => u8::try_from(v.as_u64()?).unwrap_or(u8::MAX),
        },
    };
    Some(Inheritance::received(code))
}

/// An allocation request carrying every attribute (for the tests here and
/// palloc's wire-form test, in the tools' crate: so it is built always, as
/// `#[cfg(test)]` holds only inside its own crate).
#[doc(hidden)]
pub fn every_attribute() -> AllocAttrs {
    AllocAttrs {
        target: Some("job@1".into()),
        share: Some(true),
        inherit: Some(Received::Known(Inheritance::Child)),
        warn_timeout: Some(60),
        alloc_id: Some("a1".into()),
        req_id: Some("r1".into()),
        num_nodes: Some(2),
        node_list: Some(vec!["n1".into(), "n2".into()]),
        exclude: Some(vec!["n3".into()]),
        num_cpus: Some(8),
        mem_mb: Some(512),
        time_secs: Some(3600),
        queue: Some("q".into()),
        rm: crate::proto::RmOptions {
            account: Some("phys".into()),
            constraint: Some("gpu&ib".into()),
            exclusive: true,
            ..crate::proto::RmOptions::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::DataArray;

    #[test]
    fn what_is_sent_is_read_back_the_same_in_either_time_form() {
        let a = every_attribute();
        for version in [Some("4.2.2"), Some("6.0.0"), None] {
            assert_eq!(AllocAttrs::from_infos(&a.to_infos(version)), a);
        }
    }

    #[test]
    fn the_forms_peers_send_are_read() {
        let a = AllocAttrs::from_infos(&[
            Info::new(keys::ALLOC_NUM_NODES, " 3 "),
            Info::new(keys::ALLOC_NODE_LIST, "s001, s002 s003"),
            Info::new(
                keys::ALLOC_EXCLUDE,
                Value::DataArray(DataArray::strings(vec!["x1,x2".into(), String::new()])),
            ),
            Info::new(keys::ALLOC_TIME, "0:00:01:30"),
            Info::new(keys::ALLOC_WARN_TIMEOUT, "0:00:00:45"),
            Info::new(keys::ALLOC_MEM_SIZE, Value::Double(0.5)),
            Info::new(keys::ALLOC_INHERITANCE, "child-default"),
            Info::new("pmix.unknown.key", 1u64),
        ]);
        assert_eq!(a.num_nodes, Some(3));
        assert_eq!(a.nodes_named(), ["s001", "s002", "s003"]);
        assert_eq!(a.nodes_excluded(), ["x1", "x2"]);
        assert_eq!((a.time_secs, a.warn_timeout), (Some(90), Some(45)));
        assert_eq!(a.mem_mb, Some(1));
        assert_eq!(a.inheritance(), Some(Inheritance::ChildDefault));
        let huge = AllocAttrs::from_infos(&[Info::new(keys::ALLOC_NUM_NODES, u64::MAX)]);
        assert_eq!(huge.num_nodes, Some(u32::MAX));
    }

    #[test]
    fn an_inheritance_outside_the_vocabulary_is_kept_to_be_refused() {
        let read = |v: Value| AllocAttrs::from_infos(&[Info::new(keys::ALLOC_INHERITANCE, v)]);
        assert_eq!(
            read(Value::Uint8(1)).inherit,
            Some(Received::Known(Inheritance::None))
        );
        assert_eq!(read(Value::Uint8(9)).inherit, Some(Received::Unknown(9)));
        assert_eq!(
            read(Value::from("sideways")).inherit,
            Some(Received::Unknown(0))
        );
        assert_eq!(read(Value::Uint8(9)).inheritance(), None);
    }
}
