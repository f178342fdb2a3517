//! A launch PRRTE master lost keeps its slots taken for ever (issue 40):
//! seen in `psched_load`'s burst, where one `palloc -N 1 -- pspawn true`
//! of 48 waited for ever (PRRTE listed its `true` as launching, with no
//! pid, on the allocation's only slot; pspawn had stopped it and spawned
//! again, and the second spawn waited for that slot). Here the launch is
//! lost on purpose: the node's daemon is stopped (SIGSTOP) under a held
//! allocation, so the launch never starts. pspawn now ends the wait with
//! the reason (exit 4) instead of waiting for ever, and psched, once the
//! allocation is given back, never grants that node again.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::psched_cluster::hold;
use crate::support::cluster::Cluster;
use crate::support::wait;
use crate::support::{show, text, tool, ToolCommand};

/// The `prted` of `node` in cluster `c` (its TMPDIR is the node's own).
fn daemon_of(c: &Cluster, node: &str) -> Pid {
    let suffix = format!("/nodes/{node}");
    c.processes()
        .into_iter()
        .find(|p| {
            let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            let env = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
            comm.trim() == "prted"
                && env
                    .split(|b| *b == 0)
                    .any(|v| v.starts_with(b"TMPDIR=") && v.ends_with(suffix.as_bytes()))
        })
        .map(Pid::from_raw)
        .unwrap_or_else(|| panic!("no prted of {node} in the cluster: {}", c.logs()))
}

/// Stop `node`'s daemon (its next launch is lost), then run `pspawn
/// --target ID -n 1 PROGRAM` into allocation `id` for at most 120 s: what
/// pspawn said, and whether it ended by itself. The daemon stays stopped
/// (the caller wakes it: [`Signal::SIGCONT`]).
fn pspawn_with_lost_launch(
    c: &Cluster,
    node: &str,
    id: &str,
    program: &str,
) -> (Pid, std::process::Output, bool) {
    let daemon = daemon_of(c, node);
    kill(daemon, Signal::SIGSTOP).expect("stop the node's daemon");
    let mut p = tool(c, "pspawn")
        .no_color()
        .args(["--target", id, "-n", "1", program])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pspawn");
    let ended = wait::within(Duration::from_secs(120), || {
        !matches!(p.try_wait(), Ok(None))
    });
    if !ended {
        let _ = p.kill();
    }
    (daemon, p.wait_with_output().expect("pspawn"), ended)
}

#[test]
fn a_launch_the_dvm_lost_ends_the_wait_for_its_slots_with_the_reason() {
    // One pool node of one slot: the lost launch takes all of it.
    let c = Cluster::start_with_psched(1, 1, &[]);
    let (mut holder, _lines, id) = hold(&c, &["-N", "1"]);
    let (daemon, o, ended) = pspawn_with_lost_launch(&c, "node02", &id, "true");
    let waited = !ended;
    // The allocation given back, psched finds the lost launch on node02
    // and never grants node02 again (its daemon still stopped, so the
    // launch cannot start meanwhile).
    kill(Pid::from_raw(holder.id() as i32), Signal::SIGTERM).expect("end the holder");
    let _ = holder.wait();
    let held_back = wait::within(Duration::from_secs(120), || {
        c.psched_log().contains("never granted again")
    });
    kill(daemon, Signal::SIGCONT).expect("wake node02's daemon");
    assert!(!waited, "pspawn still waited after 120 s: {}", show(&o));
    assert_eq!(o.status.code(), Some(4), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(
        err.contains("can never hold the job")
            && err.contains("lost the launch of")
            && err.contains("on node02")
            && err.contains("0 free node(s)")
            && err.contains(&id),
        "{}",
        show(&o)
    );
    let log = c.psched_log();
    assert!(
        held_back && log.contains("lost the launch of") && log.contains("on node02"),
        "psched did not hold node02 back:\n{log}"
    );
}

/// With a free node in psched's pool, pspawn asks for it in place of the
/// node the lost launch keeps busy, and the job runs there.
#[test]
fn a_launch_the_dvm_lost_is_mended_with_a_free_node_of_the_scheduler() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let (holder, _lines, id) = hold(&c, &["-N", "1"]);
    let granted = |node: &str| c.psched_log().contains(&format!("granted {id}: {node}"));
    let (lost, other) = if granted("node02") {
        ("node02", "node03")
    } else {
        ("node03", "node02")
    };
    let spawned = pspawn_with_lost_launch(&c, lost, &id, "hostname");
    ran_on(&c, spawned, holder, other);
}

/// The job of [`pspawn_with_lost_launch`] ran on `node`, exit 0; the
/// stopped daemon woken and the allocation's `holder` ended first.
fn ran_on(
    c: &Cluster,
    (daemon, o, ended): (Pid, std::process::Output, bool),
    mut holder: std::process::Child,
    node: &str,
) {
    kill(daemon, Signal::SIGCONT).expect("wake the node's daemon");
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(ended, "pspawn still waited after 120 s: {}", show(&o));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    assert_eq!(text(&o.stdout).trim(), node, "{}", show(&o));
}

/// With every other node of the pool held (as in a burst), pspawn's ask
/// for a replacement waits in psched's queue and is granted the moment a
/// node comes back: the job runs there, instead of exit 4 for want of a
/// node free at that instant.
#[test]
fn a_replacement_for_a_lost_launch_waits_for_a_node_to_come_back() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let (holder, _lines, id) = hold(&c, &["-N", "1"]);
    let (mut other_holder, _other_lines, other_id) = hold(&c, &["-N", "1"]);
    let node_of = |alloc: &str| {
        crate::psched_cluster::grant(&c, alloc).expect("a grant")["nodes"][0]
            .as_str()
            .expect("a node")
            .to_string()
    };
    let (lost, other) = (node_of(&id), node_of(&other_id));
    let spawned = std::thread::scope(|s| {
        let pspawn = s.spawn(|| pspawn_with_lost_launch(&c, &lost, &id, "hostname"));
        let asked = wait::within(Duration::from_secs(120), || {
            crate::psched_cluster::psched_status(&c)["pending"]
                .as_array()
                .is_some_and(|p| p.len() == 1)
        });
        assert!(
            asked,
            "pspawn's ask for a replacement never waited in psched's queue"
        );
        kill(Pid::from_raw(other_holder.id() as i32), Signal::SIGTERM).expect("end the other");
        let _ = other_holder.wait();
        pspawn.join().expect("pspawn's thread")
    });
    ran_on(&c, spawned, holder, &other);
}
