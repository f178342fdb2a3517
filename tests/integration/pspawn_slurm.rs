//! Issue 17, the rest of srun's spellings on pspawn against pdvm: `-J`
//! names the job in pwatch's namespace table, `--stdin all` feeds every
//! rank, `-c` gives each process that many slots, and `-N` outside any
//! allocation reserves nodes for the job alone and gives them back.

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::{show, text, tool, wait};

use serde_json::Value;
use std::process::{Output, Stdio};
use std::time::Duration;

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

/// The reservations pwatch lists (none once a `pspawn -N` has ended).
fn reservations(dvm: &Pdvm) -> Vec<Value> {
    status(dvm, &["--what", "reservations"])["reservations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Whether `cond` (it runs a tool) holds within 30 s, polled every 50 ms.
fn within_30s(cond: impl FnMut() -> bool) -> bool {
    wait::within_every(Duration::from_secs(30), Duration::from_millis(50), cond)
}

/// Sorted output lines.
fn sorted_lines(o: &Output) -> Vec<String> {
    let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    lines.sort();
    lines
}

/// `pspawn -N 2` outside any allocation said "not a pspawn option yet";
/// now, as `srun -N2` outside salloc, it reserves two nodes for the job,
/// runs one process on each, and gives them back at the end.
#[test]
fn nodes_outside_an_allocation_reserve_for_the_job_and_give_back() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "3"]);
    let o = pspawn(&dvm, &["-N", "2", "-v", "sh", "-c", "echo $PMIX_HOSTNAME"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let nodes = sorted_lines(&o);
    assert_eq!(nodes.len(), 2, "{}", show(&o));
    assert_ne!(nodes[0], nodes[1], "two distinct nodes: {}", show(&o));
    assert!(
        text(&o.stderr).contains("reserved allocation"),
        "{}",
        show(&o)
    );
    assert!(reservations(&dvm).is_empty(), "{:?}", reservations(&dvm));
    // -n 4 over -N 2: both nodes used, two processes each.
    let o = pspawn(
        &dvm,
        &["-N", "2", "-n", "4", "sh", "-c", "echo $PMIX_HOSTNAME"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut seen = sorted_lines(&o);
    seen.dedup();
    assert_eq!(seen.len(), 2, "{}", show(&o));
    assert!(reservations(&dvm).is_empty(), "{:?}", reservations(&dvm));
}

/// Every way a `pspawn -N` can fail after reserving leaves nothing
/// reserved: a spawn the DVM refuses, a program that is not there, and
/// SIGTERM to pspawn while the job runs.
#[test]
fn nodes_outside_an_allocation_leave_nothing_on_failure() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "1", "--scheduler-nodes", "3"]);
    // Five processes on two one-slot nodes: the DVM refuses to map them.
    let o = pspawn(&dvm, &["-N", "2", "-n", "5", "true"]);
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    assert!(reservations(&dvm).is_empty(), "{:?}", reservations(&dvm));
    let o = pspawn(&dvm, &["-N", "1", "/surely/not/here"]);
    assert_eq!(o.status.code(), Some(5), "{}", show(&o));
    assert!(reservations(&dvm).is_empty(), "{:?}", reservations(&dvm));
    let mut child = dvm
        .tool("pspawn")
        .args(["-N", "2", "sleep", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pspawn");
    let running = || {
        status(&dvm, &["--what", "namespaces"])["namespaces"]
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r["command"] == "sleep 60"))
    };
    assert!(within_30s(running), "the job never ran");
    assert_eq!(reservations(&dvm).len(), 1, "reserved while it runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let st = support::wait_exit(&mut child, std::time::Duration::from_secs(30));
    assert_eq!(st.code(), Some(143), "exit on SIGTERM");
    assert!(reservations(&dvm).is_empty(), "{:?}", reservations(&dvm));
}

/// The DVM going away while a `pspawn -N` job runs takes the reservation
/// with it: pspawn ends (no hang, no output claimed complete) and says the
/// job was lost, without a `prelease` to type.
#[test]
fn nodes_outside_an_allocation_end_when_the_dvm_goes() {
    let mut dvm = Pdvm::start(&["--nodes", "1", "--slots", "1", "--scheduler-nodes", "2"]);
    let child = dvm
        .tool("pspawn")
        .args(["-N", "1", "sleep", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pspawn");
    assert!(
        within_30s(|| !reservations(&dvm).is_empty()),
        "nothing was reserved"
    );
    dvm.terminate();
    let o = support::wait_output(child, std::time::Duration::from_secs(60));
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    assert!(!text(&o.stderr).contains("prelease"), "{}", show(&o));
}

/// Inside an allocation, -N is the node count: `palloc -N 2 -- pspawn -N 1
/// -n 2` runs both processes on one node of the two; -N 3 is refused.
#[test]
fn nodes_inside_an_allocation_is_the_node_count() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "3"]);
    let palloc = |inner: &[&str]| {
        let mut c = dvm.tool("palloc");
        c.args(["-N", "2", "--", "pspawn"])
            .args(inner)
            .stdin(Stdio::null());
        support::run_with_timeout(&mut c, 60)
    };
    let o = palloc(&["-N", "1", "-n", "2", "sh", "-c", "echo $PMIX_HOSTNAME"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut seen = sorted_lines(&o);
    assert_eq!(seen.len(), 2, "{}", show(&o));
    seen.dedup();
    assert_eq!(seen.len(), 1, "one node: {}", show(&o));
    let o = palloc(&["-N", "2", "sh", "-c", "echo $PMIX_HOSTNAME"]);
    let mut seen = sorted_lines(&o);
    seen.dedup();
    assert_eq!(seen.len(), 2, "one on each: {}", show(&o));
    let o = palloc(&["-N", "3", "true"]);
    assert_eq!(o.status.code(), Some(4), "{}", show(&o));
    assert!(text(&o.stderr).contains("holds 2 node"), "{}", show(&o));
    assert!(reservations(&dvm).is_empty(), "{:?}", reservations(&dvm));
}

/// On PRRTE master without a scheduler, `pspawn -N 2` cannot get nodes for
/// the job: exit 7 naming the missing scheduler, nothing left reserved (as
/// `palloc -N` there). The other spellings pass through: -J (PRRTE ignores
/// the name), -c 1 (PMIX_CPUS_PER_PROC) and --stdin all.
#[test]
fn prrte_master_refuses_nodes_without_a_scheduler() {
    let dvm = support::Prte::start_master();
    let o = support::run_with_timeout(
        tool(&dvm, "pspawn")
            .stdin(Stdio::null())
            .args(["-N", "2", "hostname"]),
        60,
    );
    assert_eq!(o.status.code(), Some(7), "{}\n{}", show(&o), dvm.logs());
    assert!(
        text(&o.stderr).contains("no scheduler is attached"),
        "{}",
        show(&o)
    );
    assert!(o.stdout.is_empty(), "{}", show(&o));
    let o = support::run_with_timeout(
        tool(&dvm, "pwatch").stdin(Stdio::null()).args([
            "--status",
            "--what",
            "reservations",
            "--json",
        ]),
        60,
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let left = support::json_records(&text(&o.stdout));
    assert!(left.is_empty(), "reservations left behind: {left:?}");
    let o = support::run_with_timeout(
        tool(&dvm, "pspawn")
            .stdin(Stdio::null())
            .args(["-J", "named", "-c", "1", "sh", "-c", "echo ok"]),
        60,
    );
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), dvm.logs());
    assert_eq!(text(&o.stdout).trim(), "ok", "{}", show(&o));
    let mut c = tool(&dvm, "pspawn");
    c.stdin(Stdio::null())
        .args(["-n", "2", "--stdin", "all", "--tag-output", "sh", "-c"])
        .arg("read line; echo got-$line");
    let o = crate::habits::run_with_input(&mut c, b"hello\n", 60);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), dvm.logs());
    let lines = sorted_lines(&o);
    assert_eq!(lines, ["[0] got-hello", "[1] got-hello"], "{}", show(&o));
}

/// More nodes than the DVM can grant: refused (exit 4) saying so, before
/// anything runs, and nothing reserved.
#[test]
fn nodes_beyond_what_the_dvm_grants_are_refused() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "1", "--scheduler-nodes", "2"]);
    let o = pspawn(&dvm, &["-N", "3", "echo", "ran"]);
    assert_eq!(o.status.code(), Some(4), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("cannot reserve 3 node"),
        "{}",
        show(&o)
    );
    assert!(o.stdout.is_empty(), "{}", show(&o));
    assert!(reservations(&dvm).is_empty(), "{:?}", reservations(&dvm));
}

crate::prrte_3_test! {
    /// PRRTE 3.0.14 cannot run a job in a reservation (no PMIX_SPAWN_TARGET):
    /// `pspawn -N 1` is refused (exit 7) before anything is reserved, saying so.
    fn prrte_3_refuses_nodes_before_reserving() {
        let dvm = support::Prte::start();
        let mut c = tool(&dvm, "pspawn");
        c.stdin(Stdio::null()).args(["-N", "1", "hostname"]);
        let o = support::run_with_timeout(&mut c, 60);
        assert_eq!(o.status.code(), Some(7), "{}\n{}", show(&o), dvm.logs());
        let err = text(&o.stderr);
        assert!(
            err.contains("nothing was reserved or launched"),
            "{}",
            show(&o)
        );
        assert!(err.contains("PMIX_SPAWN_TARGET"), "{}", show(&o));
        assert!(o.stdout.is_empty(), "{}", show(&o));
    }
}
