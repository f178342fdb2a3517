//! Every end tells its cause, the same on both engines (issue 40, point 1):
//! one script drives each way a job can end and records pspawn's or
//! palloc's exit status and what it said; it runs on pdvm and on PRRTE
//! master with psched attached, and both must give the same status and the
//! same class of message (docs/end-causes.md is the table).

use std::process::{Command, Stdio};

use crate::support;
use crate::support::cluster::Cluster;
use crate::support::pdvm::Pdvm;
use crate::support::{show, ToolHost};

/// The rows: each prints `ROW rc=N` and then what the tools said.
const ROWS: &str = r#"
set -u
row() { echo "ROW $1 rc=$2"; sed 's/^/  /' "$3"; }
palloc -N 1 -t 3s -- pspawn sleep 60 2> tl.err
row time-limit $? tl.err
palloc -N 1 -t 5m -- sh -c 'echo $PMIX_ALLOC_ID > id; exec pspawn sleep 60' 2> ra.err & P=$!
for i in $(seq 300); do [ -s id ] && break; sleep 0.1; done; sleep 1
prelease "$(cat id)" > /dev/null 2>&1
wait $P
row prelease-alloc $? ra.err
pspawn --json sleep 60 > ns.out 2> ns.err & P=$!
for i in $(seq 300); do [ -s ns.out ] && break; sleep 0.1; done
prelease "$(head -n 1 ns.out | sed 's/.*"nspace":"\([^"]*\)".*/\1/')" > /dev/null 2>&1
wait $P
row prelease-nspace $? ns.err
pspawn sh -c 'exit 3' 2> fail.err
row failing-rank $? fail.err
pspawn true 2> ok.err
row normal $? ok.err
"#;

/// One row's outcome: the exit status and what was said.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    name: String,
    rc: i32,
    said: String,
}

/// Run [`ROWS`] next to `host`'s DVM; the rows in order.
fn rows(host: &impl ToolHost) -> Vec<Row> {
    let dir = support::unique_tmpdir("end-causes");
    let mut c: Command = host.tool_command("bash");
    c.env("PATH", support::user_path())
        .current_dir(dir.path())
        .args(["-c", ROWS])
        .stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 240);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut out: Vec<Row> = Vec::new();
    for line in support::text(&o.stdout).lines() {
        if let Some(rest) = line.strip_prefix("ROW ") {
            let (name, rc) = rest.split_once(" rc=").expect("ROW name rc=N");
            out.push(Row {
                name: name.into(),
                rc: rc.parse().expect("a status"),
                said: String::new(),
            });
        } else if let Some(r) = out.last_mut() {
            r.said.push_str(line.trim_start());
            r.said.push('\n');
        }
    }
    out
}

/// What each row must give: the status and words its message holds.
fn expected() -> Vec<(&'static str, i32, &'static [&'static str])> {
    vec![
        (
            "time-limit",
            8,
            &[
                "was stopped by the DVM: allocation",
                "the time limit was reached",
            ],
        ),
        (
            "prelease-alloc",
            8,
            &["was stopped by the DVM: allocation", "released by an owner"],
        ),
        ("prelease-nspace", 143, &["was cancelled by prelease"]),
        ("failing-rank", 3, &[]),
        ("normal", 0, &[]),
    ]
}

/// Every row as [`expected`] says, and nothing said of a lost DVM.
fn check(engine: &str, got: &[Row], logs: &dyn Fn() -> String) {
    let names: Vec<&str> = got.iter().map(|r| r.name.as_str()).collect();
    let want: Vec<&str> = expected().iter().map(|e| e.0).collect();
    assert_eq!(names, want, "{engine}: {got:#?}");
    for ((name, rc, words), row) in expected().into_iter().zip(got) {
        assert_eq!(row.rc, rc, "{engine} {name}: {row:#?}\n{}", logs());
        for w in words {
            assert!(row.said.contains(w), "{engine} {name}: {w:?} in {row:#?}");
        }
        // A job that ended by itself leaves its stderr to its own bytes:
        // PRRTE master's text on a non-zero exit is shown only with -v.
        if words.is_empty() {
            assert_eq!(row.said, "", "{engine} {name}: {row:#?}");
        }
        assert!(
            !row.said.contains("lost the DVM"),
            "{engine} {name}: {row:#?}"
        );
    }
}

#[test]
fn every_end_tells_its_cause_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--scheduler-nodes", "2"]);
    let got = rows(&pdvm);
    check("pdvm", &got, &|| pdvm.logs());
}

#[test]
fn every_end_tells_its_cause_on_prrte_master_with_psched() {
    let c = Cluster::start_with_psched(2, 2, &[]);
    let got = rows(&c);
    check("PRRTE master + psched", &got, &|| c.logs());
}
