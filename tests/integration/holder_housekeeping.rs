//! Housekeeping of holders (issue 14): the sockets and logs of holders
//! that have gone are swept, and a detached palloc keeps none of the
//! caller's descriptors. Each test has its own holder registry
//! (XDG_RUNTIME_DIR).

use crate::support;

use std::process::{Command, Output, Stdio};

use crate::support::pdvm::Pdvm;
use crate::support::{show, text, TempDir};

fn run(mut cmd: Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 60)
}

/// A tool of `pdvm` using the private registry under `xdg`.
fn tool(pdvm: &Pdvm, xdg: &TempDir, name: &str) -> Command {
    let mut c = pdvm.tool(name);
    c.env("XDG_RUNTIME_DIR", xdg.path());
    c
}

fn sh(pdvm: &Pdvm, xdg: &TempDir, script: &str) -> Command {
    let mut c = support::command_like(&tool(pdvm, xdg, "pwatch"), "sh");
    c.args(["-c", script]);
    c
}

fn registry(xdg: &TempDir) -> Vec<String> {
    std::fs::read_dir(xdg.path().join("pmix-tools-holders"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn sockets_and_logs_of_dead_holders_are_swept() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let xdg = support::unique_tmpdir("xdg-sweep");
    // Five holders killed with -9 leave their sockets.
    let script = "for i in 1 2 3 4 5; do \
                    palloc -q -N 1 --hold --parsable > id.$i & P=$!; \
                    until [ -s id.$i ] || ! kill -0 $P 2>/dev/null; do sleep 0.02; done; \
                    kill -9 $P; wait $P; \
                  done; true";
    let dir = support::unique_tmpdir("sweep-ids");
    let mut c = sh(&pdvm, &xdg, script);
    c.current_dir(dir.path());
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // (allocation sockets: a holder also links its request id to its own)
    let allocs = |xdg: &TempDir| -> Vec<String> {
        registry(xdg)
            .into_iter()
            .filter(|n| n.ends_with(".sock") && n.contains('+'))
            .collect()
    };
    let before = allocs(&xdg).len();
    // Each holder swept the sockets of those killed before it: only the
    // last one's is left.
    assert!(before <= 1, "stale sockets: {:?}", registry(&xdg));
    // The next holder sweeps that one too.
    let mut next = tool(&pdvm, &xdg, "palloc");
    next.args(["-q", "-N", "1", "--parsable"]);
    let n = run(next);
    let id = text(&n.stdout).trim().to_string();
    let left = allocs(&xdg);
    assert_eq!(
        left.len(),
        1,
        "only the live holder's socket stays: {left:?}"
    );
    // Its log goes once it has ended (released), at the next sweep.
    let mut rel = tool(&pdvm, &xdg, "prelease");
    rel.arg(&id);
    assert_eq!(run(rel).status.code(), Some(0));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while registry(&xdg).iter().any(|n| n.ends_with(".sock"))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // (and its process has ended)
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut again = tool(&pdvm, &xdg, "palloc");
    again.args(["-q", "-N", "1", "--parsable"]);
    let g = run(again);
    let logs: Vec<String> = registry(&xdg)
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect();
    assert_eq!(logs.len(), 1, "only the live holder's log stays: {logs:?}");
    let mut rel = tool(&pdvm, &xdg, "prelease");
    rel.arg(text(&g.stdout).trim());
    assert_eq!(run(rel).status.code(), Some(0));
}

#[test]
fn a_detached_palloc_keeps_none_of_the_callers_descriptors() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let xdg = support::unique_tmpdir("xdg-fds");
    let dir = support::unique_tmpdir("fds");
    let script = format!(
        "exec 7> {d}/seven; exec 9< /dev/null; palloc -N 1 --parsable 2> {d}/err",
        d = dir.path().display()
    );
    let o = run(sh(&pdvm, &xdg, &script));
    let id = text(&o.stdout).trim().to_string();
    assert!(id.starts_with("alloc."), "{}", show(&o));
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap_or_default();
    let pid: i32 = err
        .split("palloc (pid ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {err}"));
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .map(|t| t.display().to_string())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !fds.is_empty(),
        "cannot see the detached palloc's descriptors"
    );
    assert!(
        !fds.iter().any(|t| t.ends_with("/seven")),
        "the caller's descriptor 7 leaked into the detached palloc: {fds:?}"
    );
    let mut rel = tool(&pdvm, &xdg, "prelease");
    rel.arg(&id);
    assert_eq!(run(rel).status.code(), Some(0));
}
