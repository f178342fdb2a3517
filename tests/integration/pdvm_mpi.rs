//! Real MPI programs and PMIx clients on pdvm, as on `flux start`: each test
//! builds its program from `tests/mpi/` (the wheel's `mpicc`, Open MPI
//! 5.0.11; or Debian's libpmix 4.2.2) and runs `pdvm --nodes 2 --slots 2 --
//! pspawn -n 4 PROGRAM`. They FAIL when a compiler or library is missing
//! (`support::mpi` panics).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::mpi::{cc_libpmix, mpi_env, mpicc};
use crate::support::{cargo_bin, run_with_timeout, scrub_pmix_env, show, text, unique_tmpdir};

/// `pdvm --nodes 2 --slots 2 -- pspawn -n 4 PROGRAM`, in `dir`.
fn four_ranks_on_two_nodes(program: &Path, dir: &Path) -> Output {
    let mut cmd = Command::new(cargo_bin("pdvm"));
    scrub_pmix_env(&mut cmd);
    mpi_env(&mut cmd);
    cmd.args(["--nodes", "2", "--slots", "2", "--tmpdir"])
        .arg(dir)
        .args(["--", "pspawn", "-n", "4"])
        .arg(program);
    run_with_timeout(&mut cmd, 120)
}

/// The lines of `o`'s stdout that start with `prefix`.
fn lines_with(o: &Output, prefix: &str) -> Vec<String> {
    text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(String::from)
        .collect()
}

/// The `name=value` words of a line.
fn words(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn an_mpi_allreduce_runs_on_two_simulated_nodes() {
    let tmp = unique_tmpdir("pdvm-mpi-hello");
    let hello = mpicc("hello_allreduce.c", tmp.path());
    let out = four_ranks_on_two_nodes(&hello, tmp.path());
    assert!(out.status.success(), "{}", show(&out));
    let lines = lines_with(&out, "rank ");
    assert_eq!(lines.len(), 4, "{}", show(&out));
    let mut per_node: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in &lines {
        // "rank R of 4 on NODE local L of M sum 6"
        let w: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(w[3], "4", "{l}");
        assert_eq!(w[11], "6", "{l}");
        assert_eq!(w[9], "2", "MPI sees two ranks on each simulated node: {l}");
        per_node
            .entry(w[5].to_string())
            .or_default()
            .push(w[1].into());
    }
    let nodes: Vec<&String> = per_node.keys().collect();
    assert_eq!(nodes, ["n001", "n002"], "{}", show(&out));
    assert!(per_node.values().all(|r| r.len() == 2), "{per_node:?}");
}

#[test]
fn mpi_abort_ends_the_job_with_its_status_and_pspawn_says_so() {
    let tmp = unique_tmpdir("pdvm-mpi-abort");
    let abort = mpicc("abort.c", tmp.path());
    let out = four_ranks_on_two_nodes(&abort, tmp.path());
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("rank 1 called abort with status 3"),
        "{}",
        show(&out)
    );
}

#[test]
fn a_token_goes_around_a_ring_of_sends_across_nodes() {
    let tmp = unique_tmpdir("pdvm-mpi-ring");
    let ring = mpicc("ring.c", tmp.path());
    let out = four_ranks_on_two_nodes(&ring, tmp.path());
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        lines_with(&out, "ring "),
        ["ring 4 rounds 3 token 12"],
        "{}",
        show(&out)
    );
}

#[test]
fn a_libpmix_client_gets_every_key_and_a_peers_value_after_a_fence() {
    let tmp = unique_tmpdir("pdvm-pmix-keys");
    let client = cc_libpmix("pmix_keys.c", tmp.path());
    let out = four_ranks_on_two_nodes(&client, tmp.path());
    assert!(out.status.success(), "{}", show(&out));
    let lines = lines_with(&out, "rank ");
    assert_eq!(lines.len(), 4, "{}", show(&out));
    let mut peers_of: BTreeMap<String, String> = BTreeMap::new();
    for l in &lines {
        assert!(!l.contains("ERR("), "every call answered: {l}");
        let w = words(l);
        let rank: u32 = l.split_whitespace().nth(1).unwrap().parse().unwrap();
        for (k, v) in [("job_size", "4"), ("univ_size", "4"), ("local_size", "2")] {
            assert_eq!(w[k], v, "{k}: {l}");
        }
        for k in ["commit", "fence", "fence2", "finalize", "appnum"] {
            assert_eq!(w[k], "0", "{k}: {l}");
        }
        assert_eq!(w["local_rank"], w["node_rank"], "{l}");
        assert_eq!(w["peer_value"], (100 + (rank + 1) % 4).to_string(), "{l}");
        let peers: Vec<&str> = w["local_peers"].split(',').collect();
        assert!(peers.contains(&rank.to_string().as_str()), "{l}");
        assert_eq!(
            w["local_rank"],
            peers
                .iter()
                .position(|p| *p == rank.to_string())
                .unwrap()
                .to_string(),
            "{l}"
        );
        let host = &w["hostname"];
        let same = peers_of
            .entry(host.clone())
            .or_insert_with(|| w["local_peers"].clone());
        assert_eq!(same, &w["local_peers"], "one node, one list of peers: {l}");
        if rank == 0 {
            assert_eq!(w["late_value"], "7", "the get waited for the commit: {l}");
        }
    }
    let hosts: Vec<&String> = peers_of.keys().collect();
    assert_eq!(hosts, ["n001", "n002"], "{}", show(&out));
}

/// An MPI job keeps running while another allocation ends: pdvm announces
/// that end to every listener, and Open MPI's default event handler
/// aborted the job on it (status -232). pdvm's own events now go only to
/// handlers of their code (`PMIX_EVENT_NON_DEFAULT`), as PRRTE's do.
#[test]
fn an_mpi_job_outlives_another_allocations_end() {
    let dir = unique_tmpdir("mpi-other-end");
    let program = mpicc("wait_allreduce.c", dir.path());
    let (up, go) = (dir.path().join("up"), dir.path().join("go"));
    let script = format!(
        "palloc -N 1 -- pspawn -n 2 {prog} {up} {go} > mpi.out 2> mpi.err & P=$!\n\
         for i in $(seq 600); do [ -e {up} ] && break; sleep 0.1; done\n\
         palloc -N 1 -- true 2> other.err\n\
         touch {go}\n\
         wait $P; echo rc=$?",
        prog = program.display(),
        up = up.display(),
        go = go.display()
    );
    let mut cmd = Command::new(cargo_bin("pdvm"));
    scrub_pmix_env(&mut cmd);
    mpi_env(&mut cmd);
    cmd.current_dir(dir.path())
        .args([
            "--nodes",
            "2",
            "--slots",
            "2",
            "--scheduler-nodes",
            "2",
            "--tmpdir",
        ])
        .arg(dir.path())
        .args(["--", "sh", "-c", &script]);
    let o = run_with_timeout(&mut cmd, 120);
    let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap_or_default();
    assert!(
        up.exists(),
        "MPI never started: {}\n{}",
        show(&o),
        read("mpi.err")
    );
    assert!(
        text(&o.stdout).contains("rc=0"),
        "{}\n{}",
        show(&o),
        read("mpi.err")
    );
    let mut sums: Vec<String> = read("mpi.out").lines().map(String::from).collect();
    sums.sort();
    assert_eq!(
        sums,
        ["rank 0 of 2 sum 1", "rank 1 of 2 sum 1"],
        "{}",
        read("mpi.err")
    );
}

/// The sorted lines `spawn.c` prints when 2 parents spawn 2 children that
/// each get 40 from parent 0 and send back 40 + their rank.
pub(crate) const SPAWN_LINES: [&str; 3] = [
    "child 0 of 2 parent_size 2 got 40",
    "child 1 of 2 parent_size 2 got 40",
    "parent got 81 from children",
];

/// `spawn.c`'s lines in `o`'s stdout, sorted.
pub(crate) fn spawn_lines(o: &Output) -> Vec<String> {
    family_lines(&o.stdout)
}

/// Lines of `bytes` starting with "child " or "parent " (`spawn.c`'s and
/// `spawn_late.c`'s), sorted.
pub(crate) fn family_lines(bytes: &[u8]) -> Vec<String> {
    let mut l: Vec<String> = text(bytes)
        .lines()
        .filter(|l| l.starts_with("child ") || l.starts_with("parent "))
        .map(String::from)
        .collect();
    l.sort();
    l
}

/// MPI_Comm_spawn on pdvm: the parents' spawn lands in the DVM, the two
/// sides find each other (publish/lookup), connect across namespaces,
/// exchange messages over the intercommunicator and disconnect; the
/// children's lines reach the pspawn that launched the parents (run here
/// from outside pdvm, so nothing reaches it through a shared stdout), not
/// pdvm's own stdout.
#[test]
fn mpi_comm_spawn_children_talk_to_their_parents_and_pspawn_shows_their_lines() {
    let tmp = unique_tmpdir("pdvm-mpi-spawn");
    let spawn = mpicc("spawn.c", tmp.path());
    let venv = crate::support::venv_dir();
    let mut b = crate::support::pdvm::Pdvm::builder(&["--nodes", "2", "--slots", "2"]);
    for var in ["OPAL_PREFIX", "PRTE_PREFIX", "PMIX_INSTALL_PREFIX"] {
        b = b.env(var, &venv);
    }
    let pdvm = b.start();
    let mut cmd = pdvm.tool("pspawn");
    mpi_env(&mut cmd).args(["-n", "2"]).arg(&spawn);
    let out = run_with_timeout(&mut cmd, 120);
    assert!(out.status.success(), "{}\n{}", show(&out), pdvm.logs());
    assert_eq!(
        spawn_lines(&out),
        SPAWN_LINES,
        "{}\n{}",
        show(&out),
        pdvm.logs()
    );
    assert!(!pdvm.logs().contains("child "), "{}", pdvm.logs());
}
