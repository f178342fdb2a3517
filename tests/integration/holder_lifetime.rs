//! An allocation outlives the command that made it (issue 14): the id a
//! script gets from `palloc --parsable` stays valid until `prelease`, every
//! way a holder ends gives its nodes back, `palloc --no-wait -- SCRIPT`
//! submits as sbatch does, and `prelease A B` releases both. On pdvm (a
//! scheduler of 4 nodes: the free count is 4 again at the end) and on
//! PRRTE master (no scheduler: the host is back in the default pool).

use crate::support;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{short_hostname, show, text, tool, Prte};
use serde_json::Value;

/// How many times each way is tried.
const ROUNDS: usize = 20;

fn run(mut cmd: Command, secs: u64) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), secs)
}

/// `pwatch --status --json` through `tool`.
fn status(tool: &dyn Fn(&str) -> Command) -> Value {
    let mut c = tool("pwatch");
    c.args(["--status", "--json"]);
    let o = run(c, 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    serde_json::from_str(&text(&o.stdout)).unwrap_or_else(|e| panic!("{e}: {}", show(&o)))
}

/// The scheduler's free node count in `st`.
fn free(st: &Value) -> u64 {
    st["scheduler"][0]["free"].as_u64().unwrap_or(0)
}

/// Wait (at most 20 s) until `cond` holds for the DVM's status; the last
/// status either way.
fn settle(tool: &dyn Fn(&str) -> Command, cond: impl Fn(&Value) -> bool) -> Value {
    let mut st = Value::Null;
    wait::within(Duration::from_secs(20), || {
        st = status(tool);
        cond(&st)
    });
    st
}

/// A script doing [`ROUNDS`] times `ID=$(palloc … --parsable); pspawn
/// --target $ID hostname; prelease $ID`, printing `ok N` for each round
/// where all three succeeded.
fn parsable_rounds(palloc_flags: &str) -> String {
    format!(
        "for i in $(seq 1 {ROUNDS}); do \
           ID=$(palloc -q {palloc_flags} --parsable) && \
           pspawn --map-by :OVERSUBSCRIBE --target \"$ID\" hostname > /dev/null && \
           prelease -q \"$ID\" && echo ok $i; \
         done"
    )
}

/// A script doing [`ROUNDS`] times: `palloc … --hold` in the background,
/// once it has printed its id, `kill -SIG` it.
fn hold_rounds(palloc_flags: &str, sig: &str, dir: &std::path::Path) -> String {
    let d = dir.display();
    format!(
        "for i in $(seq 1 {ROUNDS}); do \
           palloc -q {palloc_flags} --hold --parsable > {d}/id.$i 2>> {d}/err & P=$!; \
           until [ -s {d}/id.$i ] || ! kill -0 $P 2>/dev/null; do sleep 0.02; done; \
           kill -{sig} $P; wait $P; echo ended $i $?; \
         done"
    )
}

/// `sh -c script` with the environment the tools get from `tool`.
fn shell(tool: &dyn Fn(&str) -> Command, script: &str) -> Command {
    let mut c = support::command_like(&tool("pwatch"), "sh");
    c.args(["-c", script]);
    c
}

fn count_ok(o: &Output, word: &str) -> usize {
    text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with(word))
        .count()
}

fn pdvm_tool(pdvm: &Pdvm) -> impl Fn(&str) -> Command + '_ {
    move |name: &str| pdvm.tool(name)
}

#[test]
fn parsable_ids_stay_valid_until_released_and_no_node_leaks_pdvm() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "4"]);
    let tool = pdvm_tool(&pdvm);
    let sh = shell(&tool, &parsable_rounds("-N 1"));
    let o = run(sh, 300);
    assert_eq!(count_ok(&o, "ok "), ROUNDS, "{}", show(&o));
    let st = settle(&tool, |st| free(st) == 4);
    assert_eq!(free(&st), 4, "nodes leaked: {st}");
}

#[test]
fn holds_ended_by_sigterm_or_kill_9_give_their_nodes_back_pdvm() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "4"]);
    let tool = pdvm_tool(&pdvm);
    for sig in ["TERM", "KILL"] {
        let dir = support::unique_tmpdir("holdsig");
        let sh = shell(&tool, &hold_rounds("-N 1", sig, dir.path()));
        let o = run(sh, 300);
        let ids = (1..=ROUNDS)
            .filter(|i| {
                std::fs::read_to_string(dir.path().join(format!("id.{i}")))
                    .is_ok_and(|s| s.trim().starts_with("alloc."))
            })
            .count();
        assert_eq!(
            ids,
            ROUNDS,
            "SIG{sig}: not every hold was granted: {}",
            show(&o)
        );
        let st = settle(&tool, |st| free(st) == 4);
        assert_eq!(free(&st), 4, "SIG{sig}: nodes leaked: {st}");
    }
}

fn master_tool(dvm: &Prte) -> impl Fn(&str) -> Command + '_ {
    move |name: &str| tool(dvm, name)
}

/// No reservation is left and the host is in the default pool again.
fn host_back_in_default_pool(st: &Value, host: &str) -> bool {
    let none_left = st["reservations"].as_array().is_none_or(|r| r.is_empty());
    let node_free = st["nodes"].as_array().is_some_and(|n| {
        n.iter()
            .any(|n| n["name"] == host && n["alloc_id"].as_str().is_none_or(str::is_empty))
    });
    none_left && node_free
}

#[test]
fn parsable_ids_stay_valid_until_released_and_no_node_leaks_master() {
    let dvm = Prte::start_master();
    let host = short_hostname();
    let tool = master_tool(&dvm);
    let sh = shell(&tool, &parsable_rounds(&format!("-w {host}")));
    let o = run(sh, 400);
    assert_eq!(count_ok(&o, "ok "), ROUNDS, "{}\n{}", show(&o), dvm.logs());
    let st = settle(&tool, |st| host_back_in_default_pool(st, &host));
    assert!(host_back_in_default_pool(&st, &host), "{st}");
}

/// PRRTE master only: SIGTERM. A tool killed with -9 stays listed as a
/// running namespace in PRRTE master (it never notices the tool's end), so
/// no rule of the spec can apply there; pdvm notices at once (see the pdvm
/// test above).
#[test]
fn holds_ended_by_sigterm_give_their_nodes_back_master() {
    let dvm = Prte::start_master();
    let host = short_hostname();
    let tool = master_tool(&dvm);
    {
        let sig = "TERM";
        let dir = support::unique_tmpdir("holdsigm");
        let sh = shell(&tool, &hold_rounds(&format!("-w {host}"), sig, dir.path()));
        let o = run(sh, 400);
        assert_eq!(count_ok(&o, "ended "), ROUNDS, "{}", show(&o));
        let st = settle(&tool, |st| host_back_in_default_pool(st, &host));
        assert!(
            host_back_in_default_pool(&st, &host),
            "SIG{sig}: {st}\n{}",
            show(&o)
        );
    }
}

/// `palloc --no-wait -N 1 -- ./job.sh` returns the request id at once while
/// every node is taken; the script runs once they free up, its output in
/// the log palloc names; `prelease REQ_ID` withdraws a pending one.
#[test]
fn no_wait_with_a_script_submits_as_sbatch_does() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let tool = pdvm_tool(&pdvm);
    let dir = support::unique_tmpdir("sbatch");
    let job = dir.path().join("job.sh");
    std::fs::write(
        &job,
        "#!/bin/sh\necho \"job ran in $PMIX_ALLOC_ID\"\npspawn echo from-the-job\n",
    )
    .unwrap();
    std::fs::set_permissions(&job, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut hold = tool("palloc");
    hold.args(["-q", "-N", "2", "--parsable"]);
    let all = run(hold, 60);
    let all_id = text(&all.stdout).trim().to_string();
    assert!(all_id.starts_with("alloc."), "{}", show(&all));
    let submit = |tool: &dyn Fn(&str) -> Command| {
        let mut c = tool("palloc");
        c.current_dir(dir.path())
            .args(["--no-wait", "--parsable", "-N", "1", "--", "./job.sh"]);
        let o = run(c, 60);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        text(&o.stdout).trim().to_string()
    };
    let pending = submit(&tool);
    let queued = submit(&tool);
    let mut cancel = tool("prelease");
    cancel.arg(&pending);
    let c = run(cancel, 30);
    assert_eq!(c.status.code(), Some(0), "{}", show(&c));
    let mut rel = tool("prelease");
    rel.arg(&all_id);
    let r = run(rel, 30);
    assert_eq!(r.status.code(), Some(0), "{}", show(&r));
    let log = dir.path().join(format!("{queued}.out"));
    let mut got = String::new();
    wait::within(Duration::from_secs(30), || {
        got = std::fs::read_to_string(&log).unwrap_or_default();
        got.contains("from-the-job")
    });
    assert!(got.contains("job ran in alloc."), "{got}");
    assert!(got.contains("from-the-job"), "{got}");
    let cancelled =
        std::fs::read_to_string(dir.path().join(format!("{pending}.out"))).unwrap_or_default();
    assert!(
        !cancelled.contains("job ran"),
        "the withdrawn request ran: {cancelled}"
    );
    let st = settle(&tool, |st| free(st) == 2);
    assert_eq!(free(&st), 2, "{st}");
}

/// A script submitted with free nodes is granted at once: `palloc
/// --no-wait` still returns at once (not when the script ends: it waits for
/// a gate this test never opens before), and the request id it printed
/// names the granted allocation for `pspawn --target` and `prelease`.
#[test]
fn a_request_granted_at_once_returns_at_once_and_its_id_names_the_allocation() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let tool = pdvm_tool(&pdvm);
    let dir = support::unique_tmpdir("sbatch-now");
    let gate = dir.path().join("gate");
    let mut c = tool("palloc");
    c.current_dir(dir.path()).args([
        "--no-wait",
        "--parsable",
        "-N",
        "1",
        "--",
        "sh",
        "-c",
        &format!("while [ ! -e {} ]; do sleep 0.1; done", gate.display()),
    ]);
    let o = run(c, 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let rid = text(&o.stdout).trim().to_string();
    assert!(
        !rid.is_empty() && !rid.starts_with("alloc."),
        "{}",
        show(&o)
    );
    let st = settle(&tool, |st| free(st) == 1);
    assert_eq!(free(&st), 1, "granted: {st}");
    let mut spawn = tool("pspawn");
    spawn.args(["--target", &rid, "-n", "1", "echo", "in-the-allocation"]);
    let sp = run(spawn, 30);
    assert_eq!(sp.status.code(), Some(0), "{}", show(&sp));
    assert_eq!(text(&sp.stdout), "in-the-allocation\n", "{}", show(&sp));
    let mut rel = tool("prelease");
    rel.arg(&rid);
    let r = run(rel, 30);
    assert_eq!(r.status.code(), Some(0), "{}", show(&r));
    assert_eq!(text(&r.stdout), "", "a notice, not output: {}", show(&r));
    let st = settle(&tool, |st| free(st) == 2);
    assert_eq!(free(&st), 2, "given back: {st}");
    std::fs::write(&gate, "").unwrap();
}

/// Under `--inherit default` the nodes stay in the DVM unreserved: `pwatch
/// --status` shows where they came from (ORIGIN `scheduler`), and the
/// documented `prelease $(palloc -w NODE --parsable)` gives them back.
/// Comma lists select several tables.
#[test]
fn default_rule_nodes_show_their_origin_and_can_be_given_back() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let tool = pdvm_tool(&pdvm);
    let mut p = tool("palloc");
    p.args(["-q", "-w", "s001", "--inherit", "default", "--", "true"]);
    let o = run(p, 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let st = settle(&tool, |st| free(st) == 1);
    assert_eq!(free(&st), 1, "s001 stays in the DVM: {st}");
    let mut w = tool("pwatch");
    w.args(["--status", "--what", "nodes,scheduler"]);
    let table = run(w, 30);
    assert_eq!(table.status.code(), Some(0), "{}", show(&table));
    let out = text(&table.stdout);
    let s001 = out
        .lines()
        .find(|l| l.trim_start().starts_with("s001"))
        .unwrap_or_else(|| panic!("no s001 row: {out}"));
    assert!(
        s001.contains("scheduler") && s001.contains("(default)"),
        "{out}"
    );
    assert!(
        out.contains("ORIGIN") && out.contains("FREE_NODES"),
        "{out}"
    );
    let give = shell(&tool, "prelease $(palloc -w s001 --parsable)");
    let g = run(give, 30);
    assert_eq!(g.status.code(), Some(0), "{}", show(&g));
    let st = settle(&tool, |st| free(st) == 2);
    assert_eq!(free(&st), 2, "s001 back with the scheduler: {st}");
}

/// `prelease --signal USR1 NSPACE` signals a detached job's processes
/// (`scancel --signal`), which go on running; an unknown job is NOT_FOUND.
#[test]
fn prelease_signal_sends_a_signal_to_a_detached_job() {
    let pdvm = Pdvm::start(&["--slots", "2"]);
    let tool = pdvm_tool(&pdvm);
    let dir = support::unique_tmpdir("signal");
    let got = dir.path().join("usr1");
    let ready = dir.path().join("ready");
    let mut spawn = tool("pspawn");
    spawn.args([
        "--detach",
        "--parsable",
        "sh",
        "-c",
        &format!(
            "trap 'echo usr1 >> {}' USR1; echo set > {}; while :; do sleep 0.1; done",
            got.display(),
            ready.display()
        ),
    ]);
    let o = run(spawn, 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let ns = text(&o.stdout).trim().to_string();
    // USR1 before the trap would end the shell (its default action): wait
    // for the trap, then signal until it is seen, each signal given 200 ms.
    support::wait_file(&ready, Duration::from_secs(20));
    wait::within(Duration::from_secs(20), || {
        if got.exists() {
            return true;
        }
        let mut sig = tool("prelease");
        sig.args(["--signal", "USR1", &ns]);
        let r = run(sig, 30);
        assert_eq!(r.status.code(), Some(0), "{}", show(&r));
        assert!(text(&r.stderr).contains("sent SIGUSR1"), "{}", show(&r));
        wait::within(Duration::from_millis(200), || got.exists())
    });
    assert!(got.exists(), "the job never got SIGUSR1");
    let live = status(&tool)["namespaces"]
        .as_array()
        .is_some_and(|n| n.iter().any(|n| n["nspace"] == ns.as_str()));
    assert!(live, "a signal is not a cancel: the job runs on");
    let mut unknown = tool("prelease");
    unknown.args(["--signal", "USR1", "nosuch@9"]);
    assert_eq!(run(unknown, 30).status.code(), Some(5));
    let mut cancel = tool("prelease");
    cancel.arg(&ns);
    assert_eq!(run(cancel, 30).status.code(), Some(0));
}

/// `pspawn --detach -o 'out-%j.%r.txt'`: each rank's output goes to its
/// own file, named after the job and the rank (sbatch's `--output`);
/// `-e` splits stderr off; a bad pattern is refused before connecting.
#[test]
fn detached_output_goes_to_the_files_named() {
    let pdvm = Pdvm::start(&["--slots", "2"]);
    let tool = pdvm_tool(&pdvm);
    let dir = support::unique_tmpdir("outfiles");
    let pattern = dir.path().join("out-%j.%r.txt");
    let mut spawn = tool("pspawn");
    spawn.args([
        "--detach",
        "--parsable",
        "-n",
        "2",
        "-o",
        &pattern.to_string_lossy(),
        "sh",
        "-c",
        "echo \"rank $PMIX_RANK\"; echo \"err $PMIX_RANK\" >&2",
    ]);
    let o = run(spawn, 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let ns = text(&o.stdout).trim().to_string();
    for rank in 0..2 {
        let f = dir.path().join(format!("out-{ns}.{rank}.txt"));
        let mut got = String::new();
        wait::within(Duration::from_secs(20), || {
            got = std::fs::read_to_string(&f).unwrap_or_default();
            got.lines().count() >= 2
        });
        assert_eq!(got, format!("rank {rank}\nerr {rank}\n"), "{}", f.display());
    }
    let out = dir.path().join("o.txt");
    let err = dir.path().join("e-%%.txt");
    let mut split = tool("pspawn");
    split.args([
        "-o",
        &out.to_string_lossy(),
        "-e",
        &err.to_string_lossy(),
        "sh",
        "-c",
        "echo to-out; echo to-err >&2",
    ]);
    let s = run(split, 30);
    assert_eq!(s.status.code(), Some(0), "{}", show(&s));
    assert_eq!(text(&s.stdout), "", "written to the file, not forwarded");
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    assert_eq!(read(&out), "to-out\n");
    assert_eq!(read(&dir.path().join("e-%.txt")), "to-err\n");
    let mut bad = tool("pspawn");
    bad.args(["-o", "x-%z", "true"]);
    let b = run(bad, 30);
    assert_eq!(b.status.code(), Some(2), "{}", show(&b));
    assert!(text(&b.stderr).contains("%j"), "{}", show(&b));
}

/// A holder started inside a job relays only for that job's processes: a
/// process outside the job (same user, another shell) that names the
/// job's allocation is not lent the job's identity, and the DVM refuses it
/// as a non-owner (exit 6); the job itself still spawns into it.
#[test]
fn a_holder_inside_a_job_lends_nothing_to_processes_outside_it() {
    let pdvm = Pdvm::start(&["--slots", "4", "--scheduler-nodes", "1"]);
    let tool = pdvm_tool(&pdvm);
    let dir = support::unique_tmpdir("jobholder");
    let id_file = dir.path().join("id");
    let rc_file = dir.path().join("rc");
    let gate = dir.path().join("gate");
    let said_file = dir.path().join("said");
    let script = format!(
        "palloc -N 1 --hold --parsable > {id} 2> {said} &\n\
         while [ ! -s {id} ]; do sleep 0.1; done\n\
         pspawn --target \"$(cat {id})\" true; echo $? > {rc}\n\
         while [ ! -e {gate} ]; do sleep 0.1; done\n\
         kill %1; wait",
        id = id_file.display(),
        said = said_file.display(),
        rc = rc_file.display(),
        gate = gate.display()
    );
    let mut job = tool("pspawn");
    job.args(["--detach", "--parsable", "-n", "1", "sh", "-c", &script]);
    let o = run(job, 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let ns = text(&o.stdout).trim().to_string();
    let id = support::wait_file(&id_file, Duration::from_secs(20))
        .trim()
        .to_string();
    assert_eq!(
        support::wait_file(&rc_file, Duration::from_secs(20)).trim(),
        "0",
        "the job itself spawns into its allocation"
    );
    // It says who can act through it (issue 45): not "other shells".
    let said = support::wait_file(&said_file, Duration::from_secs(20));
    assert!(
        said.contains(&format!("only processes of job {ns}")),
        "{said}"
    );
    assert!(!said.contains("from other shells"), "{said}");
    let mut outsider = tool("pspawn");
    outsider.args(["--target", &id, "true"]);
    let r = run(outsider, 30);
    std::fs::write(&gate, "").unwrap();
    assert_eq!(r.status.code(), Some(6), "{}", show(&r));
    assert!(text(&r.stderr).contains("NO_PERMISSIONS"), "{}", show(&r));
    let mut cancel = tool("prelease");
    cancel.arg(&ns);
    let _ = run(cancel, 30);
}

/// A process outside a job that names the job in its own environment
/// (`PMIX_NAMESPACE=JOB`) is not one of the job's processes: the holder
/// inside the job decides by descent (the peer's process descends from a
/// process of the job), not by the environment, so it is refused as a
/// non-owner and the allocation is untouched.
#[test]
fn a_holder_inside_a_job_is_not_fooled_by_an_outsider_naming_the_job_in_its_environment() {
    let pdvm = Pdvm::start(&["--slots", "4", "--scheduler-nodes", "1"]);
    let tool = pdvm_tool(&pdvm);
    let dir = support::unique_tmpdir("jobholder-env");
    let id_file = dir.path().join("id");
    let gate = dir.path().join("gate");
    let script = format!(
        "palloc -N 1 --hold --parsable > {id} &\n\
         while [ ! -e {gate} ]; do sleep 0.1; done\n\
         kill %1; wait",
        id = id_file.display(),
        gate = gate.display()
    );
    let mut job = tool("pspawn");
    job.args(["--detach", "--parsable", "-n", "1", "sh", "-c", &script]);
    let o = run(job, 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let ns = text(&o.stdout).trim().to_string();
    let id = support::wait_file(&id_file, Duration::from_secs(20))
        .trim()
        .to_string();
    let mut outsider = tool("pspawn");
    outsider
        .env("PMIX_NAMESPACE", &ns)
        .args(["--target", &id, "true"]);
    let r = run(outsider, 30);
    let mut release = tool("prelease");
    release.env("PMIX_NAMESPACE", &ns).arg(&id);
    let rel = run(release, 30);
    let still_there = pdvm.reservation_ids().contains(&id);
    std::fs::write(&gate, "").unwrap();
    assert_ne!(
        r.status.code(),
        Some(0),
        "the outsider spawned as the job: {}",
        show(&r)
    );
    assert_ne!(
        rel.status.code(),
        Some(0),
        "the outsider released it: {}",
        show(&rel)
    );
    assert!(still_there, "allocation {id} was released by an outsider");
    let mut cancel = tool("prelease");
    cancel.arg(&ns);
    let _ = run(cancel, 30);
}

/// `prelease A B`, A and B held by different pallocs, releases both.
#[test]
fn prelease_of_two_ids_held_by_two_pallocs_releases_both() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let tool = pdvm_tool(&pdvm);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut c = tool("palloc");
        c.args(["-q", "-N", "1", "--parsable"]);
        let o = run(c, 60);
        ids.push(text(&o.stdout).trim().to_string());
    }
    let mut rel = tool("prelease");
    rel.args(&ids);
    let r = run(rel, 30);
    assert_eq!(r.status.code(), Some(0), "{}", show(&r));
    let st = settle(&tool, |st| free(st) == 2);
    assert_eq!(free(&st), 2, "{st}");
}
/// A holder relays operations on its own allocation only: a spawn into, or
/// a release of, another allocation through it is refused, and the other
/// allocation is untouched.
#[test]
fn a_holder_lends_the_owners_right_only_for_its_own_allocation() {
    let pdvm = Pdvm::start(&["--slots", "4", "--scheduler-nodes", "2"]);
    let mut other = pdvm.tool("palloc");
    other.args(["-q", "-N", "1", "--parsable"]);
    let o = run(other, 60);
    let other_id = text(&o.stdout).trim().to_string();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(!other_id.is_empty(), "{}", show(&o));
    let script = format!(
        "pspawn --target {other_id} true; echo spawn=$?; prelease {other_id}; echo release=$?"
    );
    let mut cmd = pdvm.tool("palloc");
    cmd.args(["-q", "-N", "1", "--", "sh", "-c", &script]);
    let o = run(cmd, 60);
    let out = text(&o.stdout);
    assert!(!out.contains("spawn=0"), "{}", show(&o));
    assert!(!out.contains("release=0"), "{}", show(&o));
    let mut status = pdvm.tool("pwatch");
    status.args(["--status", "--json"]);
    let st = run(status, 30);
    assert!(
        text(&st.stdout).contains(&other_id),
        "allocation {other_id} was released through another holder: {}",
        show(&st)
    );
    let mut rel = pdvm.tool("prelease");
    rel.arg(&other_id);
    let r = run(rel, 30);
    assert_eq!(r.status.code(), Some(0), "{}", show(&r));
}

/// `palloc --extend` reports what the DVM now holds: every node and the
/// expiry pwatch shows (not the increment asked for).
#[test]
fn extend_reports_the_nodes_and_expiry_the_dvm_granted() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "3"]);
    let tool = pdvm_tool(&pdvm);
    let mut new = tool("palloc");
    new.args(["-q", "-N", "1", "-t", "1h", "--parsable"]);
    let id = text(&run(new, 60).stdout).trim().to_string();
    let mut ext = tool("palloc");
    ext.args(["--extend", &id, "-N", "1", "-t", "30m", "--json"]);
    let o = run(ext, 60);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let rec: Value = serde_json::from_str(text(&o.stdout).lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    assert_eq!(rec["nodes"].as_array().map(Vec::len), Some(2), "{rec}");
    let st = status(&tool);
    let res = st["reservations"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["alloc_id"] == id.as_str()).cloned())
        .unwrap_or_else(|| panic!("{id} not listed: {st}"));
    let (mine, dvms) = (rec["expires_at"].as_u64(), res["expires_at"].as_u64());
    assert!(
        mine.zip(dvms).is_some_and(|(a, b)| a.abs_diff(b) <= 2),
        "palloc says {mine:?}, the DVM {dvms:?}"
    );
    let mut rel = tool("prelease");
    rel.arg(&id);
    assert_eq!(run(rel, 30).status.code(), Some(0));
}

/// Inside a command whose allocation was released, pspawn says so instead
/// of a bare NOT_FOUND.
#[test]
fn a_released_pmix_alloc_id_gives_a_clear_message() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let mut c = pdvm.tool("palloc");
    c.args([
        "-q",
        "-N",
        "1",
        "--",
        "sh",
        "-c",
        "prelease -q \"$PMIX_ALLOC_ID\" && pspawn true; echo rc=$?",
    ]);
    let o = run(c, 60);
    let err = text(&o.stderr);
    assert!(text(&o.stdout).contains("rc=5"), "{}", show(&o));
    assert!(
        err.contains("PMIX_ALLOC_ID") && err.contains("has ended"),
        "{}",
        show(&o)
    );
}

/// `prelease NSPACE` cancels a running detached job (as scancel takes a
/// job id): its processes end.
#[test]
fn prelease_of_a_job_namespace_cancels_the_job() {
    let pdvm = Pdvm::start(&["--slots", "2"]);
    let tool = pdvm_tool(&pdvm);
    let mut spawn = tool("pspawn");
    spawn.args(["--detach", "-n", "1", "sleep", "60"]);
    let o = run(spawn, 30);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let ns = text(&o.stdout)
        .trim()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(ns.contains('@'), "{}", show(&o));
    let live = |tool: &dyn Fn(&str) -> Command| {
        status(tool)["namespaces"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["nspace"] == ns.as_str()))
    };
    assert!(live(&tool), "the job runs");
    let mut cancel = tool("prelease");
    cancel.arg(&ns);
    let c = run(cancel, 30);
    assert_eq!(c.status.code(), Some(0), "{}", show(&c));
    // Said on stderr (stdout is for what scripts consume).
    assert!(text(&c.stderr).contains("cancelled job"), "{}", show(&c));
    assert_eq!(text(&c.stdout), "", "{}", show(&c));
    assert!(
        wait::within(Duration::from_secs(20), || !live(&tool)),
        "the job still runs"
    );
}
