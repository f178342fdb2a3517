//! Issue 29, point 3: `pspawn --stdin-tasks [N]` runs the tasks an
//! orchestrator writes on its stdin (one JSON object a line) over one
//! connection, at most N at once, and writes one JSON result per task
//! as each ends, while its input stays open.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support;
use crate::support::array::{intervals, most_at_once, stamping_task};
use crate::support::pdvm::Pdvm;
use crate::support::{json_records, show, text, LineReader};

/// Run `cmd` with `input` on its stdin (bounded): through `sh`, since
/// the bounded runner gives its command /dev/null.
fn run_with_input(cmd: &Command, input: &str) -> Output {
    let dir = support::unique_tmpdir("stdin-tasks-in");
    let path = dir.path().join("input");
    std::fs::write(&path, input).expect("write input");
    let mut sh = Command::new("sh");
    sh.args(["-c", "f=$1; shift; exec \"$@\" < \"$f\"", "sh"])
        .arg(&path)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    support::run_with_timeout(&mut sh, 120)
}

/// A task line: `id` and `argv`.
fn line(id: &str, argv: &[&str]) -> String {
    serde_json::json!({ "id": id, "argv": argv }).to_string()
}

#[test]
fn each_line_runs_once_and_its_result_names_its_id_and_status() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    let input = [
        line("ok", &["sh", "-c", "echo hi $K"]).replace("\"id\"", "\"env\":{\"K\":\"v\"},\"id\""),
        "not json".to_string(),
        line("bad", &["sh", "-c", "exit 3"]),
    ]
    .join("\n");
    let o = run_with_input(pdvm.tool("pspawn").arg("--stdin-tasks"), &input);
    let recs = json_records(&text(&o.stdout));
    let result = |id: &str| {
        recs.iter()
            .find(|r| r["type"] == "array_task" && r["id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {}", show(&o)))
    };
    assert_eq!(result("ok")["exit_code"], 0);
    assert_eq!(result("bad")["exit_code"], 3);
    let ok_ns = result("ok")["nspace"].clone();
    assert!(
        recs.iter()
            .any(|r| r["type"] == "output" && r["nspace"] == ok_ns && r["line"] == "hi v"),
        "its output names its namespace: {}",
        show(&o)
    );
    let unparsed = recs
        .iter()
        .find(|r| r["type"] == "array_task" && r["index"] == 2);
    assert_eq!(
        unparsed.map(|r| r["exit_code"].clone()),
        Some(2.into()),
        "{}",
        show(&o)
    );
    assert!(
        text(&o.stderr).contains("input line 2: not a task"),
        "{}",
        show(&o)
    );
    assert!(
        text(&o.stderr).contains("2 of 3 tasks failed: exit 2: id 2; exit 3: id 3"),
        "{}",
        show(&o)
    );
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
}

#[test]
fn no_more_than_n_stdin_tasks_run_at_once() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--slots", "8"]);
    let dir = support::unique_tmpdir("stdin-tasks-limit");
    let d = dir.path().to_string_lossy().into_owned();
    let body = stamping_task("0.3");
    let input: Vec<String> = (1..=8)
        .map(|i| {
            serde_json::json!({
                "id": i,
                "argv": ["sh", "-c", body, "task", d],
                "env": { "PMIX_ARRAY_TASK_ID": i.to_string() },
            })
            .to_string()
        })
        .collect();
    let o = run_with_input(
        pdvm.tool("pspawn").args(["--stdin-tasks", "2"]),
        &input.join("\n"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let spans = intervals(dir.path());
    assert_eq!(spans.len(), 8, "every task ran: {spans:?}");
    assert!(most_at_once(&spans) <= 2, "at most 2 at once: {spans:?}");
}

#[test]
fn each_result_comes_as_its_task_ends_while_stdin_stays_open() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    let mut child = pdvm
        .tool("pspawn")
        .arg("--stdin-tasks")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pspawn");
    let mut input = child.stdin.take().expect("stdin");
    let out = LineReader::new(child.stdout.take().expect("stdout"));
    for id in ["first", "second"] {
        writeln!(input, "{}", line(id, &["echo", id])).expect("write a task");
        input.flush().expect("flush");
        let result = loop {
            let l = out
                .next_line(Duration::from_secs(60))
                .unwrap_or_else(|| panic!("no result for {id} while stdin is open"));
            let v: serde_json::Value = serde_json::from_str(&l).expect("a JSON line");
            if v["type"] == "array_task" {
                break v;
            }
        };
        assert_eq!(result["id"], id);
        assert_eq!(result["exit_code"], 0);
    }
    drop(input);
    let status = support::wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "ends with its input");
}

#[test]
fn a_task_whose_program_is_missing_fails_alone() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    let input = [
        line("missing", &["/no/such/program"]),
        line("after", &["echo", "still"]),
    ]
    .join("\n");
    let o = run_with_input(pdvm.tool("pspawn").arg("--stdin-tasks"), &input);
    let recs = json_records(&text(&o.stdout));
    let code = |id: &str| {
        recs.iter()
            .find(|r| r["type"] == "array_task" && r["id"] == id)
            .map(|r| r["exit_code"].clone())
    };
    assert_eq!(
        code("missing"),
        Some(5.into()),
        "refused NOT_FOUND: {}",
        show(&o)
    );
    assert_eq!(
        code("after"),
        Some(0.into()),
        "the next task still runs: {}",
        show(&o)
    );
    assert!(
        text(&o.stderr).contains("input line 1 was not launched"),
        "{}",
        show(&o)
    );
}

/// Issue 45: a task whose request is over the 16 MiB a DVM takes (an argv
/// of 17 MiB) made pdvm close the connection: pspawn blamed the DVM
/// ("refused … PMIX_ERR_LOST_CONNECTION"), launched no later line, and the
/// tasks already running lost their output and records. Now that task
/// alone fails, before anything is sent, saying why; the others run.
#[test]
fn a_task_over_the_request_limit_fails_alone_and_the_stream_goes_on() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    let big = "x".repeat(17 * 1024 * 1024);
    let input = [
        line("one", &["echo", "first"]),
        line("big", &["echo", &big]),
        line("three", &["echo", "third"]),
    ]
    .join("\n")
        + "\n";
    let mut c = pdvm.tool("pspawn");
    c.args(["--json", "--stdin-tasks", "4"]);
    let o = run_with_input(&c, &input);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("input line 2 was not launched: the request is"),
        "{err}"
    );
    assert!(err.contains("it was not sent"), "{err}");
    assert!(!err.contains("LOST_CONNECTION"), "{err}");
    let recs = json_records(&text(&o.stdout));
    let task = |id: &str| {
        recs.iter()
            .find(|r| r["type"] == "array_task" && r["id"] == id)
            .unwrap_or_else(|| panic!("no record of {id}: {err}"))
            .clone()
    };
    assert_eq!(task("one")["exit_code"], 0);
    assert_eq!(task("three")["exit_code"], 0);
    assert_eq!(task("big")["exit_code"], 2);
    let lines: Vec<&serde_json::Value> = recs.iter().filter(|r| r["type"] == "output").collect();
    let said: Vec<&str> = lines.iter().filter_map(|r| r["line"].as_str()).collect();
    assert!(
        said.contains(&"first") && said.contains(&"third"),
        "{said:?}"
    );
}

/// Issue 45: the DVM goes away while tasks run. pspawn returned at once
/// ("lost the DVM"), and the tasks in flight had no record. Now each gets
/// its record (3, the connection's class) and the message says the DVM
/// is gone and their end unknown.
#[test]
fn when_the_dvm_goes_every_task_in_flight_gets_its_record() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    let mut child = pdvm
        .tool("pspawn")
        .args(["--json", "--stdin-tasks"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pspawn");
    let mut input = child.stdin.take().expect("stdin");
    let out = LineReader::new(child.stdout.take().expect("stdout"));
    let err = LineReader::new(child.stderr.take().expect("stderr"));
    for id in ["a", "b"] {
        writeln!(
            input,
            "{}",
            line(id, &["sh", "-c", "echo up; exec sleep 30"])
        )
        .expect("write");
    }
    input.flush().expect("flush");
    let mut ups = 0;
    while ups < 2 {
        let l = out
            .next_line(Duration::from_secs(60))
            .expect("both tasks say they are up");
        ups += usize::from(l.contains("\"line\":\"up\""));
    }
    // The DVM dies (it does not end its jobs first, as a SIGTERM would).
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pdvm.pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill pdvm");
    let status = support::wait_exit(&mut child, Duration::from_secs(60));
    let said = err.rest(Duration::from_secs(5));
    assert_eq!(status.code(), Some(3), "{said}");
    assert!(said.contains("lost the DVM"), "{said}");
    let rest = out.rest(Duration::from_secs(5));
    let recs = json_records(&rest);
    for id in ["a", "b"] {
        let r = recs
            .iter()
            .find(|r| r["type"] == "array_task" && r["id"] == id)
            .unwrap_or_else(|| panic!("no record of {id}: {rest}\n{said}"));
        assert_eq!(r["exit_code"], 3, "{r}");
    }
    drop(input);
}
