//! What an allocation request asks (`PMIx_Allocation_request`'s
//! attributes), typed once for every end: palloc builds it from its flags,
//! pdvm and psched read it from the wire (`codec::alloc` holds both
//! directions of its encoding).

use super::{Inheritance, Received};

/// The request id psched gives the reservation in which it parks idle
/// nodes whose daemons it keeps; the DVM names that reservation
/// `psched.idle.<psched's namespace>`. It is psched's, not a user's: the
/// tools leave it out of what they show when psched says what it holds.
pub const PSCHED_IDLE_REQ_ID: &str = "psched.idle";

/// The attributes of an allocation request. Each field is one `PMIX_ALLOC_*`
/// key (or one of ours, in [`RmOptions`]); `None` is "not sent".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllocAttrs {
    /// `PMIX_ALLOC_TARGET`: the namespace to reserve for.
    pub target: Option<String>,
    /// `PMIX_ALLOC_SHARE`.
    pub share: Option<bool>,
    /// `PMIX_ALLOC_INHERITANCE` as sent (an unknown code is kept, so that
    /// pdvm can refuse it).
    pub inherit: Option<Received<Inheritance>>,
    /// `PMIX_ALLOC_WARN_TIMEOUT`, seconds.
    pub warn_timeout: Option<u32>,
    /// `PMIX_ALLOC_ID`: on EXTEND, RELEASE, the allocation named.
    pub alloc_id: Option<String>,
    /// `PMIX_ALLOC_REQ_ID`: the requester's id for this request, or on an
    /// EXTEND by request id, the request naming the target.
    pub req_id: Option<String>,
    /// `PMIX_ALLOC_NUM_NODES`.
    pub num_nodes: Option<u32>,
    /// `PMIX_ALLOC_NODE_LIST`, one name each.
    pub node_list: Option<Vec<String>>,
    /// `PMIX_ALLOC_EXCLUDE`, one name each.
    pub exclude: Option<Vec<String>>,
    /// `PMIX_ALLOC_NUM_CPUS`.
    pub num_cpus: Option<u64>,
    /// `PMIX_ALLOC_MEM_SIZE`, megabytes (the wire's float, rounded up).
    pub mem_mb: Option<u64>,
    /// `PMIX_ALLOC_TIME`, seconds.
    pub time_secs: Option<u32>,
    /// `PMIX_ALLOC_QUEUE`.
    pub queue: Option<String>,
    /// What only a resource manager such as Slurm reads.
    pub rm: RmOptions,
}

impl AllocAttrs {
    /// Whether `PMIX_ALLOC_SHARE` was sent true.
    pub fn shared(&self) -> bool {
        self.share == Some(true)
    }

    /// The inheritance rule, when one of the vocabulary was sent.
    pub fn inheritance(&self) -> Option<Inheritance> {
        self.inherit.and_then(Received::known)
    }

    /// The nodes named (`PMIX_ALLOC_NODE_LIST`), none when not sent.
    pub fn nodes_named(&self) -> &[String] {
        self.node_list.as_deref().unwrap_or_default()
    }

    /// The nodes excluded (`PMIX_ALLOC_EXCLUDE`), none when not sent.
    pub fn nodes_excluded(&self) -> &[String] {
        self.exclude.as_deref().unwrap_or_default()
    }
}

/// The resource manager's own options of an allocation request, each
/// under a key of ours (PMIx defines none): psched on Slurm passes them
/// to `salloc`, pdvm ignores them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RmOptions {
    /// [`super::keys::ALLOC_ACCOUNT`].
    pub account: Option<String>,
    /// [`super::keys::ALLOC_QOS`].
    pub qos: Option<String>,
    /// [`super::keys::ALLOC_RESERVATION`].
    pub reservation: Option<String>,
    /// [`super::keys::ALLOC_CONSTRAINT`].
    pub constraint: Option<String>,
    /// [`super::keys::ALLOC_EXCLUSIVE`]: whole nodes.
    pub exclusive: bool,
}

impl RmOptions {
    /// Each option given, with its key.
    pub fn given(&self) -> Vec<(&'static str, &str)> {
        use super::keys;
        [
            (keys::ALLOC_ACCOUNT, &self.account),
            (keys::ALLOC_QOS, &self.qos),
            (keys::ALLOC_RESERVATION, &self.reservation),
            (keys::ALLOC_CONSTRAINT, &self.constraint),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }

    /// Set the option stored under `key`; false when `key` is none of
    /// theirs.
    pub fn set(&mut self, key: &str, value: Option<String>) -> bool {
        use super::keys;
        let slot = match key {
            keys::ALLOC_ACCOUNT => &mut self.account,
            keys::ALLOC_QOS => &mut self.qos,
            keys::ALLOC_RESERVATION => &mut self.reservation,
            keys::ALLOC_CONSTRAINT => &mut self.constraint,
            _ => return false,
        };
        *slot = value;
        true
    }
}
