//! Issue 17: `pdvm -- $SHELL` at a terminal gives an interactive shell with
//! job control, as `flux start` does. It exited at once (stdin /dev/null)
//! and `bash -i` stopped (its process group was not the terminal's
//! foreground). The test runs pdvm on a pseudo-terminal it opens.

use crate::support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Read the terminal's output until it holds `want` (or fail at 20 s).
fn expect(rx: &mpsc::Receiver<Vec<u8>>, seen: &mut String, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen.contains(want) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(b) => seen.push_str(&String::from_utf8_lossy(&b)),
            Err(_) => panic!("no {want:?} on the terminal; it showed:\n{seen}"),
        }
    }
}

#[test]
fn pdvm_gives_an_interactive_shell_with_job_control() {
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let tmp = support::unique_tmpdir("pdvm-tty");
    let slave = std::fs::File::from(pty.slave);
    let mut cmd = Command::new(support::cargo_bin("pdvm"));
    cmd.args(["--nodes", "1", "--tmpdir"])
        .arg(tmp.path())
        .args(["--", "/bin/bash", "--norc", "--noprofile", "-i"])
        .env("PS1", "$ ")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    // SAFETY: setsid and ioctl are async-signal-safe.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            if nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("pdvm");
    drop(cmd);
    let master = std::fs::File::from(pty.master);
    let mut reader = master.try_clone().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut w = master;
    let mut seen = String::new();
    let mut say = |line: &str| w.write_all(line.as_bytes()).unwrap();
    say("echo hi-$((40+2))\n");
    expect(&rx, &mut seen, "hi-42");
    say("sleep 30 &\n");
    expect(&rx, &mut seen, "[1] ");
    say("jobs; kill %1; echo listed-$((1+1))\n");
    expect(&rx, &mut seen, "listed-2");
    assert!(seen.contains("Running"), "no job control:\n{seen}");
    say("exit 3\n");
    let st = support::wait_exit(&mut child, Duration::from_secs(20));
    assert_eq!(st.code(), Some(3), "pdvm's status is the shell's:\n{seen}");
}
