//! psched attached to a multi-node PRRTE master (`support::cluster`,
//! `Cluster::start_with_psched`): the DVM starts with its head node only,
//! every other node is psched's, and reaches the DVM only when psched
//! grants it (PRRTE then starts a daemon there through the ssh stand-in).

use std::process::{Command, Output, Stdio};

use crate::support::cluster::Cluster;
use crate::support::{cargo_bin, run_with_timeout, show, text, user_path};

/// `name` run inside the cluster's namespace, with our binaries on PATH.
fn tool(c: &Cluster, name: &str) -> Command {
    let mut cmd = c.command(cargo_bin(name));
    cmd.env("PATH", user_path()).env("NO_COLOR", "1");
    cmd
}

/// `cmd` preceded by a bounded wait (30 s) until `prte` has said `DVM ready`
/// twice (its start, then the end of the grow that started the granted
/// nodes' daemons).
fn wait_grown(cmd: &str) -> String {
    format!(
        "i=0; until [ \"$(grep -c 'DVM ready' \"$PRRTE_OUT\")\" -ge 2 ]; do \
         i=$((i+1)); [ $i -gt 300 ] && exit 99; sleep 0.1; done; {cmd}"
    )
}

fn run(cmd: &mut Command) -> Output {
    run_with_timeout(cmd.stdin(Stdio::null()), 90)
}

/// `palloc -N 2 -t 2m --warn-timeout 1m --inherit child -- sh -c 'pspawn -n
/// 2 --map-by node hostname'` prints two nodes of psched's pool (not the
/// head node) and exits 0; psched's ledger recorded the grant.
///
/// PRRTE master answers the grant before the granted nodes' daemons are up
/// (deviation P1 in docs/conformance.md: a spawn at once is
/// `PMIX_ERR_JOB_FAILED_TO_MAP`), so the command first waits, bounded, for
/// the DVM's own signal that the grow finished: `prte` prints `DVM ready`
/// a second time.
#[test]
fn palloc_n2_runs_on_two_pool_nodes() {
    let c = Cluster::start_with_psched(1, 4, &[]);
    let o = run(tool(&c, "palloc")
        .env("PRRTE_OUT", c.dir().join("prte.out"))
        .args([
            "-N",
            "2",
            "-t",
            "2m",
            "--warn-timeout",
            "1m",
            "--inherit",
            "child",
            "--",
            "sh",
            "-c",
            &wait_grown("pspawn -n 2 --map-by node hostname"),
        ]));
    let ctx = format!(
        "{}\n{}\n--- psched:\n{}",
        show(&o),
        c.logs(),
        c.psched_log()
    );
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let mut hosts: Vec<String> = text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("node"))
        .map(String::from)
        .collect();
    hosts.sort();
    hosts.dedup();
    assert_eq!(hosts.len(), 2, "two distinct nodes: {ctx}");
    for h in &hosts {
        assert!(c.pool.contains(h), "{h} is one of psched's nodes: {ctx}");
    }
    let ledger = std::fs::read_to_string(c.ledger_path()).expect("ledger written");
    assert!(ledger.contains("next_id"), "{ledger}");
}
