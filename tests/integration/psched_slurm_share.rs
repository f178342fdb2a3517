//! psched on Slurm as one more user of a shared Slurm (issue 46): what it
//! costs the controller does not grow with the allocations it holds (one
//! `squeue` for all its jobs each period, never one query per job), and a
//! request takes whole nodes only when it says so (`palloc --exclusive`).
//! Every test once on Slurm 22.05 and once on 26.05.3.

use crate::psched_cluster::{hold_with, wait_for};
use crate::support::slurm::{cluster_on_slurm, Slurm, Version};
use crate::support::{tool, ToolCommand};

macro_rules! on_both_versions {
    ($($name:ident),* $(,)?) => {
        mod v22_05 {
            $(#[test] fn $name() {
                crate::support::rerun::once_more_if_a_peer_died(|| {
                    super::$name(super::Version::Debian22)
                })
            })*
        }
        mod v26_05 {
            $(#[test] fn $name() {
                crate::support::rerun::once_more_if_a_peer_died(|| {
                    super::$name(super::Version::Current26)
                })
            })*
        }
    };
}

on_both_versions!(
    one_query_a_period_asks_slurm_about_every_held_job,
    a_request_shares_its_node_unless_it_asks_for_it_whole,
);

/// slurmctld's count of RPCs of type `name` since the last `sdiag --reset`.
fn rpc_count(s: &Slurm, name: &str) -> u64 {
    let out = s.run("sdiag", &[]);
    let by_type = out
        .split("Remote Procedure Call statistics by message type")
        .nth(1)
        .and_then(|t| t.split("Remote Procedure Call statistics by user").next())
        .unwrap_or_default();
    by_type
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split("count:").nth(1))
        .and_then(|c| c.split_whitespace().next())
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Three allocations held and one queued behind them: psched asks Slurm
/// about all four jobs in one RPC each time (`REQUEST_JOB_USER_INFO`,
/// psched's own jobs), never job by job (`REQUEST_JOB_INFO_SINGLE`, one
/// `scontrol show job` each: four RPCs a period before).
fn one_query_a_period_asks_slurm_about_every_held_job(v: Version) {
    let (c, s) = cluster_on_slurm(v, &[]);
    let palloc = || tool(&c, "palloc").no_color().on_slurm(&s);
    let mut held = Vec::new();
    for _ in 0..3 {
        let (h, lines, _id) = hold_with(palloc(), &["-N", "1", "-t", "10m"]);
        held.push((h, lines));
    }
    let mut queued = palloc()
        .args(["--hold", "--json", "-N", "1", "-t", "10m"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("palloc");
    wait_for("psched says its fourth job waits in Slurm's queue", || {
        c.psched_log().contains("waits in Slurm's queue")
    });
    // From here on only psched speaks to slurmctld (sdiag aside).
    s.run("sdiag", &["--reset"]);
    wait_for("psched asked Slurm about its jobs three times", || {
        rpc_count(&s, "REQUEST_JOB_USER_INFO") >= 3
    });
    let single = rpc_count(&s, "REQUEST_JOB_INFO_SINGLE");
    assert_eq!(
        single,
        0,
        "no job asked about alone while psched holds four: {}\n{}",
        s.run("sdiag", &[]),
        c.psched_log()
    );
    for h in held.iter_mut().map(|(h, _)| h).chain([&mut queued]) {
        let _ = h.kill();
        let _ = h.wait();
    }
}

/// `OverSubscribe=` of job `id` in `scontrol show job`: `NO` for a job
/// that holds its nodes whole (`--exclusive`).
fn oversubscribe(s: &Slurm, id: u64) -> String {
    let out = s.show_job(id);
    out.split_whitespace()
        .find_map(|kv| kv.strip_prefix("OverSubscribe="))
        .unwrap_or_else(|| panic!("no OverSubscribe= in {out}"))
        .to_string()
}

/// The Slurm job id behind allocation `alloc` (its name ends `.ALLOC`).
fn job_of(s: &Slurm, alloc: &str) -> u64 {
    let suffix = format!(".{alloc}");
    s.jobs()
        .iter()
        .find(|j| j.name.ends_with(&suffix))
        .map(|j| j.id)
        .unwrap_or_else(|| panic!("no Slurm job for {alloc}: {:?}", s.jobs()))
}

/// A one-node request is a Slurm job other jobs may share the node with
/// (`OverSubscribe` not `NO`: psched passed no `--exclusive`); with
/// `palloc --exclusive` it is a job that holds its node whole.
fn a_request_shares_its_node_unless_it_asks_for_it_whole(v: Version) {
    let (c, s) = cluster_on_slurm(v, &[]);
    let palloc = || tool(&c, "palloc").no_color().on_slurm(&s);
    let (mut shared, _l1, id1) = hold_with(palloc(), &["-N", "1", "-t", "10m"]);
    let (mut whole, _l2, id2) = hold_with(palloc(), &["-N", "1", "--exclusive", "-t", "10m"]);
    let (j1, j2) = (job_of(&s, &id1), job_of(&s, &id2));
    let log = || format!("{}\n{}", s.show_job(j1), c.psched_log());
    assert_ne!(oversubscribe(&s, j1), "NO", "shared: {}", log());
    assert_eq!(oversubscribe(&s, j2), "NO", "whole: {}", s.show_job(j2));
    for h in [&mut shared, &mut whole] {
        let _ = h.kill();
        let _ = h.wait();
    }
    wait_for("both jobs end", || {
        s.jobs()
            .iter()
            .all(|j| j.state != "RUNNING" && j.state != "PENDING")
    });
}
