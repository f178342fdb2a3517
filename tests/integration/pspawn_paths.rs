//! Issue 28, point 2: a relative program path is the caller's. pspawn run
//! in a directory other than the DVM's finds `./prog` there (pdvm resolves
//! it from the caller's working directory, as PRRTE master does), inside an
//! allocation too; `-D/--chdir` still wins.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::{show, text, tool, Prte};

fn run(cmd: &mut Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 60)
}

/// An executable `prog` in `dir` that prints `tag` and its working directory.
fn prog_in(dir: &Path, tag: &str) {
    let p = dir.join("prog");
    std::fs::write(&p, format!("#!/bin/sh\necho {tag} in \"$(pwd)\"\n")).expect("write prog");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn pspawn_runs_dot_slash_prog_from_the_callers_directory_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let here = support::unique_tmpdir("caller");
    prog_in(here.path(), "mine");
    let out = run(pdvm.tool("pspawn").current_dir(here.path()).arg("./prog"));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        text(&out.stdout),
        format!("mine in {}\n", here.path().display()),
        "{}",
        show(&out)
    );

    // Inside an allocation: the same, never "the allocation has ended".
    let out = run(pdvm
        .tool("palloc")
        .current_dir(here.path())
        .args(["-N", "1", "--", "pspawn", "./prog"]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(text(&out.stdout).contains("mine in "), "{}", show(&out));
}

#[test]
fn chdir_still_wins_over_the_callers_directory_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let here = support::unique_tmpdir("caller");
    let there = support::unique_tmpdir("chdir");
    prog_in(here.path(), "caller");
    prog_in(there.path(), "chdir");
    let out = run(pdvm
        .tool("pspawn")
        .current_dir(here.path())
        .arg("-D")
        .arg(there.path())
        .arg("./prog"));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        text(&out.stdout),
        format!("chdir in {}\n", there.path().display()),
        "{}",
        show(&out)
    );
}

#[test]
fn a_missing_program_inside_a_live_allocation_is_named_not_the_allocation() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let here = support::unique_tmpdir("caller");
    // A PATH of the job's own skips pspawn's local check: the DVM answers.
    let out = run(pdvm.tool("palloc").current_dir(here.path()).args([
        "-N",
        "1",
        "--",
        "pspawn",
        "-x",
        "PATH=/usr/bin:/bin",
        "./no-such-prog",
    ]));
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(err.contains("./no-such-prog"), "{err}");
    assert!(!err.contains("has ended"), "the allocation is alive: {err}");
}

#[test]
fn pspawn_runs_dot_slash_prog_from_the_callers_directory_on_prrte_master() {
    let dvm = Prte::start_master();
    let here = support::unique_tmpdir("caller");
    prog_in(here.path(), "mine");
    let mut cmd = tool(&dvm, "pspawn");
    cmd.current_dir(here.path()).arg("./prog");
    let out = run(&mut cmd);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        text(&out.stdout),
        format!("mine in {}\n", here.path().display()),
        "{}",
        show(&out)
    );
}
