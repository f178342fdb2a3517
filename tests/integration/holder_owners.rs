//! Owners are never refused (issue 14): with two DVMs running, the same
//! user's commands act on an allocation through whatever holds it, the DVM
//! chosen by PMIX_TOOLS_URI for a whole script, or by `--pid`.

use crate::support;

use std::process::{Command, Stdio};

use crate::support::pdvm::Pdvm;
use crate::support::{show, text};

/// `file:` URI of `pdvm`'s rendezvous file.
fn uri_file(pdvm: &Pdvm) -> String {
    let dir = pdvm.rendezvous_dir();
    let suffix = format!(".tool.{}", pdvm.pid);
    let f = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&suffix))
        .unwrap_or_else(|| panic!("no rendezvous file in {}", dir.display()));
    format!("file:{}", f.display())
}

/// A script reserving, spawning into, listing and releasing one
/// allocation with `flags` on every command; `ok` when all succeeded.
fn round(flags: &str) -> String {
    format!(
        "ID=$(palloc -q {flags} -N 1 --parsable) && \
         pspawn {flags} --target \"$ID\" hostname && \
         pwatch {flags} --status --json | grep -q \"$ID\" && \
         prelease -q {flags} \"$ID\" && echo ok"
    )
}

fn sh(env_from: Command, script: &str) -> Command {
    let mut c = support::command_like(&env_from, "sh");
    c.args(["-c", script]).stdin(Stdio::null());
    c
}

#[test]
fn two_dvms_chosen_by_the_environment_or_by_pid_never_refuse_an_owner() {
    let a = Pdvm::start(&["--scheduler-nodes", "2"]);
    let b = Pdvm::start(&["--scheduler-nodes", "2"]);
    let nowhere = support::unique_tmpdir("nodvm");
    for dvm in [&a, &b] {
        // The environment variable picks the DVM; TMPDIR finds none.
        let mut by_env = sh(dvm.tool("pwatch"), &round(""));
        by_env
            .env("TMPDIR", nowhere.path())
            .env("PMIX_TOOLS_URI", uri_file(dvm));
        let o = support::run_with_timeout(&mut by_env, 60);
        assert_eq!(text(&o.stdout).lines().last(), Some("ok"), "{}", show(&o));
        // --pid picks it (with its --tmpdir).
        let flags = format!("--tmpdir {} --pid {}", dvm.tmpdir.path().display(), dvm.pid);
        let mut by_pid = sh(dvm.tool("pwatch"), &round(&flags));
        by_pid.env("TMPDIR", nowhere.path());
        let o = support::run_with_timeout(&mut by_pid, 60);
        assert_eq!(text(&o.stdout).lines().last(), Some("ok"), "{}", show(&o));
    }
}

/// From another shell, the request-id forms and `pwatch --alloc` reach the
/// palloc holding the allocation (they were refused as non-owners).
#[test]
fn request_id_forms_and_pwatch_alloc_act_through_the_holder() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let script = "ID=$(palloc -q -N 1 --parsable --request-id myreq) && \
                  palloc -q --extend-request myreq -N 1 && echo extended && \
                  { pwatch --alloc \"$ID\" --event timeout-warning --warn-timeout 1 \
                      --timeout 1s; echo pwatch=$?; } && \
                  prelease -q --request-id myreq && echo released";
    let mut c = sh(pdvm.tool("pwatch"), script);
    let o = support::run_with_timeout(&mut c, 60);
    let out = text(&o.stdout);
    assert!(out.contains("extended"), "{}", show(&o));
    // No warning within 1 s (exit 8), but armed: not refused (exit 6).
    assert!(out.contains("pwatch=8"), "{}", show(&o));
    assert!(out.contains("released"), "{}", show(&o));
}
