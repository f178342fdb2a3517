//! Attribute keys (`pmix.*` strings, values as in the PMIx headers). Event and
//! status codes are [`super::status::Status`] constants; directives are
//! [`super::directive::Directive`].

/// Allocation id assigned by the scheduler.
pub const ALLOC_ID: &str = "pmix.alloc.id";
/// The requester's own request id.
pub const ALLOC_REQ_ID: &str = "pmix.alloc.reqid";
/// The process that asked for something (`pmix_proc_t`, `PMIX_REQUESTOR`):
/// in the reply to a queued request, who withdrew it.
pub const REQUESTOR: &str = "pmix.requestor";
/// Number of nodes (`u64`).
pub const ALLOC_NUM_NODES: &str = "pmix.alloc.nnodes";
/// Specific nodes (string).
pub const ALLOC_NODE_LIST: &str = "pmix.alloc.nlist";
/// Nodes to exclude (string).
pub const ALLOC_EXCLUDE: &str = "pmix.alloc.exclude";
/// Number of cpus (`u64`).
pub const ALLOC_NUM_CPUS: &str = "pmix.alloc.ncpus";
/// Memory in MB (`f32`).
pub const ALLOC_MEM_SIZE: &str = "pmix.alloc.msize";
/// Time limit: `u32` seconds for 4.x servers, a `d:h:m:s` string for 5.x and later.
pub const ALLOC_TIME: &str = "pmix.alloc.time";
/// Queue (string).
pub const ALLOC_QUEUE: &str = "pmix.alloc.queue";
/// Namespace the reservation is for (string; tools only).
pub const ALLOC_TARGET: &str = "pmix.alloc.tgt";
/// Put the nodes in the default session from the outset (`bool`).
pub const ALLOC_SHARE: &str = "pmix.alloc.share";
/// What happens when the owner ends (`pmix_alloc_inheritance_t`).
pub const ALLOC_INHERITANCE: &str = "pmix.alloc.inhrt";
/// Seconds before expiry at which to warn (`u32`).
pub const ALLOC_WARN_TIMEOUT: &str = "pmix.alloc.wtmo";
/// Reservation(s) a spawn may map onto (string or array of strings).
pub const SPAWN_TARGET: &str = "pmix.spwn.tgt";
/// Seconds remaining (`u32`), carried by the timeout warning.
pub const TIME_REMAINING: &str = "pmix.time.remaining";
/// Query: namespaces known to the server.
pub const QUERY_NAMESPACES: &str = "pmix.qry.ns";
/// Query: per-namespace information.
pub const QUERY_NAMESPACE_INFO: &str = "pmix.qry.nsinfo";
/// Query: nodes known to the server.
pub const QUERY_ALLOCATION: &str = "pmix.query.allc";
/// Query: status of an allocation request.
pub const QUERY_ALLOC_STATUS: &str = "pmix.query.alloc";
/// Query: state of a job.
pub const QUERY_JOB_STATUS: &str = "pmix.qry.jst";
/// Query: process table of a job.
pub const QUERY_PROC_TABLE: &str = "pmix.qry.ptable";
/// `PMIX_QUERY_ALLOC_IDS`: the DVM's allocation ids.
pub const QUERY_ALLOC_IDS: &str = "pmix.query.alloc.ids";
/// `PMIX_NUM_SLOTS`: slots of a node (PRRTE's node blocks).
pub const NUM_SLOTS: &str = "pmix.num.slots";
/// `PMIX_PROC_INFO_ARRAY`: one process's block in a namespace's information.
pub const PROC_INFO_ARRAY: &str = "pmix.pdata";
/// Ask to be notified when the spawned job completes.
pub const NOTIFY_COMPLETION: &str = "pmix.notecomp";
/// Forward the job's stdout to us.
pub const FWD_STDOUT: &str = "pmix.fwd.stdout";
/// Forward the job's stderr to us.
pub const FWD_STDERR: &str = "pmix.fwd.stderr";
/// A job's termination status (in job-end events).
pub const JOB_TERM_STATUS: &str = "pmix.job.term.status";
/// A process's exit code.
pub const EXIT_CODE: &str = "pmix.exit.code";
/// The process an event is about.
pub const EVENT_AFFECTED_PROC: &str = "pmix.evproc";
/// The processes an event is about.
pub const EVENT_AFFECTED_PROCS: &str = "pmix.evaffected";
/// Handler name given at registration.
pub const EVENT_HDLR_NAME: &str = "pmix.evname";
/// `PMIX_WAIT`: a lookup waits until the keys are published.
pub const WAIT: &str = "pmix.wait";
/// Human-readable text carried by an event.
pub const EVENT_TEXT_MESSAGE: &str = "pmix.evtext";
/// Command line of the tool (sent at connection); of a job in a namespace
/// query's answer.
pub const CMD_LINE: &str = "pmix.cmd.line";
/// Effective user id (`u32`, `PMIX_USERID`): of a job's spawner in pdvm's
/// status answer.
pub const USERID: &str = "pmix.euid";
/// Namespace.
pub const NSPACE: &str = "pmix.nspace";
/// Rank.
pub const RANK: &str = "pmix.rank";
/// Host name.
pub const HOSTNAME: &str = "pmix.hname";
/// `PMIX_SERVER_URI`: the URI of a PMIx server (of a node's daemon, asked
/// with a `PMIX_HOSTNAME` qualifier).
pub const SERVER_URI: &str = "pmix.srvr.uri";
/// Mapping policy.
pub const MAPBY: &str = "pmix.mapby";
/// Hosts to run on.
pub const HOST: &str = "pmix.host";
/// Working directory.
pub const WDIR: &str = "pmix.wdir";
/// Set an environment variable (`pmix_envar_t`).
pub const SET_ENVAR: &str = "pmix.envar.set";
/// Job control: kill.
pub const JOB_CTRL_KILL: &str = "pmix.jctrl.kill";
/// Job control: send a signal (`int`).
pub const JOB_CTRL_SIGNAL: &str = "pmix.jctrl.sig";
/// Job control: terminate politely.
pub const JOB_CTRL_TERMINATE: &str = "pmix.jctrl.term";
/// Tag forwarded output with its source.
pub const IOF_TAG_OUTPUT: &str = "pmix.iof.tag";
/// Forwarded output is complete (last chunk).
pub const IOF_COMPLETE: &str = "pmix.iof.cmp";
/// A process's pid.
pub const PROC_PID: &str = "pmix.ppid";
/// Number of processes in a job.
pub const JOB_SIZE: &str = "pmix.job.size";
/// Parent process of a spawned job.
pub const PARENT_ID: &str = "pmix.parent";
/// `PMIX_SPAWN_TREE_ROOT` (string), in a job-end event: the namespace of
/// the tool or process the ended job descends from by one or more spawns
/// (the root of its spawn tree; a job nobody spawned names itself).
pub const SPAWN_TREE_ROOT: &str = "pmix.spwn.root";
/// `PMIX_SPAWN_TREE_ACTIVE` (`uint32_t`), in a job-end event: the jobs of
/// that spawn tree yet to end, the ended one not counted (0: it was the
/// last, and no job can join the tree any more).
pub const SPAWN_TREE_ACTIVE: &str = "pmix.spwn.actv";
/// Node list.
pub const NODE_LIST: &str = "pmix.nlist";
/// `PMIX_SESSION_ID` (`uint32_t`): a reservation's session number.
pub const SESSION_ID: &str = "pmix.session.id";
/// Node information block in query replies.
pub const NODE_INFO: &str = "pmix.node.info";
/// Info key (string) pdvm adds to its allocation and node events: which
/// change the event reports (`granted`, `extended`, `released`, `expired`,
/// `unreserved`, `cancelled` for allocations; `joined`, `left`,
/// `unreserved` for nodes).
pub const CHANGE: &str = "pdvm.ev.change";
/// Info key (string) psched adds to the `PMIX_EVENT_SESSION_END` of an
/// allocation its node source ended (a Slurm job ended by `scancel`, its
/// time limit, a node failure, preemption): a word of
/// [`super::SessionEndCause`]. PMIx defines no such attribute.
pub const END_CAUSE: &str = "psched.end.cause";
/// Info key (string) of an allocation request: the account to charge
/// (palloc `-A`; psched on Slurm passes it as `salloc --account`). PMIx
/// defines no such attribute.
pub const ALLOC_ACCOUNT: &str = "psched.alloc.account";
/// Info key (string) of an allocation request: the quality of service
/// (palloc `--qos`; salloc `--qos`). PMIx defines no such attribute.
pub const ALLOC_QOS: &str = "psched.alloc.qos";
/// Info key (string) of an allocation request: a reservation of the
/// resource manager to run in (palloc `--reservation`; salloc
/// `--reservation`). PMIx defines no such attribute.
pub const ALLOC_RESERVATION: &str = "psched.alloc.reservation";
/// Info key (string) of an allocation request: the node features asked
/// for (palloc `-C`; salloc `--constraint`). PMIx defines no such
/// attribute.
pub const ALLOC_CONSTRAINT: &str = "psched.alloc.constraint";
/// Info key (bool) of an allocation request: whole nodes, shared with no
/// other job of the resource manager (palloc `--exclusive`; psched on Slurm
/// passes `salloc --exclusive`, else asks Slurm only for the CPUs wanted).
/// PMIx defines no such attribute (`PMIX_ALLOC_SHARE` is about the
/// session, not the node).
pub const ALLOC_EXCLUSIVE: &str = "psched.alloc.exclusive";
/// Info key (string) of the `PMIX_ALLOC_PENDING` event psched sends a
/// queued request's requester (range custom): the resource manager's
/// reason the request waits, in its words (Slurm's `Resources`,
/// `ReqNodeNotAvail, Reserved for maintenance`). PMIx defines no such
/// attribute.
pub const PENDING_REASON: &str = "psched.pending.reason";
/// Job-control directive (`bool`) pdvm understands: true stops reading the
/// target jobs' output (their processes then block on write), false
/// resumes it. A relay whose reader lags uses it so one job's reader slows
/// that job only; another DVM refuses it and the relay stops reading
/// instead.
pub const IOF_PAUSE: &str = "pdvm.iof.pause";
/// `PMIX_STDIN_TGT`: job info naming the rank that receives stdin (a
/// string: a rank number, `all` or `none`, as PRRTE reads it).
pub const STDIN_TGT: &str = "pmix.stdin";
/// `PMIX_CPUS_PER_PROC` (`uint32`): CPUs (slots) each process of a job
/// takes; PRRTE reads it as its `--map-by :PE=N`.
pub const CPUS_PER_PROC: &str = "pmix.cpuperproc";
/// Job info (string) naming a job for people (`pspawn -J NAME`, srun's
/// `--job-name`). PMIx defines no job-name attribute, so the key is
/// pdvm's: pdvm shows it in its namespace table; PRRTE ignores it (an
/// unknown, non-required key).
pub const JOB_NAME: &str = "pdvm.job.name";
/// App info (`bool`): the app's processes get only the app's environment
/// and what the DVM must set (`pspawn --export=NONE`), not the DVM's own.
/// PMIx defines no such attribute, so the key is pdvm's; PRRTE ignores it.
pub const ENV_NONE: &str = "pdvm.env.none";
/// Allocation info (`bool`) on a `PMIX_ALLOC_RELEASE`: pdvm's simulated
/// scheduler releases the reservation itself (`pdvm --release ID`, as an
/// administrator's `scancel`), whoever owns it: the scheduler is an
/// implicit owner of every reservation (spec 001 §8.2.1.7). pdvm admits
/// only its own user, who started it; other DVMs ignore the key.
pub const BY_SCHEDULER: &str = "pdvm.alloc.by_sched";

/// `PMIX_SERVER_SCHEDULER` (`bool`): the connecting tool is the system
/// scheduler (psched's handshake).
pub const SERVER_SCHEDULER: &str = "pmix.srv.sched";
/// `PMIX_NODE_SLOTS` (`uint32_t`): a node's slots.
pub const NODE_SLOTS: &str = "pmix.node.slots";
/// `PMIX_EVENT_CUSTOM_RANGE` (`pmix_data_array_t` of procs): the processes
/// an event with range `PMIX_RANGE_CUSTOM` goes to.
pub const EVENT_CUSTOM_RANGE: &str = "pmix.evrange";
/// `PMIX_EVENT_NON_DEFAULT` (`bool`): the event goes only to handlers
/// registered for its code, never to a process's default handler (an MPI
/// library's default handler aborts the job on any event it gets).
pub const EVENT_NON_DEFAULT: &str = "pmix.evnondef";
/// `PMIX_EVENT_DO_NOT_CACHE` (`bool`): the server does not keep the event
/// to replay to later registrations.
pub const EVENT_DO_NOT_CACHE: &str = "pmix.evnocache";

/// `PMIX_SESSION_TERMINATE` (`bool`): session control, end the session.
pub const SESSION_TERMINATE: &str = "pmix.ssn.terminate";
/// `PMIX_SESSION_COMPLETE` (`bool`): the session has ended.
pub const SESSION_COMPLETE: &str = "pmix.ssn.complete";
/// `PMIX_UNIV_SIZE` (`uint32_t`): processes the universe can hold.
pub const UNIV_SIZE: &str = "pmix.univ.size";
/// `PMIX_JOBID` (string): a job's identifier.
pub const JOBID: &str = "pmix.jobid";
/// `PMIX_QUERY_LOCAL_PROC_TABLE`: the process table of one node.
pub const QUERY_LOCAL_PROC_TABLE: &str = "pmix.qry.lptable";
/// `PMIX_BINDTO` (string): how processes are bound.
pub const BINDTO: &str = "pmix.bindto";

/// Environment variables a launching server sets for its clients, newest first.
pub const SERVER_URI_VARS: [&str; 5] = [
    "PMIX_SERVER_URI41",
    "PMIX_SERVER_URI4",
    "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI21",
    "PMIX_SERVER_URI2",
];

/// Keys of the job data a job's PMIx clients get at init (`PMIX_REQ_CMD`)
/// and of the data exchange among them (put, commit, fence, get).
pub mod client {
    /// `PMIX_LOCAL_SIZE` (`uint32_t`): the job's processes on this node.
    pub const LOCAL_SIZE: &str = "pmix.local.size";
    /// `PMIX_LOCAL_PEERS` (string): comma list of the job's ranks on this node.
    pub const LOCAL_PEERS: &str = "pmix.lpeers";
    /// `PMIX_LOCAL_RANK` (`uint16_t`): a process's rank among the job's on its node.
    pub const LOCAL_RANK: &str = "pmix.lrank";
    /// `PMIX_NODE_RANK` (`uint16_t`): a process's rank among all on its node.
    pub const NODE_RANK: &str = "pmix.nrank";
    /// `PMIX_APPNUM` (`uint32_t`): the app a process belongs to.
    pub const APPNUM: &str = "pmix.appnum";
    /// `PMIX_NODEID` (`uint32_t`): a node's number.
    pub const NODEID: &str = "pmix.nodeid";
    /// `PMIX_NODE_SIZE` (`uint32_t`): processes on a node.
    pub const NODE_SIZE: &str = "pmix.node.size";
    /// `PMIX_LOCALLDR` (rank): the job's lowest rank on a node.
    pub const LOCALLDR: &str = "pmix.lldr";
    /// `PMIX_APP_SIZE` (`uint32_t`): processes of an app.
    pub const APP_SIZE: &str = "pmix.app.size";
    /// `PMIX_APPLDR` (rank): an app's lowest rank.
    pub const APPLDR: &str = "pmix.aldr";
    /// `PMIX_APP_RANK` (rank): a process's rank within its app.
    pub const APP_RANK: &str = "pmix.apprank";
    /// `PMIX_GLOBAL_RANK` (rank): a process's rank in the universe.
    pub const GLOBAL_RANK: &str = "pmix.grank";
    /// `PMIX_APP_ARGV` (string): an app's command line.
    pub const APP_ARGV: &str = "pmix.app.argv";
    /// `PMIX_MAX_PROCS` (`uint32_t`): most processes the job may have.
    pub const MAX_PROCS: &str = "pmix.max.size";
    /// `PMIX_JOB_NUM_APPS` (`uint32_t`): apps in the job.
    pub const JOB_NUM_APPS: &str = "pmix.job.napps";
    /// `PMIX_NUM_NODES` (`uint32_t`): nodes hosting the job.
    pub const NUM_NODES: &str = "pmix.num.nodes";
    /// `PMIX_TMPDIR` (string): the session's top temporary directory.
    pub const TMPDIR: &str = "pmix.tmpdir";
    /// `PMIX_NODE_INFO_ARRAY` (data array of infos): one node's data.
    pub const NODE_INFO_ARRAY: &str = "pmix.node.arr";
    /// `PMIX_APP_INFO_ARRAY` (data array of infos): one app's data.
    pub const APP_INFO_ARRAY: &str = "pmix.app.arr";
    /// `PMIX_PROC_BLOB` (byte object): a rank, then that process's data.
    pub const PROC_BLOB: &str = "pmix.pblob";
    /// `PMIX_IMMEDIATE` (`bool`): a get answers at once, found or not.
    pub const IMMEDIATE: &str = "pmix.immediate";
    /// `PMIX_COLLECT_DATA` (`bool`): a fence collects the committed data.
    pub const COLLECT_DATA: &str = "pmix.collect";
    /// `PMIX_SPAWNED` (`bool`): the job was started by a process's spawn.
    pub const SPAWNED: &str = "pmix.spawned";
    /// Prefix of the keys PMIx reserves (`PMIX_CHECK_RESERVED_KEY`).
    pub const RESERVED_PREFIX: &str = "pmix";
}
