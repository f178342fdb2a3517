//! psched on PRRTE master as users load it: the same node granted again
//! and again whatever ended the allocation before, many requests at once,
//! and requests PRRTE will refuse (issue 26).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::psched_cluster::{grant, hold, psched_status, run, wait_for};
use crate::support::cluster::Cluster;
use crate::support::{show, text, tool, wait, wait_until, ToolCommand};

/// `palloc -q -N 1 -t 5m ARGS -- pspawn -n 1 sh -c 'echo $PMIX_HOSTNAME'`:
/// exit code and the host the job ran on.
fn round(c: &Cluster, args: &[&str]) -> (Option<i32>, String, String) {
    let o = run(tool(c, "palloc")
        .no_color()
        .args(["-q", "-N", "1", "-t", "5m"])
        .args(args)
        .args(["--", "pspawn", "-n", "1", "sh", "-c", "echo $PMIX_HOSTNAME"]));
    (
        o.status.code(),
        text(&o.stdout).trim().to_string(),
        show(&o),
    )
}

/// The nodes the DVM lists in each reservation (`pwatch --status --json`),
/// psched's own reservation of idle nodes left out (PRRTE keeps listing a
/// node there after it moved to a user's reservation, P10).
fn reservations(c: &Cluster) -> Option<Vec<(String, Vec<String>)>> {
    let o =
        run(tool(c, "pwatch")
            .no_color()
            .args(["--status", "--what", "reservations", "--json"]));
    if o.status.code() != Some(0) {
        eprintln!("pwatch --status did not answer this time: {}", show(&o));
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).expect("status JSON");
    let list = v["reservations"]
        .as_array()
        .expect("a reservations array")
        .iter()
        .filter(|r| !crate::psched_cluster::is_idle(r))
        .map(|r| {
            let nodes = r["nodes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            (
                r["alloc_id"].as_str().unwrap_or_default().to_string(),
                nodes,
            )
        })
        .collect();
    Some(list)
}

/// No node is in two reservations of the DVM; whether the DVM answered.
#[track_caller]
fn no_node_twice(c: &Cluster) -> bool {
    let Some(list) = reservations(c) else {
        return false;
    };
    let mut seen: Vec<(String, String)> = Vec::new();
    for (id, nodes) in list {
        for n in nodes {
            if let Some((other, _)) = seen.iter().find(|(_, m)| *m == n) {
                panic!("{n} is in {other} and {id}\n{}", c.psched_log());
            }
            seen.push((id.clone(), n));
        }
    }
    true
}

/// With psched owning 2 nodes, 50 allocations one after the other, ended
/// every way there is (palloc's release at the end of its command, NONE and
/// CHILD at its namespace's end, DEFAULT and CHILD_DEFAULT then the node
/// taken back with `palloc -w` and `prelease`, expiry, the administrator's
/// `psched --release`): every one runs its job on one of psched's nodes.
/// Before psched kept the nodes' daemons, a node ran jobs once per DVM
/// lifetime (PMIX_ERR_JOB_FAILED_TO_LAUNCH from the second round on).
#[test]
fn every_node_runs_jobs_again_whatever_ended_its_allocation() {
    // PRRTE master itself dies now and then under load (docs/conformance.md
    // D9); that is rerun once, counted, on a fresh cluster.
    crate::support::rerun::once_more_if_a_peer_died(|| {
        fifty_allocations_ended_every_way(&Cluster::start_with_psched(1, 2, &[]))
    });
}

fn fifty_allocations_ended_every_way(c: &Cluster) {
    let mut ran = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..50 {
        let how = i % 10;
        let (code, host, ctx) = match how {
            1 => round(c, &["--inherit", "none"]),
            2 => round(c, &["--inherit", "child"]),
            3 | 4 => {
                let rule = if how == 3 { "default" } else { "child-default" };
                let r = round(c, &["--inherit", rule]);
                // The node stayed in the DVM's default session: take it
                // back by name and give it back to psched.
                take_back(c, &r.1);
                r
            }
            5 if i < 60 => expire(c),
            6 if i < 60 => admin_release(c),
            _ => round(c, &[]),
        };
        let ctx = format!(
            "round {i}: {ctx}\n--- psched:\n{}\n{}",
            c.psched_log(),
            c.logs()
        );
        assert_eq!(code, Some(0), "{ctx}");
        assert!(c.pool.contains(&host), "ran on {host:?}: {ctx}");
        *ran.entry(host).or_default() += 1;
    }
    assert_eq!(ran.len(), 2, "both nodes ran jobs: {ran:?}");
    assert!(!c.prte_exited(), "{}", c.logs());
}

/// `palloc -w NODE --parsable` then `prelease`: the node is psched's again.
fn take_back(c: &Cluster, node: &str) {
    let o = run(tool(c, "palloc")
        .no_color()
        .args(["-q", "-w", node, "-t", "5m", "--parsable"]));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
    let id = text(&o.stdout).trim().to_string();
    let o = run(tool(c, "prelease").no_color().arg(&id));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.logs());
}

/// A held allocation reaches its time limit: the holder ends with 8, as on
/// pdvm; then a job runs on the node it held.
fn expire(c: &Cluster) -> (Option<i32>, String, String) {
    let o = run(tool(c, "palloc")
        .no_color()
        .args(["-N", "1", "-t", "2s", "--hold"]));
    assert_eq!(
        o.status.code(),
        Some(8),
        "expiry ends the holder: {}",
        show(&o)
    );
    assert!(
        text(&o.stderr).contains("time limit was reached"),
        "{}",
        show(&o)
    );
    round(c, &[])
}

/// The administrator releases a held allocation: its holder ends, and the
/// node runs the next job.
fn admin_release(c: &Cluster) -> (Option<i32>, String, String) {
    let (mut h, _lines, id) = hold(c, &["-N", "1", "-t", "5m"]);
    let o = run(Command::new(crate::support::cargo_bin("psched"))
        .args(["--release", &id, "--ledger"])
        .arg(c.ledger_path()));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let st = wait_until(&mut h, Instant::now() + Duration::from_secs(30))
        .0
        .unwrap_or_else(|| panic!("the holder of {id} did not end"));
    assert!(st.success(), "a released holder ends 0, as on pdvm: {st}");
    round(c, &[])
}

/// 48 `palloc -N 1 -t 5m -- pspawn -n 1 true` at once over 8 nodes: every
/// one is served and its job runs, PRRTE stays up, and no node is ever in
/// two reservations (checked while they run). Before, 12 at once killed
/// prte. The benchmark `cargo bench --bench psched_burst` times 200.
#[test]
fn a_burst_of_requests_is_served_whole() {
    // PRRTE master itself dies now and then under load (D9: once in a full
    // 8-thread run, at the first grant), or loses a launch beside a grow
    // and keeps its slot (one palloc of 48 exits 4, saying so, about once
    // in 20 bursts): that is rerun once, counted.
    crate::support::rerun::once_more_if_prrte_master_lapsed(burst_of_48);
}

fn burst_of_48() {
    let c = Cluster::start_with_psched(2, 8, &[]);
    let mut kids: Vec<std::process::Child> = (0..48)
        .map(|_| {
            tool(&c, "palloc")
                .no_color()
                .args([
                    "-q", "-N", "1", "-t", "5m", "--", "pspawn", "-n", "1", "true",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start palloc")
        })
        .collect();
    // Until every palloc ended, look at the reservations (psched --status)
    // every 200 ms.
    let mut looked = 0;
    let ended = wait::within_every(Duration::from_secs(240), Duration::from_millis(200), || {
        let all = kids.iter_mut().all(|k| !matches!(k.try_wait(), Ok(None)));
        if !all {
            looked += usize::from(no_node_twice(&c));
        }
        all
    });
    if !ended {
        // Say where the burst stuck: the pallocs still running (stopped
        // now, with what they said), psched's log and the DVM's.
        let mut stuck = Vec::new();
        for mut k in kids {
            if matches!(k.try_wait(), Ok(None)) {
                let tree = crate::support::stuck::describe(k.id());
                let _ = k.kill();
                let said = show(&k.wait_with_output().expect("palloc"));
                stuck.push(format!("{said}\n--- where it stood:\n{tree}"));
            }
        }
        panic!(
            "the burst did not end: {} of 48 pallocs still ran after 240 s (prte {}); the \
first:\n{}\n--- psched:\n{}\n{}",
            stuck.len(),
            if c.prte_exited() {
                "had exited"
            } else {
                "alive"
            },
            stuck.iter().take(3).cloned().collect::<Vec<_>>().join("\n"),
            c.psched_log(),
            c.logs()
        );
    }
    let mut failed = Vec::new();
    for k in kids {
        let o = k.wait_with_output().expect("palloc");
        if o.status.code() != Some(0) {
            failed.push(show(&o));
        }
    }
    assert!(
        looked > 0,
        "the reservations were seen while the burst ran; {} of 48 failed:\n{}\n--- psched:\n{}\n{}",
        failed.len(),
        failed.first().map(String::as_str).unwrap_or_default(),
        c.psched_log(),
        c.logs()
    );
    assert!(
        failed.is_empty(),
        "{} of 48 failed:\n{}\n--- psched:\n{}\n{}",
        failed.len(),
        failed.join("\n"),
        c.psched_log(),
        c.logs()
    );
    assert!(!c.prte_exited(), "{}", c.logs());
    wait_for("every node is free again", || {
        psched_status(&c)["free"].as_array().map(Vec::len) == Some(8)
    });
}

/// An application job that does not own allocation A (it runs in the
/// default pool) asks to extend A and to release it: both are refused
/// `PMIX_ERR_NO_PERMISSIONS` before psched's books change (PRRTE forwards
/// the request before it checks ownership: psched checks first); A keeps
/// its node, no other node is taken, and the owner's release works.
#[test]
fn a_request_from_outside_the_owners_changes_nothing() {
    let c = Cluster::start_with_psched(2, 3, &[]);
    let (mut h, _lines, id) = hold(&c, &["-N", "1", "-t", "5m"]);
    let before = grant(&c, &id).expect("granted")["nodes"].clone();
    let free_before = psched_status(&c)["free"].clone();
    let script =
        format!("palloc -q --extend {id} -N 1; echo extend=$?; prelease {id}; echo release=$?");
    let o = run(tool(&c, "pspawn")
        .no_color()
        .args(["-n", "1", "sh", "-c", &script]));
    let out = text(&o.stdout);
    let ctx = format!("{}\n--- psched:\n{}", show(&o), c.psched_log());
    assert!(
        out.contains("extend=6"),
        "EXTEND refused NO_PERMISSIONS: {ctx}"
    );
    assert!(
        out.contains("release=6"),
        "RELEASE refused NO_PERMISSIONS: {ctx}"
    );
    assert!(
        text(&o.stderr).contains("PMIX_ERR_NO_PERMISSIONS"),
        "the status is named: {ctx}"
    );
    assert_eq!(
        grant(&c, &id).expect("still granted")["nodes"],
        before,
        "{ctx}"
    );
    assert_eq!(psched_status(&c)["free"], free_before, "{ctx}");
    assert!(no_node_twice(&c), "pwatch --status answers");
    let o = run(tool(&c, "prelease").no_color().arg(&id));
    assert_eq!(o.status.code(), Some(0), "the owner releases: {}", show(&o));
    wait_for("psched freed the node", || grant(&c, &id).is_none());
    let _ = h.kill();
    let _ = h.wait();
}
