//! Issue 45, point 4: pdvm's memory is bounded. It keeps the last
//! `--job-history N` ended jobs, not every job it ever ran: after tens of
//! thousands of array tasks it lists no more than N of them and its
//! resident memory has not grown with the tasks; a job past the history is
//! one the DVM has no record of (prelease and pwatch say so).

use std::process::Stdio;

use crate::support::pdvm::Pdvm;
use crate::support::{run_with_timeout, show, text};

/// Ended jobs pdvm keeps in this test.
const KEPT: usize = 50;
/// Tasks run once the history is full and pdvm has warmed up.
const TASKS: u64 = 20_000;
/// Growth allowed over those tasks: about 100 bytes each. Keeping every
/// ended job costs more than twice that (250 bytes a task measured before
/// the history, issue 45), while a bounded pdvm does not grow at all.
const GROWTH_KIB: u64 = TASKS * 100 / 1024;

/// Run `pspawn --array 0-(n-1)%32 true` beside `dvm`.
fn array(dvm: &Pdvm, n: u64) {
    let mut cmd = dvm.tool("pspawn");
    cmd.args(["--array", &format!("0-{}%32", n - 1), "true"])
        .stdin(Stdio::null());
    let out = run_with_timeout(&mut cmd, 600);
    assert!(out.status.success(), "pspawn --array: {}", show(&out));
}

/// The namespaces of the jobs pdvm lists, ended ones included, in order.
fn listed_jobs(dvm: &Pdvm) -> Vec<String> {
    let mut cmd = dvm.tool("pwatch");
    cmd.args(["--status", "--all", "--what", "namespaces", "--json"])
        .stdin(Stdio::null());
    let out = run_with_timeout(&mut cmd, 60);
    assert!(out.status.success(), "pwatch --status: {}", show(&out));
    let doc: serde_json::Value = serde_json::from_str(text(&out.stdout).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    doc["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .filter_map(|n| n["nspace"].as_str().map(String::from))
        .collect()
}

/// The number pdvm gave a namespace (`pdvm-HOST-PID@N`).
fn number(ns: &str) -> u64 {
    ns.rsplit('@').next().and_then(|n| n.parse().ok()).unwrap()
}

#[test]
fn ended_jobs_beyond_the_history_are_forgotten_and_memory_stays_flat() {
    let dvm = Pdvm::start(&[
        "--nodes",
        "1",
        "--slots",
        "32",
        "--job-history",
        &KEPT.to_string(),
    ]);
    // Warm up: the history fills, the allocator settles.
    array(&dvm, 5_000);
    let first = listed_jobs(&dvm);
    assert!(first.len() <= KEPT, "{} jobs listed", first.len());
    let before = dvm.rss_kib();
    array(&dvm, TASKS);
    let after = dvm.rss_kib();
    let last = listed_jobs(&dvm);
    assert!(last.len() <= KEPT, "{} jobs listed", last.len());
    assert!(
        last.windows(2).all(|w| number(&w[0]) < number(&w[1])),
        "launch order, each name once: {last:?}"
    );
    let newest_before = first.iter().map(|n| number(n)).max().unwrap();
    assert!(
        last.iter().all(|n| number(n) > newest_before),
        "the last jobs to end are listed: {last:?}"
    );
    eprintln!("pdvm's VmRSS: {before} KiB, {after} KiB after {TASKS} more tasks");
    assert!(
        after < before + GROWTH_KIB,
        "pdvm grew from {before} to {after} KiB over {TASKS} tasks"
    );
    aged_and_kept_jobs_are_told_apart(&dvm, &first[0], &last[last.len() - 1]);
}

/// What prelease and pwatch say of a job past the history (`gone`) and of
/// one still kept (`kept`): both ended, neither is running.
fn aged_and_kept_jobs_are_told_apart(dvm: &Pdvm, gone: &str, kept: &str) {
    let prelease = |ns: &str| {
        let mut cmd = dvm.tool("prelease");
        cmd.arg(ns).stdin(Stdio::null());
        run_with_timeout(&mut cmd, 60)
    };
    let out = prelease(kept);
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    assert!(
        text(&out.stderr).contains(&format!("job {kept} has already ended (exit status 0)")),
        "{}",
        show(&out)
    );
    let out = prelease(gone);
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("No job of that name runs either"),
        "{}",
        show(&out)
    );
    let mut cmd = dvm.tool("pwatch");
    cmd.args(["--job", gone, "--event", "job-end"])
        .stdin(Stdio::null());
    let out = run_with_timeout(&mut cmd, 60);
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    assert!(
        text(&out.stderr).contains(&format!("the DVM has no job {gone}")),
        "{}",
        show(&out)
    );
}
