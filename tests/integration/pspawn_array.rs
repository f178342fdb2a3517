//! Issue 29: `pspawn --array SPEC` runs the app once per index over one
//! connection, at most `%N` at once, each task with its index in its
//! environment and its own `%a` files; failures are counted in the exit
//! and the summary; a signal stops every task in flight.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support;
use crate::support::array::{gated_task, intervals, most_at_once, stamping_task, started};
use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{json_records, show, text, tool, Prte};

/// `pspawn` as a user runs it next to a PRRTE DVM, our tools on `PATH`.
fn pspawn_of(dvm: &Prte) -> Command {
    tool(dvm, "pspawn")
}

fn run(cmd: &mut Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 120)
}

/// The sorted lines of `o`'s stdout.
fn sorted_lines(o: &Output) -> Vec<String> {
    let mut l: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    l.sort();
    l
}

#[test]
fn bad_array_forms_are_refused_before_connecting_naming_the_valid_ones() {
    let nowhere = support::unique_tmpdir("array-nodvm");
    for bad in ["5-1", "1-10:0", "1,,3", "1-4%0", "x", "3:2"] {
        let o = run(Command::new(support::cargo_bin("pspawn"))
            .env("TMPDIR", nowhere.path())
            .args(["--array", bad, "true"]));
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", show(&o));
        let err = text(&o.stderr);
        assert!(err.contains("valid forms: 1-1000"), "{bad}: {err}");
        assert!(err.contains("%N"), "{bad}: {err}");
    }
    let o = run(Command::new(support::cargo_bin("pspawn"))
        .env("TMPDIR", nowhere.path())
        .args(["-o", "out-%a", "true"]));
    assert_eq!(o.status.code(), Some(2), "%a without --array: {}", show(&o));
}

#[test]
fn every_index_form_runs_its_tasks_with_their_ids_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "8"]);
    every_index_form_runs_with(|| pdvm.tool("pspawn"));
}

#[test]
fn every_index_form_runs_its_tasks_with_their_ids_on_prrte_master() {
    let dvm = Prte::start_master();
    every_index_form_runs_with(|| pspawn_of(&dvm));
}

/// `--array 10,1-7:3,4`: tasks 1, 4, 7 and 10, each with its ids.
fn every_index_form_runs_with(pspawn: impl Fn() -> Command) {
    let o = run(pspawn().args([
        "--array",
        "10,1-7:3,4",
        "sh",
        "-c",
        "echo t$PMIX_ARRAY_TASK_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT \
$SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        sorted_lines(&o),
        ["t1 1 4 1 10", "t10 10 4 1 10", "t4 4 4 1 10", "t7 7 4 1 10"],
        "{}",
        show(&o)
    );
    let labelled = run(pspawn().args(["--array", "2,5", "-l", "echo", "hi"]));
    assert_eq!(
        sorted_lines(&labelled),
        ["[2] hi", "[5] hi"],
        "{}",
        show(&labelled)
    );
}

#[test]
fn no_more_than_n_tasks_are_ever_in_flight_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--slots", "8"]);
    let dir = support::unique_tmpdir("array-limit");
    let d = dir.path().to_string_lossy().into_owned();
    let body = stamping_task("0.3");
    let o = run(pdvm
        .tool("pspawn")
        .args(["--array", "1-12%3", "sh", "-c", &body, "task", &d]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let spans = intervals(dir.path());
    assert_eq!(spans.len(), 12, "every task ran: {spans:?}");
    let most = most_at_once(&spans);
    assert!(most <= 3, "{most} tasks ran at once with %3: {spans:?}");
    assert!(most >= 2, "the limit is used, not one at a time: {spans:?}");
}

#[test]
fn each_task_writes_its_own_percent_a_files() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    each_task_writes_its_own_percent_a_files_with(pdvm.tool("pspawn"));
}

#[test]
fn each_task_writes_its_own_percent_a_files_on_prrte_master() {
    let dvm = Prte::start_master();
    each_task_writes_its_own_percent_a_files_with(pspawn_of(&dvm));
}

fn each_task_writes_its_own_percent_a_files_with(mut pspawn: Command) {
    let dir = support::unique_tmpdir("array-files");
    let o = run(pspawn.current_dir(dir.path()).args([
        "--array",
        "1-3%2",
        "-o",
        "out-%a.txt",
        "-e",
        "err-%a.txt",
        "sh",
        "-c",
        "echo o$PMIX_ARRAY_TASK_ID; echo e$PMIX_ARRAY_TASK_ID >&2",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    for i in 1..=3 {
        let read = |n: String| std::fs::read_to_string(dir.path().join(&n)).expect(&n);
        assert_eq!(read(format!("out-{i}.txt")), format!("o{i}\n"));
        assert_eq!(read(format!("err-{i}.txt")), format!("e{i}\n"));
    }
}

/// Issue 40: an array with no `%N` whose tasks end as fast as they start
/// launched on without taking their ends, until the connection's queue
/// (8192 messages) was full: task 8195 "was not launched" (exit 4). All
/// 10,000 run now, each with its record.
#[test]
fn ten_thousand_tasks_without_a_limit_all_run_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "32"]);
    let o = support::run_with_timeout(
        pdvm.tool("pspawn")
            .args(["--json", "--array", "0-9999", "true"])
            .stdin(Stdio::null()),
        300,
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let recs = json_records(&text(&o.stdout));
    let tasks: Vec<_> = recs.iter().filter(|r| r["type"] == "array_task").collect();
    assert_eq!(tasks.len(), 10_000, "{}", text(&o.stderr));
    assert!(tasks.iter().all(|t| t["exit_code"] == 0));
}

#[test]
fn failed_tasks_are_counted_in_the_exit_the_summary_and_the_json() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    let fail_3_and_6 = "exit $((PMIX_ARRAY_TASK_ID % 3 == 0 ? 4 : 0))";
    let o = run(pdvm
        .tool("pspawn")
        .args(["--array", "1-7", "sh", "-c", fail_3_and_6]));
    assert_eq!(o.status.code(), Some(4), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("2 of 7 tasks failed: exit 4: ids 3,6"),
        "{}",
        show(&o)
    );
    let j = run(pdvm
        .tool("pspawn")
        .args(["--json", "--array", "1-7", "sh", "-c", fail_3_and_6]));
    let recs = json_records(&text(&j.stdout));
    let tasks: Vec<_> = recs.iter().filter(|r| r["type"] == "array_task").collect();
    assert_eq!(tasks.len(), 7, "{}", show(&j));
    for t in tasks {
        let want = if t["index"].as_u64().unwrap() % 3 == 0 {
            4
        } else {
            0
        };
        assert_eq!(t["exit_code"], want, "{t}");
        assert!(t["nspace"].as_str().is_some_and(|n| !n.is_empty()), "{t}");
    }
    assert_eq!(j.status.code(), Some(4), "{}", show(&j));
}

#[test]
fn sigterm_stops_every_task_in_flight_and_launches_no_more() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "8"]);
    sigterm_stops_every_task_with(pdvm.tool("pspawn"), 4);
}

#[test]
fn sigterm_stops_every_task_in_flight_on_prrte_master() {
    let dvm = Prte::start_master();
    // The master DVM of the tests has two slots.
    sigterm_stops_every_task_with(pspawn_of(&dvm), 2);
}

/// `--array 1-50%n` stopped by SIGTERM once its first `n` tasks run.
fn sigterm_stops_every_task_with(mut pspawn: Command, n: usize) {
    let dir = support::unique_tmpdir("array-cancel");
    let d = dir.path().to_string_lossy().into_owned();
    let body = stamping_task("300");
    let mut child = pspawn
        .args([
            "--array",
            &format!("1-50%{n}"),
            "sh",
            "-c",
            &body,
            "task",
            &d,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("stderr")).expect("stderr file"))
        .spawn()
        .expect("start pspawn");
    wait::within(Duration::from_secs(60), || started(dir.path()).len() >= n);
    assert_eq!(started(dir.path()).len(), n, "{n} tasks started");
    let pids: Vec<String> = (1..=n)
        .map(|i| std::fs::read_to_string(dir.path().join(format!("{i}.pid"))).expect("pid"))
        .collect();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal pspawn");
    let status = support::wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(143), "interrupted by SIGTERM (128+15)");
    let err = std::fs::read_to_string(dir.path().join("stderr")).expect("stderr");
    assert!(
        err.contains(&format!(
            "{n} tasks in flight were terminated, {} never launched",
            50 - n
        )),
        "{err}"
    );
    assert_eq!(
        started(dir.path()),
        (1..=n as u32).collect::<Vec<_>>(),
        "no task launched after the signal"
    );
    for pid in pids {
        let alive = std::path::Path::new(&format!("/proc/{}", pid.trim())).exists();
        assert!(!alive, "task process {} still runs", pid.trim());
    }
}

#[test]
fn an_array_inside_an_allocation_runs_every_task_there_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let o = run(pdvm.tool("palloc").args([
        "-N",
        "1",
        "--",
        "sh",
        "-c",
        "pspawn --array 1-6%4 sh -c 'echo $PMIX_ALLOC_ID'; echo alloc=$PMIX_ALLOC_ID",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    let alloc = out
        .lines()
        .find_map(|l| l.strip_prefix("alloc="))
        .expect("the allocation's id");
    let tasks: Vec<&str> = out.lines().filter(|l| !l.starts_with("alloc=")).collect();
    assert_eq!(
        tasks,
        vec![alloc; 6],
        "every task in the allocation: {}",
        show(&o)
    );
}

#[test]
fn prelease_of_its_allocation_stops_the_array_and_launches_no_more() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4", "--scheduler-nodes", "2"]);
    let dir = support::unique_tmpdir("array-prelease");
    let d = dir.path().to_string_lossy().into_owned();
    let script = "echo $PMIX_ALLOC_ID > \"$1/alloc\"; \
pspawn --array 1-50%2 sh -c \"$2\" task \"$1\"; echo pspawn=$?";
    let out_file = dir.path().join("palloc.out");
    let mut palloc = pdvm
        .tool("palloc")
        .args(["-t", "1h", "-N", "1", "--", "sh", "-c", script, "sh", &d])
        .arg(gated_task())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).expect("stdout file"))
        .stderr(std::fs::File::create(dir.path().join("palloc.err")).expect("stderr file"))
        .spawn()
        .expect("start palloc");
    wait::within(Duration::from_secs(60), || started(dir.path()).len() >= 2);
    assert_eq!(started(dir.path()), [1, 2], "two tasks run");
    let alloc = std::fs::read_to_string(dir.path().join("alloc")).expect("alloc id");
    let rel = run(pdvm.tool("prelease").arg(alloc.trim()));
    assert_eq!(rel.status.code(), Some(0), "{}", show(&rel));
    support::wait_exit(&mut palloc, Duration::from_secs(60));
    let out = std::fs::read_to_string(&out_file).expect("palloc's stdout");
    let err = std::fs::read_to_string(dir.path().join("palloc.err")).expect("stderr");
    assert!(
        out.contains("pspawn=5"),
        "the array ends refused (NOT_FOUND): {out}\n{err}"
    );
    assert!(err.contains("array task 3 was not launched"), "{err}");
    assert_eq!(
        started(dir.path()),
        [1, 2],
        "no task launched after the release"
    );
    for i in [1, 2] {
        let pid = std::fs::read_to_string(dir.path().join(format!("{i}.pid"))).expect("pid");
        let alive = std::path::Path::new(&format!("/proc/{}", pid.trim())).exists();
        assert!(!alive, "task {i} still runs");
    }
}

#[test]
fn an_array_with_a_limit_runs_every_index_on_prrte_master() {
    a_limited_array_runs_every_index_on(&Prte::start_master());
}

/// `--array 1-6%2` of 0.3 s tasks on `dvm`: all six run, never more than
/// two at once.
fn a_limited_array_runs_every_index_on(dvm: &Prte) {
    let dir = support::unique_tmpdir("array-prte");
    let d = dir.path().to_string_lossy().into_owned();
    let body = stamping_task("0.3");
    let mut cmd = pspawn_of(dvm);
    let o = run(cmd.args(["--array", "1-6%2", "sh", "-c", &body, "task", &d]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), dvm.logs());
    let spans = intervals(dir.path());
    assert_eq!(spans.len(), 6, "every task ran: {spans:?}");
    assert!(most_at_once(&spans) <= 2, "%2 respected: {spans:?}");
}

/// Tasks that fail at once, many at a time: PRRTE master answers the spawn
/// of a job that failed before its answer with a bare `PMIX_ERROR`. Each
/// task still reports its own exit status and every line it wrote.
#[test]
fn tasks_failing_at_once_keep_their_status_and_output_on_prrte_master() {
    let dvm = Prte::start_master();
    let mut cmd = pspawn_of(&dvm);
    let o = run(cmd.args([
        "--array",
        "1-12%4",
        "sh",
        "-c",
        "echo task-$PMIX_ARRAY_TASK_ID; exit 3",
    ]));
    assert_eq!(o.status.code(), Some(3), "{}\n{}", show(&o), dvm.logs());
    let mut want: Vec<String> = (1..=12).map(|i| format!("task-{i}")).collect();
    want.sort();
    assert_eq!(sorted_lines(&o), want, "{}", show(&o));
    assert!(
        text(&o.stderr).contains("12 of 12 tasks failed"),
        "{}",
        show(&o)
    );
}

#[test]
fn failed_tasks_are_counted_on_prrte_master() {
    let dvm = Prte::start_master();
    let mut cmd = pspawn_of(&dvm);
    let o = run(cmd.args([
        "--array",
        "1-4%2",
        "sh",
        "-c",
        "exit $((PMIX_ARRAY_TASK_ID % 2 == 0 ? 3 : 0))",
    ]));
    assert_eq!(o.status.code(), Some(3), "{}\n{}", show(&o), dvm.logs());
    assert!(
        text(&o.stderr).contains("2 of 4 tasks failed: exit 3: ids 2,4"),
        "{}",
        show(&o)
    );
}

#[test]
fn an_array_inside_an_allocation_on_prrte_master_runs_there_waiting_for_busy_slots() {
    let dvm = Prte::start_master();
    let host = support::short_hostname();
    let mut cmd = tool(&dvm, "palloc");
    // More tasks at once than the node has slots: the next waits for one.
    let o = run(cmd.args([
        "-w",
        &host,
        "--",
        "sh",
        "-c",
        "pspawn --array 1-6%6 sh -c 'sleep 0.2; hostname'; echo pspawn=$?",
    ]));
    let out = text(&o.stdout);
    assert!(out.contains("pspawn=0"), "{}\n{}", show(&o), dvm.logs());
    let hosts: Vec<&str> = out.lines().filter(|l| !l.starts_with("pspawn=")).collect();
    assert_eq!(hosts, vec![host.as_str(); 6], "{}", show(&o));
}

#[test]
fn a_batch_array_is_palloc_no_wait_running_pspawn_array() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "1"]);
    let dir = support::unique_tmpdir("array-batch");
    let d = dir.path().to_string_lossy().into_owned();
    let o = run(pdvm.tool("palloc").current_dir(dir.path()).args([
        "--no-wait",
        "-J",
        "arr",
        "-N",
        "1",
        "--",
        "pspawn",
        "--array",
        "1-4%2",
        "sh",
        "-c",
        "echo $PMIX_ALLOC_ID > $0/$PMIX_ARRAY_TASK_ID.done",
        &d,
    ]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "submitted and returned: {}",
        show(&o)
    );
    let alloc_of = |i: u32| {
        let f = dir.path().join(format!("{i}.done"));
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    wait::within(Duration::from_secs(60), || {
        (1..=4).all(|i| !alloc_of(i).is_empty())
    });
    for i in 1..=4 {
        assert!(!alloc_of(i).is_empty(), "task {i} ran in the allocation");
    }
}

/// Tasks that outlive the checks for lost ends (asked after 1 s and 3 s
/// of no task ending) are still running for the DVM: none is taken for
/// ended, and each ends with its own status and output.
fn long_tasks_are_never_taken_for_lost(mut pspawn: Command) {
    let o = run(pspawn.args([
        "-v",
        "--array",
        "1-3",
        "sh",
        "-c",
        "sleep 4.5; echo t$PMIX_ARRAY_TASK_ID; exit $((PMIX_ARRAY_TASK_ID - 1))",
    ]));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(!err.contains("never announced"), "{err}");
    assert!(
        err.contains("2 of 3 tasks failed: exit 1: id 2; exit 2: id 3"),
        "{err}"
    );
    assert_eq!(sorted_lines(&o), ["t1", "t2", "t3"], "{}", show(&o));
}

#[test]
fn long_tasks_are_never_taken_for_lost_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    long_tasks_are_never_taken_for_lost(pdvm.tool("pspawn"));
}

#[test]
fn long_tasks_are_never_taken_for_lost_on_prrte_master() {
    let dvm = Prte::start_master();
    long_tasks_are_never_taken_for_lost(pspawn_of(&dvm));
}

crate::prrte_3_test! {
    fn long_tasks_are_never_taken_for_lost_on_prrte_3_0_14() {
        let dvm = Prte::start();
        long_tasks_are_never_taken_for_lost(pspawn_of(&dvm));
    }
}

crate::prrte_3_test! {
    fn an_array_with_a_limit_runs_every_index_on_prrte_3_0_14() {
        a_limited_array_runs_every_index_on(&Prte::start());
    }
}
