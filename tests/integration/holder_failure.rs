//! Failure is noticed and streams stay clean (issue 14): when the DVM dies
//! under `palloc -- sh -c 'pspawn …'`, palloc and the pspawn both exit
//! non-zero at once (the holder closes its clients' connections), pwatch in
//! events mode too; stdout carries only CMD's output, the grant line is on
//! stderr and `-q` silences it.

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{show, text, wait_until, ToolHost};

fn kill_dvm(pdvm: &Pdvm) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pdvm.pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[test]
fn a_dead_dvm_under_palloc_ends_palloc_and_its_pspawn_non_zero_pdvm() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let dir = support::unique_tmpdir("deaddvm");
    let started = dir.path().join("started");
    let rc = dir.path().join("rc");
    let script = format!(
        "trap '' TERM; pspawn sh -c 'touch {}; sleep 30'; echo $? > {}",
        started.display(),
        rc.display()
    );
    let mut cmd = pdvm.tool("palloc");
    cmd.args(["-q", "-N", "1", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut palloc = cmd.spawn().expect("palloc starts");
    assert!(
        wait::within(Duration::from_secs(10), || started.exists()),
        "the job never started"
    );
    kill_dvm(&pdvm);
    let killed = Instant::now();
    let (st, _) = wait_until(&mut palloc, Instant::now() + Duration::from_secs(20));
    let took = killed.elapsed();
    let out = palloc.wait_with_output().expect("palloc's output");
    let st = st.expect("palloc ended after the DVM died");
    eprintln!("palloc ended {took:?} after the DVM was killed");
    assert_ne!(st.code(), Some(0), "{}", show(&out));
    assert!(text(&out.stderr).contains("lost the DVM"), "{}", show(&out));
    let pspawn_rc = std::fs::read_to_string(&rc).unwrap_or_default();
    assert!(
        !pspawn_rc.trim().is_empty() && pspawn_rc.trim() != "0",
        "pspawn's status: {pspawn_rc:?}; {}",
        show(&out)
    );
}

/// The same against PRRTE master: its `prte` killed with SIGKILL under
/// `palloc -w HOST -- sh -c 'pspawn …'` ends palloc and its pspawn non-zero
/// (the time it took is printed as a figure).
#[test]
fn a_dead_dvm_under_palloc_ends_palloc_and_its_pspawn_non_zero_master() {
    let mut dvm = support::Prte::start_master();
    let dir = support::unique_tmpdir("deadmaster");
    let started = dir.path().join("started");
    let rc = dir.path().join("rc");
    let script = format!(
        "trap '' TERM; {} sh -c 'touch {}; sleep 30'; echo $? > {}",
        support::cargo_bin("pspawn").display(),
        started.display(),
        rc.display()
    );
    let mut cmd = dvm.tool_command(support::cargo_bin("palloc"));
    cmd.args([
        "-q",
        "-w",
        &support::short_hostname(),
        "--",
        "sh",
        "-c",
        &script,
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut palloc = cmd.spawn().expect("palloc starts");
    assert!(
        wait::within(Duration::from_secs(10), || started.exists()),
        "the job never started:\n{}",
        dvm.logs()
    );
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(dvm.pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let killed = Instant::now();
    let (st, _) = wait_until(&mut palloc, Instant::now() + Duration::from_secs(30));
    let took = killed.elapsed();
    let out = palloc.wait_with_output().expect("palloc's output");
    let st = st.expect("palloc ended after the DVM died");
    eprintln!("FIGURE PRRTE master killed: palloc ended after {took:?}");
    assert_ne!(st.code(), Some(0), "{}", show(&out));
    assert!(text(&out.stderr).contains("lost the DVM"), "{}", show(&out));
    let pspawn_rc = std::fs::read_to_string(&rc).unwrap_or_default();
    assert!(
        !pspawn_rc.trim().is_empty() && pspawn_rc.trim() != "0",
        "pspawn's status: {pspawn_rc:?}; {}",
        show(&out)
    );
    assert!(
        dvm.ended_within(Duration::from_secs(10)),
        "prte still runs 10 s after SIGKILL"
    );
}

#[test]
fn pwatch_in_events_mode_exits_non_zero_when_the_dvm_dies_pdvm() {
    let pdvm = Pdvm::start(&[]);
    let support::tool::Watching {
        child: mut pwatch,
        events,
        said,
    } = support::tool::watching(pdvm.tool("pwatch").args(["--event", "job-end"]));
    // A job's end reaches it.
    let mut job = pdvm.tool("pspawn");
    job.arg("true");
    let o = support::run_with_timeout(job.stdin(Stdio::null()), 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut out = events
        .next_line(Duration::from_secs(20))
        .expect("pwatch shows the job's end");
    out.push('\n');
    kill_dvm(&pdvm);
    let (st, _) = wait_until(&mut pwatch, Instant::now() + Duration::from_secs(20));
    let st = st.expect("pwatch ended after the DVM died");
    out.push_str(&events.rest(Duration::from_secs(10)));
    let err = said.rest(Duration::from_secs(10));
    let shown = format!("{st}\n--- stdout:\n{out}--- stderr:\n{err}");
    assert_ne!(st.code(), Some(0), "{shown}");
    assert!(err.contains("lost the DVM"), "{shown}");
}

#[test]
fn stdout_carries_only_the_commands_output_and_q_silences_the_grant() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let run = |args: &[&str]| {
        let mut c: Command = pdvm.tool("palloc");
        c.args(args);
        support::run_with_timeout(c.stdin(Stdio::null()), 30)
    };
    let o = run(&["-N", "1", "--", "echo", "hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(text(&o.stdout), "hi\n", "{}", show(&o));
    assert!(text(&o.stderr).contains("granted alloc."), "{}", show(&o));
    let o = run(&["-q", "-N", "1", "--", "echo", "hi"]);
    assert_eq!(text(&o.stdout), "hi\n", "{}", show(&o));
    assert!(!text(&o.stderr).contains("granted"), "{}", show(&o));
}
