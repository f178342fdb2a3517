//! Man page sections beyond what clap knows: EXIT STATUS, JSON FIELDS,
//! IDENTITY AND OWNERSHIP, TIMEOUT WARNINGS and EXAMPLES, per tool.

use super::exit::EXIT_TABLE;
use crate::render::records::{
    AllocationRecord, ErrorRecord, EventRecord, ExitRecord, JobRecord, NamespaceRecord, NodeRecord,
    OutputRecord, Record, ReleaseRecord, RequestRecord, ReservationRecord,
};

/// A JSON record kind: its `"type"` value and `(field, meaning)` rows.
pub type JsonKind = (&'static str, &'static [(&'static str, &'static str)]);

fn kind<R: Record>() -> JsonKind {
    (R::TYPE, R::FIELDS)
}

/// EXIT STATUS rows `(code, meaning)` for `tool`.
pub fn exit_rows(tool: &str) -> Vec<(String, String)> {
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

/// The JSON record kinds `tool` prints with `--json`.
pub fn json_kinds(tool: &str) -> Vec<JsonKind> {
    match tool {
        "palloc" => vec![
            kind::<AllocationRecord>(),
            kind::<RequestRecord>(),
            kind::<EventRecord>(),
            kind::<ExitRecord>(),
            kind::<ErrorRecord>(),
        ],
        "pspawn" => vec![
            kind::<JobRecord>(),
            kind::<OutputRecord>(),
            kind::<ExitRecord>(),
            kind::<ErrorRecord>(),
        ],
        "prelease" => vec![kind::<ReleaseRecord>(), kind::<ErrorRecord>()],
        "pwatch" => vec![
            kind::<EventRecord>(),
            kind::<ReservationRecord>(),
            kind::<NamespaceRecord>(),
            kind::<NodeRecord>(),
            kind::<ErrorRecord>(),
        ],
        _ => Vec::new(),
    }
}

/// Identity and ownership, shared by the four tools.
pub const IDENTITY: &str = "\
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
pub const WARNINGS: &str = "\
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

/// EXAMPLES `(command, explanation)` for `tool`.
pub fn examples(tool: &str) -> &'static [(&'static str, &'static str)] {
    match tool {
        "palloc" => &[
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
                "palloc --extend alloc.3 -N 1 -t 1h --warn-timeout 5m",
                "add a node and an hour, warn 5 minutes before the end",
            ),
            (
                "palloc -N 8 --no-wait --request-id nightly",
                "return at once; later prelease --cancel nightly",
            ),
        ],
        "pspawn" => &[
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
        ],
        "prelease" => &[
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
        ],
        "pwatch" => &[
            (
                "pwatch --status --what reservations",
                "table of reservations",
            ),
            (
                "pwatch --status --json --interval 5s",
                "JSON lines every five seconds",
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
                "pwatch --event timeout-warning --exec 'kill -USR1 $(cat app.pid)'",
                "tell an application to checkpoint",
            ),
        ],
        "pdvm" => &[
            (
                "pdvm --nodes 4 --scheduler-nodes 8 -- ./workflow.sh",
                "run a workflow against a throw-away DVM",
            ),
            (
                "pdvm --nodes 2 --daemonize --report-uri uri.txt",
                "start one in the background",
            ),
            ("pdvm --terminate", "stop it"),
        ],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_sections() {
        for t in ["palloc", "pspawn", "prelease", "pwatch"] {
            assert!(!json_kinds(t).is_empty(), "{t}");
            assert!(exit_rows(t).iter().any(|(c, _)| c == "6"), "{t}");
            assert!(!examples(t).is_empty(), "{t}");
        }
        assert!(exit_rows("pdvm").iter().any(|(c, _)| c == "N"));
    }
}
