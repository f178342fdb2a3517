//! A queued `palloc -J NAME -- CMD` is cancelled from another shell by its
//! name, as scancel cancels a pending salloc (issue 28, point 4): the
//! waiting palloc relays `prelease --cancel NAME` and `prelease NAME` for
//! its request, and exits 10 (cancelled). On pdvm, whose scheduler has one
//! node, taken first so that the request waits.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{run_with_timeout, show, text};

/// A pdvm whose only scheduler node is held by a detached palloc.
pub(crate) fn busy_pdvm() -> Pdvm {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let mut take = pdvm.tool("palloc");
    take.args(["-q", "-N", "1", "--parsable"]);
    let o = run_with_timeout(take.stdin(Stdio::null()), 60);
    assert!(text(&o.stdout).starts_with("alloc."), "{}", show(&o));
    pdvm
}

/// `palloc -N 1 -J name -- true`, left waiting in the background.
pub(crate) fn queued_palloc(pdvm: &Pdvm, name: &str) -> Child {
    let mut c = pdvm.tool("palloc");
    c.args(["-N", "1", "-J", name, "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().expect("palloc starts");
    wait::eventually_within(
        &format!("request {name} is queued"),
        Duration::from_secs(30),
        || queued(pdvm, name),
    );
    child
}

/// Whether pdvm lists request `name` as queued.
fn queued(pdvm: &Pdvm, name: &str) -> bool {
    pdvm.reservations()
        .iter()
        .any(|r| r["request_id"] == name && r["state"] == "queued")
}

/// prelease with `args`, from another shell; its output.
fn prelease(pdvm: &Pdvm, args: &[&str]) -> std::process::Output {
    let mut c: Command = pdvm.tool("prelease");
    c.args(args);
    run_with_timeout(c.stdin(Stdio::null()), 60)
}

#[test]
fn a_queued_palloc_with_a_command_is_cancelled_by_name_with_prelease_cancel() {
    let pdvm = busy_pdvm();
    let waiting = queued_palloc(&pdvm, "q");
    let c = prelease(&pdvm, &["--cancel", "q"]);
    assert_eq!(c.status.code(), Some(0), "{}\n{}", show(&c), pdvm.logs());
    let w = support::wait_output(waiting, Duration::from_secs(30));
    assert_eq!(w.status.code(), Some(10), "the waiter: {}", show(&w));
    assert!(!queued(&pdvm, "q"), "request q is still queued");
}

#[test]
fn a_queued_palloc_with_a_command_is_cancelled_by_name_with_plain_prelease() {
    let pdvm = busy_pdvm();
    let waiting = queued_palloc(&pdvm, "q");
    let c = prelease(&pdvm, &["q"]);
    assert_eq!(c.status.code(), Some(0), "{}\n{}", show(&c), pdvm.logs());
    assert!(text(&c.stderr).contains("cancelled"), "{}", show(&c));
    let w = support::wait_output(waiting, Duration::from_secs(30));
    assert_eq!(w.status.code(), Some(10), "the waiter: {}", show(&w));
}
