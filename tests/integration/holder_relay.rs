//! One allocation, many clients (issue 14): every tool acting through a
//! palloc holder sees only its own jobs' output and end, a slow reader is
//! slow and never dropped, and the holder lends the owner's right only for
//! its own allocation. On pdvm and on PRRTE master.

use crate::support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::pdvm::Pdvm;
use crate::support::{short_hostname, show, text, tool, Prte};

/// How many `pspawn`s run at once through one holder.
const CONCURRENT: usize = 50;
/// Lines each job prints.
const LINES: usize = 2000;

fn run(mut cmd: Command, secs: u64) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), secs)
}

/// A script that starts [`CONCURRENT`] `pspawn`s at once, job `i` printing
/// `i-1` … `i-LINES` into `dir/out.i`, and waits for all (each one's exit
/// status into `dir/rc.i`).
fn fan_out_script(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "for i in $(seq 1 {CONCURRENT}); do \
           ( pspawn --map-by :OVERSUBSCRIBE -n 1 seq -f \"$i-%g\" 1 {LINES} > {d}/out.$i 2> {d}/err.$i; echo $? > {d}/rc.$i ) & \
         done; wait"
    )
}

/// Each job's output file is exactly its own lines, and each pspawn
/// succeeded.
fn assert_each_own(dir: &Path, o: &Output) {
    for i in 1..=CONCURRENT {
        let rc = std::fs::read_to_string(dir.join(format!("rc.{i}"))).unwrap_or_default();
        let err = std::fs::read_to_string(dir.join(format!("err.{i}"))).unwrap_or_default();
        assert_eq!(rc.trim(), "0", "pspawn {i} failed: {err}\n{}", show(o));
        let got = std::fs::read(dir.join(format!("out.{i}"))).unwrap_or_default();
        let want: String = (1..=LINES).map(|n| format!("{i}-{n}\n")).collect();
        assert!(
            got == want.as_bytes(),
            "pspawn {i}: {} bytes, want {} (first line {:?}); other jobs' output leaked in or \
some was lost",
            got.len(),
            want.len(),
            text(&got).lines().next()
        );
    }
}

#[test]
fn fifty_concurrent_pspawns_through_one_holder_each_get_only_their_own_output_pdvm() {
    let pdvm = Pdvm::start(&["--slots", "64", "--scheduler-nodes", "1"]);
    let dir = support::unique_tmpdir("relay50");
    let mut cmd = pdvm.tool("palloc");
    cmd.args([
        "-q",
        "-N",
        "1",
        "--",
        "sh",
        "-c",
        &fan_out_script(dir.path()),
    ]);
    let o = run(cmd, 240);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_each_own(dir.path(), &o);
}

#[test]
fn fifty_concurrent_pspawns_through_one_holder_each_get_only_their_own_output_master() {
    let dvm = Prte::start_master();
    let host = short_hostname();
    let dir = support::unique_tmpdir("relay50m");
    let mut cmd = tool(&dvm, "palloc");
    cmd.args([
        "-q",
        "-w",
        &host,
        "--",
        "sh",
        "-c",
        &fan_out_script(dir.path()),
    ]);
    let o = run(cmd, 400);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), dvm.logs());
    assert_each_own(dir.path(), &o);
}

/// The audit's case: two pspawns through one holder, each writing to its
/// own file, each file holds only its own job's line.
#[test]
fn two_pspawns_through_one_holder_do_not_see_each_others_output() {
    let pdvm = Pdvm::start(&["--slots", "4", "--scheduler-nodes", "1"]);
    let dir = support::unique_tmpdir("relay2");
    let d = dir.path().display();
    let script = format!(
        "pspawn sh -c 'sleep .3; echo A' > {d}/a & pspawn sh -c 'sleep .3; echo B' > {d}/b & wait"
    );
    let mut cmd = pdvm.tool("palloc");
    cmd.args(["-q", "-N", "1", "--", "sh", "-c", &script]);
    let o = run(cmd, 60);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let a = std::fs::read_to_string(dir.path().join("a")).unwrap_or_default();
    let b = std::fs::read_to_string(dir.path().join("b")).unwrap_or_default();
    assert_eq!((a.as_str(), b.as_str()), ("A\n", "B\n"), "{}", show(&o));
}

/// A reader that stops reading slows only its own job: while it waits
/// (until another client of the same holder has finished a job), that
/// client's `pspawn` completes, and the paused reader then gets every byte.
/// With head-of-line blocking the other client would wait for the reader,
/// which waits for it: the reader's wait ends at its deadline instead.
#[test]
fn a_paused_reader_slows_only_its_own_job_and_loses_nothing_pdvm() {
    let pdvm = Pdvm::start(&["--slots", "4", "--scheduler-nodes", "1"]);
    let dir = support::unique_tmpdir("slowreader");
    let d = dir.path().display();
    let bytes = 64 * 1024 * 1024;
    let script = format!(
        "pspawn head -c {bytes} /dev/zero | ( \
           for i in $(seq 1 600); do [ -e {d}/done ] && break; sleep 0.1; done; \
           [ -e {d}/done ] && echo other-first; wc -c ) > {d}/reader & \
         sleep 1; pspawn --target \"$PMIX_ALLOC_ID\" true && touch {d}/done; wait"
    );
    let mut cmd = pdvm.tool("palloc");
    cmd.args(["-q", "-N", "1", "--", "sh", "-c", &script]);
    let o = run(cmd, 120);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let reader = std::fs::read_to_string(dir.path().join("reader")).unwrap_or_default();
    let lines: Vec<&str> = reader.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        ["other-first", &bytes.to_string()],
        "the other client waited for the paused reader, or bytes were lost: {}",
        show(&o)
    );
}

/// A directed timeout warning reaches only the client that asked for it:
/// of two pwatch clients of one holder watching the allocation's warnings,
/// only the one that armed it (--warn-timeout) gets it.
#[test]
fn a_directed_warning_reaches_only_the_client_that_asked_pdvm() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1", "--time-scale", "60"]);
    let dir = support::unique_tmpdir("warnone");
    let d = dir.path().display();
    // The asker arms the warning (25 simulated minutes before the expiry
    // in 30: 5 s from now); once it watches, the other starts watching too.
    let script = format!(
        "pwatch -v --alloc \"$PMIX_ALLOC_ID\" --event timeout-warning --warn-timeout 25m \
           --count 1 --timeout 60s --json > {d}/asker 2> {d}/asker.err; echo $? > {d}/asker.rc & \
         for i in $(seq 1 300); do grep -q 'watching for events' {d}/asker.err && break; \
           sleep 0.05; done; \
         pwatch -v --alloc \"$PMIX_ALLOC_ID\" --event timeout-warning,node --timeout 15s --json \
           > {d}/other 2> {d}/other.err; wait"
    );
    let mut cmd = pdvm.tool("palloc");
    cmd.args(["-q", "-N", "1", "-t", "30m", "--", "sh", "-c", &script]);
    let o = run(cmd, 120);
    let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap_or_default();
    assert_eq!(
        read("asker.rc").trim(),
        "0",
        "{}\n{}",
        read("asker"),
        show(&o)
    );
    assert!(read("asker").contains("timeout-warning"), "{}", show(&o));
    assert!(
        read("other.err").contains("watching for events"),
        "{}",
        read("other.err")
    );
    assert!(
        !read("other").contains("timeout-warning"),
        "the warning was copied to a client that did not ask: {}",
        read("other")
    );
}
