//! Issue 9, as a Slurm or Flux user meets the tools at a shell beside a
//! daemonized pdvm (4 scheduler nodes): stdin reaches rank 0; a missing
//! program, a bad working directory and a time limit are said plainly;
//! `--parsable` prints the id alone; one-shot `--json` results are one
//! document; usage errors exit 2, SIGINT 130, SIGTERM 143; `palloc` alone at
//! a terminal opens `$SHELL` inside a 1-node allocation. Stdin is also
//! checked against PRRTE master.

use crate::support;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::{show, text, tool, Prte};

fn run(mut cmd: Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 60)
}

/// Run `cmd` with `input` on its stdin (then end of file); kill it and fail
/// after `secs`.
pub(crate) fn run_with_input(cmd: &mut Command, input: &[u8], secs: u64) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => out.expect("output"),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{cmd:?} did not finish within {secs}s (stdin not closed?)");
        }
    }
}

fn daemon() -> Pdvm {
    Pdvm::start(&["--nodes", "2", "--slots", "2", "--scheduler-nodes", "4"])
}

#[test]
fn stdin_goes_to_rank_0_and_its_end_closes_it() {
    let pdvm = daemon();
    let out = run_with_input(tool(&pdvm, "pspawn").arg("cat"), b"hello\n", 30);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(text(&out.stdout), "hello\n", "{}", show(&out));

    // Only rank 0 reads it; every rank sees end of input and ends.
    let out = run_with_input(
        tool(&pdvm, "pspawn").args([
            "-n",
            "3",
            "--tag-output",
            "sh",
            "-c",
            "n=$(wc -l); echo lines=$n",
        ]),
        b"a\nb\nc\n",
        30,
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let mut lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(
        lines,
        ["[0] lines=3", "[1] lines=0", "[2] lines=0"],
        "{}",
        show(&out)
    );

    // A big input arrives whole.
    let big: Vec<u8> = (0..200_000u32)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let out = run_with_input(tool(&pdvm, "pspawn").args(["wc", "-c"]), &big, 60);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(text(&out.stdout).trim(), big.len().to_string());

    // --stdin none: the job reads end of file at once.
    let out = run_with_input(
        tool(&pdvm, "pspawn").args(["--stdin", "none", "cat"]),
        b"not for you\n",
        30,
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(text(&out.stdout), "");

    // Through palloc's holder (pspawn inside `palloc -- CMD`), too.
    let out = run_with_input(
        tool(&pdvm, "palloc").args(["-N", "1", "--", "pspawn", "cat"]),
        b"inside\n",
        30,
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(text(&out.stdout).contains("inside\n"), "{}", show(&out));
}

#[test]
fn stdin_goes_to_rank_0_against_prrte_master() {
    let dvm = Prte::start_master();
    let mut cmd = tool(&dvm, "pspawn");
    cmd.arg("cat");
    let out = run_with_input(&mut cmd, b"hello master\n", 60);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(text(&out.stdout), "hello master\n", "{}", show(&out));
}

#[test]
fn missing_program_bad_wdir_and_time_limits_are_said() {
    let pdvm = daemon();
    let out = run({
        let mut c = tool(&pdvm, "pspawn");
        c.arg("nonexistent_cmd_xyz");
        c
    });
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("program not found") && err.contains("nonexistent_cmd_xyz"),
        "{err}"
    );
    assert!(!err.contains("reservations"), "no reservation hint: {err}");

    // The DVM's own answer (a PATH of the job's own skips the local check).
    let out = run({
        let mut c = tool(&pdvm, "pspawn");
        c.args(["-x", "PATH=/usr/bin:/bin", "nonexistent_cmd_xyz"]);
        c
    });
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("program not found"),
        "{}",
        show(&out)
    );

    let out = run({
        let mut c = tool(&pdvm, "pspawn");
        c.args(["--wdir", "/nonexistent/dir", "pwd"]);
        c
    });
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("--wdir /nonexistent/dir: no such directory"),
        "{}",
        show(&out)
    );

    let t0 = Instant::now();
    let out = run({
        let mut c = tool(&pdvm, "pspawn");
        c.args(["--timeout", "1s", "sleep", "60"]);
        c
    });
    assert_eq!(out.status.code(), Some(8), "{}", show(&out));
    assert!(text(&out.stderr).contains("time limit"), "{}", show(&out));
    eprintln!("FIGURE pspawn --timeout 1s sleep 60: {:?}", t0.elapsed());

    // The allocation's time limit stops the job: said, exit 8.
    let out = run({
        let mut c = tool(&pdvm, "palloc");
        c.args(["-N", "1", "-t", "2s", "--", "pspawn", "sleep", "60"]);
        c
    });
    assert_eq!(out.status.code(), Some(8), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("ended while it ran (the time limit was reached"),
        "{}",
        show(&out)
    );
    assert!(
        text(&out.stderr).contains("had already ended"),
        "palloc does not claim to own it any more: {}",
        show(&out)
    );
}

#[test]
fn parsable_ids_and_one_json_document() {
    let pdvm = daemon();
    let out = run({
        let mut c = tool(&pdvm, "palloc");
        c.args(["--parsable"]);
        c
    });
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let id = text(&out.stdout);
    let id = id.trim_end_matches('\n');
    assert!(
        id.starts_with("alloc.") && !id.contains(char::is_whitespace),
        "only the id: {id:?}"
    );

    let out = run({
        let mut c = tool(&pdvm, "pspawn");
        c.args(["--detach", "--parsable", "true"]);
        c
    });
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let ns = text(&out.stdout);
    assert_eq!(ns.lines().count(), 1, "{ns:?}");
    assert!(ns.trim().contains('@'), "{ns:?}");

    // palloc's grant: one JSON document (python3 -m json.tool would take it).
    let out = run({
        let mut c = tool(&pdvm, "palloc");
        c.args(["-N", "1", "--json"]);
        c
    });
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&text(&out.stdout)).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    assert_eq!(doc["type"], "allocation");

    // prelease of two ids (one held here, one that does not exist): one
    // document listing both, with the first failure's code.
    let mut ids = Vec::new();
    for _ in 0..1 {
        let mut hold = tool(&pdvm, "palloc");
        hold.args(["-N", "1", "--parsable", "--hold"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = hold.spawn().unwrap();
        let line = support::LineReader::new(child.stdout.take().unwrap())
            .next_line(Duration::from_secs(30))
            .unwrap_or_default();
        ids.push((line.trim().to_string(), child));
    }
    let out = run({
        let mut c = tool(&pdvm, "prelease");
        c.args(["--json", &ids[0].0, "alloc.999"]);
        c
    });
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&text(&out.stdout)).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    assert_eq!(doc["type"], "releases");
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), 2, "{doc}");
    assert_eq!(results[0]["status"], "PMIX_SUCCESS", "{doc}");
    assert_eq!(results[1]["status"], "PMIX_ERR_NOT_FOUND", "{doc}");
    assert_eq!(doc["exit_code"], 5);
    let mut ids = ids.into_iter();
    // The released allocation's --hold ends by itself, with 0 (its man
    // page: "--hold ends when its allocation ends: 0 after a release").
    if let Some((id, mut child)) = ids.next() {
        let st = crate::support::pdvm::wait_for(&mut child, Duration::from_secs(20))
            .unwrap_or_else(|| panic!("--hold of released {id} did not end"));
        assert_eq!(st.code(), Some(0), "--hold of released {id}");
    }
    for (_, mut child) in ids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let st = support::pdvm::wait_for(&mut child, Duration::from_secs(20))
            .expect("--hold ends on SIGTERM");
        assert_eq!(st.code(), Some(143));
    }
}

#[test]
fn usage_errors_exit_2_and_signals_130_143() {
    let pdvm = daemon();
    for (name, args, word) in [
        (
            "pspawn",
            &["--uri", "garbage", "true"][..],
            "not a server URI",
        ),
        ("palloc", &["-N", "-3"][..], "negative"),
        ("palloc", &["-x", "s001"][..], "-x"),
        ("pspawn", &["--timeout", "soon", "true"][..], "minutes"),
    ] {
        let out = run({
            let mut c = tool(&pdvm, name);
            c.args(args);
            c
        });
        assert_eq!(
            out.status.code(),
            Some(2),
            "{name} {args:?}: {}",
            show(&out)
        );
        assert!(
            text(&out.stderr).contains(word),
            "{name} {args:?}: {}",
            show(&out)
        );
    }
    // -qq is --quiet twice, also for palloc: nothing on stdout.
    let out = run({
        let mut c = tool(&pdvm, "palloc");
        c.args(["-qq", "-N", "1"]);
        c
    });
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(text(&out.stdout), "");

    for (sig, code) in [
        (nix::sys::signal::Signal::SIGINT, 130),
        (nix::sys::signal::Signal::SIGTERM, 143),
    ] {
        let mut c = tool(&pdvm, "pspawn");
        // -v: it says when the job is launched.
        c.args(["-v", "sleep", "60"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let err = support::LineReader::new(child.stderr.take().expect("stderr"));
        if let Err(said) = err.until("launched job", Duration::from_secs(30)) {
            panic!("pspawn never launched its job: {said}");
        }
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
        let st = support::pdvm::wait_for(&mut child, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("pspawn did not end on {sig}"));
        assert_eq!(st.code(), Some(code), "{sig}");
    }
}

#[test]
fn palloc_alone_at_a_terminal_opens_a_shell_in_the_allocation() {
    let pdvm = daemon();
    // `script` gives palloc a terminal; the "shell" is sh reading our lines.
    let mut cmd = Command::new("script");
    support::scrub_pmix_env(&mut cmd);
    cmd.env("TMPDIR", pdvm.tmpdir.path())
        .env("PATH", support::user_path())
        .env("SHELL", "/bin/sh")
        .args(["-qec", "palloc", "/dev/null"]);
    let out = run_with_input(
        &mut cmd,
        b"echo in-alloc=$PMIX_ALLOC_ID; pspawn sh -c 'echo on=$PMIX_HOSTNAME'; exit 3\n",
        60,
    );
    let all = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "the shell's status: {all}");
    assert!(all.contains("granted alloc."), "{all}");
    assert!(all.contains("1 node s00"), "one node by default: {all}");
    assert!(all.contains("in-alloc=alloc."), "{all}");
    assert!(
        all.contains("on=s00"),
        "pspawn runs in the allocation: {all}"
    );
    assert!(all.contains("released allocation"), "given back: {all}");

    // In a script (stdin not a terminal) palloc alone requests and prints
    // the grant (a notice: on stderr, as salloc's).
    let out = run(tool(&pdvm, "palloc"));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        text(&out.stderr).starts_with("palloc: granted alloc."),
        "{}",
        show(&out)
    );
    assert!(text(&out.stdout).is_empty(), "{}", show(&out));
}

crate::prrte_3_test! {
    fn stdin_goes_to_rank_0_against_prrte_3_0_14() {
        let dvm = Prte::start();
        let mut cmd = tool(&dvm, "pspawn");
        cmd.arg("cat");
        let out = run_with_input(&mut cmd, b"hello wheel\n", 60);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(text(&out.stdout), "hello wheel\n", "{}", show(&out));
    }
}
