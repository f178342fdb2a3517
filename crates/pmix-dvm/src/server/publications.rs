//! What pdvm keeps of `PMIx_Publish`: the published keys, and the lookups
//! that wait for keys not yet published (`MPI_Comm_connect`/`accept`'s
//! port names; served in [`super::connect`]).

use std::collections::BTreeMap;

use crate::codec::PData;

use super::modex::Waiter;

/// Published keys and the lookups waiting for keys not yet published.
#[derive(Debug, Default)]
pub(crate) struct Publications {
    /// Key to (owner, value).
    pub(super) data: BTreeMap<String, PData>,
    /// Lookups with `PMIX_WAIT`: who asks, and every key it wants.
    pub(super) waiting: Vec<(Waiter, Vec<String>)>,
}

impl Publications {
    /// The published data for `keys`, if every one is published.
    pub(super) fn all(&self, keys: &[String]) -> Option<Vec<PData>> {
        keys.iter().map(|k| self.data.get(k).cloned()).collect()
    }

    /// Forget the lookups of connection `conn` (it is gone).
    pub(crate) fn drop_conn(&mut self, conn: u64) {
        self.waiting.retain(|(w, _)| w.conn != conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Proc, Value};

    fn pdata(key: &str) -> PData {
        PData {
            proc: Proc {
                nspace: "ns".into(),
                rank: 0,
            },
            key: key.into(),
            value: Value::String("v".into()),
        }
    }

    #[test]
    fn a_lookup_is_answered_only_when_every_key_is_published() {
        let mut p = Publications::default();
        p.data.insert("a".into(), pdata("a"));
        assert!(p.all(&["a".into(), "b".into()]).is_none());
        p.data.insert("b".into(), pdata("b"));
        let got = p.all(&["b".into(), "a".into()]).expect("both published");
        assert_eq!(
            got.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
    }
}
