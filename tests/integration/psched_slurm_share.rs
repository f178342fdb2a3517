//! psched on Slurm as one more user of a shared Slurm (issue 46): what it
//! costs the controller does not grow with the allocations it holds (one
//! `squeue` for all its jobs each period, never one query per job), and a
//! request takes whole nodes only when it says so (`palloc --exclusive`).
//! Every test once on Slurm 22.05 and once on 26.05.3.

use crate::psched_cluster::{hold_with, wait_for};

use crate::support::cluster::Cluster;
use crate::support::slurm::on_both_versions;
use crate::support::slurm::{
    slurm_in, start_psched_on, start_psched_with_env, Select, Slurm, Version,
};
use crate::support::{tool, ToolCommand};

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
/// about all four jobs in one RPC each period, never job by job
/// (`REQUEST_JOB_INFO_SINGLE`, one `scontrol show job` each: four RPCs a
/// period before). psched runs as root here, which squeue cannot filter on
/// (it loads the whole queue, `REQUEST_JOB_INFO`, where for another user
/// it asks for that user's jobs, `REQUEST_JOB_USER_INFO`); root's default
/// is one query each, so this psched is told `PSCHED_SLURM_QUERY=one`.
fn one_query_a_period_asks_slurm_about_every_held_job(v: Version) {
    let mut c = Cluster::start_for_scheduler(1, 3, &[]);
    let s = slurm_in(&c, v, Select::WholeNodes);
    start_psched_with_env(
        &mut c,
        &s,
        &[
            ("PSCHED_SLURM_ROOT_ONLY", "1"),
            ("PSCHED_SLURM_QUERY", "one"),
        ],
    );
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
    let asked = crate::support::wait::within_every(
        std::time::Duration::from_secs(60),
        std::time::Duration::from_millis(500),
        || rpc_count(&s, "REQUEST_JOB_INFO") >= 3,
    );
    assert!(
        asked,
        "psched never asked Slurm about its jobs together three times: {}\n{}",
        s.run("sdiag", &[]),
        c.psched_log()
    );
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

/// Whether job `id` holds its nodes whole, as `scontrol show job` says:
/// `Exclusive=` other than `NO` (Slurm 24.05 and later), else (22.05)
/// `OverSubscribe=NO`.
fn holds_whole_nodes(s: &Slurm, id: u64) -> bool {
    let out = s.show_job(id);
    let field = |k: &str| {
        out.split_whitespace()
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
    };
    match field("Exclusive") {
        Some(e) => e != "NO",
        None => {
            field("OverSubscribe").unwrap_or_else(|| panic!("no OverSubscribe= in {out}")) == "NO"
        }
    }
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

/// On a Slurm that hands out CPUs (`select/cons_tres`), a one-node request
/// is a Slurm job other jobs may share the node with (psched passed no
/// `--exclusive`; before, every job was exclusive); with `palloc
/// --exclusive` it is a job that holds its node whole.
fn a_request_shares_its_node_unless_it_asks_for_it_whole(v: Version) {
    let mut c = Cluster::start_for_scheduler(1, 3, &[]);
    let s = slurm_in(&c, v, Select::Cpus);
    start_psched_on(&mut c, &s);
    let palloc = || tool(&c, "palloc").no_color().on_slurm(&s);
    let (mut shared, _l1, id1) = hold_with(palloc(), &["-N", "1", "-t", "10m"]);
    let (mut whole, _l2, id2) = hold_with(palloc(), &["-N", "1", "--exclusive", "-t", "10m"]);
    let (j1, j2) = (job_of(&s, &id1), job_of(&s, &id2));
    let log = || format!("{}\n{}", s.show_job(j1), c.psched_log());
    assert!(!holds_whole_nodes(&s, j1), "shared: {}", log());
    assert!(holds_whole_nodes(&s, j2), "whole: {}", s.show_job(j2));
    for h in [&mut shared, &mut whole] {
        let _ = h.kill();
        let _ = h.wait();
    }
}
