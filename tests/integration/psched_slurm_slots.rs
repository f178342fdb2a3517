//! psched on Slurm's shared nodes (issue 46.5): two one-slot grants of
//! one-CPU jobs, where Slurm (`select/cons_tres`, two CPUs a node) would
//! put both on one node. PRRTE master gives a node to one session at a
//! time and counts its slots per node, so each grant's job must run on a
//! node of its own. Every test once on Slurm 22.05 and once on 26.05.3.

use std::process::Stdio;
use std::time::Duration;

use crate::psched_cluster::{hold_with, run, wait_for};
use crate::support::cluster::Cluster;
use crate::support::slurm::on_both_versions;
use crate::support::slurm::{slurm_in, start_psched_on, Select, Version};
use crate::support::{show, tool, ToolCommand};

on_both_versions!(two_one_slot_grants_on_shared_nodes_each_run_their_job,);

/// Two `palloc -N 1` on shared nodes: a job of one slot runs in each at
/// the same time (the second waited for ever for the slot the first job
/// held, both grants on one node), and `-n 2` in one of them is refused
/// at once (one slot), as on pdvm.
fn two_one_slot_grants_on_shared_nodes_each_run_their_job(v: Version) {
    let mut c = Cluster::start_for_scheduler(1, 3, &[]);
    let s = slurm_in(&c, v, Select::Cpus);
    start_psched_on(&mut c, &s);
    let palloc = || tool(&c, "palloc").no_color().on_slurm(&s);
    let (mut a, _la, id_a) = hold_with(palloc(), &["-N", "1", "-t", "10m"]);
    let (mut b, _lb, id_b) = hold_with(palloc(), &["-N", "1", "-t", "10m"]);
    let ctx = || {
        format!(
            "{:?}\n{}\n--- psched:\n{}",
            s.jobs(),
            c.logs(),
            c.psched_log()
        )
    };
    let started = c.dir().join("started");
    let body = format!("touch {}; exec sleep 300", started.display());
    let mut first = tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args(["--target", &id_a, "-n", "1", "sh", "-c", &body])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pspawn in the first grant");
    wait_for("the first grant's job runs", || started.exists());
    let o = run(tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args(["--target", &id_b, "-n", "1", "hostname"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), ctx());
    let o = run(tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args(["--target", &id_b, "-n", "2", "hostname"]));
    assert_eq!(o.status.code(), Some(4), "{}\n{}", show(&o), ctx());
    let _ = first.kill();
    let _ = crate::support::wait_until(
        &mut first,
        std::time::Instant::now() + Duration::from_secs(30),
    );
    for h in [&mut a, &mut b] {
        let _ = h.kill();
        let _ = h.wait();
    }
}
