//! A palloc that dies leaves nothing behind (issue 28, point 6): pdvm lifts
//! the output pauses (`pdvm.iof.pause`) a holder asked for when its
//! connection closes, so the job it relayed runs on instead of blocking
//! for ever; and a detached palloc whose waiting palloc was killed
//! withdraws its queued request instead of holding a later grant nobody
//! knows of.

use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{run_with_timeout, show, text};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::Value;

/// A child leading its own process group, killed with it when dropped.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.0.id() as i32), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// `tool ARGS` started in a process group of its own.
fn start(pdvm: &Pdvm, tool: &str, args: &[&str]) -> Group {
    let mut c = pdvm.tool(tool);
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    Group(c.spawn().expect("the tool starts"))
}

/// How long a state is waited for.
const MINUTE: Duration = Duration::from_secs(60);

/// The job running `command`, from `pwatch --status --all`.
fn job(pdvm: &Pdvm, command: &str) -> Option<Value> {
    let mut c = pdvm.tool("pwatch");
    c.args(["--status", "--all", "--what", "namespaces", "--json"]);
    let o = run_with_timeout(c.stdin(Stdio::null()), 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let doc: Value = serde_json::from_str(text(&o.stdout).trim()).expect("one document");
    doc["namespaces"]
        .as_array()?
        .iter()
        .find(|j| j["command"] == command)
        .cloned()
}

#[test]
fn a_killed_holder_lifts_the_output_pause_it_asked_for_so_its_job_ends() {
    let pdvm = Pdvm::builder(&["-v", "--scheduler-nodes", "1"])
        .lenient_ready()
        .start();
    // pspawn's stdout is a pipe nobody reads: the holder's queue for it
    // fills, and the holder asks pdvm to pause the job's output. The job
    // writes ~90 MB (below a user's 256 MiB budget): with ~20 MB, a fresh
    // clone's full run once saw it end before the pause took hold.
    let palloc = start(
        &pdvm,
        "palloc",
        &[
            "-N",
            "1",
            "--",
            "sh",
            "-c",
            "pspawn seq 1 12000000 | sleep 1000",
        ],
    );
    let paused = wait::within(MINUTE, || {
        pdvm.logs().contains("paused at the request of connection")
    });
    assert!(paused, "the holder never paused the job\n{}", pdvm.logs());
    let running = job(&pdvm, "seq 1 12000000").expect("the job is listed");
    assert_eq!(running["state"], "running", "{running}");
    // kill -9 palloc alone (its shell and pspawn stay).
    nix::sys::signal::kill(Pid::from_raw(palloc.0.id() as i32), Signal::SIGKILL).unwrap();
    let ended = wait::within(MINUTE, || {
        job(&pdvm, "seq 1 12000000").is_none_or(|j| j["state"] != "running")
    });
    assert!(
        ended,
        "the job stays blocked after its holder died\n{}",
        pdvm.logs()
    );
}

#[test]
fn a_killed_palloc_waiting_for_a_grant_withdraws_its_queued_request() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let mut take = pdvm.tool("palloc");
    take.args(["-q", "-N", "1", "--parsable"]);
    let o = run_with_timeout(take.stdin(Stdio::null()), 60);
    let first = text(&o.stdout).trim().to_string();
    assert!(first.starts_with("alloc."), "{}", show(&o));
    let has = |state: Option<&str>| {
        pdvm.reservations()
            .iter()
            .any(|r| r["request_id"] == "orphan" && state.is_none_or(|s| r["state"] == s))
    };
    // The palloc a script runs (`ID=$(palloc -N 1 --parsable)`) waits for
    // the grant its detached palloc will hold.
    let mut waiting = start(&pdvm, "palloc", &["-N", "1", "-J", "orphan", "--parsable"]);
    assert!(
        wait::within(MINUTE, || has(Some("queued"))),
        "request orphan never queued"
    );
    waiting.0.kill().unwrap();
    let _ = waiting.0.wait();
    let withdrawn = wait::within(MINUTE, || !has(None));
    assert!(
        withdrawn,
        "request orphan stays after its palloc died\n{}",
        pdvm.logs()
    );
    let mut rel = pdvm.tool("prelease");
    rel.arg(&first);
    let r = run_with_timeout(rel.stdin(Stdio::null()), 60);
    assert_eq!(r.status.code(), Some(0), "{}", show(&r));
    assert!(pdvm.reservations().is_empty(), "{:?}", pdvm.reservations());
}
