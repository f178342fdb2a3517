//! `palloc --stdin-requests` (issue 42): one palloc submitting a batch job
//! per line of stdin, each answered by one JSON line on stdout (the request
//! record, or the error record with the exit code `palloc --no-wait` would
//! end with); a line that is not a JSON array of palloc's arguments is
//! refused with the valid form; end of input ends it; the jobs it submitted
//! go on without it, each held by its detached palloc; while it runs, each
//! job's end is said unasked with its batch record. On pdvm.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::wait;
use serde_json::Value;

/// `script` as `dir/name`, executable.
pub(crate) fn script(dir: &Path, name: &str, body: &str) {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// A job script `name` in `dir` that waits until the file it returns
/// (the gate) exists, then runs `then`.
pub(crate) fn gated_script(dir: &Path, name: &str, then: &str) -> std::path::PathBuf {
    let gate = dir.join(format!("{name}.gate"));
    script(
        dir,
        name,
        &format!(
            "while [ ! -e {} ]; do sleep 0.05; done\n{then}",
            gate.display()
        ),
    );
    gate
}

/// `palloc --stdin-requests` on `pdvm`, working in `dir`, its stdin and
/// stdout piped.
pub(crate) fn agent(pdvm: &Pdvm, dir: &Path) -> Child {
    pdvm.tool("palloc")
        .arg("--stdin-requests")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start palloc --stdin-requests")
}

/// The agent's status once it has ended, its input closed (at most 60 s;
/// killed and a panic past that).
pub(crate) fn agent_ended(agent: &mut Child) -> std::process::ExitStatus {
    let mut status = None;
    let ended = wait::within(Duration::from_secs(60), || {
        status = agent.try_wait().expect("try_wait");
        status.is_some()
    });
    if !ended {
        let _ = agent.kill();
        panic!("palloc --stdin-requests did not end at the end of its input");
    }
    status.expect("ended")
}

/// The agent's answers once its input (`lines`) has ended and it has
/// exited (at most 60 s): its exit code and its stdout's JSON lines.
fn serve(mut agent: Child, lines: &[&str]) -> (Option<i32>, Vec<Value>) {
    {
        let mut stdin = agent.stdin.take().expect("agent stdin");
        for l in lines {
            writeln!(stdin, "{l}").expect("write a request line");
        }
    }
    let status = agent_ended(&mut agent);
    let out = agent.wait_with_output().expect("agent output");
    let answers = support::text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    (status.code(), answers)
}

#[test]
fn each_line_is_answered_refusals_and_bad_lines_included_and_jobs_outlive_the_agent() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let dir = support::unique_tmpdir("stdin-requests");
    let gate = gated_script(dir.path(), "job.sh", "echo finished");
    let agent = agent(&pdvm, dir.path());
    let (code, answers) = serve(
        agent,
        &[
            r#"["-J","first","-N","1","--","./job.sh"]"#,
            r#"["-J","huge","-N","99","--","./job.sh"]"#,
            "not a list",
            r#"["-J","noscript","-N","1"]"#,
            r#"["-J","second","-N","1","--","./job.sh"]"#,
        ],
    );
    assert_eq!(code, Some(0), "end of input ends the agent: {answers:?}");
    assert_eq!(answers.len(), 5, "one answer a line: {answers:?}");
    for (i, rid) in [(0, "first"), (4, "second")] {
        assert_eq!(answers[i]["type"], "request", "{answers:?}");
        assert_eq!(answers[i]["request_id"], rid, "{answers:?}");
        assert_eq!(answers[i]["state"], "submitted", "{answers:?}");
    }
    // refused by the scheduler: what `palloc --no-wait` exits with (4)
    assert_eq!(answers[1]["type"], "error", "{answers:?}");
    assert_eq!(answers[1]["exit_code"], 4, "{answers:?}");
    assert_eq!(
        answers[1]["status"], "PMIX_ERR_OUT_OF_RESOURCE",
        "{answers:?}"
    );
    assert!(
        answers[1]["message"].as_str().unwrap().contains("huge"),
        "{answers:?}"
    );
    // bad lines: a usage error naming the valid form
    for i in [2, 3] {
        assert_eq!(answers[i]["type"], "error", "{answers:?}");
        assert_eq!(answers[i]["exit_code"], 2, "{answers:?}");
        let msg = answers[i]["message"].as_str().unwrap();
        assert!(msg.contains(r#"["-J","job1","-N","1","--","#), "{msg}");
    }
    // the agent has ended; its jobs wait for the gate, then end as batch jobs do
    std::fs::write(&gate, "").unwrap();
    for rid in ["first", "second"] {
        let log = dir.path().join(format!("palloc-{rid}.out"));
        let mut got = String::new();
        let ended = wait::within(Duration::from_secs(60), || {
            got = std::fs::read_to_string(&log).unwrap_or_default();
            got.contains("exited with status")
        });
        assert!(ended, "{rid} did not end: {got}");
        assert!(got.contains("finished"), "{got}");
        assert!(got.contains("./job.sh exited with status 0"), "{got}");
    }
}

#[test]
fn without_a_dvm_each_line_gets_the_connection_failure_and_its_exit_code() {
    let empty = support::unique_tmpdir("stdin-requests-nodvm");
    let dir = support::unique_tmpdir("stdin-requests-nodvm-cwd");
    script(dir.path(), "job.sh", "true");
    let mut c = support::tool(&support::tool::Tmpdir(empty.path()), "palloc");
    let agent = c
        .arg("--stdin-requests")
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start palloc --stdin-requests");
    let (code, answers) = serve(
        agent,
        &[
            r#"["-J","a","--","./job.sh"]"#,
            r#"["-J","b","--","./job.sh"]"#,
        ],
    );
    assert_eq!(code, Some(0), "{answers:?}");
    assert_eq!(answers.len(), 2, "{answers:?}");
    for a in &answers {
        assert_eq!(a["type"], "error", "{answers:?}");
        assert_eq!(a["exit_code"], 3, "cannot connect: {answers:?}");
    }
}

/// The next JSON line of the agent's stdout (read by a thread into `lines`),
/// or a panic naming `what` after 60 s.
fn next_line(lines: &std::sync::mpsc::Receiver<String>, what: &str, seen: &[Value]) -> Value {
    let line = lines
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("no line for {what} ({e}); so far: {seen:?}"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

#[test]
fn while_the_agent_runs_each_jobs_end_is_said_with_its_batch_record() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let dir = support::unique_tmpdir("stdin-requests-ends");
    script(dir.path(), "ok.sh", "echo fine");
    let gate = gated_script(dir.path(), "three.sh", "exit 3");
    let mut agent = agent(&pdvm, dir.path());
    let out = agent.stdout.take().expect("agent stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let mut stdin = agent.stdin.take().expect("agent stdin");
    let mut seen = Vec::new();
    // one job at a time: its answer, then (the agent still reading) its end
    writeln!(stdin, r#"["-J","ok","-N","1","--","./ok.sh"]"#).unwrap();
    seen.push(next_line(&lines, "ok's answer", &seen));
    assert_eq!(seen[0]["type"], "request", "{seen:?}");
    assert_eq!(seen[0]["request_id"], "ok", "{seen:?}");
    seen.push(next_line(&lines, "ok's end, unasked", &seen));
    assert_eq!(seen[1]["type"], "batch", "{seen:?}");
    assert_eq!(seen[1]["request_id"], "ok", "{seen:?}");
    assert_eq!(seen[1]["state"], "exited", "{seen:?}");
    assert_eq!(seen[1]["exit_code"], 0, "{seen:?}");
    writeln!(stdin, r#"["-J","three","-N","1","--","./three.sh"]"#).unwrap();
    seen.push(next_line(&lines, "three's answer", &seen));
    assert_eq!(seen[2]["type"], "request", "{seen:?}");
    assert_eq!(seen[2]["request_id"], "three", "{seen:?}");
    // its end comes once the script has ended, not before
    std::fs::write(&gate, "").unwrap();
    seen.push(next_line(&lines, "three's end, unasked", &seen));
    assert_eq!(seen[3]["type"], "batch", "{seen:?}");
    assert_eq!(seen[3]["request_id"], "three", "{seen:?}");
    assert_eq!(seen[3]["state"], "exited", "{seen:?}");
    assert_eq!(seen[3]["exit_code"], 3, "{seen:?}");
    assert!(
        seen[3]["log"]
            .as_str()
            .is_some_and(|l| l.ends_with("palloc-three.out")),
        "{seen:?}"
    );
    assert!(
        agent.try_wait().expect("try_wait").is_none(),
        "the agent runs on while its input is open: {seen:?}"
    );
    drop(stdin);
    let ended = wait::within(Duration::from_secs(60), || {
        agent.try_wait().expect("try_wait").is_some()
    });
    assert!(ended, "end of input ends the agent");
}
