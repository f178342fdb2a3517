//! Batch jobs as sbatch users know them (issue 28, points 3 and 8):
//! `palloc --no-wait -J NAME -- SCRIPT` logs to `palloc-NAME.out`, whose
//! last word is how SCRIPT ended, also listed by `pwatch --status --all`;
//! releasing the allocation or its time limit stops SCRIPT (SIGTERM to its
//! process group, SIGKILL after the grace time) and says so; the log is
//! never a link followed nor another user's file written. On pdvm.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{run_with_timeout, show, text};
use serde_json::Value;

/// `script` as `dir/name`, executable.
fn script(dir: &Path, name: &str, body: &str) {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// `palloc --no-wait --parsable FLAGS -- ./script` run in `dir`.
fn submit(pdvm: &Pdvm, dir: &Path, flags: &[&str], script: &str) -> Output {
    let mut c: Command = pdvm.tool("palloc");
    c.current_dir(dir)
        .args(["--no-wait", "--parsable", "-N", "1"])
        .args(flags)
        .args(["--", script]);
    run_with_timeout(c.stdin(Stdio::null()), 60)
}

/// The log's text once it holds `want` (at most 60 s).
fn log_with(log: &Path, want: &str) -> String {
    let mut got = String::new();
    wait::within(Duration::from_secs(60), || {
        got = std::fs::read_to_string(log).unwrap_or_default();
        got.contains(want)
    });
    got
}

/// The batch record of request `rid` in `pwatch --status --all --json`.
fn batch_record(pdvm: &Pdvm, rid: &str) -> Value {
    let mut c = pdvm.tool("pwatch");
    c.args(["--status", "--all", "--json"]);
    let o = run_with_timeout(c.stdin(Stdio::null()), 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let doc: Value = serde_json::from_str(text(&o.stdout).trim()).expect("one document");
    doc["batch_jobs"]
        .as_array()
        .and_then(|v| v.iter().find(|b| b["request_id"] == rid).cloned())
        .unwrap_or_else(|| panic!("no batch record for {rid}: {doc}"))
}

/// The last non-empty line of `log`.
fn last_line(log: &str) -> &str {
    log.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("")
}

#[test]
fn a_batch_scripts_exit_status_is_in_its_log_named_after_the_request_and_in_pwatch_status() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let dir = support::unique_tmpdir("batch-exit");
    script(dir.path(), "job.sh", "echo working\nexit 3");
    let o = submit(&pdvm, dir.path(), &["-J", "nightly"], "./job.sh");
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let log = log_with(&dir.path().join("palloc-nightly.out"), "exited with status");
    assert!(log.contains("working"), "{log}");
    assert!(
        log.contains("palloc: ./job.sh exited with status 3"),
        "{log}"
    );
    let mut rec = Value::Null;
    wait::within(Duration::from_secs(30), || {
        rec = batch_record(&pdvm, "nightly");
        rec["state"] != "running"
    });
    assert_eq!(rec["state"], "exited", "{rec}");
    assert_eq!(rec["exit_code"], 3, "{rec}");
    assert!(
        rec["signal"].is_null() && rec["stopped_by"].is_null(),
        "{rec}"
    );
    // Without -J the log is named after the generated request id itself.
    script(dir.path(), "ok.sh", "exit 0");
    let o = submit(&pdvm, dir.path(), &[], "./ok.sh");
    let rid = text(&o.stdout).trim().to_string();
    assert!(rid.starts_with("palloc-"), "{}", show(&o));
    let log = log_with(&dir.path().join(format!("{rid}.out")), "exited");
    assert!(
        log.contains("palloc: ./ok.sh exited with status 0"),
        "{log}"
    );
    assert!(!dir.path().join(format!("palloc-{rid}.out")).exists());
}

#[test]
fn releasing_a_running_batch_job_stops_its_script_and_every_process_it_started() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let dir = support::unique_tmpdir("batch-release");
    let pids = dir.path().join("pids");
    script(
        dir.path(),
        "long.sh",
        &format!(
            "sleep 1000 & echo $! > {p}\necho started\nwait\necho not-stopped",
            p = pids.display()
        ),
    );
    let o = submit(&pdvm, dir.path(), &["-J", "long"], "./long.sh");
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let log_path = dir.path().join("palloc-long.out");
    let started = log_with(&log_path, "started");
    assert!(started.contains("started"), "{started}");
    let mut rel = pdvm.tool("prelease");
    rel.arg("long");
    let r = run_with_timeout(rel.stdin(Stdio::null()), 60);
    assert_eq!(r.status.code(), Some(0), "{}", show(&r));
    let log = log_with(&log_path, "was killed by signal");
    assert!(log.contains("was released: stopping ./long.sh"), "{log}");
    assert_eq!(
        last_line(&log),
        "palloc: ./long.sh was killed by signal SIGTERM",
        "{log}"
    );
    assert!(!log.contains("not-stopped"), "{log}");
    let sleeper: i32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = wait_gone(sleeper);
    assert!(gone, "the script's background sleep {sleeper} still runs");
    let rec = batch_record(&pdvm, "long");
    assert_eq!(rec["state"], "killed", "{rec}");
    assert_eq!(rec["signal"], "SIGTERM", "{rec}");
    assert_eq!(rec["stopped_by"], "released", "{rec}");
}

/// Whether process `pid` ends (or is a zombie) within 30 s.
fn wait_gone(pid: i32) -> bool {
    wait::within(Duration::from_secs(30), || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        matches!(state, None | Some("Z"))
    })
}

#[test]
fn a_batch_script_that_ignores_sigterm_is_killed_at_its_time_limit() {
    // One simulated minute passes in a second.
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1", "--time-scale", "60"]);
    let dir = support::unique_tmpdir("batch-limit");
    script(
        dir.path(),
        "stubborn.sh",
        "trap 'echo got-term' TERM\necho started\nwhile :; do sleep 1; done",
    );
    let o = submit(
        &pdvm,
        dir.path(),
        &["-J", "stubborn", "-t", "1"],
        "./stubborn.sh",
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let log = log_with(
        &dir.path().join("palloc-stubborn.out"),
        "was killed by signal",
    );
    assert!(log.contains("reached its time limit: stopping"), "{log}");
    assert!(log.contains("got-term"), "SIGTERM came first: {log}");
    assert_eq!(
        last_line(&log),
        "palloc: ./stubborn.sh was killed by signal SIGKILL",
        "{log}"
    );
    let rec = batch_record(&pdvm, "stubborn");
    assert_eq!(rec["stopped_by"], "time-limit", "{rec}");
    assert_eq!(rec["signal"], "SIGKILL", "{rec}");
}

/// A shared directory (mode 1777, as /tmp) in which user `nobody` put
/// `name`; the file `victim` of ours it may point to.
fn shared_dir_with(tag: &str) -> (support::TempDir, PathBuf) {
    let dir = support::unique_tmpdir(tag);
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o1777),
    )
    .unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    (dir, victim)
}

/// Submitting into `dir` is refused, naming the log, and nothing is queued.
fn assert_refused_untouched(pdvm: &Pdvm, dir: &Path, victim: &Path, theirs: &Path) {
    script(dir, "job.sh", "echo job-output");
    let o = submit(pdvm, dir, &["-J", "nightly"], "./job.sh");
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("palloc-nightly.out"),
        "{}",
        show(&o)
    );
    // Nothing is written for a while after the refusal either.
    let untouched = || {
        std::fs::read_to_string(victim).is_ok_and(|v| v == "precious\n")
            && !std::fs::read_to_string(theirs)
                .unwrap_or_default()
                .contains("job-output")
    };
    assert!(
        wait::holds_for(Duration::from_millis(500), untouched),
        "{} or {} was written after the refusal",
        victim.display(),
        theirs.display()
    );
    assert_eq!(std::fs::read_to_string(victim).unwrap(), "precious\n");
    let theirs_text = std::fs::read_to_string(theirs).unwrap_or_default();
    assert!(!theirs_text.contains("job-output"), "{theirs_text}");
    assert!(pdvm.reservation_ids().is_empty(), "something was submitted");
}

#[test]
fn a_batch_log_never_follows_another_users_symlink() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let (dir, victim) = shared_dir_with("batch-link");
    let link = dir.path().join("palloc-nightly.out");
    let mut ln = Command::new("setpriv");
    ln.args([
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        "ln",
        "-s",
    ])
    .arg(&victim)
    .arg(&link);
    let o = run_with_timeout(ln.stdin(Stdio::null()), 30);
    assert!(o.status.success(), "nobody's symlink: {}", show(&o));
    assert_refused_untouched(&pdvm, dir.path(), &victim, &victim);
}

#[test]
fn a_batch_log_never_writes_into_a_file_another_user_created() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let (dir, victim) = shared_dir_with("batch-precreated");
    let theirs = dir.path().join("palloc-nightly.out");
    let mut touch = Command::new("setpriv");
    touch
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(format!(
            "echo theirs > {} && chmod 666 {0}",
            theirs.display()
        ));
    let o = run_with_timeout(touch.stdin(Stdio::null()), 30);
    assert!(o.status.success(), "nobody's file: {}", show(&o));
    assert_refused_untouched(&pdvm, dir.path(), &victim, &theirs);
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs\n");
}

#[test]
fn cancelling_a_running_batch_job_by_name_stops_it_as_scancel_does() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let dir = support::unique_tmpdir("batch-cancel");
    script(
        dir.path(),
        "long.sh",
        "echo started\nsleep 1000\necho not-stopped",
    );
    let o = submit(&pdvm, dir.path(), &["-J", "running"], "./long.sh");
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let log_path = dir.path().join("palloc-running.out");
    assert!(log_with(&log_path, "started").contains("started"));
    let mut cancel = pdvm.tool("prelease");
    cancel.args(["--cancel", "running"]);
    let c = run_with_timeout(cancel.stdin(Stdio::null()), 60);
    assert_eq!(c.status.code(), Some(0), "{}", show(&c));
    let log = log_with(&log_path, "was killed by signal");
    assert_eq!(
        last_line(&log),
        "palloc: ./long.sh was killed by signal SIGTERM",
        "{log}"
    );
    assert!(
        pdvm.reservation_ids().is_empty(),
        "{:?}",
        pdvm.reservations()
    );
}

#[test]
fn a_batch_job_whose_palloc_was_killed_is_listed_as_lost_not_running() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let dir = support::unique_tmpdir("batch-lost");
    let pid_file = dir.path().join("pid");
    script(
        dir.path(),
        "long.sh",
        &format!("echo $$ > {}\necho started\nsleep 1000", pid_file.display()),
    );
    let o = submit(&pdvm, dir.path(), &["-J", "lost"], "./long.sh");
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let started = log_with(&dir.path().join("palloc-lost.out"), "started");
    assert!(started.contains("started"), "{started}");
    let script_pid: i32 = support::wait_file(&pid_file, Duration::from_secs(20))
        .trim()
        .parse()
        .unwrap();
    let rec = batch_record(&pdvm, "lost");
    assert_eq!(rec["state"], "running", "{rec}");
    let palloc = rec["palloc_pid"].as_i64().expect("palloc_pid") as i32;
    let pid = nix::unistd::Pid::from_raw(palloc);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let lost = wait_gone(palloc);
    let rec = batch_record(&pdvm, "lost");
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(script_pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(lost, "palloc {palloc} did not die");
    assert_eq!(rec["state"], "lost", "{rec}");
}

/// Inside a job (pdvm's main command is a PMIx client of its DVM), `palloc
/// --no-wait -- SCRIPT` is a batch job of its own, as sbatch's inside an
/// salloc: the script runs, its log is written and the batch record lists
/// its status. palloc used to reserve for the job and drop the script.
#[test]
fn a_batch_script_submitted_from_inside_a_job_runs() {
    let tmp = support::unique_tmpdir("batch-in-job");
    script(tmp.path(), "job.sh", "echo ran in $PMIX_ALLOC_ID\nexit 4");
    let main = "palloc --no-wait -J inner -- ./job.sh || exit 10; \
                i=0; while [ $i -lt 300 ] && ! grep -q 'exited with status' palloc-inner.out 2>/dev/null; \
                do sleep 0.1; i=$((i+1)); done; \
                pwatch --status --all --json";
    let mut cmd = Command::new(support::cargo_bin("pdvm"));
    support::scrub_pmix_env(&mut cmd);
    cmd.env("PATH", support::user_path())
        .current_dir(tmp.path())
        .args(["--nodes", "1", "--scheduler-nodes", "2", "--tmpdir"])
        .arg(tmp.path())
        .args(["--", "sh", "-c", main]);
    let out = run_with_timeout(cmd.stdin(Stdio::null()), 90);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let log = std::fs::read_to_string(tmp.path().join("palloc-inner.out")).unwrap_or_default();
    assert!(log.contains("ran in alloc."), "{log}\n{}", show(&out));
    assert!(
        log.contains("palloc: ./job.sh exited with status 4"),
        "{log}"
    );
    let status = text(&out.stdout);
    let doc: Value = status
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|v: &Value| v["type"] == "status")
        .unwrap_or_else(|| panic!("no status document: {status}"));
    let rec = doc["batch_jobs"]
        .as_array()
        .and_then(|v| v.iter().find(|b| b["request_id"] == "inner").cloned())
        .unwrap_or_else(|| panic!("no batch record: {doc}"));
    assert_eq!(rec["exit_code"], 4, "{rec}");
}
