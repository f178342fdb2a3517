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

/// Declares a record: the struct, tagged with its `"type"`, and its
/// [`Record`] impl, whose `FIELDS` are the struct's fields in order, each
/// with the JSON meaning written beside it (`=> "meaning"`).
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $(<$lt:lifetime>)?: $ty:literal {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident: $fty:ty => $meaning:literal,
            )*
        }
    ) => {
        $(#[$meta])*
        #[serde(tag = "type", rename = $ty)]
        pub struct $name$(<$lt>)? {
            $($(#[$fmeta])* pub $field: $fty,)*
        }

        impl$(<$lt>)? Record for $name$(<$lt>)? {
            const TYPE: &'static str = $ty;
            const FIELDS: &'static [(&'static str, &'static str)] =
                &[$((stringify!($field), $meaning)),*];
        }
    };
}

record! {
    /// palloc: a granted allocation (NEW or EXTEND).
    #[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
    pub struct AllocationRecord: "allocation" {
        /// `PMIX_ALLOC_ID`.
        pub alloc_id: String => "allocation id (PMIX_ALLOC_ID); pass it to pspawn --target, palloc --extend, prelease",
        /// `PMIX_ALLOC_REQ_ID` echoed by the DVM, if one was given.
        pub request_id: Option<String> => "request id echoed by the DVM (PMIX_ALLOC_REQ_ID), or null",
        /// `"new"` or `"extend"`.
        pub directive: String => "\"new\" or \"extend\"",
        /// `"granted"`.
        pub state: String => "\"granted\"",
        /// Node names granted (for EXTEND: the nodes now in the allocation).
        pub nodes: Vec<String> => "array of node names in the allocation",
        /// Time limit in seconds, if any (for EXTEND: the time the
        /// allocation now has left, as the DVM reports it).
        pub time_limit_secs: Option<u64> => "time limit in seconds (for an extend: the time left after it, as the DVM reports it), or null",
        /// Expiry as Unix seconds, if any.
        pub expires_at: Option<u64> => "expiry time in Unix seconds, or null",
        /// `true` when reserved for its owner, `false` when shared (`--share`).
        pub reserved: bool => "true when reserved for its owner, false when shared (--share)",
        /// The owning namespace.
        pub owner_nspace: Option<String> => "namespace that owns the reservation, or null if the DVM did not say",
        /// The inheritance rule (JSON: its word, as on the command line).
        pub inherit: crate::proto::Inheritance => "inheritance rule: none, child, default or child-default",
        /// Sentence: what becomes of the reservation when its owner ends.
        pub on_owner_exit: String => "sentence saying what becomes of the reservation when its owner ends",
    }
}

record! {
    /// palloc: a request not granted yet, submitted (`--no-wait`) or
    /// queued (palloc waits for the scheduler).
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct RequestRecord: "request" {
        /// The request id to wait for, cancel (`prelease --cancel`) or extend by.
        pub request_id: Option<String> => "request id (PMIX_ALLOC_REQ_ID) for prelease --cancel or palloc --extend-request",
        /// `"submitted"` or `"queued"`.
        pub state: String => "\"submitted\" (palloc --no-wait returned) or \"queued\" (palloc waits for the scheduler)",
    }
}

record! {
    /// The last line of `palloc -- CMD` / `palloc --hold` and of pspawn:
    /// how the tool ends.
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct ExitRecord: "exit" {
        /// The tool's exit code.
        pub exit_code: i32 => "the tool's exit status",
        /// The allocation concerned, if any.
        pub alloc_id: Option<String> => "allocation concerned, or null",
        /// What now becomes of that allocation, if any.
        pub on_owner_exit: Option<String> => "what now becomes of that allocation, or null",
    }
}

/// Where a batch script (`palloc --no-wait -- SCRIPT`) is in its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchState {
    /// Submitted, waiting for its allocation.
    Queued,
    /// Running in its allocation.
    #[default]
    Running,
    /// Ended by exiting (its status in `exit_code`).
    Exited,
    /// Ended by a signal (named in `signal`).
    Killed,
    /// Its palloc ended without saying how the script ended (killed).
    Lost,
}

/// Why palloc stopped a batch script before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatchStop {
    /// Its allocation was released (`prelease ID` or `prelease REQ_ID`).
    Released,
    /// Its allocation reached its time limit.
    TimeLimit,
    /// The DVM ended its allocation otherwise (or went away).
    Ended,
    /// palloc was told to end (SIGTERM, SIGINT, SIGHUP).
    Signalled,
}

impl BatchState {
    /// The word in records and tables.
    pub fn word(self) -> &'static str {
        match self {
            BatchState::Queued => "queued",
            BatchState::Running => "running",
            BatchState::Exited => "exited",
            BatchState::Killed => "killed",
            BatchState::Lost => "lost",
        }
    }
}

impl BatchStop {
    /// The word in records and tables.
    pub fn word(self) -> &'static str {
        match self {
            BatchStop::Released => "released",
            BatchStop::TimeLimit => "time-limit",
            BatchStop::Ended => "ended",
            BatchStop::Signalled => "signalled",
        }
    }
}

record! {
    /// pwatch --status: a batch script submitted with `palloc --no-wait -- SCRIPT`
    /// by this user, as sacct shows a batch job.
    #[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
    pub struct BatchRecord: "batch" {
        /// The request id it was submitted under (`-J`), or the generated one.
        pub request_id: String => "request id it was submitted under (-J NAME, or palloc's generated id)",
        /// The allocation it runs in.
        pub alloc_id: Option<String> => "allocation it ran in, or null",
        /// The script and its arguments.
        pub command: String => "the script and its arguments, joined by spaces",
        /// Its log.
        pub log: Option<String> => "path of its log (palloc-NAME.out), or null",
        /// The running state.
        pub state: BatchState => "queued (waiting for its allocation), running, exited (see exit_code), killed (see signal), or lost (its palloc ended without saying how the script ended)",
        /// Its exit status, once exited.
        pub exit_code: Option<i32> => "its exit status once it exited, or null",
        /// The signal that ended it, once killed.
        pub signal: Option<String> => "the signal that ended it (SIGTERM, SIGKILL…) once killed, or null",
        /// Why palloc stopped it, when it did.
        pub stopped_by: Option<BatchStop> => "why palloc stopped it: released, time-limit, ended (the DVM ended the allocation) or signalled (palloc was told to end); null when it ended by itself",
        /// The detached palloc that runs it.
        pub palloc_pid: Option<u32> => "pid of the detached palloc that runs it, or null",
        /// When it started, Unix seconds.
        pub started_at: Option<u64> => "when it started, Unix seconds, or null",
        /// When it ended, Unix seconds.
        pub ended_at: Option<u64> => "when it ended, Unix seconds, or null while it runs",
        /// Bytes of its output its log could not take (a full filesystem).
        pub output_lost_bytes: Option<u64> => "bytes of its output its log could not take (a full filesystem, a quota), or null when none was lost",
    }
}

record! {
    /// prelease: the outcome of one RELEASE, REQ_CANCEL or REAQUIRE.
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct ReleaseRecord: "release" {
        /// `"release"`, `"cancel"` or `"reacquire"`.
        pub directive: String => "\"release\", \"cancel\" or \"reacquire\"",
        /// The allocation id, if given.
        pub alloc_id: Option<String> => "allocation id, or null",
        /// The request id, if given.
        pub request_id: Option<String> => "request id, or null",
        /// PMIx status name of the answer (`PMIX_SUCCESS` on success).
        pub status: String => "PMIx status name of the answer, PMIX_SUCCESS on success",
        /// Exit code this outcome maps to.
        pub exit_code: i32 => "exit code this outcome maps to (see EXIT STATUS)",
        /// The spec rule that explains a refusal, if any.
        pub rule: Option<String> => "spec 001 rule explaining a refusal, or null",
    }
}

record! {
    /// pspawn: the job launched, or ended.
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct JobRecord: "job" {
        /// The job's namespace.
        pub nspace: String => "the job's namespace",
        /// `"launched"` or `"ended"`.
        pub state: String => "\"launched\" or \"ended\"",
        /// Number of processes.
        pub nprocs: u32 => "number of processes",
        /// `PMIX_SPAWN_TARGET` entries (`""` = the default pool).
        pub targets: Vec<String> => "allocation ids targeted (\"\" stands for the default pool)",
        /// The job's status once ended.
        pub exit_code: Option<i32> => "the job's status once ended (first non-zero, 128+N for signal N), else null",
    }
}

record! {
    /// pspawn --array or --stdin-tasks: one task, once it ended (or could not start).
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct ArrayTaskRecord: "array_task" {
        /// The task's index in the array.
        pub index: u32 => "the task's index (--array, $PMIX_ARRAY_TASK_ID; --stdin-tasks: its input line, from 1)",
        /// The caller's id (`--stdin-tasks`).
        pub id: Option<serde_json::Value> => "--stdin-tasks: the id of the task's input line, else null",
        /// The task's job namespace ("" when it never started).
        pub nspace: String => "the task's job namespace (\"\" when it never started)",
        /// The task's exit status.
        pub exit_code: i32 => "the task's status (first non-zero, 128+N for signal N; 1 when it could not start)",
    }
}

record! {
    /// pspawn --json: one forwarded output line.
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct OutputRecord: "output" {
        /// The job's namespace.
        pub nspace: String => "namespace of the job",
        /// The rank that wrote it.
        pub rank: u32 => "rank of the process that wrote the line",
        /// `"stdout"` or `"stderr"`.
        pub stream: String => "\"stdout\" or \"stderr\"",
        /// The line, without its newline (lossy UTF-8).
        pub line: String => "the line without its newline (invalid UTF-8 replaced)",
        /// The `--array`/`--stdin-tasks` task that wrote it.
        pub index: Option<u32> => "index of the --array or --stdin-tasks task whose process wrote it (its array_task record gives its id), or null",
    }
}

record! {
    /// pwatch (and palloc's warnings): one event. Borrowed so a stream of events
    /// needs no allocation per event.
    #[derive(Debug, Clone, Default, Serialize, PartialEq)]
    pub struct EventRecord<'a>: "event" {
        /// Event name: `timeout-warning`, `job-end`, `alloc`, `node`, or another
        /// PMIx event's status name.
        pub event: &'a str => "timeout-warning, job-end, alloc, node, or a PMIx status name for other events",
        /// When it was received, Unix seconds with fraction.
        pub time: f64 => "reception time, Unix seconds with fraction",
        /// `PMIX_ALLOC_ID`.
        pub alloc_id: Option<&'a str> => "allocation id (PMIX_ALLOC_ID), or null",
        /// `PMIX_ALLOC_REQ_ID`.
        pub request_id: Option<&'a str> => "request id (PMIX_ALLOC_REQ_ID), or null",
        /// The namespace concerned.
        pub nspace: Option<&'a str> => "namespace concerned, or null",
        /// `PMIX_TIME_REMAINING`, seconds.
        pub time_remaining: Option<u32> => "seconds before expiry (timeout-warning), or null",
        /// PMIx status name carried, if any.
        pub status: Option<&'a str> => "PMIx status name carried by the event, or null",
        /// A job's exit code (job-end).
        pub exit_code: Option<i32> => "job exit status (job-end), or null",
        /// Nodes concerned (alloc, node).
        pub nodes: Option<&'a [String]> => "array of node names concerned, or null",
        /// What changed (alloc, node), or `None`.
        pub change: Option<&'a str> => "alloc: granted, extended, released, expired, unreserved, cancelled or warning; node: joined, left or unreserved; else null",
    }
}

record! {
    /// pwatch --status: one reservation.
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct ReservationRecord: "reservation" {
        /// `PMIX_ALLOC_ID`.
        pub alloc_id: String => "allocation id",
        /// The request id it was created with.
        pub request_id: Option<String> => "request id it was created with, or null",
        /// `PMIX_SESSION_ID`: the reservation's session number, when reported.
        pub session_id: Option<u32> => "session number (PMIX_SESSION_ID), or null when not reported",
        /// The owning namespace.
        pub owner_nspace: String => "owning namespace (its end drives the inheritance rule)",
        /// The owner set (owning namespace plus jobs spawned into it).
        pub owners: Vec<String> => "owner set: the owning namespace plus every job spawned into it",
        /// Inheritance rule; `None` when the DVM reported one outside the vocabulary.
        pub inherit: Option<crate::proto::Inheritance> => "none, child, default or child-default; null when the DVM reported a rule outside these",
        /// Shared (`PMIX_ALLOC_SHARE`).
        pub share: bool => "true when the nodes were shared from the outset",
        /// Node names.
        pub nodes: Vec<String> => "array of node names",
        /// Expiry, Unix seconds (set by the tool from [`Self::expires_in`]).
        pub expires_at: Option<u64> => "expiry time in Unix seconds, or null",
        /// Seconds left before expiry when the DVM answered.
        pub expires_in: Option<u64> => "seconds left before expiry when the DVM answered, or null",
        /// Seconds before expiry at which the owner is warned, when asked for.
        pub warn_secs: Option<u32> => "seconds before expiry at which the owner is warned, or null",
        /// Who receives that warning (`nspace:rank`), when known.
        pub warn_to: Option<String> => "who receives that warning (nspace:rank), or null",
        /// A [`ReservationState`] word; another DVM may report others.
        pub state: String => "queued (waiting for the scheduler), active, or draining (owner ended, kept for its running descendants)",
        /// Why a queued one waits, in its node source's words.
        pub reason: Option<String> => "why a queued reservation waits, in the words of the scheduler's node source (psched on Slurm: Slurm's pending reason, e.g. Resources), or null",
    }
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

record! {
    /// pwatch --status: one namespace (job).
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct NamespaceRecord: "namespace" {
        /// The namespace.
        pub nspace: String => "namespace",
        /// The namespace that spawned it, if known.
        pub parent: Option<String> => "namespace that spawned it, or null",
        /// Number of processes.
        pub nprocs: Option<u32> => "number of processes, or null",
        /// `"running"`, `"ended"`, …
        pub state: String => "running, killing or terminated (terminated ones only with --all); known when the DVM lists only names",
        /// Reservations it may use.
        pub allocations: Vec<String> => "allocation ids whose owner set includes it",
        /// The command line it runs.
        pub command: Option<String> => "the command line it runs (PMIX_CMD_LINE; MPMD apps joined by ' : '), or null if the DVM does not say",
        /// Who started it.
        pub user: Option<String> => "user name (or uid) of whoever spawned it, or null if the DVM does not say (PRRTE does not)",
        /// Its name (`pspawn -J`).
        pub name: Option<String> => "the name given with pspawn -J/--job-name, or null (none given, or the DVM does not keep it: PRRTE does not)",
    }
}

record! {
    /// pwatch --status: one node.
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct NodeRecord: "node" {
        /// Node name.
        pub name: String => "node name",
        /// Slots.
        pub slots: Option<u32> => "number of slots, or null",
        /// Slots in use, when the DVM says.
        pub slots_used: Option<u32> => "slots in use, or null if the DVM does not say",
        /// Allocation id it is reserved to; `null` for the default session.
        pub alloc_id: Option<String> => "reservation holding the node, or null for the default session",
        /// `"idle"`, `"busy"`, …
        pub state: String => "idle (no slot in use) or busy (slots_used > 0); other words as reported by the DVM",
        /// `"startup"` or `"scheduler"`, when the DVM says.
        pub origin: Option<String> => "startup (a node of the DVM's own) or scheduler (granted by the scheduler), or null",
        /// Namespaces with processes running on the node.
        pub jobs: Vec<String> => "namespaces of the jobs with processes running on the node",
    }
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

record! {
    /// pwatch --status: one scheduler queue (what `sinfo` answers).
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct QueueRecord: "queue" {
        /// Queue name.
        pub queue: String => "scheduler queue name (pdvm has one: default)",
        /// Nodes the scheduler manages in it.
        pub nodes: u32 => "nodes the scheduler manages in the queue",
        /// How many are free for a grant now.
        pub free: u32 => "how many of them are free for a grant now",
        /// Their names.
        pub free_nodes: Vec<String> => "array of the free nodes' names",
        /// Requests waiting in the queue.
        pub pending: u32 => "requests waiting in the queue",
        /// Its state, when the scheduler says.
        pub state: Option<String> => "the queue's state as its scheduler says (psched on Slurm: the partition's up, down, drain or inact), or null",
        /// All its nodes, when the scheduler lists them.
        pub node_names: Vec<String> => "array of all the queue's node names, when the scheduler lists them (psched on Slurm: the partition's nodes), else empty",
    }
}

record! {
    /// pwatch --status --json: one snapshot, one document.
    #[derive(Debug, Clone, Default, Serialize, PartialEq)]
    pub struct StatusRecord: "status" {
        /// When it was taken, Unix seconds with fraction.
        pub time: f64 => "when the snapshot was taken, Unix seconds with fraction",
        /// Reservations, or `null` when not asked for or not reported.
        pub reservations: Option<Vec<ReservationRecord>> => "array of reservation objects, or null when not asked for (--what) or not reported",
        /// Namespaces, or `null`.
        pub namespaces: Option<Vec<NamespaceRecord>> => "array of namespace objects, or null",
        /// Nodes, or `null`.
        pub nodes: Option<Vec<NodeRecord>> => "array of node objects, or null",
        /// Scheduler queues, or `null`.
        pub scheduler: Option<Vec<QueueRecord>> => "array of queue objects, or null",
        /// This user's batch scripts on this DVM (running; ended ones too
        /// with `--all`), from the records their pallocs keep.
        pub batch_jobs: Vec<BatchRecord> => "array of batch objects: this user's palloc --no-wait -- SCRIPT jobs on this DVM (running ones; ended ones too with --all), read from this machine",
        /// Table name → PMIx status name, for each table asked for that the
        /// DVM did not report.
        pub unreported: std::collections::BTreeMap<String, String> => "object: for each table asked for that the DVM did not report, the PMIx status it answered",
    }
}

record! {
    /// Any tool: a failure, printed with `--json` instead of the stderr sentence.
    #[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
    pub struct ErrorRecord: "error" {
        /// PMIx status name, when the DVM answered one.
        pub status: Option<String> => "PMIx status name (e.g. PMIX_ERR_NO_PERMISSIONS), or null",
        /// The spec 001 rule that explains it, if any.
        pub rule: Option<String> => "spec 001 rule that explains the refusal, or null",
        /// Human sentence.
        pub message: String => "what was refused, why, and what to do",
        /// The tool's exit code.
        pub exit_code: i32 => "the tool's exit status (see EXIT STATUS)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_words_are_their_json_words() {
        for s in [
            BatchState::Running,
            BatchState::Exited,
            BatchState::Killed,
            BatchState::Lost,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.word());
        }
        for w in [
            BatchStop::Released,
            BatchStop::TimeLimit,
            BatchStop::Ended,
            BatchStop::Signalled,
        ] {
            assert_eq!(serde_json::to_value(w).unwrap(), w.word());
        }
    }

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
        keys(&BatchRecord::default());
        keys(&JobRecord::default());
        keys(&OutputRecord::default());
        keys(&ArrayTaskRecord::default());
        keys(&EventRecord::default());
        keys(&ReservationRecord::default());
        keys(&NamespaceRecord::default());
        keys(&NodeRecord::default());
        keys(&QueueRecord::default());
        keys(&StatusRecord::default());
        keys(&ErrorRecord::default());
    }
}
