//! `pwatch --status` as a user sees it beside a daemonized pdvm: one JSON
//! document, live jobs only unless `--all`, pwatch never lists itself,
//! NPROCS and ALLOCATIONS filled, structured node states, the scheduler's
//! free nodes, `--state` and `--mine`, `--interval` streams, the live ids
//! the completions ask for, and palloc's one-line "queued" note.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{text, tool};
use serde_json::Value;

fn run(cmd: &mut Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 30)
}

/// `pwatch --status --json ARGS`: exactly one line, one document.
fn status(pdvm: &Pdvm, args: &[&str]) -> Value {
    let o = run(tool(pdvm, "pwatch")
        .env_remove("NO_COLOR")
        .args(["--status", "--json"])
        .args(args));
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 1, "one document on one line: {out}");
    let v: Value = serde_json::from_str(out.trim()).expect("a JSON document");
    assert_eq!(v["type"], "status", "{out}");
    v
}

fn rows<'a>(v: &'a Value, table: &str) -> &'a Vec<Value> {
    v[table]
        .as_array()
        .unwrap_or_else(|| panic!("no {table} array in {v}"))
}

/// `palloc -N 1 --hold` in the background, once its holder serves other
/// shells (it says so on stderr): (child, allocation id).
fn hold(pdvm: &Pdvm) -> (Child, String) {
    let mut child = tool(pdvm, "palloc")
        .env_remove("NO_COLOR")
        .args(["-N", "1", "--hold"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start palloc --hold");
    let err = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("palloc: holding allocation ") {
                let id = rest.split(';').next().unwrap_or_default().to_string();
                let _ = tx.send(id);
            }
        }
    });
    let id = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("palloc --hold never said it holds the allocation");
    (child, id)
}

fn stop(mut child: Child) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let (_, timed_out) = support::wait_until(&mut child, Instant::now() + Duration::from_secs(20));
    assert!(!timed_out, "palloc --hold did not end on SIGTERM");
}

#[test]
fn one_document_no_self_and_the_scheduler_view() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--slots", "2", "--scheduler-nodes", "4"]);
    let v = status(&pdvm, &[]);
    // python3's json.tool accepts it as it is.
    let o = run(tool(&pdvm, "pwatch")
        .env_remove("NO_COLOR")
        .args(["--status", "--json"]));
    let mut py = Command::new("python3")
        .args(["-m", "json.tool"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("python3");
    std::io::Write::write_all(&mut py.stdin.take().unwrap(), &o.stdout).unwrap();
    assert!(
        support::wait_exit(&mut py, Duration::from_secs(30)).success(),
        "json.tool refused {}",
        text(&o.stdout)
    );

    assert!(rows(&v, "reservations").is_empty(), "{v}");
    assert!(
        rows(&v, "namespaces").is_empty(),
        "no job runs: pwatch must not list its own namespace: {v}"
    );
    let nodes = rows(&v, "nodes");
    assert_eq!(nodes.len(), 2, "{v}");
    for n in nodes {
        assert_eq!(n["state"], "idle", "{v}");
        assert_eq!(n["slots"], 2, "{v}");
        assert_eq!(n["slots_used"], 0, "{v}");
    }
    let sched = rows(&v, "scheduler");
    assert_eq!(sched.len(), 1, "{v}");
    assert_eq!(sched[0]["nodes"], 4, "{v}");
    assert_eq!(sched[0]["free"], 4, "{v}");
    assert_eq!(sched[0]["pending"], 0, "{v}");

    // A busy node is "busy" with its slots in use as a number; the table
    // still says "busy 1/2".
    let o = run(tool(&pdvm, "pspawn")
        .env_remove("NO_COLOR")
        .args(["--detach", "-n", "1", "sleep", "30"]));
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let v = status(&pdvm, &["--what", "nodes"]);
    assert!(
        v["reservations"].is_null() && v["scheduler"].is_null(),
        "{v}"
    );
    let busy: Vec<&Value> = rows(&v, "nodes")
        .iter()
        .filter(|n| n["state"] == "busy")
        .collect();
    assert_eq!(busy.len(), 1, "{v}");
    assert_eq!(busy[0]["slots_used"], 1, "{v}");
    let human = run(tool(&pdvm, "pwatch")
        .env_remove("NO_COLOR")
        .args(["--status", "--what", "nodes"]));
    let h = text(&human.stdout);
    assert!(h.contains("busy 1/2"), "{h}");
    assert!(
        !h.contains('─') && !h.contains('\u{1b}'),
        "plain off a terminal: {h}"
    );
    let sched =
        run(tool(&pdvm, "pwatch")
            .env_remove("NO_COLOR")
            .args(["--status", "--what", "scheduler"]));
    let h = text(&sched.stdout);
    assert!(
        h.contains("QUEUE") && h.contains("FREE") && h.contains("s[001-004]"),
        "{h}"
    );
}

#[test]
fn ended_jobs_drop_off_and_live_ones_carry_their_size() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--slots", "2"]);
    for _ in 0..3 {
        let o = run(tool(&pdvm, "pspawn")
            .env_remove("NO_COLOR")
            .args(["-n", "1", "true"]));
        assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    }
    let o = run(tool(&pdvm, "pspawn")
        .env_remove("NO_COLOR")
        .args(["--detach", "-n", "3", "sleep", "30"]));
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let live = text(&o.stdout).trim().to_string();
    let v = status(&pdvm, &["--what", "namespaces"]);
    let ns = rows(&v, "namespaces");
    assert_eq!(ns.len(), 1, "only the live job: {v}");
    assert_eq!(ns[0]["nspace"], live.as_str(), "{v}");
    assert_eq!(ns[0]["nprocs"], 3, "{v}");
    assert_eq!(ns[0]["state"], "running", "{v}");

    let v = status(&pdvm, &["--what", "namespaces", "--all"]);
    let ns = rows(&v, "namespaces");
    assert_eq!(ns.len(), 4, "--all shows the ended ones too: {v}");
    assert_eq!(
        ns.iter().filter(|n| n["state"] == "terminated").count(),
        3,
        "{v}"
    );
    let v = status(&pdvm, &["--state", "ended"]);
    assert_eq!(rows(&v, "namespaces").len(), 3, "{v}");
    assert!(v["nodes"].is_null() && v["reservations"].is_null(), "{v}");
}

#[test]
fn allocations_mine_and_state_filters() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let (holder, id) = hold(&pdvm);
    // From another shell, through the holder: a job in the allocation.
    let o = run(tool(&pdvm, "pspawn")
        .env_remove("NO_COLOR")
        .args(["--target", &id, "--detach", "-n", "1", "sleep", "30"]));
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let job = text(&o.stdout).trim().to_string();
    // And one in the default pool, started detached from another shell.
    let o = run(tool(&pdvm, "pspawn")
        .env_remove("NO_COLOR")
        .args(["--detach", "-n", "1", "sleep", "30"]));
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let other = text(&o.stdout).trim().to_string();

    let v = status(&pdvm, &[]);
    let ns = rows(&v, "namespaces");
    let row = |n: &str| ns.iter().find(|r| r["nspace"] == n).cloned();
    let mine = row(&job).unwrap_or_else(|| panic!("{job} not listed: {v}"));
    assert_eq!(mine["allocations"], serde_json::json!([id]), "{v}");
    assert_eq!(mine["nprocs"], 1, "{v}");
    let theirs = row(&other).unwrap_or_else(|| panic!("{other} not listed: {v}"));
    assert_eq!(theirs["allocations"], serde_json::json!([]), "{v}");
    assert_eq!(rows(&v, "scheduler")[0]["free"], 1, "{v}");

    // --mine: my held allocation, the job in it, its node, and my own
    // detached job of the other shell (pdvm says who started each job: the
    // USER column) with its node; it used to miss that job.
    let v = status(&pdvm, &["--mine"]);
    let res = rows(&v, "reservations");
    assert_eq!(res.len(), 1, "{v}");
    assert_eq!(res[0]["alloc_id"], id.as_str(), "{v}");
    let names: Vec<&str> = rows(&v, "namespaces")
        .iter()
        .filter_map(|n| n["nspace"].as_str())
        .collect();
    assert!(
        names.contains(&job.as_str()) && names.contains(&other.as_str()),
        "{v}"
    );
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .expect("my user name");
    for n in rows(&v, "namespaces") {
        assert_eq!(n["user"], me.as_str(), "{v}");
    }
    let nodes = rows(&v, "nodes");
    let names: Vec<&str> = nodes.iter().filter_map(|n| n["name"].as_str()).collect();
    assert_eq!(names.len(), 2, "{v}");
    assert!(
        nodes.iter().any(|n| n["alloc_id"] == id.as_str()) && names.contains(&"n001"),
        "{v}"
    );

    // --state: only the named states, only their tables.
    let v = status(&pdvm, &["--state", "active"]);
    assert_eq!(rows(&v, "reservations").len(), 1, "{v}");
    assert!(v["namespaces"].is_null() && v["nodes"].is_null(), "{v}");
    let v = status(&pdvm, &["--state", "queued"]);
    assert!(rows(&v, "reservations").is_empty(), "{v}");
    let bad = run(tool(&pdvm, "pwatch").env_remove("NO_COLOR").args([
        "--status",
        "--state",
        "idle",
        "--what",
        "reservations",
    ]));
    assert_eq!(bad.status.code(), Some(2), "{}", support::show(&bad));

    // What the completions ask for.
    let o = run(tool(&pdvm, "pwatch")
        .env_remove("NO_COLOR")
        .args(["--complete", "allocs"]));
    assert_eq!(text(&o.stdout).trim(), id, "{}", support::show(&o));
    let o = run(tool(&pdvm, "pwatch")
        .env_remove("NO_COLOR")
        .args(["--complete", "namespaces"]));
    let listed = text(&o.stdout);
    assert!(
        listed.lines().any(|l| l == job) && listed.lines().any(|l| l == other),
        "{listed}"
    );
    stop(holder);
}

#[test]
fn interval_prints_one_document_per_line() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut child = tool(&pdvm, "pwatch")
        .env_remove("NO_COLOR")
        .args(["--status", "--json", "--interval", "1s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("pwatch");
    // Two snapshots, then Ctrl-C.
    let lines = support::LineReader::new(child.stdout.take().expect("stdout"));
    let mut out = String::new();
    for _ in 0..2 {
        let l = lines
            .next_line(Duration::from_secs(20))
            .expect("a snapshot line");
        out.push_str(&l);
        out.push('\n');
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let (st, timed_out) = support::wait_until(&mut child, Instant::now() + Duration::from_secs(10));
    assert!(!timed_out, "pwatch --interval did not stop on SIGINT");
    assert_eq!(st.and_then(|s| s.code()), Some(130));
    out.push_str(&lines.rest(Duration::from_secs(10)));
    let mut docs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // The interruption itself is reported as an error object, last.
    let last = docs.pop().expect("output");
    assert_eq!(last["type"], "error", "{out}");
    assert_eq!(last["exit_code"], 130, "{out}");
    assert!(docs.len() >= 2, "a document per snapshot: {out}");
    assert!(
        docs.iter()
            .all(|d| d["type"] == "status" && d["nodes"].is_array()),
        "{out}"
    );
}

#[test]
fn a_queued_request_says_so_on_one_line_off_a_terminal() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let (holder, id) = hold(&pdvm);
    let mut waiting = tool(&pdvm, "palloc")
        .env_remove("NO_COLOR")
        .args(["-N", "1", "--request-id", "second", "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("palloc");
    let said = support::LineReader::new(waiting.stderr.take().expect("stderr"));
    let v = {
        let mut seen = Value::Null;
        let queued = wait::within(Duration::from_secs(10), || {
            seen = status(&pdvm, &["--what", "scheduler"]);
            seen["scheduler"][0]["pending"] == 1
        });
        assert!(queued, "the second request is not queued: {seen}");
        seen
    };
    assert_eq!(v["scheduler"][0]["free"], 0, "{v}");
    // Waiting longer than palloc's 250 ms grace, it says so.
    let mut err = said
        .until("queued", Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("palloc never said it is queued: {e}"));
    // Given back (through the holder) to the scheduler, which grants the
    // queued request.
    let o = run(tool(&pdvm, "prelease").env_remove("NO_COLOR").arg(&id));
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let (st, timed_out) =
        support::wait_until(&mut waiting, Instant::now() + Duration::from_secs(20));
    assert!(!timed_out, "the queued palloc was never granted");
    stop(holder);
    assert_eq!(st.and_then(|s| s.code()), Some(0));
    err.push_str(&said.rest(Duration::from_secs(10)));
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("queued")).collect();
    assert_eq!(
        lines,
        vec!["palloc: queued: request second waiting for the scheduler"],
        "{err}"
    );
    assert!(
        !err.contains('\r') && !err.contains('\u{1b}'),
        "no spinner off a terminal: {err:?}"
    );
}

/// `--status --interval` stamps each snapshot with the time: a plain
/// `--- DATE TIME UTC ---` line when stdout is no terminal (no escape code),
/// and at a terminal the screen is cleared and redrawn under an `Every Ns:`
/// header with the time, as `watch` and `squeue -i`. Snapshots were printed
/// one under the other with no time.
#[test]
fn interval_stamps_each_snapshot_and_redraws_a_terminal() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let args = ["--status", "--what", "nodes", "--interval", "1s"];
    // Not a terminal.
    let mut child = tool(&pdvm, "pwatch")
        .env_remove("NO_COLOR")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("pwatch");
    let lines = support::LineReader::new(child.stdout.take().expect("stdout"));
    let mut stamps = 0;
    while stamps < 2 {
        let l = lines
            .next_line(Duration::from_secs(20))
            .expect("a snapshot line");
        assert!(!l.contains('\x1b'), "an escape code in a pipe: {l:?}");
        if l.starts_with("--- ") && l.ends_with(" UTC ---") {
            stamps += 1;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    // A terminal.
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let mut child = tool(&pdvm, "pwatch")
        .env_remove("NO_COLOR")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::fs::File::from(pty.slave)))
        .stderr(Stdio::null())
        .spawn()
        .expect("pwatch");
    let screen = support::LineReader::new(std::fs::File::from(pty.master));
    let mut redraws = 0;
    while redraws < 2 {
        let l = screen
            .next_line(Duration::from_secs(20))
            .expect("a screen line");
        if l.contains("\x1b[H\x1b[2JEvery 1s: pwatch --status") && l.trim_end().ends_with("UTC") {
            redraws += 1;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
