//! Decoding request attributes (infos) into the model's inputs.

use crate::codec::attrs::parse_alloc_time;
use crate::codec::{AllocInheritance, Info, Value};
use crate::dvm::AllocAttrs;
use crate::proto::{keys, Inheritance, Received};

/// Split a node list (`n001,n002` or whitespace separated).
fn split_list(s: &str) -> Vec<String> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

fn list_value(v: &Value) -> Option<Vec<String>> {
    if let Some(s) = v.as_str() {
        return Some(split_list(s));
    }
    v.as_array()
        .and_then(|a| a.as_strings())
        .map(|s| s.iter().flat_map(|x| split_list(x)).collect())
}

/// The inheritance value in any form a peer may send: the v61 type, an
/// integer (v41 peers cannot carry type 75), or the converter's word.
pub(crate) fn inheritance_value(v: &Value) -> Option<Received<Inheritance>> {
    let code = match v {
        Value::AllocInherit(AllocInheritance(x)) => *x,
        _ => {
            if let Some(s) = v.as_str() {
                AllocInheritance::from_word(s).map_or(0, |a| a.0)
            } else {
                v.as_u64().map(|x| x.min(255) as u8)?
            }
        }
    };
    Some(Inheritance::received(code))
}

/// Map allocation-request infos onto [`AllocAttrs`]. Unknown keys are ignored
/// (as a PMIx server ignores optional attributes it does not know).
pub(crate) fn alloc_attrs(info: &[Info]) -> AllocAttrs {
    let mut a = AllocAttrs::default();
    for i in info {
        let v = &i.value;
        match i.key.as_str() {
            keys::ALLOC_TARGET => a.target = v.as_str().map(String::from),
            keys::ALLOC_SHARE => a.share = Some(v.is_true()),
            keys::ALLOC_INHERITANCE => a.inherit = inheritance_value(v),
            keys::ALLOC_WARN_TIMEOUT => {
                a.warn_timeout = v.as_u64().map(|x| x.min(u32::MAX as u64) as u32)
            }
            keys::ALLOC_ID => a.alloc_id = v.as_str().map(String::from),
            keys::ALLOC_REQ_ID => a.req_id = v.as_str().map(String::from),
            keys::ALLOC_NUM_NODES => {
                a.num_nodes = v
                    .as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                    .map(|x| x.min(u32::MAX as u64) as u32)
            }
            keys::ALLOC_NODE_LIST => a.node_list = list_value(v),
            keys::ALLOC_EXCLUDE => a.exclude = list_value(v),
            keys::ALLOC_NUM_CPUS => a.num_cpus = v.as_u64(),
            keys::ALLOC_MEM_SIZE => a.mem_mb = v.as_f64().map(|f| f.max(0.0) as u64),
            keys::ALLOC_TIME => {
                a.time_secs = parse_alloc_time(v).map(|x| x.min(u32::MAX as u64) as u32)
            }
            keys::ALLOC_QUEUE => a.queue = v.as_str().map(String::from),
            _ => {}
        }
    }
    a
}

/// `PMIX_SPAWN_TARGET` entries: a string or an array of strings; `""` is the
/// default session.
pub(crate) fn spawn_targets(info: &[Info]) -> Option<Vec<String>> {
    let v = &info.iter().find(|i| i.key == keys::SPAWN_TARGET)?.value;
    if let Some(s) = v.as_str() {
        return Some(vec![s.to_string()]);
    }
    if let Some(a) = v.as_array() {
        if let Some(s) = a.as_strings() {
            return Some(s.to_vec());
        }
        if let Some(vals) = a.to_values() {
            return Some(
                vals.iter()
                    .map(|x| x.as_str().unwrap_or_default().to_string())
                    .collect(),
            );
        }
    }
    Some(vec![String::new()])
}

/// True when `key` is present with a true value.
pub(crate) fn flag(info: &[Info], key: &str) -> bool {
    info.iter().any(|i| i.key == key && i.value.is_true())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::DataArray;

    #[test]
    fn maps_alloc_infos() {
        let a = alloc_attrs(&[
            Info::new(keys::ALLOC_NUM_NODES, 2u64),
            Info::new(keys::ALLOC_NODE_LIST, "s001, s002"),
            Info::new(keys::ALLOC_TIME, "0:00:01:30"),
            Info::new(keys::ALLOC_REQ_ID, "r1"),
            Info::new(
                keys::ALLOC_INHERITANCE,
                Value::AllocInherit(AllocInheritance(2)),
            ),
            Info::new(keys::ALLOC_SHARE, true),
        ]);
        assert_eq!(a.num_nodes, Some(2));
        assert_eq!(
            a.node_list,
            Some(vec!["s001".to_string(), "s002".to_string()])
        );
        assert_eq!(a.time_secs, Some(90));
        assert_eq!(a.req_id.as_deref(), Some("r1"));
        assert_eq!(a.inherit, Some(Received::Known(Inheritance::Child)));
        assert_eq!(a.share, Some(true));
        assert_eq!(
            inheritance_value(&Value::from("child-default")),
            Some(Received::Known(Inheritance::ChildDefault))
        );
        assert_eq!(
            inheritance_value(&Value::Uint8(1)),
            Some(Received::Known(Inheritance::None))
        );
        assert_eq!(
            inheritance_value(&Value::Uint8(9)),
            Some(Received::Unknown(9))
        );
    }

    #[test]
    fn spawn_target_forms() {
        assert_eq!(spawn_targets(&[]), None);
        assert_eq!(
            spawn_targets(&[Info::new(keys::SPAWN_TARGET, "a1")]),
            Some(vec!["a1".to_string()])
        );
        let arr = Value::DataArray(DataArray::strings(vec!["a1".to_string(), String::new()]));
        assert_eq!(
            spawn_targets(&[Info::new(keys::SPAWN_TARGET, arr)]),
            Some(vec!["a1".to_string(), String::new()])
        );
    }
}
