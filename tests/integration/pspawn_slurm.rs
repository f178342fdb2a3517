//! Issue 17, the rest of srun's spellings on pspawn against pdvm: `-J`
//! names the job in pwatch's namespace table, `--stdin all` feeds every
//! rank, `-c` gives each process that many slots, and `-N` outside any
//! allocation reserves nodes for the job alone and gives them back.

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::{show, text};

use serde_json::Value;
use std::process::{Output, Stdio};

fn pspawn(dvm: &Pdvm, args: &[&str]) -> Output {
    support::run_with_timeout(dvm.tool("pspawn").args(args).stdin(Stdio::null()), 60)
}

/// `pwatch --status --json ARGS` on `dvm`: the one document.
fn status(dvm: &Pdvm, args: &[&str]) -> Value {
    let o = support::run_with_timeout(
        dvm.tool("pwatch")
            .args(["--status", "--json"])
            .args(args)
            .stdin(Stdio::null()),
        30,
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    serde_json::from_str(text(&o.stdout).trim()).expect("one JSON document")
}

/// `pspawn -J solver` was refused ("not passed to the DVM yet"); now the
/// name shows in pwatch's namespace table, in JSON and in the table.
#[test]
fn job_name_shows_in_pwatch() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let o = pspawn(&dvm, &["-J", "solver", "--detach", "sleep", "30"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let ns = text(&o.stdout).trim().to_string();
    let v = status(&dvm, &["--what", "namespaces"]);
    let row = v["namespaces"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["nspace"] == ns.as_str()).cloned())
        .unwrap_or_else(|| panic!("{ns} not listed: {v}"));
    assert_eq!(row["name"], "solver", "{v}");
    let o = support::run_with_timeout(
        dvm.tool("pwatch")
            .args(["--status", "--what", "namespaces"])
            .stdin(Stdio::null()),
        30,
    );
    let table = text(&o.stdout);
    let line = table
        .lines()
        .find(|l| l.contains(&ns))
        .unwrap_or_else(|| panic!("{ns} not in the table:\n{table}"));
    assert!(line.contains("solver"), "{table}");
    assert!(
        table.lines().next().unwrap_or("").contains("NAME"),
        "{table}"
    );
    let o = pspawn(&dvm, &["--job-name", "", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let o = pspawn(&dvm, &["--job-name=nightly", "sh", "-c", "echo ok"]);
    assert_eq!(text(&o.stdout).trim(), "ok", "{}", show(&o));
}

/// `--stdin all` was refused ("not a stdin target here"); now, as prun's,
/// every rank reads the same input.
#[test]
fn stdin_all_reaches_every_rank() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let mut c = dvm.tool("pspawn");
    c.args(["-n", "2", "--stdin", "all", "--tag-output", "sh", "-c"])
        .arg("read line; echo got-$line");
    let o = crate::habits::run_with_input(&mut c, b"hello\n", 60);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["[0] got-hello", "[1] got-hello"], "{}", show(&o));
    // The default is still rank 0 alone: rank 1 reads end of file.
    let mut c = dvm.tool("pspawn");
    c.args(["-n", "2", "--tag-output", "sh", "-c"])
        .arg("read line; echo got-$line");
    let o = crate::habits::run_with_input(&mut c, b"hello\n", 60);
    let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["[0] got-hello", "[1] got-"], "{}", show(&o));
}

/// `-c 2` was refused ("not passed to the DVM yet"); now each process takes
/// two slots (PMIX_CPUS_PER_PROC): two ranks on two 2-slot nodes land one a
/// node (without -c both fit on the first), and a third does not fit.
#[test]
fn cpus_per_task_takes_that_many_slots() {
    let dvm = Pdvm::start(&["--nodes", "2", "--slots", "2"]);
    let hosts = |args: &[&str]| {
        let mut a = vec!["-n", "2", "-l"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["sh", "-c", "echo $PMIX_HOSTNAME"]);
        let o = pspawn(&dvm, &a);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
        lines.sort();
        lines
    };
    assert_eq!(hosts(&[]), ["[0] n001", "[1] n001"]);
    assert_eq!(hosts(&["-c", "2"]), ["[0] n001", "[1] n002"]);
    assert_eq!(hosts(&["--cpus-per-task=2"]), ["[0] n001", "[1] n002"]);
    // prun's spelling, the PE=N modifier, means the same.
    assert_eq!(hosts(&["--map-by", "slot:PE=2"]), ["[0] n001", "[1] n002"]);
    let o = pspawn(&dvm, &["-n", "3", "-c", "2", "true"]);
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stderr).contains("slots"), "{}", show(&o));
    // While a -c 2 job runs, pwatch counts both of its slots.
    let o = pspawn(&dvm, &["-c", "2", "--detach", "sleep", "30"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = status(&dvm, &["--what", "nodes"]);
    let used: u64 = v["nodes"]
        .as_array()
        .map(|a| a.iter().filter_map(|n| n["slots_used"].as_u64()).sum())
        .unwrap_or(0);
    assert_eq!(used, 2, "{v}");
    let o = pspawn(&dvm, &["-c", "0", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}
