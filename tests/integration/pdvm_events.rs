//! pdvm's allocation and node events as `pwatch` shows them, waiting on a
//! job that already ended, `--target` naming no live namespace, placement
//! and resource flags, and one pdvm per tmpdir — each as a user at a shell
//! beside pdvm.

use crate::support;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{text, tool};

fn run(mut cmd: Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 30)
}

fn json_lines(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect()
}

/// A pwatch running in the background, its output in files.
struct Watch {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Watch {
    /// Start `pwatch -v ARGS` and wait until it has registered (it says
    /// "watching for events" on stderr with -v).
    fn start(pdvm: &Pdvm, args: &[&str], tag: &str) -> Watch {
        let out = pdvm.tmpdir.path().join(format!("{tag}.out"));
        let err = pdvm.tmpdir.path().join(format!("{tag}.err"));
        let mut cmd = tool(pdvm, "pwatch");
        cmd.arg("-v")
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("out file"))
            .stderr(std::fs::File::create(&err).expect("err file"));
        let child = cmd.spawn().expect("start pwatch");
        let w = Watch { child, out, err };
        let watching = wait::within(Duration::from_secs(20), || {
            std::fs::read_to_string(&w.err)
                .unwrap_or_default()
                .contains("watching for events")
        });
        assert!(
            watching,
            "pwatch never started watching: {}",
            std::fs::read_to_string(&w.err).unwrap_or_default()
        );
        w
    }

    /// Wait (at most 30 s) for pwatch to end; its exit code and events.
    fn finish(mut self) -> (Option<i32>, Vec<serde_json::Value>, String) {
        let (st, timed_out) =
            support::wait_until(&mut self.child, Instant::now() + Duration::from_secs(30));
        let out = std::fs::read_to_string(&self.out).unwrap_or_default();
        let err = std::fs::read_to_string(&self.err).unwrap_or_default();
        assert!(!timed_out, "pwatch did not end:\n{out}\n{err}");
        (st.and_then(|s| s.code()), json_lines(&out), err)
    }
}

/// The allocation record palloc printed with --json.
fn allocation(out: &Output) -> serde_json::Value {
    json_lines(&text(&out.stdout))
        .into_iter()
        .find(|v| v["type"] == "allocation")
        .unwrap_or_else(|| {
            panic!(
                "no allocation record:\n{}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            )
        })
}

#[test]
fn pwatch_event_alloc_count_1_sees_a_grant_made_elsewhere() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let w = Watch::start(
        &pdvm,
        &[
            "--event",
            "alloc",
            "--count",
            "1",
            "--json",
            "--timeout",
            "20s",
        ],
        "grant",
    );
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "--request-id", "mine", "--json", "--", "true"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let a = allocation(&out);
    let (code, events, err) = w.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(events.len(), 1, "--count 1: {events:?}");
    let e = &events[0];
    assert_eq!(e["type"], "event", "{e}");
    assert_eq!(e["event"], "alloc", "{e}");
    assert_eq!(e["change"], "granted", "{e}");
    assert_eq!(e["status"], "PMIX_NOTIFY_ALLOC_COMPLETE", "{e}");
    assert_eq!(e["alloc_id"], a["alloc_id"], "{e} vs {a}");
    assert_eq!(e["request_id"], "mine", "{e}");
    assert_eq!(e["nodes"], a["nodes"], "{e} vs {a}");
    assert_eq!(e["nspace"], a["owner_nspace"], "the owner: {e} vs {a}");
}

#[test]
fn alloc_and_node_events_follow_a_reservation_from_grant_to_release() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let w = Watch::start(
        &pdvm,
        &[
            "--event",
            "alloc",
            "--event",
            "node",
            "--count",
            "4",
            "--json",
            "--timeout",
            "20s",
        ],
        "life",
    );
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "--json", "--", "true"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let a = allocation(&out);
    let (code, events, err) = w.finish();
    assert_eq!(code, Some(0), "{err}");
    let seen: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap_or_default().to_string(),
                e["change"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let pos = |ev: &str, ch: &str| {
        seen.iter()
            .position(|(e, c)| e == ev && c == ch)
            .unwrap_or_else(|| panic!("no {ev} {ch} in {events:?}"))
    };
    // the node joins before the grant is announced; leaves before the end
    assert!(pos("node", "joined") < pos("alloc", "granted"), "{seen:?}");
    assert!(pos("alloc", "granted") < pos("node", "left"), "{seen:?}");
    assert!(pos("node", "left") < pos("alloc", "released"), "{seen:?}");
    for e in &events {
        assert_eq!(e["nodes"].is_null(), e["change"] == "released", "{e}");
        if e["event"] == "alloc" || e["change"] == "joined" {
            assert_eq!(e["alloc_id"], a["alloc_id"], "{e}");
        }
    }
    let left = &events[pos("node", "left")];
    assert_eq!(left["status"], "PMIX_EVENT_NODE_OFFLINE", "{left}");
    assert_eq!(left["nodes"], a["nodes"], "{left}");
    let end = &events[pos("alloc", "released")];
    assert_eq!(end["status"], "PMIX_EVENT_SESSION_END", "{end}");
}

#[test]
fn unreserved_and_expired_allocations_are_announced() {
    // Time runs 60× faster: a 1-minute allocation expires after 1 s.
    let pdvm = Pdvm::start(&[
        "--nodes",
        "2",
        "--scheduler-nodes",
        "1",
        "--time-scale",
        "60",
    ]);
    let w = Watch::start(
        &pdvm,
        &[
            "--event",
            "alloc",
            "--event",
            "node",
            "--json",
            "--timeout",
            "6s",
        ],
        "ends",
    );
    // A startup node carved out and given back stays: it is unreserved.
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-w", "n002", "--", "true"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A scheduler node held past its time limit expires.
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "-t", "1", "--hold"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut hold = cmd.spawn().expect("start palloc --hold");
    let (code, events, err) = w.finish();
    let _ = hold.kill();
    let _ = hold.wait();
    assert_eq!(code, Some(0), "events were seen before --timeout: {err}");
    let has = |ev: &str, ch: &str| events.iter().any(|e| e["event"] == ev && e["change"] == ch);
    assert!(has("node", "unreserved"), "{events:?}");
    assert!(has("alloc", "expired"), "{events:?}");
    assert!(
        has("node", "left"),
        "the expired node went back: {events:?}"
    );
    let unres = events
        .iter()
        .find(|e| e["change"] == "unreserved" && e["event"] == "node")
        .unwrap();
    assert_eq!(unres["nodes"], serde_json::json!(["n002"]), "{unres}");
}

#[test]
fn waiting_on_a_job_that_already_ended_returns_at_once() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let mut cmd = tool(&pdvm, "pspawn");
    cmd.args(["--detach", "-n", "1", "sh", "-c", "exit 3"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ns = text(&out.stdout)
        .trim()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        ns.contains('@'),
        "pspawn --detach prints the namespace: {ns:?}"
    );
    // wait until the DVM no longer lists it as running
    let mut st = String::new();
    let ended = wait::within(Duration::from_secs(20), || {
        let mut cmd = tool(&pdvm, "pwatch");
        cmd.args(["--status", "--what", "namespaces", "--json"]);
        st = text(&run(cmd).stdout);
        !json_lines(&st).iter().any(|j| {
            j["nspace"] == ns.as_str()
                && !["terminated", "ended"].contains(&j["state"].as_str().unwrap_or(""))
        })
    });
    assert!(ended, "job never ended: {st}");
    let t0 = Instant::now();
    let mut cmd = tool(&pdvm, "pwatch");
    cmd.args([
        "--job",
        &ns,
        "--event",
        "job-end",
        "--count",
        "1",
        "--json",
        "--timeout",
        "20s",
    ]);
    let out = run(cmd);
    // 0, not 8: the end was found, not waited for until --timeout.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    eprintln!("FIGURE pwatch --job of an ended job: {:?}", t0.elapsed());
    let ev = json_lines(&text(&out.stdout));
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["event"], "job-end");
    assert_eq!(ev[0]["nspace"], ns.as_str());
    assert_eq!(ev[0]["exit_code"], 3);
    // a job the DVM never had is refused, not waited for
    let mut cmd = tool(&pdvm, "pwatch");
    cmd.args(["--job", "nosuch@9", "--event", "job-end", "--count", "1"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("nosuch@9"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn target_naming_no_live_namespace_is_refused_and_holds_nothing() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "--target", "typo@98"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("typo@98") && text(&out.stderr).contains("nothing was reserved"),
        "{}",
        text(&out.stderr)
    );
    assert!(pdvm.reservations().is_empty(), "nothing reserved");
    // pdvm refuses it too, whoever asks (here a tool speaking the library
    // directly, without palloc's check)
    let s = pdvm.session();
    let r = pmix_tools::ops::alloc::allocate(
        &s,
        pmix_tools::proto::Directive::New,
        &[
            pmix_tools::codec::Info::new(pmix_tools::proto::keys::ALLOC_NUM_NODES, 1u64),
            pmix_tools::codec::Info::new(pmix_tools::proto::keys::ALLOC_TARGET, "typo@98"),
        ],
    );
    let e = r.expect_err("pdvm refuses a dead TARGET");
    assert_eq!(
        e.status,
        pmix_tools::proto::status::Status::ERR_NOT_FOUND,
        "{e}"
    );
    assert!(pdvm.reservations().is_empty(), "nothing reserved by pdvm");
    drop(s);
    // a live target is still honoured
    let mut cmd = tool(&pdvm, "pspawn");
    cmd.args(["--detach", "-n", "1", "sleep", "20"]);
    let out = run(cmd);
    let ns = text(&out.stdout)
        .trim()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "--target", &ns, "--json"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(allocation(&out)["owner_nspace"], ns.as_str());
}

/// `pspawn ARGS sh -c 'echo rank@host'` → (exit code, sorted "rank@host").
fn placed(pdvm: &Pdvm, args: &[&str]) -> (Option<i32>, Vec<String>, String) {
    let mut cmd = tool(pdvm, "pspawn");
    cmd.args(args)
        .args(["sh", "-c", "echo $PMIX_RANK@$PMIX_HOSTNAME"]);
    let out = run(cmd);
    let mut lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    lines.sort_by_key(|l| l.split('@').next().and_then(|r| r.parse::<u32>().ok()));
    (out.status.code(), lines, text(&out.stderr))
}

fn hosts_of(lines: &[String]) -> Vec<&str> {
    lines.iter().filter_map(|l| l.split('@').nth(1)).collect()
}

#[test]
fn placement_flags_are_honoured_or_refused() {
    let pdvm = Pdvm::start(&["--nodes", "4", "--slots", "2", "--scheduler-nodes", "1"]);
    let (c, l, e) = placed(&pdvm, &["-H", "n002", "-n", "2"]);
    assert_eq!(c, Some(0), "{e}");
    assert_eq!(hosts_of(&l), ["n002", "n002"], "{l:?}");
    let (c, l, e) = placed(&pdvm, &["-H", "zzz"]);
    assert_eq!(c, Some(5), "unknown host: PMIX_ERR_NOT_FOUND: {e}");
    assert!(l.is_empty() && e.contains("no such host: zzz"), "{l:?} {e}");
    let (c, l, e) = placed(&pdvm, &["--map-by", "bogus"]);
    assert_eq!(c, Some(4), "{e}");
    assert!(
        l.is_empty() && e.contains("PMIX_ERR_BAD_PARAM"),
        "{l:?} {e}"
    );
    let (c, _, e) = placed(&pdvm, &["--map-by", "numa"]);
    assert_eq!(c, Some(7), "not modelled: PMIX_ERR_NOT_SUPPORTED: {e}");
    let (c, l, e) = placed(&pdvm, &["-n", "20"]);
    assert_eq!(c, Some(4), "{e}");
    assert!(
        l.is_empty() && e.contains("PMIX_ERR_JOB_FAILED_TO_MAP"),
        "{l:?} {e}"
    );
    let (c, l, e) = placed(&pdvm, &["-n", "20", "--map-by", ":OVERSUBSCRIBE"]);
    assert_eq!(c, Some(0), "{e}");
    assert_eq!(l.len(), 20, "{l:?}");
    let (c, l, e) = placed(&pdvm, &["-n", "8"]);
    assert_eq!(c, Some(0), "{e}");
    assert_eq!(
        hosts_of(&l),
        ["n001", "n001", "n002", "n002", "n003", "n003", "n004", "n004"],
        "slot fills each node"
    );
    let (c, l, e) = placed(&pdvm, &["-n", "4", "--map-by", "node"]);
    assert_eq!(c, Some(0), "{e}");
    assert_eq!(hosts_of(&l), ["n001", "n002", "n003", "n004"], "{l:?}");
    let (c, l, e) = placed(&pdvm, &["-n", "4", "--map-by", "ppr:2:node"]);
    assert_eq!(c, Some(0), "{e}");
    assert_eq!(hosts_of(&l), ["n001", "n001", "n002", "n002"], "{l:?}");
    let (c, _, e) = placed(&pdvm, &["-n", "9", "--map-by", "ppr:2:node"]);
    assert_eq!(c, Some(4), "{e}");
    // resources no node has: refused, nothing reserved
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "-c", "64", "--mem", "1T"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("PMIX_ERR_OUT_OF_RESOURCE"),
        "{}",
        text(&out.stderr)
    );
    assert!(pdvm.reservations().is_empty());
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "-c", "2", "--mem", "8G", "--", "true"]);
    let out = run(cmd);
    assert_eq!(
        out.status.code(),
        Some(0),
        "what a node has is granted: {}",
        text(&out.stderr)
    );
}

#[test]
fn a_second_pdvm_in_a_served_tmpdir_is_refused_with_the_first_ones_pid() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut cmd = Command::new(support::cargo_bin("pdvm"));
    support::scrub_pmix_env(&mut cmd);
    cmd.args(["--nodes", "1", "--daemonize", "--tmpdir"])
        .arg(pdvm.tmpdir.path());
    let out = support::run_with_timeout(&mut cmd, 20);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("pid {}", pdvm.pid)), "{err}");
    assert!(!err.contains("DVM ready"), "{err}");
    // the first one still serves alone
    let mut cmd = tool(&pdvm, "pspawn");
    cmd.args(["-n", "1", "true"]);
    assert_eq!(run(cmd).status.code(), Some(0));
}

/// Issue 14: a cancelled request's event carries its request id and owner;
/// a reservation's end after an EXTEND keeps the request id it was created
/// with; a tool's TARGET naming pdvm's own namespace is refused.
#[test]
fn cancelled_and_extended_reservations_keep_their_request_id_and_owner() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let w = Watch::start(
        &pdvm,
        &[
            "--event",
            "alloc",
            "--count",
            "4",
            "--json",
            "--timeout",
            "30s",
        ],
        "ids",
    );
    // Hold the only node; queue a request behind it and cancel it.
    let mut held = tool(&pdvm, "palloc");
    held.args(["-q", "-N", "1", "--parsable", "--request-id", "first"]);
    let id = text(&run(held).stdout).trim().to_string();
    let mut queued = tool(&pdvm, "palloc");
    queued.args(["-q", "--no-wait", "-N", "1", "--request-id", "second"]);
    assert_eq!(run(queued).status.code(), Some(0));
    let mut cancel = tool(&pdvm, "prelease");
    cancel.args(["--cancel", "second"]);
    assert_eq!(run(cancel).status.code(), Some(0));
    // Extend the held one (time only), then release it.
    let mut extend = tool(&pdvm, "palloc");
    extend.args(["-q", "--extend", &id, "-t", "10m"]);
    let e = run(extend);
    assert_eq!(e.status.code(), Some(0), "{}", text(&e.stderr));
    let mut rel = tool(&pdvm, "prelease");
    rel.arg(&id);
    assert_eq!(run(rel).status.code(), Some(0));
    let (code, events, err) = w.finish();
    assert_eq!(code, Some(0), "{err}");
    let with = |change: &str| {
        events
            .iter()
            .find(|e| e["change"] == change)
            .unwrap_or_else(|| panic!("no {change} in {events:?}"))
            .clone()
    };
    let cancelled = with("cancelled");
    assert_eq!(cancelled["request_id"], "second", "{cancelled}");
    assert!(cancelled["nspace"].is_string(), "owner: {cancelled}");
    let released = with("released");
    assert_eq!(released["alloc_id"], id.as_str(), "{released}");
    assert_eq!(released["request_id"], "first", "{released}");
    // pdvm's own namespace is no TARGET.
    let s = pdvm.session();
    let own = s.conn().server().0.to_string();
    let r = pmix_tools::ops::alloc::allocate(
        &s,
        pmix_tools::proto::Directive::New,
        &[
            pmix_tools::codec::Info::new(pmix_tools::proto::keys::ALLOC_NUM_NODES, 1u64),
            pmix_tools::codec::Info::new(pmix_tools::proto::keys::ALLOC_TARGET, own.as_str()),
        ],
    );
    assert!(r.is_err(), "a reservation for pdvm's own namespace: {r:?}");
    assert!(pdvm.reservations().is_empty(), "nothing reserved");
}
