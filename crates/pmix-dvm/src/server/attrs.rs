//! Decoding a spawn request's attributes into the model's inputs (an
//! allocation request's are read by `AllocAttrs::from_infos`).

use crate::codec::Info;
use crate::proto::keys;

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
    use crate::codec::{DataArray, Value};

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
