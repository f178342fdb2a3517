//! `palloc --stdin-requests` keeps detached pallocs started ahead (issue
//! 42): before any line, the agent has pallocs of its own waiting for a
//! job; a line's job is held by one of them, runs on after the agent has
//! ended and is listed as any batch job; the ones never given a job end
//! with the agent, leaving no batch record, no allocation and no log. On
//! pdvm.

use std::io::{BufRead, Write};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::palloc_stdin_requests::{agent, agent_ended, gated_script};
use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::wait;
use serde_json::Value;

/// How many pallocs the agent keeps started ahead.
const READY: usize = 2;

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: u32) -> bool {
    support::proc_stat_field(pid, 0).is_none_or(|state| state == "Z")
}

/// The pallocs the agent has started ahead, once [`READY`] of them run
/// (its children running palloc), or a panic after 60 s.
fn started_ahead(agent: &Child) -> Vec<u32> {
    let mut got = Vec::new();
    let ready = wait::within(Duration::from_secs(60), || {
        got = palloc_children(agent);
        got.len() >= READY
    });
    assert!(
        ready,
        "before any line the agent keeps {READY} pallocs started ahead; its palloc children: {got:?}"
    );
    got
}

/// The agent's children running palloc now.
fn palloc_children(agent: &Child) -> Vec<u32> {
    let exe = support::cargo_bin("palloc")
        .canonicalize()
        .expect("palloc's path");
    support::children_of(agent.id())
        .into_iter()
        .filter(|&p| std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == exe))
        .collect()
}

/// The batch records of `pwatch --status --all --json`.
fn batch_records(pdvm: &Pdvm) -> Vec<Value> {
    let mut c = pdvm.tool("pwatch");
    c.args(["--status", "--all", "--json"]);
    let o = support::run_with_timeout(c.stdin(Stdio::null()), 30);
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let doc: Value = serde_json::from_str(support::text(&o.stdout).trim()).expect("one document");
    doc["batch_jobs"].as_array().cloned().unwrap_or_default()
}

/// The agent's exit code once its input has ended (at most 60 s).
fn end_input(agent: &mut Child) -> Option<i32> {
    drop(agent.stdin.take());
    agent_ended(agent).code()
}

#[test]
fn a_job_is_held_by_a_palloc_started_ahead_and_outlives_the_agent() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let dir = support::unique_tmpdir("standby-job");
    let gate = gated_script(dir.path(), "job.sh", "echo finished");
    let mut agent = agent(&pdvm, dir.path());
    let ahead = started_ahead(&agent);
    let mut out = std::io::BufReader::new(agent.stdout.take().expect("agent stdout"));
    writeln!(
        agent.stdin.as_mut().expect("agent stdin"),
        r#"["-J","held","-N","1","--","./job.sh"]"#
    )
    .unwrap();
    let mut line = String::new();
    out.read_line(&mut line).expect("the line's answer");
    let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(answer["type"], "request", "{answer}");
    assert_eq!(answer["request_id"], "held", "{answer}");
    assert_eq!(answer["state"], "submitted", "{answer}");
    let record = |state: &str| {
        let mut rec = Value::Null;
        let seen = wait::within(Duration::from_secs(60), || {
            rec = batch_records(&pdvm)
                .into_iter()
                .find(|b| b["request_id"] == "held")
                .unwrap_or(Value::Null);
            rec["state"] == state
        });
        assert!(seen, "held's batch record never {state}: {rec}");
        rec
    };
    let running = record("running");
    let holder = running["palloc_pid"].as_u64().expect("its palloc's pid") as u32;
    assert!(
        ahead.contains(&holder),
        "held's palloc ({holder}) is one started ahead ({ahead:?}): {running}"
    );
    let unused: Vec<u32> = palloc_children(&agent)
        .into_iter()
        .filter(|&p| p != holder)
        .collect();
    assert_eq!(end_input(&mut agent), Some(0));
    // the agent has gone: the job runs on in its palloc, the unused ones end
    assert!(!ended(holder), "held's palloc ended with the agent");
    for p in unused {
        let gone = wait::within(Duration::from_secs(30), || ended(p));
        assert!(
            gone,
            "a palloc started ahead but unused ({p}) outlived the agent"
        );
    }
    assert_eq!(record("running")["palloc_pid"], running["palloc_pid"]);
    std::fs::write(&gate, "").unwrap();
    let done = record("exited");
    assert_eq!(done["exit_code"], 0, "{done}");
    let log = std::fs::read_to_string(dir.path().join("palloc-held.out")).unwrap_or_default();
    assert!(log.contains("finished"), "{log}");
    assert!(log.contains("./job.sh exited with status 0"), "{log}");
}

#[test]
fn pallocs_started_ahead_and_never_used_end_with_the_agent_leaving_nothing() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let dir = support::unique_tmpdir("standby-unused");
    let mut agent = agent(&pdvm, dir.path());
    let ahead = started_ahead(&agent);
    let mut out = agent.stdout.take().expect("agent stdout");
    assert_eq!(end_input(&mut agent), Some(0));
    let mut said = String::new();
    std::io::Read::read_to_string(&mut out, &mut said).unwrap();
    assert_eq!(said, "", "no line, no answer");
    for p in &ahead {
        let gone = wait::within(Duration::from_secs(30), || ended(*p));
        assert!(gone, "the palloc started ahead ({p}) outlived the agent");
    }
    assert_eq!(batch_records(&pdvm), Vec::<Value>::new(), "no batch record");
    assert_eq!(pdvm.reservations(), Vec::<Value>::new(), "no allocation");
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(files.is_empty(), "no log: {files:?}");
}

/// The session process `pid` is in.
fn session_of(pid: u32) -> Option<u32> {
    support::proc_stat_field(pid, 3)?.parse().ok()
}

/// What process `pid`'s descriptors name.
fn descriptors_of(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .map(|t| t.display().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A palloc started ahead is from its start a detached palloc as one
/// started for a job is: a session of its own (a Ctrl-C or hang-up for
/// the agent's terminal never reaches the jobs it will hold) and none of
/// the descriptors the agent's caller left open.
#[test]
fn pallocs_started_ahead_have_their_own_session_and_none_of_the_callers_descriptors() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let dir = support::unique_tmpdir("standby-session");
    let mut c = support::command_like(&pdvm.tool("palloc"), "sh");
    c.args([
        "-c",
        "exec 7> seven; exec 9< /dev/null; exec palloc --stdin-requests",
    ])
    .current_dir(dir.path())
    .stdin(Stdio::piped())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut agent = c.spawn().expect("start palloc --stdin-requests");
    let agent_session = session_of(agent.id());
    for p in started_ahead(&agent) {
        // (it makes its session first thing: give it a moment)
        let own = wait::within(Duration::from_secs(10), || session_of(p) == Some(p));
        assert!(
            own,
            "palloc {p} started ahead is in session {:?}, the agent's {agent_session:?}",
            session_of(p)
        );
        let fds = descriptors_of(p);
        assert!(!fds.is_empty(), "cannot see palloc {p}'s descriptors");
        assert!(
            !fds.iter().any(|t| t.ends_with("/seven")),
            "the caller's descriptor 7 leaked into palloc {p} started ahead: {fds:?}"
        );
    }
    assert_eq!(end_input(&mut agent), Some(0));
}
