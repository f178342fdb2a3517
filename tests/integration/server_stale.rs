//! kill -9 of pdvm leaves its `pdvm.<pid>` rendezvous directory behind;
//! the next pdvm in that tmpdir recognises it as stale (its pid is gone or
//! not a pdvm of ours) and removes it, and tools find only the live one.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{show, text};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
    })
}

#[test]
fn killed_pdvms_rendezvous_directory_is_removed_by_the_next() {
    let first = Pdvm::start(&["--nodes", "1"]);
    let stale = first.rendezvous_dir();
    assert!(stale.is_dir(), "{} exists while it runs", stale.display());
    kill(Pid::from_raw(first.pid as i32), Signal::SIGKILL).expect("kill -9");
    wait::eventually_within(
        &format!("pdvm {} has ended after SIGKILL", first.pid),
        Duration::from_secs(10),
        || gone(first.pid),
    );
    assert!(stale.is_dir(), "SIGKILL leaves the directory behind");
    // A planted directory of ours named after a live process that is not a
    // pdvm (this test) is stale too; a symlink is never followed or removed.
    let not_pdvm = first
        .tmpdir
        .path()
        .join(format!("pdvm.{}", std::process::id()));
    std::fs::create_dir(&not_pdvm).expect("mkdir");
    std::fs::write(not_pdvm.join("pmix.h.tool"), "x").expect("plant");
    let target = first.tmpdir.path().join("elsewhere");
    std::fs::create_dir(&target).expect("mkdir");
    let link = first.tmpdir.path().join("pdvm.1");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");

    let mut second = Command::new(support::cargo_bin("pdvm"));
    support::scrub_pmix_env(&mut second);
    second
        .args(["--nodes", "1", "--tmpdir"])
        .arg(first.tmpdir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = second.spawn().expect("start the second pdvm");
    let err = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let first_line = rx.recv_timeout(Duration::from_secs(20));
    let ready = first_line.as_deref() == Ok("DVM ready");
    let after = (
        stale.exists(),
        not_pdvm.exists(),
        link.symlink_metadata().is_ok(),
        target.is_dir(),
    );
    let mine = first.tmpdir.path().join(format!("pdvm.{}", child.id()));
    let mine_exists = mine.is_dir();
    // Tools find the live pdvm only.
    let mut st = first.tool("pwatch");
    st.args(["--status", "--json"]);
    let o = support::run_with_timeout(st.stdin(Stdio::null()), 30);
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    let (_, timed_out) = support::wait_until(&mut child, Instant::now() + Duration::from_secs(10));
    if timed_out {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(ready, "second pdvm's first line: {first_line:?}");
    assert_eq!(
        after,
        (false, false, true, true),
        "(stale dir, planted non-pdvm dir, symlink, symlink target) after the second start"
    );
    assert!(mine_exists, "the second pdvm's own directory");
    assert!(o.status.success(), "pwatch --status: {}", show(&o));
    let _ = text(&o.stdout);
}
