//! OpenPMIx master's own tools against pdvm, run as a user would: `pps`
//! (namespaces, then a process-table query per namespace: real pids,
//! simulated node names, executables, states; `--nodes`; `--pid` / `--uri`),
//! `palloc` (allocations granted, with the session id PRRTE returns, and
//! visible in `pwatch --status --json`) and `pevent` (an event it notifies
//! is relayed by pdvm to a listening `pwatch`). Plus a round trip of the
//! process table's wire form. These FAIL when the master peers are missing
//! (`support::master_pmix_bin` panics). Every wait has a deadline.

use crate::support;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::pdvm::{wait_for, Pdvm};
use crate::support::{cargo_bin, json_records, master_pmix_bin, run_with_timeout, scrub_pmix_env};
use pmix_tools::codec::{
    dt, DataArray, Decoder, Encoder, Info, Proc, ProcInfo, Value, WireVersion,
};

/// A command for a master OpenPMIx tool finding `dvm` through its tmpdir.
fn master_tool(dvm: &Pdvm, name: &str) -> Command {
    let mut cmd = Command::new(master_pmix_bin(name));
    scrub_pmix_env(&mut cmd);
    cmd.env("TMPDIR", dvm.tmpdir.path());
    cmd
}

/// One of our tools finding `dvm` through its tmpdir.
fn our_tool(dvm: &Pdvm, name: &str) -> Command {
    let mut cmd = Command::new(cargo_bin(name));
    scrub_pmix_env(&mut cmd);
    cmd.env("TMPDIR", dvm.tmpdir.path());
    cmd
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Start `n` processes of `sleep 120` with `pspawn --detach`; their namespace.
fn detached_sleepers(dvm: &Pdvm, n: u32) -> String {
    let out = run_with_timeout(
        our_tool(dvm, "pspawn").args(["--detach", "-n", &n.to_string(), "sleep", "120"]),
        30,
    );
    assert!(out.status.success(), "{}", text(&out));
    let ns = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(ns.contains('@'), "pspawn --detach printed {ns:?}");
    ns
}

/// The pids of `nspace`'s processes by rank, read from /proc (each process
/// carries `PMIX_NAMESPACE` and `PMIX_RANK` in its environment).
fn real_pids(nspace: &str, n: usize) -> BTreeMap<u32, u32> {
    let want_ns = format!("PMIX_NAMESPACE={nspace}");
    let mut found = BTreeMap::new();
    // A look reads every process's environment: one every 100 ms.
    let every =
        support::wait::within_every(Duration::from_secs(15), Duration::from_millis(100), || {
            found.clear();
            for e in std::fs::read_dir("/proc").expect("read /proc").flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                let Ok(env) = std::fs::read(e.path().join("environ")) else {
                    continue;
                };
                let vars: Vec<String> = env
                    .split(|b| *b == 0)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .collect();
                if !vars.contains(&want_ns) {
                    continue;
                }
                let exe = std::fs::read_link(e.path().join("exe")).unwrap_or_default();
                if !exe.to_string_lossy().ends_with("/sleep") {
                    continue;
                }
                if let Some(rank) = vars
                    .iter()
                    .find_map(|v| v.strip_prefix("PMIX_RANK="))
                    .and_then(|r| r.parse::<u32>().ok())
                {
                    found.insert(rank, pid);
                }
            }
            found.len() == n
        });
    assert!(every, "found {found:?} of {n} processes of {nspace}");
    found
}

/// One process row of `pps`: rank, pid, node, state, executable.
#[derive(Debug)]
struct Row {
    rank: u32,
    pid: u32,
    node: String,
    state: String,
    exe: String,
}

/// `pps` output by namespace: the header's count and the rows under it.
fn parse_pps(out: &str) -> BTreeMap<String, (usize, Vec<Row>)> {
    let mut map: BTreeMap<String, (usize, Vec<Row>)> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("Namespace ") {
            let (ns, tail) = rest.split_once(" (").unwrap_or((rest, ""));
            let count = tail
                .split_whitespace()
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(usize::MAX);
            map.insert(ns.to_string(), (count, Vec::new()));
            cur = Some(ns.to_string());
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        let (Some(ns), true) = (&cur, w.len() >= 5) else {
            continue;
        };
        let (Ok(rank), Ok(pid)) = (w[0].parse(), w[1].parse()) else {
            continue;
        };
        if let Some((_, rows)) = map.get_mut(ns) {
            rows.push(Row {
                rank,
                pid,
                node: w[2].to_string(),
                state: w[3..w.len() - 1].join(" "),
                exe: w[w.len() - 1].to_string(),
            });
        }
    }
    map
}

#[test]
fn master_pps_lists_namespaces_and_real_processes() {
    let dvm = Pdvm::start(&["--nodes", "2", "--slots", "2"]);
    let job = detached_sleepers(&dvm, 3);
    let pids = real_pids(&job, 3);

    // Found through TMPDIR, as a user would.
    let out = run_with_timeout(&mut master_tool(&dvm, "pps"), 30);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("query failed"), "{all}");
    let table = parse_pps(&String::from_utf8_lossy(&out.stdout));
    let (count, rows) = table
        .get(&job)
        .unwrap_or_else(|| panic!("{job} not listed: {all}"));
    assert_eq!(*count, 3, "{all}");
    assert_eq!(rows.len(), 3, "{all}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.rank, i as u32, "{all}");
        assert_eq!(Some(&r.pid), pids.get(&r.rank), "{all}");
        assert!(["n001", "n002"].contains(&r.node.as_str()), "{all}");
        assert_eq!(r.state, "PROC EXECUTING", "{all}");
        assert!(r.exe.ends_with("/sleep"), "{all}");
    }
    // 3 processes on 2 nodes of 2 slots: two on n001, one on n002.
    assert_eq!(rows.iter().filter(|r| r.node == "n001").count(), 2, "{all}");
    // pps's own (tool) namespace has its process too: pps on pdvm's host.
    let tool = table
        .iter()
        .find(|(ns, _)| **ns != job)
        .unwrap_or_else(|| panic!("pps's own namespace not listed: {all}"));
    assert_eq!(tool.1 .1.len(), 1, "{all}");
    assert!(tool.1 .1[0].exe.ends_with("/pps"), "{all}");
    assert!(tool.1 .1[0].pid > 0, "{all}");
    assert_eq!(tool.1 .1[0].node, support::short_hostname(), "{all}");

    // --nodes: per-node process counts.
    let out = run_with_timeout(
        master_tool(&dvm, "pps")
            .arg("--pid")
            .arg(dvm.pid.to_string())
            .arg("--nodes"),
        30,
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let block: Vec<&str> = stdout
        .split("\nNamespace ")
        .find(|b| b.starts_with(&job))
        .unwrap_or_else(|| panic!("{job} missing: {all}"))
        .lines()
        .collect();
    assert!(block[0].contains("(2 nodes)"), "{all}");
    let counts: BTreeMap<&str, u32> = block
        .iter()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() != 2 {
                return None;
            }
            Some((w[0], w[1].parse().ok()?))
        })
        .collect();
    assert_eq!(counts.get("n001"), Some(&2), "{all}");
    assert_eq!(counts.get("n002"), Some(&1), "{all}");

    // --uri file:<rendezvous file> reaches the same server.
    let uri_file = dvm
        .rendezvous_dir()
        .join(format!("pmix.{}.tool", support::short_hostname()));
    assert!(uri_file.exists(), "{}", uri_file.display());
    let out = run_with_timeout(
        master_tool(&dvm, "pps")
            .arg("--uri")
            .arg(format!("file:{}", uri_file.display())),
        30,
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let table = parse_pps(&String::from_utf8_lossy(&out.stdout));
    let rows = &table.get(&job).unwrap_or_else(|| panic!("{all}")).1;
    let listed: Vec<u32> = rows.iter().map(|r| r.pid).collect();
    assert_eq!(listed, pids.values().copied().collect::<Vec<_>>(), "{all}");
}

#[test]
fn master_pps_shows_a_finished_process_of_a_running_job() {
    // Rank 0 exits 3 at once, rank 1 keeps running: the job is still live,
    // and its table reports the exited rank as terminated non-zero.
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let out = run_with_timeout(
        our_tool(&dvm, "pspawn").args(["--detach", "sh", "-c", "exit 3", ":", "sleep", "120"]),
        30,
    );
    assert!(out.status.success(), "{}", text(&out));
    let job = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // Each look runs pps: one every 200 ms.
    let mut all = String::new();
    let ended =
        support::wait::within_every(Duration::from_secs(20), Duration::from_millis(200), || {
            let out = run_with_timeout(&mut master_tool(&dvm, "pps"), 30);
            all = text(&out);
            assert!(out.status.success(), "{all}");
            let table = parse_pps(&String::from_utf8_lossy(&out.stdout));
            let rows = &table.get(&job).unwrap_or_else(|| panic!("{all}")).1;
            assert_eq!(rows.len(), 2, "{all}");
            assert!(rows[0].exe.ends_with("/sh"), "{all}");
            assert!(rows[1].exe.ends_with("/sleep"), "{all}");
            assert_eq!(rows[1].state, "PROC EXECUTING", "{all}");
            if rows[0].state != "PROC EXECUTING" {
                assert_eq!(
                    rows[0].state, "PROC TERMINATED WITH NON-ZERO STATUS",
                    "{all}"
                );
                return true;
            }
            false
        });
    assert!(ended, "rank 0 never shown ended: {all}");
}

fn status_nodes(dvm: &Pdvm) -> Vec<String> {
    let out = run_with_timeout(our_tool(dvm, "pwatch").args(["--status", "--json"]), 30);
    assert!(out.status.success(), "{}", text(&out));
    json_records(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .filter(|v| v["type"] == "node")
        .filter_map(|v| v["name"].as_str().map(String::from))
        .collect()
}

#[test]
fn master_palloc_is_granted_and_pdvm_shows_the_nodes() {
    let dvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    assert_eq!(status_nodes(&dvm), vec!["n001"]);

    let out = run_with_timeout(
        master_tool(&dvm, "palloc").args(["-N", "1", "--request-id", "mt-req"]),
        30,
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("Allocation granted: session 1"), "{all}");
    // palloc has exited: under the DEFAULT disposition the node it got stays
    // in the DVM, unreserved.
    assert_eq!(status_nodes(&dvm), vec!["n001", "s001"]);

    // With a time limit (a time string, as master's headers define it).
    let out = run_with_timeout(
        master_tool(&dvm, "palloc")
            .args(["-N", "1", "-t", "00:05:00"])
            .arg("--pid")
            .arg(dvm.pid.to_string()),
        30,
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("Allocation granted: session 2"), "{all}");
    assert_eq!(status_nodes(&dvm), vec!["n001", "s001", "s002"]);

    // The scheduler has nothing left: a further request is queued, which
    // --do-not-wait reports without waiting.
    let out = run_with_timeout(
        master_tool(&dvm, "palloc").args(["-N", "1", "--do-not-wait"]),
        30,
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("Allocation request being processed"), "{all}");
}

#[test]
fn master_pevent_notification_reaches_a_listening_pwatch() {
    let dvm = Pdvm::start(&["--nodes", "1"]);
    let mut watch = our_tool(&dvm, "pwatch")
        .args([
            "--event",
            "job-end",
            "--count",
            "1",
            "--timeout",
            "30s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pwatch");
    // pwatch registers once connected; notify until it has seen one.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut sent = 0;
    let status = loop {
        if let Some(st) = wait_for(&mut watch, Duration::from_millis(500)) {
            break st;
        }
        if Instant::now() > deadline {
            let _ = watch.kill();
            let _ = watch.wait();
            panic!("pwatch saw no event after {sent} pevent runs");
        }
        let out = run_with_timeout(
            master_tool(&dvm, "pevent").args(["--range", "5", "PMIX_EVENT_JOB_END"]),
            30,
        );
        assert!(out.status.success(), "{}", text(&out));
        assert!(!text(&out).contains("bad status"), "{}", text(&out));
        sent += 1;
    };
    let out = crate::support::wait_output(watch, Duration::from_secs(10));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON event: {stdout}"));
    assert_eq!(ev["type"], "event", "{ev}");
    assert_eq!(ev["event"], "job-end", "{ev}");
    assert_eq!(ev["status"], "PMIX_EVENT_JOB_END", "{ev}");
}

#[test]
fn proc_table_wire_form_round_trips() {
    let table = vec![
        ProcInfo {
            proc: Proc::new("pdvm-h-1@2", 0),
            hostname: Some("n001".into()),
            executable_name: Some("/usr/bin/sleep".into()),
            pid: 4242,
            state: 5,
        },
        ProcInfo {
            proc: Proc::new("pdvm-h-1@2", 1),
            hostname: None,
            executable_name: None,
            pid: 0,
            state: 62,
        },
    ];
    let info = Info::new(
        "pmix.qry.ptable",
        Value::DataArray(DataArray::scalars(
            dt::PROC_INFO,
            table.iter().cloned().map(Value::ProcInfo).collect(),
        )),
    );
    for ver in [WireVersion::V41, WireVersion::V51, WireVersion::V61] {
        for described in [false, true] {
            let mut e = if described {
                Encoder::described(ver)
            } else {
                Encoder::new(ver)
            };
            e.pack_one(&info).unwrap();
            let bytes = e.into_bytes();
            let mut d = if described {
                Decoder::described(&bytes, ver)
            } else {
                Decoder::new(&bytes, ver)
            };
            let back: Info = d.unpack_one().unwrap();
            assert!(d.is_empty());
            assert_eq!(back, info, "{ver:?} described={described}");
            let Value::DataArray(a) = &back.value else {
                panic!("{back:?}")
            };
            assert_eq!(a.elem_type(), dt::PROC_INFO);
            let got: Vec<ProcInfo> = a
                .as_values()
                .unwrap()
                .iter()
                .map(|v| match v {
                    Value::ProcInfo(p) => p.clone(),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(got, table);
        }
    }
}
