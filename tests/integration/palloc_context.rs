//! `palloc … -- CMD` as salloc users expect, against pdvm: CMD is a local
//! process with the caller's environment and stdin; the tools it runs act
//! within the allocation through palloc's holder; the allocation is given
//! back when CMD ends.

use crate::support;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{text, tool};

fn run(mut cmd: Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 30)
}

/// The nodes named in palloc's `granted …` line, expanded (`s[001-002]`).
fn granted_nodes(pdvm: &Pdvm, alloc_json: &str) -> Vec<String> {
    let _ = pdvm;
    let v: serde_json::Value = alloc_json
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "allocation")
        .unwrap_or_else(|| panic!("no allocation record in {alloc_json}"));
    v["nodes"]
        .as_array()
        .expect("nodes array")
        .iter()
        .map(|n| n.as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn jobs_started_inside_land_on_the_allocation() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--slots", "2", "--scheduler-nodes", "4"]);
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args([
        "-N",
        "2",
        "--json",
        "--",
        "sh",
        "-c",
        "echo nodelist=$PMIX_ALLOC_NODELIST count=$PMIX_ALLOC_NUM_NODES; \
         pspawn -n 4 sh -c 'echo host=$PMIX_HOSTNAME'",
    ]);
    let out = run(cmd);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let nodes = granted_nodes(&pdvm, &stdout);
    assert_eq!(nodes.len(), 2, "{stdout}");
    // CMD is told its nodes, as salloc's SLURM_JOB_NODELIST.
    assert!(
        stdout.contains(&format!("nodelist={} count=2", nodes.join(","))),
        "{stdout}"
    );
    let hosts: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split("host=").nth(1))
        .map(|h| h.trim_end_matches(['"', '}', ' ']))
        .collect();
    assert_eq!(hosts.len(), 4, "four ranks ran: {stdout}");
    for h in &hosts {
        assert!(
            nodes.iter().any(|n| n == h),
            "rank ran on {h}, outside the allocation {nodes:?}: {stdout}"
        );
    }
}

#[test]
fn ten_in_a_row_each_gives_its_node_back() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "4"]);
    for i in 0..10 {
        let mut cmd = tool(&pdvm, "palloc");
        cmd.args(["-N", "1", "--", "true"]);
        let out = run(cmd);
        assert_eq!(
            out.status.code(),
            Some(0),
            "palloc #{i}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("released allocation"),
            "palloc #{i} says it gave the allocation back: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn command_gets_callers_environment_stdin_and_status() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut cmd = tool(&pdvm, "palloc");
    cmd.env("MY_SETTING", "from-the-shell").args([
        "-N",
        "1",
        "--quiet",
        "--",
        "sh",
        "-c",
        "echo setting=$MY_SETTING alloc=$PMIX_ALLOC_ID; read line; echo got=$line; exit 3",
    ]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start palloc");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"typed\n")
        .expect("write stdin");
    let (_, timed_out) = support::wait_until(
        &mut child,
        std::time::Instant::now() + Duration::from_secs(30),
    );
    assert!(!timed_out, "palloc did not end");
    let out = support::wait_output(child, Duration::from_secs(10));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "CMD's own status: {stdout}");
    assert!(stdout.contains("setting=from-the-shell"), "{stdout}");
    assert!(stdout.contains("alloc=alloc."), "{stdout}");
    assert!(stdout.contains("got=typed"), "stdin reached CMD: {stdout}");
}

#[test]
fn keep_leaves_the_allocation_to_its_rule() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "--keep", "--inherit", "default", "--", "true"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("released allocation"));
    // Under the default rule, chosen by the user, the node stays in the
    // DVM, unreserved.
    let mut st = tool(&pdvm, "pwatch");
    st.args(["--status", "--json", "--what", "nodes"]);
    let status = text(&run(st).stdout);
    assert!(
        status.contains("\"s001\""),
        "s001 stayed in the DVM: {status}"
    );
}

#[test]
fn a_missing_command_is_reported_and_released() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "--", "no-such-program-here"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no-such-program-here"),
        "{}",
        text(&out.stderr)
    );
    // The node is free again for the next request.
    let mut again = tool(&pdvm, "palloc");
    again.args(["-N", "1", "--", "true"]);
    assert_eq!(run(again).status.code(), Some(0));
}

/// `palloc --hold` in one process; from another (no shared environment),
/// `pspawn --target ID`, `palloc --extend ID` and `prelease ID` all act
/// through the holder and succeed; the release ends the `--hold`. `--as-tool` bypasses the holder: then
/// the DVM sees a foreign namespace and refuses (§8.2.1.7 not weakened).
#[test]
fn another_shell_spawns_extends_and_releases_through_the_holder() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "3"]);
    let mut hold = tool(&pdvm, "palloc");
    hold.args(["-N", "2", "-t", "10m", "--hold", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut holder = hold.spawn().expect("start palloc --hold");
    let stdout = holder.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let grant = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("palloc --hold prints its grant");
    let grant: serde_json::Value = serde_json::from_str(&grant).expect("JSON grant");
    let id = grant["alloc_id"].as_str().expect("alloc id").to_string();
    let nodes = granted_nodes(&pdvm, &grant.to_string());

    let mut foreign = tool(&pdvm, "pspawn");
    foreign.args(["--as-tool", "--target", &id, "true"]);
    let out = run(foreign);
    assert_eq!(
        out.status.code(),
        Some(6),
        "a foreign namespace is refused: {}",
        text(&out.stderr)
    );

    let mut spawn = tool(&pdvm, "pspawn");
    spawn.args([
        "--target",
        &id,
        "-n",
        "2",
        "sh",
        "-c",
        "echo on=$PMIX_HOSTNAME",
    ]);
    let out = run(spawn);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for line in text(&out.stdout).lines() {
        let host = line.trim_start_matches("on=");
        assert!(nodes.iter().any(|n| n == host), "{line} outside {nodes:?}");
    }

    let mut extend = tool(&pdvm, "palloc");
    extend.args(["--extend", &id, "-t", "30m"]);
    let out = run(extend);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let mut release = tool(&pdvm, "prelease");
    release.arg(&id);
    let out = run(release);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut st = tool(&pdvm, "pwatch");
    st.args(["--status", "--json", "--what", "reservations"]);
    let status = text(&run(st).stdout);
    assert!(!status.contains(&format!("\"{id}\"")), "released: {status}");

    // Its allocation released, palloc --hold ends by itself (the
    // prelease's connection through it is served to the end first).
    let (status, timed_out) = support::wait_until(
        &mut holder,
        std::time::Instant::now() + Duration::from_secs(20),
    );
    assert!(!timed_out, "palloc --hold did not end after its release");
    let code = status.and_then(|s| s.code());
    assert_eq!(code, Some(0), "a released allocation ends --hold normally");
}

/// `palloc --hold` ends when the DVM announces its allocation's end: an
/// expired time limit exits 8 and says so; it does not hold on forever.
#[test]
fn hold_ends_when_the_allocation_expires() {
    let pdvm = Pdvm::start(&[
        "--nodes",
        "1",
        "--scheduler-nodes",
        "1",
        "--time-scale",
        "60",
    ]);
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "-t", "1m", "--hold"]);
    let out = run(cmd);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(err.contains("has ended"), "{err}");
}

/// Inside a job (`pdvm -- script`: the script is pdvm's session leader, so
/// palloc acts for its namespace), `palloc -N 2 -- stage` five times in a
/// row on a DVM with only two scheduler nodes: each stage's allocation is
/// given back when it ends, so the next one is granted.
#[test]
fn stages_in_a_loop_inside_a_job_finish() {
    let tmp = support::unique_tmpdir("stages");
    let script = "for i in 1 2 3 4 5; do \
                  palloc -N 2 -- sh -c 'echo stage $PMIX_ALLOC_ID' || exit 10; \
                  done";
    let mut cmd = Command::new(support::cargo_bin("pdvm"));
    support::scrub_pmix_env(&mut cmd);
    cmd.env("PATH", support::user_path())
        .args(["--nodes", "1", "--scheduler-nodes", "2", "--tmpdir"])
        .arg(tmp.path())
        .args(["--", "sh", "-c", script]);
    let out = support::run_with_timeout(cmd.stdin(Stdio::null()), 60);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("stage alloc."))
            .count(),
        5,
        "{stdout}"
    );
}

/// `palloc --no-wait` from a shell submits a request that outlives it (as
/// sbatch's does): it returns at once with the request id; a queued one is
/// cancelled from another shell by `prelease --cancel ID`; a granted one is
/// used and released by its allocation id; the detached palloc then ends.
#[test]
fn no_wait_requests_outlive_palloc() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let submit = |rid: &str| {
        let mut c = tool(&pdvm, "palloc");
        c.args(["-N", "1", "--no-wait", "--parsable", "--request-id", rid]);
        let o = run(c);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout).trim(), rid);
        let err = text(&o.stderr);
        let pid: i32 = err
            .split("(pid ")
            .nth(1)
            .and_then(|r| r.split([')', ',']).next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no detached pid in: {err}"));
        pid
    };
    let status = || {
        let mut st = tool(&pdvm, "pwatch");
        st.args(["--status", "--json", "--what", "reservations"]);
        support::json_records(&text(&run(st).stdout))
    };
    let find = |rid: &str| {
        status()
            .into_iter()
            .find(|r| r["type"] == "reservation" && r["request_id"] == rid)
    };
    let wait_for = |what: &str, cond: &dyn Fn() -> bool| {
        let held = wait::within(Duration::from_secs(20), cond);
        assert!(held, "{what}: {:?}", status());
    };
    let first = submit("first");
    wait_for("first granted", &|| {
        find("first").is_some_and(|r| r["state"] == "active")
    });
    let queued = submit("second");
    wait_for("second queued", &|| find("second").is_some());
    let mut cancel = tool(&pdvm, "prelease");
    cancel.args(["--cancel", "second"]);
    let o = run(cancel);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    wait_for("second cancelled", &|| find("second").is_none());

    let id = find("first").expect("first")["alloc_id"]
        .as_str()
        .expect("id")
        .to_string();
    let mut spawn = tool(&pdvm, "pspawn");
    spawn.args(["--target", &id, "true"]);
    assert_eq!(run(spawn).status.code(), Some(0));
    let mut release = tool(&pdvm, "prelease");
    release.arg(&id);
    let o = run(release);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let alive = |pid: i32| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    wait_for("the detached pallocs end", &|| {
        !alive(first) && !alive(queued)
    });
}

/// `--inherit default -- CMD` leaves the nodes unreserved in the DVM when
/// CMD ends, as the rule says (it used to release them, as `none` does).
#[test]
fn a_chosen_default_rule_decides_at_the_commands_end() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut cmd = tool(&pdvm, "palloc");
    cmd.args(["-N", "1", "--inherit", "default", "--", "true"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("released allocation"));
    let mut st = tool(&pdvm, "pwatch");
    st.args(["--status", "--json", "--what", "nodes"]);
    let status = text(&run(st).stdout);
    assert!(
        status.contains("\"s001\""),
        "s001 stayed in the DVM: {status}"
    );
}

/// A queued `palloc --hold` withdrawn from another shell by `prelease
/// --cancel REQ` says it was cancelled and by whom, with its own exit code
/// (10, as salloc's "Job has been cancelled"); it exited 5 with a bare
/// PMIX_ERR_NOT_FOUND.
#[test]
fn a_queued_palloc_cancelled_elsewhere_says_cancelled_by() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut first = tool(&pdvm, "palloc");
    first.args(["-N", "1", "--hold"]);
    // It ends with pdvm, should an assertion fail first.
    let mut first = first
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("palloc --hold");
    let reservations = || {
        let mut st = tool(&pdvm, "pwatch");
        st.args(["--status", "--json", "--what", "reservations"]);
        support::json_records(&text(&run(st).stdout))
    };
    let listed = |rid: &str, state: &str| {
        reservations()
            .iter()
            .any(|r| r["request_id"] == rid || (rid.is_empty() && r["state"] == state))
    };
    let wait_for = |what: &str, cond: &dyn Fn() -> bool| {
        let held = wait::within(Duration::from_secs(20), cond);
        assert!(held, "{what}: {:?}", reservations());
    };
    wait_for("the first grant", &|| listed("", "active"));
    let mut queued = tool(&pdvm, "palloc");
    queued.args(["-N", "1", "--hold", "--request-id", "waits"]);
    let queued = queued
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("queued palloc");
    wait_for("the request queued", &|| listed("waits", ""));
    let mut cancel = tool(&pdvm, "prelease");
    cancel.args(["--cancel", "waits"]);
    let o = run(cancel);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = support::wait_output(queued, Duration::from_secs(20));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{err}");
    assert!(err.contains("request waits cancelled by "), "{err}");
    assert!(!err.contains("NOT_FOUND"), "{err}");
    let _ = first.kill();
    let _ = first.wait();
}

/// Every PMIX_ERR_BAD_PARAM palloc shows names the value and why, from the
/// request it sent and the nodes the DVM lists: `-w s099` (no such node:
/// the DVM's nodes are listed) and `-c 5` alone (no nodes asked for). Both
/// were a bare PMIX_ERR_BAD_PARAM.
#[test]
fn bad_param_refusals_name_the_value_and_why() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let refusal = |args: &[&str]| {
        let mut c = tool(&pdvm, "palloc");
        c.args(args);
        let o = run(c);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{args:?}: {err}");
        assert!(err.contains("PMIX_ERR_BAD_PARAM"), "{args:?}: {err}");
        err
    };
    let err = refusal(&["-w", "s099"]);
    assert!(err.contains("-w s099: no such node"), "{err}");
    assert!(err.contains("n001") && err.contains("s001"), "{err}");
    let err = refusal(&["-c", "5"]);
    assert!(err.contains("-c 5 alone reserves nothing"), "{err}");
    assert!(err.contains("palloc -N 1 -c 5"), "{err}");
}

/// A warning is heard or refused up front: `palloc -t 4 --warn-timeout 2
/// --parsable` (palloc returns at once: nobody would hear it) and `pwatch
/// --event timeout-warning` alone (it never asked for it) are usage errors
/// (exit 2) naming the forms that work; inside `palloc -- CMD`, `pwatch
/// --event timeout-warning --warn-timeout D` arms the allocation of
/// $PMIX_ALLOC_ID and gets the warning. The first two were accepted and
/// showed nothing.
#[test]
fn warnings_are_heard_or_refused_up_front() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1", "--time-scale", "60"]);
    let mut c = tool(&pdvm, "palloc");
    c.args(["-t", "4", "--warn-timeout", "2", "--parsable"]);
    let o = run(c);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("-- CMD") && err.contains("pwatch --alloc"),
        "{err}"
    );
    assert!(text(&o.stdout).is_empty(), "nothing was requested");
    let mut c = tool(&pdvm, "pwatch");
    c.args(["--event", "timeout-warning", "--exec", "true"]);
    let o = run(c);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--warn-timeout DURATION"), "{err}");
    let mut c = tool(&pdvm, "palloc");
    c.args([
        "-q",
        "-N",
        "1",
        "-t",
        "30m",
        "--",
        "pwatch",
        "--event",
        "timeout-warning",
        "--warn-timeout",
        "25m",
        "--count",
        "1",
        "--timeout",
        "60s",
        "--json",
    ]);
    let o = support::run_with_timeout(c.stdin(Stdio::null()), 120);
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let warned = support::json_records(&text(&o.stdout));
    assert!(
        warned.iter().any(|e| e["event"] == "timeout-warning"),
        "{}",
        support::show(&o)
    );
}
