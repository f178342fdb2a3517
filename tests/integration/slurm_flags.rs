//! Issue 17: the spellings a Slurm or PRRTE user already types, on pspawn
//! against pdvm: the caller's environment reaches the job (srun's
//! `--export=ALL`), `--export=NONE` and `-x NOTSET` say what they do,
//! `-D/--chdir` finds `./prog` in that directory, `-l` labels lines and
//! `-w` names hosts as `-H` does; unknown options are usage errors.

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::{show, text, tool};

use std::process::{Output, Stdio};

fn pdvm() -> Pdvm {
    Pdvm::start(&["--nodes", "2", "--slots", "2"])
}

fn pspawn(dvm: &Pdvm, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = dvm.tool("pspawn");
    c.args(args).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    support::run_with_timeout(&mut c, 60)
}

/// `export MYVAR=hello; pspawn sh -c 'echo $MYVAR'` printed nothing (pdvm's
/// own environment, not the caller's); now hello, as srun. The caller's
/// PMIx identity is not exported: the job's rank is its own.
#[test]
fn caller_environment_is_exported_by_default() {
    let dvm = pdvm();
    let env = [("PMT_MYVAR", "hello"), ("PMIX_RANK", "77")];
    let o = pspawn(&dvm, &["sh", "-c", "echo $PMT_MYVAR-$PMIX_RANK"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(text(&o.stdout).trim(), "hello-0", "{}", show(&o));
    let o = pspawn(
        &dvm,
        &["--export=NONE", "sh", "-c", "echo [$PMT_MYVAR]"],
        &env,
    );
    assert_eq!(text(&o.stdout).trim(), "[]", "{}", show(&o));
    let o = pspawn(
        &dvm,
        &[
            "--export=PMT_MYVAR",
            "sh",
            "-c",
            "echo [$PMT_MYVAR][$PMT_OTHER]",
        ],
        &[("PMT_MYVAR", "a"), ("PMT_OTHER", "b")],
    );
    assert_eq!(text(&o.stdout).trim(), "[a][]", "{}", show(&o));
}

/// `-x NOTSET` was silently dropped; now a usage error naming the variable.
#[test]
fn forwarding_an_unset_variable_is_refused() {
    let dvm = pdvm();
    let o = pspawn(&dvm, &["-x", "PMT_SURELY_NOTSET", "true"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("PMT_SURELY_NOTSET is not set"),
        "{}",
        show(&o)
    );
}

/// `pspawn --chdir DIR ./run.sh` looked for ./run.sh in the caller's
/// directory; now in DIR, as `srun --chdir` and `prun --wdir` do.
#[test]
fn chdir_finds_the_program_there() {
    let dvm = pdvm();
    let dir = support::unique_tmpdir("chdir");
    let script = dir.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho ran-in-$(pwd)\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = dir.path().to_str().unwrap();
    for flag in ["-D", "--chdir", "--wdir"] {
        let o = pspawn(&dvm, &[flag, d, "./run.sh"], &[]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", show(&o));
        assert_eq!(text(&o.stdout).trim(), format!("ran-in-{d}"), "{flag}");
    }
}

/// srun's `-l` (label) and `-w` (node list) are pspawn's --tag-output and -H.
#[test]
fn label_and_nodelist_spellings() {
    let dvm = pdvm();
    let o = pspawn(
        &dvm,
        &[
            "-n",
            "2",
            "-l",
            "-w",
            "n002",
            "sh",
            "-c",
            "echo $PMIX_HOSTNAME",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["[0] n002", "[1] n002"], "{}", show(&o));
}

/// `pspawn --pty bash` said "program not found: --pty" (exit 5), as did
/// `-N` before pspawn took it: the binary now refuses an option it does not
/// take before connecting, exit 2, saying `--` starts the program.
#[test]
fn unknown_option_exits_2_before_connecting() {
    let dvm = pdvm();
    for args in [
        &["--mpi=pmix", "-n", "4", "true"][..],
        &["--pty", "bash"],
        &["--tme", "3", "true"],
    ] {
        let o = pspawn(&dvm, args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        assert!(
            text(&o.stderr).contains("`--` starts the program"),
            "{}",
            show(&o)
        );
    }
}

/// `pspawn -H nosuch true` said "program not found" on pdvm and suggested
/// `:OVERSUBSCRIBE` on PRRTE master; now both name the host that does not
/// exist (exit 5) and list the DVM's nodes.
#[test]
fn unknown_host_is_named_on_pdvm() {
    let dvm = pdvm();
    let o = pspawn(&dvm, &["-H", "nosuch", "true"], &[]);
    assert_eq!(o.status.code(), Some(5), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("no such host: nosuch"), "{}", show(&o));
    assert!(!err.contains("program not found"), "{}", show(&o));
}

#[test]
fn unknown_host_is_named_on_prrte_master() {
    let dvm = support::Prte::start_master();
    let mut c = tool(&dvm, "pspawn");
    c.args(["-H", "nosuch", "true"]).stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 60);
    let err = text(&o.stderr);
    assert!(
        err.contains("no such host: nosuch"),
        "{}\n{}",
        show(&o),
        dvm.logs()
    );
    assert!(!err.contains("OVERSUBSCRIBE"), "{}", show(&o));
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
}

/// `prelease --reacquire` on pdvm said "use pdvm"; now it says that this
/// DVM does not reacquire, and what to do instead.
#[test]
fn reacquire_on_pdvm_says_something_true() {
    let dvm = pdvm();
    let mut c = dvm.tool("prelease");
    c.args(["--reacquire", "alloc.1"]).stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 60);
    assert_eq!(o.status.code(), Some(7), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(!err.contains("use pdvm"), "{}", show(&o));
    assert!(err.contains("does not reacquire"), "{}", show(&o));
}

/// On PRRTE master without a scheduler, `palloc -N 1` exited 0 with an empty
/// reservation (and the next pspawn suggested OVERSUBSCRIBE); now it is an
/// error naming the missing scheduler (exit 7), and the empty reservation
/// is given back.
#[test]
fn empty_grant_without_a_scheduler_is_an_error_on_prrte_master() {
    let dvm = support::Prte::start_master();
    for args in [&["-N", "1", "--", "true"][..], &["-N", "1", "--parsable"]] {
        let o = support::run_with_timeout(tool(&dvm, "palloc").stdin(Stdio::null()).args(args), 60);
        assert_eq!(
            o.status.code(),
            Some(7),
            "{args:?}: {}\n{}",
            show(&o),
            dvm.logs()
        );
        assert!(
            text(&o.stderr).contains("no scheduler is attached"),
            "{}",
            show(&o)
        );
        assert!(o.stdout.is_empty(), "{}", show(&o));
    }
    let o = support::run_with_timeout(
        tool(&dvm, "pwatch").stdin(Stdio::null()).args([
            "--status",
            "--what",
            "reservations",
            "--json",
        ]),
        60,
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let left = support::json_records(&text(&o.stdout));
    assert!(left.is_empty(), "reservations left behind: {left:?}");
}

/// The completions of -H/-w (pspawn) and -w/--exclude (palloc) call
/// `pwatch --complete nodes`, which prints the DVM's node names.
#[test]
fn node_names_complete_live() {
    let dvm = pdvm();
    let mut c = dvm.tool("pwatch");
    c.args(["--complete", "nodes"]).stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 60);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let names: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    assert_eq!(names, ["n001", "n002"], "{}", show(&o));
}

/// Issue 28: `--export=NONE` still passed pdvm's own environment (its
/// variables reached the job); now the job gets only what `-x` names and
/// what PMIx needs (its rank, its server), as srun's `--export=NONE`.
#[test]
fn export_none_passes_nothing_of_the_dvms_own_environment() {
    let dvm = Pdvm::builder(&["--nodes", "1", "--slots", "2"])
        .env("PMT_DVM_OWN", "leaked")
        .start();
    let all = pspawn(&dvm, &["sh", "-c", "echo [$PMT_DVM_OWN]"], &[]);
    assert_eq!(all.status.code(), Some(0), "{}", show(&all));
    assert_eq!(
        text(&all.stdout).trim(),
        "[leaked]",
        "ALL adds the caller's to the DVM's"
    );
    let o = pspawn(
        &dvm,
        &[
            "--export=NONE",
            "-x",
            "PMT_MINE=given",
            "sh",
            "-c",
            "echo [$PMT_DVM_OWN][$PMT_MINE][$PMIX_RANK][${HOME:-}]",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(text(&o.stdout).trim(), "[][given][0][]", "{}", show(&o));
}

/// Issue 28: `palloc --extend` printed "granted" with `time_limit_secs:
/// null`; now the limit the allocation has after the extend, as the DVM
/// reports it (10 minutes granted, 5 more: at most 15 left, more than 10).
#[test]
fn extend_reports_the_new_time_limit() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let mut c = dvm.tool("palloc");
    c.args([
        "-N",
        "1",
        "-t",
        "10m",
        "--",
        "sh",
        "-c",
        "palloc --extend \"$PMIX_ALLOC_ID\" -t 5m --json",
    ])
    .stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 60);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let recs = support::json_records(&text(&o.stdout));
    let ext = recs
        .iter()
        .find(|r| r["directive"] == "extend")
        .unwrap_or_else(|| panic!("an extend record: {}", show(&o)));
    let limit = ext["time_limit_secs"]
        .as_u64()
        .unwrap_or_else(|| panic!("a time limit: {ext}"));
    assert!(limit > 600 && limit <= 900, "{ext}");
}

/// Issue 27: palloc's Slurm-only flags (`-A`, `--qos`, `--reservation`,
/// `-C`) on pdvm, which has no accounts, QOS, named reservations or node
/// features: the request is granted as without them (their help says so).
#[test]
fn slurm_only_palloc_flags_are_ignored_by_pdvm() {
    let dvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut c = dvm.tool("palloc");
    c.args(["-N", "1", "-A", "phys", "--qos", "low"])
        .args(["--reservation", "maint", "-C", "gpu&ib", "--parsable"])
        .stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 60);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(!text(&o.stdout).trim().is_empty(), "{}", show(&o));
}
