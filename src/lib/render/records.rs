//! The JSON objects the tools print, one type per kind, and the documented
//! field list of each ([`Record::FIELDS`]) that the man pages' JSON FIELDS
//! sections are generated from. Every object has a `"type"` field first;
//! every listed field is always present (`null` when unknown). Adding a field
//! is compatible; renaming or removing one is not.

use serde::Serialize;

/// A JSON record kind with its documented fields.
pub trait Record {
    /// The value of the `"type"` field.
    const TYPE: &'static str;
    /// `(field, meaning)` for every field after `"type"`, in output order.
    const FIELDS: &'static [(&'static str, &'static str)];
}

/// palloc: a granted allocation (NEW or EXTEND).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(tag = "type", rename = "allocation")]
pub struct AllocationRecord {
    /// `PMIX_ALLOC_ID`.
    pub alloc_id: String,
    /// `PMIX_ALLOC_REQ_ID` echoed by the DVM, if one was given.
    pub request_id: Option<String>,
    /// `"new"` or `"extend"`.
    pub directive: String,
    /// `"granted"`.
    pub state: String,
    /// Node names granted (for EXTEND: the nodes now in the allocation).
    pub nodes: Vec<String>,
    /// Time limit in seconds, if any.
    pub time_limit_secs: Option<u64>,
    /// Expiry as Unix seconds, if any.
    pub expires_at: Option<u64>,
    /// `true` when reserved for its owner, `false` when shared (`--share`).
    pub reserved: bool,
    /// The owning namespace.
    pub owner_nspace: Option<String>,
    /// The inheritance rule word (`none`, `child`, `default`, `child-default`).
    pub inherit: String,
    /// Sentence: what becomes of the reservation when its owner ends.
    pub on_owner_exit: String,
}

impl Record for AllocationRecord {
    const TYPE: &'static str = "allocation";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        (
            "alloc_id",
            "allocation id (PMIX_ALLOC_ID); pass it to pspawn --target, palloc --extend, prelease",
        ),
        (
            "request_id",
            "request id echoed by the DVM (PMIX_ALLOC_REQ_ID), or null",
        ),
        ("directive", "\"new\" or \"extend\""),
        ("state", "\"granted\""),
        ("nodes", "array of node names in the allocation"),
        ("time_limit_secs", "time limit in seconds, or null"),
        ("expires_at", "expiry time in Unix seconds, or null"),
        (
            "reserved",
            "true when reserved for its owner, false when shared (--share)",
        ),
        (
            "owner_nspace",
            "namespace that owns the reservation, or null if the DVM did not say",
        ),
        (
            "inherit",
            "inheritance rule: none, child, default or child-default",
        ),
        (
            "on_owner_exit",
            "sentence saying what becomes of the reservation when its owner ends",
        ),
    ];
}

/// palloc --no-wait: an accepted, not yet granted request.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "request")]
pub struct RequestRecord {
    /// The request id to wait for, cancel (`prelease --cancel`) or extend by.
    pub request_id: Option<String>,
    /// `"accepted"` or `"queued"`.
    pub state: String,
}

impl Record for RequestRecord {
    const TYPE: &'static str = "request";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        (
            "request_id",
            "request id (PMIX_ALLOC_REQ_ID) for prelease --cancel or palloc --extend-request",
        ),
        ("state", "\"accepted\" or \"queued\""),
    ];
}

/// The last line of `palloc -- CMD` / `palloc --hold` and of pspawn:
/// how the tool ends.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "exit")]
pub struct ExitRecord {
    /// The tool's exit code.
    pub exit_code: i32,
    /// The allocation concerned, if any.
    pub alloc_id: Option<String>,
    /// What now becomes of that allocation, if any.
    pub on_owner_exit: Option<String>,
}

impl Record for ExitRecord {
    const TYPE: &'static str = "exit";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("exit_code", "the tool's exit status"),
        ("alloc_id", "allocation concerned, or null"),
        (
            "on_owner_exit",
            "what now becomes of that allocation, or null",
        ),
    ];
}

/// prelease: the outcome of one RELEASE, REQ_CANCEL or REAQUIRE.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "release")]
pub struct ReleaseRecord {
    /// `"release"`, `"cancel"` or `"reacquire"`.
    pub directive: String,
    /// The allocation id, if given.
    pub alloc_id: Option<String>,
    /// The request id, if given.
    pub request_id: Option<String>,
    /// PMIx status name of the answer (`PMIX_SUCCESS` on success).
    pub status: String,
    /// Exit code this outcome maps to.
    pub exit_code: i32,
    /// The spec rule that explains a refusal, if any.
    pub rule: Option<String>,
}

impl Record for ReleaseRecord {
    const TYPE: &'static str = "release";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("directive", "\"release\", \"cancel\" or \"reacquire\""),
        ("alloc_id", "allocation id, or null"),
        ("request_id", "request id, or null"),
        (
            "status",
            "PMIx status name of the answer, PMIX_SUCCESS on success",
        ),
        (
            "exit_code",
            "exit code this outcome maps to (see EXIT STATUS)",
        ),
        ("rule", "spec 001 rule explaining a refusal, or null"),
    ];
}

/// pspawn: the job launched, or ended.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "job")]
pub struct JobRecord {
    /// The job's namespace.
    pub nspace: String,
    /// `"launched"` or `"ended"`.
    pub state: String,
    /// Number of processes.
    pub nprocs: u32,
    /// `PMIX_SPAWN_TARGET` entries (`""` = the default pool).
    pub targets: Vec<String>,
    /// The job's status once ended.
    pub exit_code: Option<i32>,
}

impl Record for JobRecord {
    const TYPE: &'static str = "job";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("nspace", "the job's namespace"),
        ("state", "\"launched\" or \"ended\""),
        ("nprocs", "number of processes"),
        (
            "targets",
            "allocation ids targeted (\"\" stands for the default pool)",
        ),
        (
            "exit_code",
            "the job's status once ended (first non-zero, 128+N for signal N), else null",
        ),
    ];
}

/// pspawn --json: one forwarded output line.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "output")]
pub struct OutputRecord {
    /// The job's namespace.
    pub nspace: String,
    /// The rank that wrote it.
    pub rank: u32,
    /// `"stdout"` or `"stderr"`.
    pub stream: String,
    /// The line, without its newline (lossy UTF-8).
    pub line: String,
}

impl Record for OutputRecord {
    const TYPE: &'static str = "output";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("nspace", "namespace of the job"),
        ("rank", "rank of the process that wrote the line"),
        ("stream", "\"stdout\" or \"stderr\""),
        (
            "line",
            "the line without its newline (invalid UTF-8 replaced)",
        ),
    ];
}

/// pwatch (and palloc's warnings): one event. Borrowed so a stream of events
/// needs no allocation per event.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(tag = "type", rename = "event")]
pub struct EventRecord<'a> {
    /// Event name: `timeout-warning`, `job-end`, `alloc`, `node`, or another
    /// PMIx event's status name.
    pub event: &'a str,
    /// When it was received, Unix seconds with fraction.
    pub time: f64,
    /// `PMIX_ALLOC_ID`.
    pub alloc_id: Option<&'a str>,
    /// `PMIX_ALLOC_REQ_ID`.
    pub request_id: Option<&'a str>,
    /// The namespace concerned.
    pub nspace: Option<&'a str>,
    /// `PMIX_TIME_REMAINING`, seconds.
    pub time_remaining: Option<u32>,
    /// PMIx status name carried, if any.
    pub status: Option<&'a str>,
    /// A job's exit code (job-end).
    pub exit_code: Option<i32>,
    /// Nodes concerned (alloc, node).
    pub nodes: Option<&'a [String]>,
    /// What changed (alloc, node), or `None`.
    pub change: Option<&'a str>,
}

impl Record for EventRecord<'_> {
    const TYPE: &'static str = "event";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        (
            "event",
            "timeout-warning, job-end, alloc, node, or a PMIx status name for other events",
        ),
        ("time", "reception time, Unix seconds with fraction"),
        ("alloc_id", "allocation id (PMIX_ALLOC_ID), or null"),
        ("request_id", "request id (PMIX_ALLOC_REQ_ID), or null"),
        ("nspace", "namespace concerned, or null"),
        (
            "time_remaining",
            "seconds before expiry (timeout-warning), or null",
        ),
        ("status", "PMIx status name carried by the event, or null"),
        ("exit_code", "job exit status (job-end), or null"),
        ("nodes", "array of node names concerned, or null"),
        (
            "change",
            "alloc: granted, extended, released, expired, unreserved, cancelled or warning; node: joined, left or unreserved; else null",
        ),
    ];
}

/// pwatch --status: one reservation.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "reservation")]
pub struct ReservationRecord {
    /// `PMIX_ALLOC_ID`.
    pub alloc_id: String,
    /// The request id it was created with.
    pub request_id: Option<String>,
    /// `PMIX_SESSION_ID`: the reservation's session number, when reported.
    pub session_id: Option<u32>,
    /// The owning namespace.
    pub owner_nspace: String,
    /// The owner set (owning namespace plus jobs spawned into it).
    pub owners: Vec<String>,
    /// Inheritance rule word.
    pub inherit: String,
    /// Shared (`PMIX_ALLOC_SHARE`).
    pub share: bool,
    /// Node names.
    pub nodes: Vec<String>,
    /// Expiry, Unix seconds (set by the tool from [`Self::expires_in`]).
    pub expires_at: Option<u64>,
    /// Seconds left before expiry when the DVM answered.
    pub expires_in: Option<u64>,
    /// Seconds before expiry at which the owner is warned, when asked for.
    pub warn_secs: Option<u32>,
    /// Who receives that warning (`nspace:rank`), when known.
    pub warn_to: Option<String>,
    /// A [`ReservationState`] word; another DVM may report others.
    pub state: String,
}

crate::proto::enums::pmix_enum! {
    /// Where a reservation is in its life, as pdvm reports it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum ReservationState {
        /// Waiting in the scheduler's queue.
        Queued => ["queued"],
        /// Granted; the owning namespace is alive (or never started).
        Active => ["active"],
        /// Owner gone, a CHILD rule waiting for its derived children.
        Draining => ["draining"],
    }
    strings {
        /// The word in records, tables and JSON.
        word,
    }
}

impl PartialEq<ReservationState> for String {
    fn eq(&self, s: &ReservationState) -> bool {
        self == s.word()
    }
}

impl Record for ReservationRecord {
    const TYPE: &'static str = "reservation";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("alloc_id", "allocation id"),
        ("request_id", "request id it was created with, or null"),
        ("session_id", "session number (PMIX_SESSION_ID), or null when not reported"),
        (
            "owner_nspace",
            "owning namespace (its end drives the inheritance rule)",
        ),
        (
            "owners",
            "owner set: the owning namespace plus every job spawned into it",
        ),
        ("inherit", "none, child, default or child-default"),
        ("share", "true when the nodes were shared from the outset"),
        ("nodes", "array of node names"),
        ("expires_at", "expiry time in Unix seconds, or null"),
        ("expires_in", "seconds left before expiry when the DVM answered, or null"),
        ("warn_secs", "seconds before expiry at which the owner is warned, or null"),
        ("warn_to", "who receives that warning (nspace:rank), or null"),
        (
            "state",
            "queued (waiting for the scheduler), active, or draining (owner ended, kept for its running descendants)",
        ),
    ];
}

/// pwatch --status: one namespace (job).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "namespace")]
pub struct NamespaceRecord {
    /// The namespace.
    pub nspace: String,
    /// The namespace that spawned it, if known.
    pub parent: Option<String>,
    /// Number of processes.
    pub nprocs: Option<u32>,
    /// `"running"`, `"ended"`, …
    pub state: String,
    /// Reservations it may use.
    pub allocations: Vec<String>,
}

impl Record for NamespaceRecord {
    const TYPE: &'static str = "namespace";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("nspace", "namespace"),
        ("parent", "namespace that spawned it, or null"),
        ("nprocs", "number of processes, or null"),
        (
            "state",
            "running, killing or terminated (terminated ones only with --all); known when the DVM lists only names",
        ),
        ("allocations", "allocation ids whose owner set includes it"),
    ];
}

/// pwatch --status: one node.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "node")]
pub struct NodeRecord {
    /// Node name.
    pub name: String,
    /// Slots.
    pub slots: Option<u32>,
    /// Slots in use, when the DVM says.
    pub slots_used: Option<u32>,
    /// Allocation id it is reserved to; `null` for the default session.
    pub alloc_id: Option<String>,
    /// `"idle"`, `"busy"`, …
    pub state: String,
    /// `"startup"` or `"scheduler"`, when the DVM says.
    pub origin: Option<String>,
}

impl NodeRecord {
    /// The state as a person reads it: `busy 1/2` (slots used of slots).
    pub fn state_text(&self) -> String {
        match (self.slots_used, self.slots) {
            (Some(u), Some(n)) if u > 0 => format!("{} {u}/{n}", self.state),
            _ => self.state.clone(),
        }
    }
}

impl Record for NodeRecord {
    const TYPE: &'static str = "node";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("name", "node name"),
        ("slots", "number of slots, or null"),
        (
            "slots_used",
            "slots in use, or null if the DVM does not say",
        ),
        (
            "alloc_id",
            "reservation holding the node, or null for the default session",
        ),
        (
            "state",
            "idle (no slot in use) or busy (slots_used > 0); other words as reported by the DVM",
        ),
        (
            "origin",
            "startup (a node of the DVM's own) or scheduler (granted by the scheduler), or null",
        ),
    ];
}

/// pwatch --status: one scheduler queue (what `sinfo` answers).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "queue")]
pub struct QueueRecord {
    /// Queue name.
    pub queue: String,
    /// Nodes the scheduler manages in it.
    pub nodes: u32,
    /// How many are free for a grant now.
    pub free: u32,
    /// Their names.
    pub free_nodes: Vec<String>,
    /// Requests waiting in the queue.
    pub pending: u32,
}

impl Record for QueueRecord {
    const TYPE: &'static str = "queue";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("queue", "scheduler queue name (pdvm has one: default)"),
        ("nodes", "nodes the scheduler manages in the queue"),
        ("free", "how many of them are free for a grant now"),
        ("free_nodes", "array of the free nodes' names"),
        ("pending", "requests waiting in the queue"),
    ];
}

/// pwatch --status --json: one snapshot, one document.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(tag = "type", rename = "status")]
pub struct StatusRecord {
    /// When it was taken, Unix seconds with fraction.
    pub time: f64,
    /// Reservations, or `null` when not asked for or not reported.
    pub reservations: Option<Vec<ReservationRecord>>,
    /// Namespaces, or `null`.
    pub namespaces: Option<Vec<NamespaceRecord>>,
    /// Nodes, or `null`.
    pub nodes: Option<Vec<NodeRecord>>,
    /// Scheduler queues, or `null`.
    pub scheduler: Option<Vec<QueueRecord>>,
    /// Table name → PMIx status name, for each table asked for that the
    /// DVM did not report.
    pub unreported: std::collections::BTreeMap<String, String>,
}

impl Record for StatusRecord {
    const TYPE: &'static str = "status";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("time", "when the snapshot was taken, Unix seconds with fraction"),
        (
            "reservations",
            "array of reservation objects, or null when not asked for (--what) or not reported",
        ),
        ("namespaces", "array of namespace objects, or null"),
        ("nodes", "array of node objects, or null"),
        ("scheduler", "array of queue objects, or null"),
        (
            "unreported",
            "object: for each table asked for that the DVM did not report, the PMIx status it answered",
        ),
    ];
}

/// Any tool: a failure, printed with `--json` instead of the stderr sentence.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename = "error")]
pub struct ErrorRecord {
    /// PMIx status name, when the DVM answered one.
    pub status: Option<String>,
    /// The spec 001 rule that explains it, if any.
    pub rule: Option<String>,
    /// Human sentence.
    pub message: String,
    /// The tool's exit code.
    pub exit_code: i32,
}

impl Record for ErrorRecord {
    const TYPE: &'static str = "error";
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        (
            "status",
            "PMIx status name (e.g. PMIX_ERR_NO_PERMISSIONS), or null",
        ),
        ("rule", "spec 001 rule that explains the refusal, or null"),
        ("message", "what was refused, why, and what to do"),
        ("exit_code", "the tool's exit status (see EXIT STATUS)"),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys<T: Serialize + Record>(v: &T) {
        let j = serde_json::to_value(v).unwrap();
        let obj = j.as_object().unwrap();
        assert_eq!(obj["type"], T::TYPE);
        let mut got: Vec<&str> = obj
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "type")
            .collect();
        let mut want: Vec<&str> = T::FIELDS.iter().map(|(k, _)| *k).collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{}", T::TYPE);
    }

    #[test]
    fn documented_fields_match_output() {
        keys(&AllocationRecord::default());
        keys(&RequestRecord::default());
        keys(&ExitRecord::default());
        keys(&ReleaseRecord::default());
        keys(&JobRecord::default());
        keys(&OutputRecord::default());
        keys(&EventRecord::default());
        keys(&ReservationRecord::default());
        keys(&NamespaceRecord::default());
        keys(&NodeRecord::default());
        keys(&QueueRecord::default());
        keys(&StatusRecord::default());
        keys(&ErrorRecord::default());
    }
}
