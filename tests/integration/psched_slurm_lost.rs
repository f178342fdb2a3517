//! psched on Slurm when Slurm takes nodes away or goes quiet (issue 46.1,
//! 46.4): a node marked DOWN under an allocation ends what ran on it, its
//! pspawn saying so (`NODE_FAIL`, exit 1, the node named), and a request
//! larger than what is left is refused at once; a controller that stops
//! answering is said to the holders and the queued pallocs, and once back
//! the requests made meanwhile are granted at once. Every test once on
//! Slurm 22.05 and once on 26.05.3.

use std::process::Stdio;
use std::time::Duration;

use crate::psched_cluster::{run, wait_for};
use crate::support::cluster::Cluster;
use crate::support::slurm::{Slurm, Version};
use crate::support::{show, text, tool, LineReader, ToolCommand};

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

on_both_versions!(a_rank_on_a_node_slurm_takes_ends_its_pspawn_with_node_fail,);

/// The Slurm job behind allocation `alloc` (psched names it
/// `psched.TAG.ALLOC`).
fn job_of(s: &Slurm, alloc: &str) -> u64 {
    let suffix = format!(".{alloc}");
    let jobs = s.jobs();
    jobs.iter()
        .find(|j| j.name.ends_with(&suffix))
        .map(|j| j.id)
        .unwrap_or_else(|| panic!("no Slurm job for {alloc}: {jobs:?}"))
}

/// A `palloc --hold --json` with `args` on Slurm: the holder, its stdout
/// lines and the allocation id.
fn hold(c: &Cluster, s: &Slurm, args: &[&str]) -> (std::process::Child, LineReader, String) {
    crate::psched_cluster::hold_with(tool(c, "palloc").no_color().on_slurm(s), args)
}

/// A two-node allocation, a two-rank job across both nodes; Slurm marks
/// one node DOWN. The rank there is killed and the job's pspawn exits 1
/// naming the node and Slurm's `NODE_FAIL` (it exited 0, saying nothing:
/// PRRTE master announces status 0 for a killed process); then `-N 2`
/// and `-n 2` in what is left are refused at once, saying which node left
/// (they waited for ever for the busy slots).
fn a_rank_on_a_node_slurm_takes_ends_its_pspawn_with_node_fail(v: Version) {
    let (c, s) = crate::support::slurm::cluster_on_slurm(v, &[]);
    let (mut holder, _lines, id) = hold(&c, &s, &["-N", "2", "-t", "5m"]);
    let job = job_of(&s, &id);
    let nodes = s.job(job).expect("the job").nodes;
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    let (down, kept) = (nodes[0].clone(), nodes[1].clone());
    let ranks = c.dir().join("ranks");
    // The rank on the node kept ends at once; the other runs until killed.
    let body = format!(
        "echo \"$(hostname)\" >> {}; [ \"$(hostname)\" = {kept} ] && exit 0; exec sleep 300",
        ranks.display()
    );
    let spawned = tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args([
            "--target", &id, "-n", "2", "--map-by", "node", "sh", "-c", &body,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pspawn");
    wait_for("a rank ran on each node", || {
        let all = std::fs::read_to_string(&ranks).unwrap_or_default();
        nodes.iter().all(|n| all.lines().any(|l| l.trim() == n))
    });
    s.run(
        "scontrol",
        &[
            "update",
            &format!("NodeName={down}"),
            "State=DOWN",
            "Reason=psched-test",
        ],
    );
    let ctx = || format!("{}\n--- psched:\n{}", c.logs(), c.psched_log());
    let o = crate::support::wait_output(spawned, Duration::from_secs(120));
    let said = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}\n{}", ctx());
    assert!(
        said.contains("NODE_FAIL") && said.contains(&down) && said.contains(&id),
        "pspawn names the node, the allocation and Slurm's word: {said}\n{}",
        ctx()
    );
    // What is left of the allocation: one node, one slot.
    for ask in [["-N", "2"], ["-n", "2"]] {
        let o = run(tool(&c, "pspawn")
            .no_color()
            .on_slurm(&s)
            .args(["--target", &id, ask[0], ask[1], "hostname"]));
        assert_eq!(o.status.code(), Some(4), "{ask:?}: {}\n{}", show(&o), ctx());
        let said = text(&o.stderr);
        assert!(
            said.contains(&down) && said.contains("left it") && said.contains(&kept),
            "{ask:?} says what is left and which node left: {said}\n{}",
            ctx()
        );
    }
    // What fits still runs, on the node kept.
    let o = run(tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args(["--target", &id, "-n", "1", "hostname"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), ctx());
    assert_eq!(text(&o.stdout).trim(), kept, "{}", ctx());
    let _ = holder.kill();
    let _ = holder.wait();
}
