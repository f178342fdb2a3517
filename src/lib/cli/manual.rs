//! Man page sections beyond what clap knows: EXIT STATUS, JSON FIELDS,
//! IDENTITY AND OWNERSHIP, TIMEOUT WARNINGS, ENVIRONMENT, FILES, EXAMPLES
//! and SEE ALSO, per tool. Text between backticks is rendered bold.

use super::exit::EXIT_TABLE;
use crate::render::records::{
    AllocationRecord, ArrayTaskRecord, BatchRecord, ErrorRecord, EventRecord, ExitRecord,
    JobRecord, NamespaceRecord, NodeRecord, OutputRecord, QueueRecord, Record, ReleaseRecord,
    RequestRecord, ReservationRecord, StatusRecord,
};

/// A JSON record kind: its `"type"` value and `(field, meaning)` rows.
pub(crate) type JsonKind = (&'static str, &'static [(&'static str, &'static str)]);

fn kind<R: Record>() -> JsonKind {
    (R::TYPE, R::FIELDS)
}

/// Whether `tool` is one of the long-running services (pdvm, psched)
/// rather than a tool: no JSON records, no timeout-warning section.
pub(crate) fn is_daemon(tool: &str) -> bool {
    matches!(tool, "pdvm" | "psched")
}

/// EXIT STATUS rows `(code, meaning)` for `tool`.
pub(crate) fn exit_rows(tool: &str) -> Vec<(String, String)> {
    if tool == "psched" {
        return [
            ("0", "stopped cleanly (SIGTERM or SIGINT, or --once after the DVM went away); --status printed; --release done"),
            ("1", "--status: the ledger is unreadable; --release: ID is not a grant in the ledger, or psched did not release it"),
            ("2", "usage error (a bad flag, node list or partition)"),
            ("3", "psched could not run (the ledger cannot be written, or --once found no DVM); --release: no psched serving the ledger acted within 15 s"),
        ]
        .iter()
        .map(|(c, m)| ((*c).to_string(), (*m).to_string()))
        .collect();
    }
    if tool == "pdvm" {
        return vec![
            (
                "0".into(),
                "stopped cleanly (SIGTERM or pdvm --terminate), or CMD succeeded".into(),
            ),
            (
                "1".into(),
                "other error, e.g. cannot create the rendezvous files or bind".into(),
            ),
            ("2".into(), "usage error".into()),
            ("3".into(), "--terminate found no running pdvm".into()),
            (
                "N".into(),
                "with -- CMD: CMD's own status (128+N if it died of signal N)".into(),
            ),
        ];
    }
    let mut rows: Vec<(String, String)> = EXIT_TABLE
        .iter()
        .map(|(c, m)| (c.to_string(), (*m).to_string()))
        .collect();
    match tool {
        "palloc" => rows.push(("N".into(), "with -- CMD: CMD's own status once it ran (128+N if it died of signal N)".into())),
        "pspawn" => rows.push((
            "N".into(),
            "once launched: the job's status, the first non-zero exit status of its processes (128+N for signal N)".into(),
        )),
        _ => {}
    }
    rows
}

/// The JSON record kinds `tool` prints with `--json`; every tool may end
/// with an error record.
pub(crate) fn json_kinds(tool: &str) -> Vec<JsonKind> {
    let mut kinds = match tool {
        "palloc" => vec![
            kind::<AllocationRecord>(),
            kind::<RequestRecord>(),
            kind::<BatchRecord>(),
            kind::<EventRecord>(),
            kind::<ExitRecord>(),
        ],
        "pspawn" => vec![
            kind::<JobRecord>(),
            kind::<OutputRecord>(),
            kind::<ArrayTaskRecord>(),
            kind::<ExitRecord>(),
        ],
        "prelease" => vec![kind::<ReleaseRecord>()],
        "pwatch" => vec![
            kind::<EventRecord>(),
            kind::<StatusRecord>(),
            kind::<ReservationRecord>(),
            kind::<NamespaceRecord>(),
            kind::<NodeRecord>(),
            kind::<QueueRecord>(),
            kind::<BatchRecord>(),
        ],
        _ => return Vec::new(),
    };
    kinds.push(kind::<ErrorRecord>());
    kinds
}

/// Identity and ownership, shared by the four tools.
pub(crate) const IDENTITY: &str = "\
A reservation belongs to one owning namespace and, unless a child-flavoured \
inheritance rule keeps it alive, its reservation ends when that namespace ends \
(spec 001 §8.2.1.9.2; rule `default` when none is given). Its owner set \
(who may spawn into, extend or release it) is the owning namespace plus every \
job spawned into it; ownership is not transitive (§8.2.1.7).

Inside a job (a process the DVM launched, which finds PMIX_NAMESPACE and the \
server URI in its environment), every tool acts for that job's namespace: \
separate palloc, pspawn, prelease and pwatch invocations from one job script \
allocate, spawn into, extend and release the same reservations. Outside any \
job, a tool connects as a fresh tool namespace that ends when the tool exits, \
and the DVM then applies the reservation's rule; so palloc keeps what it \
reserved only while it runs (`palloc -- CMD` or `palloc --hold`), and \
`palloc --target NSPACE` reserves for a longer-lived job instead. --as-tool \
forces the tool identity inside a job.";

/// Who sees timeout warnings, and how (§8.2.1.9.5).
pub(crate) const WARNINGS: &str = "\
A PMIX_ALLOC_TIMEOUT_WARNING goes only to the process that requested the \
allocation, and each EXTEND makes its sender the requester (§8.2.1.9.5). Three \
patterns make sure a person or a program sees it:

From a shell: `palloc -t 1h --warn-timeout 5m -- CMD` (or --hold) is the \
requester and prints each warning on stderr (and as a JSON event with --json) \
while CMD runs.

From a batch script (a job): palloc returns after the grant, so start \
`pwatch --alloc ID --warn-timeout 5m --extend-by 30m &` from the same job. It \
arms the warning with an EXTEND carrying PMIX_ALLOC_WARN_TIMEOUT, which the job \
may send as owner and which makes pwatch the requester, then answers every \
warning with an EXTEND that re-arms it (or use --exec to checkpoint instead).

From an orchestrator: one long-lived pwatch of the owning namespace, with one \
--alloc per allocation, does the same for all of them; its events are JSON \
lines with --json.";

/// The environment variables every tool reads to find its server.
const CONNECT_ENV: &[(&str, &str)] = &[
    (
        "PMIX_NAMESPACE, PMIX_RANK",
        "set by the DVM for the processes it launches: with no flag naming a server, the tool connects as a client of that job and acts for its namespace",
    ),
    (
        "PMIX_SERVER_URI41, PMIX_SERVER_URI4, PMIX_SERVER_URI3, PMIX_SERVER_URI21, PMIX_SERVER_URI2",
        "the server's URI inside a job (the first one set is used)",
    ),
    (
        "PMIX_SERVER_TMPDIR",
        "where the server's rendezvous files are searched, before TMPDIR",
    ),
    (
        "PMIX_SYSTEM_TMPDIR",
        "where a system server's rendezvous file is searched (--system-server-first/-only); default /tmp",
    ),
    (
        "TMPDIR",
        "where rendezvous files are searched when neither --tmpdir nor PMIX_SERVER_TMPDIR says (then /tmp)",
    ),
    (
        "PMIX_TOOLS_HOLDER",
        "the socket of the palloc that holds the allocation (set by `palloc … -- CMD`): the tool's requests are relayed by that palloc, acting for the allocation's owner; naming a server or --as-tool bypasses it",
    ),
    (
        "XDG_RUNTIME_DIR",
        "where the holder registry is (see FILES)",
    ),
    (
        "PMIX_TOOLS_TIMEOUT",
        "seconds the tool waits for the DVM to finish the connection handshake and to answer each request (default: 10 for the handshake, 30 for each request); when it passes, the tool ends within 1 s more (its goodbye to a silent DVM waits at most 0.3 s) and says what it waited for: exit 8 when nothing was changed (a query, the handshake), exit 9 (outcome unknown) when a request that changes something was sent, since the DVM may still carry it out: `pwatch --status` shows whether it did. A queued allocation is not a silent DVM: palloc waits for its grant as --wait says",
    ),
    (
        "NO_COLOR",
        "when set and not empty: no bold or colour in tables (see https://no-color.org)",
    ),
];

/// ENVIRONMENT rows `(variables, meaning)` for `tool`.
pub(crate) fn environment(tool: &str) -> Vec<(&'static str, &'static str)> {
    if tool == "pdvm" {
        return vec![
            (
                "TMPDIR",
                "where the rendezvous folder pdvm.<pid>/ is made when --tmpdir is not given (then /tmp)",
            ),
            (
                "PATH",
                "passed to the jobs, with the directory of pdvm's own binary added so that CMD finds the tools",
            ),
            (
                "NO_COLOR",
                "when set and not empty: no styling",
            ),
        ];
    }
    let mut v: Vec<(&str, &str)> = CONNECT_ENV.to_vec();
    match tool {
        "psched" => v.push((
            "TMPDIR",
            "where PRRTE's rendezvous files are looked for when no flag names the DVM",
        )),
        "pspawn" => v.push((
            "PMIX_ALLOC_ID",
            "the allocation this shell runs in (set by `palloc … -- CMD`): without --target or --default-pool, jobs are launched into it, as `srun` inside `salloc`",
        )),
        "pwatch" => v.push((
            "PMIX_ALLOC_ID",
            "the allocation this shell runs in: counted as yours by --status --mine",
        )),
        "palloc" => v.extend([
            (
                "PMIX_ALLOC_ID",
                "set for CMD by `palloc … -- CMD`: the allocation it runs in",
            ),
            (
                "PMIX_ALLOC_NODELIST",
                "set for CMD when the DVM named the granted nodes: their names, comma-separated (as SLURM_JOB_NODELIST, not compressed)",
            ),
            (
                "PMIX_ALLOC_NUM_NODES",
                "set for CMD with PMIX_ALLOC_NODELIST: how many nodes (as SLURM_JOB_NUM_NODES)",
            ),
        ]),
        _ => {}
    }
    v
}

/// FILES rows `(path, meaning)` for `tool`.
pub(crate) fn files(tool: &str) -> Vec<(&'static str, &'static str)> {
    let rendezvous = (
        "$TMPDIR/prte.<pid>/pmix.<host>.tool*, $TMPDIR/pdvm.<pid>/pmix.<host>.tool*",
        "rendezvous files of a PRRTE DVM or of pdvm (URI, PMIx version, pid); found with no flag when exactly one live server has them; a file (or its directory) owned by another user, or writable by group or others, is skipped (-v says so)",
    );
    let system = (
        "$PMIX_SYSTEM_TMPDIR/pmix.sys.<host>",
        "rendezvous file of a system server (--system-server-first/-only)",
    );
    let holders = (
        "$XDG_RUNTIME_DIR/pmix-tools-holders/, else /dev/shm/pmix-tools-holders.<uid>/ (when /dev/shm is in memory), else /tmp/pmix-tools-holders.<uid>/",
        "holder registry (mode 0700, used only when owned by you; when another user has pre-created that path, a private folder with an unguessable name beside it, pmix-tools-holders.<uid>.XXXXXX, named in ~/.pmix-tools/registry.<host>, which only you can write): one socket <dvm-namespace>+<alloc-id>.sock per allocation held by a palloc --hold or palloc -- CMD of yours, through which tools in other shells act on that allocation (characters other than letters, digits and @._- written %XX, so each id has a name of its own; a name too long for a socket path is ~ and 40 hex digits of its SHA-256); beside each socket its .lock, locked by the live holder (a name whose lock is free belongs to a holder that has gone: its files are removed by the next holder's sweep, at most one sweep every 30 s, marked by .swept). A tool speaks to a holder socket only when its folder is yours and nobody else can write it and the process listening on it runs as you",
    );
    match tool {
        "psched" => vec![
            (
                "psched-ledger.json (--ledger)",
                "the ledger: every grant (id, request id, nodes, expiry, warning, partition, inheritance), the nodes the DVM kept, the next id; replaced atomically after every change, read back at start so a restart loses no grant and grants no node twice; --status reads it",
            ),
            (
                "<ledger>.release.<pid>-<n>",
                "a release request written by psched --release beside the ledger; the running psched acts on it within a second and removes it",
            ),
            rendezvous,
        ],
        "pdvm" => vec![(
            "$TMPDIR/pdvm.<pid>/pmix.<host>.tool, pmix.<host>.tool.<pid>, pmix.<host>.tool.<nspace>",
            "the rendezvous files pdvm writes (mode 0600, in a folder of mode 0700), laid out as PRRTE's, removed when it stops; when another user (or a symlink) holds pdvm.<pid>, pdvm uses pdvm.<pid>.1, .2 ... and says which path it passed over and who owns it",
        )],
        _ => vec![rendezvous, system, holders],
    }
}

/// SEE ALSO entries for `tool`: the other tools, then the anchors.
pub(crate) fn see_also(tool: &str) -> Vec<&'static str> {
    let mut v: Vec<&str> = ["palloc", "pspawn", "prelease", "pwatch", "pdvm", "psched"]
        .into_iter()
        .filter(|t| *t != tool)
        .collect();
    v.extend([
        "prte", "prun", "pps", "salloc", "srun", "scancel", "squeue", "sinfo",
    ]);
    v
}

/// EXAMPLES `(command, explanation)` for `tool`.
pub(crate) fn examples(tool: &str) -> &'static [(&'static str, &'static str)] {
    match tool {
        "palloc" => PALLOC_EXAMPLES,
        "pspawn" => PSPAWN_EXAMPLES,
        "prelease" => PRELEASE_EXAMPLES,
        "pwatch" => PWATCH_EXAMPLES,
        "pdvm" => PDVM_EXAMPLES,
        "psched" => PSCHED_EXAMPLES,
        _ => &[],
    }
}

/// `palloc`'s man-page examples: command and what it does.
const PALLOC_EXAMPLES: &[(&str, &str)] = &[
    (
        "palloc -N 2 -t 30m -- ./run.sh",
        "hold two nodes while run.sh runs in them; exit with its status",
    ),
    (
        "palloc -N 4 --inherit child --hold",
        "print the id and keep the allocation until Ctrl-C or SIGTERM",
    ),
    (
        "palloc -w 'node[01-04]' --target prte-vm-1@1 --inherit child",
        "reserve four named nodes for a running job",
    ),
    (
        "palloc --extend alloc.3 -N 1 -t 1h",
        "add a node and an hour",
    ),
    (
        "palloc -N 8 --no-wait --request-id nightly",
        "return at once; later prelease --cancel nightly",
    ),
];

/// `pspawn`'s man-page examples: command and what it does.
const PSPAWN_EXAMPLES: &[(&str, &str)] = &[
    (
        "pspawn -n 4 ./a.out arg1",
        "four processes of a.out, output forwarded",
    ),
    (
        "pspawn -n 1 ./manager : -n 8 ./worker",
        "an MPMD job of two apps",
    ),
    (
        "pspawn --target alloc.3 --default-pool -n 16 ./solver",
        "use the reservation and the default pool",
    ),
    (
        "pspawn --detach -x OMP_NUM_THREADS=4 ./service",
        "print the namespace and return",
    ),
];

/// `prelease`'s man-page examples: command and what it does.
const PRELEASE_EXAMPLES: &[(&str, &str)] = &[
    ("prelease alloc.3 alloc.4", "release two allocations"),
    (
        "prelease --request-id nightly",
        "release the allocation requested as nightly",
    ),
    ("prelease alloc.3 -w node07", "give back one node"),
    (
        "prelease --cancel nightly",
        "withdraw a request the scheduler still queues",
    ),
];

/// `pwatch`'s man-page examples: command and what it does.
const PWATCH_EXAMPLES: &[(&str, &str)] = &[
    (
        "pwatch --status --what reservations",
        "table of reservations",
    ),
    (
        "pwatch --status --mine --state active",
        "my granted reservations, my jobs, their nodes",
    ),
    (
        "pwatch --status --what scheduler",
        "free nodes per queue, as sinfo shows",
    ),
    (
        "pwatch --status --json | python3 -m json.tool",
        "one JSON document",
    ),
    (
        "pwatch --status --json --interval 5s",
        "one JSON document per line every five seconds",
    ),
    (
        "pwatch --event job-end --job myjob@1 --count 1",
        "wait for one job to end",
    ),
    (
        "pwatch --alloc alloc.3 --warn-timeout 5m --extend-by 30m",
        "keep an allocation alive from a job",
    ),
    (
        "pwatch --event timeout-warning --alloc alloc.3 --warn-timeout 5m --exec 'kill -USR1 $(cat app.pid)'",
        "tell an application to checkpoint",
    ),
];

/// `psched`'s man-page examples: command and what it does.
const PSCHED_EXAMPLES: &[(&str, &str)] = &[
    (
        "prte --prtemca ras_pmix_system_scheduler 1 --prtemca prte_num_worker_threads 0 --report-uri uri.txt",
        "start PRRTE master with its ras/pmix component: it asks a scheduler for every node beyond its own (no worker threads: with them, short processes now and then make prte abort)",
    ),
    (
        "psched --uri file:uri.txt --nodes 'node[02-05]' --partition batch:10m:1h",
        "attach to it as its scheduler, owning four nodes; requests without a time limit get 10 minutes, none more than an hour",
    ),
    (
        "psched --status --ledger psched-ledger.json",
        "queues, pool, free nodes, pending requests and each grant with its expiry, as JSON",
    ),
    (
        "psched --release alloc.3",
        "release a grant as the scheduler (any reservation): its nodes return to the pool",
    ),
];

/// `pdvm`'s man-page examples: command and what it does.
const PDVM_EXAMPLES: &[(&str, &str)] = &[
    (
        "pdvm --nodes 4 --scheduler-nodes 8 -- ./workflow.sh",
        "run a workflow against a throw-away DVM",
    ),
    (
        "pdvm --nodes 2 --daemonize --report-uri uri.txt",
        "start one in the background",
    ),
    ("pdvm --terminate", "stop it"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The man pages state the time-outs the code uses.
    #[test]
    fn the_stated_time_outs_are_the_codes() {
        use crate::conn::client::{HANDSHAKE_TIMEOUT, REQUEST_TIMEOUT};
        let (_, text) = CONNECT_ENV
            .iter()
            .find(|(k, _)| *k == "PMIX_TOOLS_TIMEOUT")
            .expect("PMIX_TOOLS_TIMEOUT row");
        let said = format!(
            "default: {} for the handshake, {} for each request",
            HANDSHAKE_TIMEOUT.as_secs(),
            REQUEST_TIMEOUT.as_secs()
        );
        assert!(text.contains(&said), "{text}");
    }

    #[test]
    fn every_tool_has_sections() {
        for t in ["palloc", "pspawn", "prelease", "pwatch"] {
            assert!(!json_kinds(t).is_empty(), "{t}");
            assert!(exit_rows(t).iter().any(|(c, _)| c == "6"), "{t}");
            assert!(!examples(t).is_empty(), "{t}");
        }
        assert!(exit_rows("pdvm").iter().any(|(c, _)| c == "N"));
        assert!(exit_rows("psched").iter().any(|(c, _)| c == "3"));
        for t in ["palloc", "pspawn", "prelease", "pwatch", "pdvm", "psched"] {
            assert!(!environment(t).is_empty() && !files(t).is_empty(), "{t}");
            assert!(!see_also(t).contains(&t) && see_also(t).len() > 4, "{t}");
        }
        assert!(environment("pspawn")
            .iter()
            .any(|(k, _)| *k == "PMIX_ALLOC_ID"));
    }
}
