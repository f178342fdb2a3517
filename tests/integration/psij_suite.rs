//! PSI/J (issue 42): the `pmix` executor and `pspawn` launcher of
//! `integrations/psij` pass PSI/J 0.9.11's own executor suite
//! (`--executors pmix:single,pmix:multiple,pmix:pspawn`) on pdvm and on
//! PRRTE master + psched, with 0 failed and 0 errors and only the skips
//! PSI/J itself makes; the plugin's unit tests pass; and the multi-node check
//! the suite skips for executors it does not list (node_count 2 ×
//! processes_per_node 2 lands on 2 nodes with ranks 0–3) passes on both.
//! PSI/J and its suite come from `scripts/install-peers.sh`
//! (`$PMIX_TOOLS_PEERS/psij-venv`, `$PMIX_TOOLS_PEERS/psij-python-0.9.11`);
//! a missing install fails.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::support::cluster::Cluster;
use crate::support::pdvm::Pdvm;
use crate::support::tool::{Tmpdir, ToolHost};
use crate::support::{peers_dir, run_with_timeout, show, text, unique_tmpdir, user_path, TempDir};

/// PSI/J's suite files the issue names.
const SUITE: [&str; 7] = [
    "tests/test_executor.py",
    "tests/test_nodefile.py",
    "tests/test_resources.py",
    "tests/test_issue_435.py",
    "tests/getting_started",
    "tests/user_guide/test_resourcespec.py",
    "tests/user_guide/test_scheduling_information.py",
];

/// The skips PSI/J itself makes for these executors (file, its reason, how
/// many times with our three launchers).
const PSIJ_SKIPS: [(&str, &str, u32); 2] = [
    (
        "tests/test_nodefile.py",
        "This test does not work with the single launcher",
        1,
    ),
    (
        "tests/test_resources.py",
        "Unsupported executor/launcher combination",
        3,
    ),
];

/// The venv with PSI/J and pytest; panics when install-peers has not made it.
fn psij_venv() -> PathBuf {
    let venv = peers_dir().join("psij-venv");
    assert!(
        venv.join("bin/pytest").is_file(),
        "PSI/J venv not found at {} (PMIX_TOOLS_PEERS={:?}): run scripts/install-peers.sh",
        venv.display(),
        std::env::var_os("PMIX_TOOLS_PEERS")
    );
    venv
}

/// PSI/J's unpacked source tree, whose `tests/` is its suite.
fn psij_tree() -> PathBuf {
    let tree = peers_dir().join("psij-python-0.9.11");
    assert!(
        tree.join("tests/test_executor.py").is_file(),
        "PSI/J suite not found at {}: run scripts/install-peers.sh",
        tree.display()
    );
    tree
}

/// The plugin as checked out (put first on PYTHONPATH: PSI/J finds its
/// `psij-descriptors/` there).
fn plugin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("integrations/psij")
}

/// The venv's pytest next to `host`, our binaries first on PATH, HOME a
/// fresh directory (PSI/J writes its jobs' files under ~/.psij).
fn pytest(host: &impl ToolHost, home: &TempDir) -> Command {
    let mut cmd = host.tool_command(psij_venv().join("bin/pytest"));
    cmd.env("PATH", user_path())
        .env("PYTHONPATH", plugin_dir().join("src"))
        .env("HOME", home.path())
        .args(["-p", "no:cacheprovider", "-q", "-rs", "--timeout", "300"]);
    cmd
}

fn run(cmd: &mut Command) -> Output {
    run_with_timeout(cmd.stdin(Stdio::null()), 1800)
}

/// pytest's last line (`N passed, M skipped in Ts`).
fn summary(out: &str) -> String {
    out.lines()
        .rev()
        .find(|l| l.contains(" in ") && (l.contains("passed") || l.contains("failed")))
        .unwrap_or("")
        .trim_matches(|c| c == '=' || c == ' ')
        .to_string()
}

/// Asserts pytest exited 0 with no failure or error, `passed` tests passed
/// and only `skips` were skipped; prints the summary.
fn assert_green(o: &Output, what: &str, passed: u32, skips: &[(&str, &str, u32)]) {
    let out = text(&o.stdout);
    let line = summary(&out);
    println!("{what}: {line}");
    for l in out.lines().filter(|l| l.starts_with("SKIPPED")) {
        println!("  {l}");
    }
    assert_eq!(o.status.code(), Some(0), "{what}: {line}\n{}", show(o));
    assert!(
        !line.contains("failed") && !line.contains("error"),
        "{what}: {line}\n{}",
        show(o)
    );
    assert!(
        line.starts_with(&format!("{passed} passed")),
        "{what}: expected {passed} passed: {line}"
    );
    let skipped: u32 = skips.iter().map(|s| s.2).sum();
    if skipped == 0 {
        assert!(!line.contains("skipped"), "{what}: {line}");
    } else {
        assert!(
            line.contains(&format!("{skipped} skipped")),
            "{what}: {line}"
        );
    }
    for l in out.lines().filter(|l| l.starts_with("SKIPPED")) {
        assert!(
            skips.iter().any(
                |(file, reason, n)| l.starts_with(&format!("SKIPPED [{n}] {file}:"))
                    && l.ends_with(reason)
            ),
            "{what}: a skip PSI/J does not make itself: {l}"
        );
    }
}

/// PSI/J's suite over the three executor:launcher pairs.
fn run_suite(host: &impl ToolHost, what: &str) {
    let home = unique_tmpdir("psij-home");
    let o = run(pytest(host, &home)
        .current_dir(psij_tree())
        .args(SUITE)
        .args(["--executors", "pmix:single,pmix:multiple,pmix:pspawn"]));
    // 22 tests × 3 launchers + the batch-script generation test, less skips
    assert_green(&o, what, 62, &PSIJ_SKIPS);
}

/// The multi-node check of `integrations/psij/tests/dvm`.
fn run_multi_node(host: &impl ToolHost, what: &str) {
    let home = unique_tmpdir("psij-home");
    let o = run(pytest(host, &home)
        .arg("-s")
        .current_dir(plugin_dir())
        .arg("tests/dvm/test_multinode.py"));
    let out = text(&o.stdout);
    if let Some(l) = out.lines().find(|l| l.starts_with("ranks and nodes:")) {
        println!("{what}: {l}");
    }
    assert_green(&o, what, 1, &[]);
}

/// pdvm with room for the suite: one default node, and a scheduler with
/// four nodes of four slots (user_guide/test_resourcespec asks 2 × 4).
fn pdvm() -> Pdvm {
    Pdvm::start(&["--nodes", "1", "--slots", "4", "--scheduler-nodes", "4"])
}

/// PRRTE master whose allocations psched grants from four pool nodes of
/// four slots each.
fn cluster() -> Cluster {
    Cluster::start_with_psched(1, 4, &["--slots", "4"])
}

#[test]
fn plugin_unit_tests_pass() {
    let home = unique_tmpdir("psij-home");
    let empty = unique_tmpdir("psij-nodvm");
    let o = run(pytest(&Tmpdir(empty.path()), &home)
        .current_dir(plugin_dir())
        .arg("tests/test_units.py"));
    // Every test the file defines passes (none skipped, none missed).
    let defined = std::fs::read_to_string(plugin_dir().join("tests/test_units.py"))
        .expect("the plugin's unit tests")
        .lines()
        .filter(|l| l.trim_start().starts_with("def test_"))
        .count();
    assert_green(&o, "plugin unit tests", defined as u32, &[]);
}

#[test]
fn psij_suite_passes_on_pdvm() {
    let dvm = pdvm();
    run_suite(&dvm, "PSI/J suite on pdvm");
}

#[test]
fn two_nodes_two_ranks_each_on_pdvm() {
    let dvm = pdvm();
    run_multi_node(&dvm, "multi-node check on pdvm");
}

#[test]
fn psij_suite_passes_on_prrte_master_with_psched() {
    let c = cluster();
    run_suite(&c, "PSI/J suite on PRRTE master + psched");
    drop(c);
}

#[test]
fn two_nodes_two_ranks_each_on_prrte_master_with_psched() {
    let c = cluster();
    run_multi_node(&c, "multi-node check on PRRTE master + psched");
    drop(c);
}

/// The same check with psched's nodes coming from Slurm (26.05.3, nodes of
/// two CPUs, psched told `--slots 2`): the executor's code is the same on
/// every DVM the tools reach.
#[test]
fn two_nodes_two_ranks_each_on_psched_on_slurm() {
    use crate::support::slurm::{slurm_in, start_psched_with_args, Select, Version};
    let mut c = Cluster::start_for_scheduler(1, 3, &[]);
    let s = slurm_in(&c, Version::Current26, Select::WholeNodes);
    start_psched_with_args(&mut c, &s, &["--slots", "2"]);
    run_multi_node(
        &c,
        "multi-node check on PRRTE master + psched on Slurm 26.05.3",
    );
    drop(c);
    drop(s);
}
