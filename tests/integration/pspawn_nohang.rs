//! `pspawn` never hangs and never silently runs elsewhere:
//! - `--target` against PRRTE 3.0.14 (no `PMIX_SPAWN_TARGET`) is refused
//!   with exit 7 before anything runs;
//! - a job whose end event never comes is followed to its end by asking
//!   the DVM (a scripted fake server that accepts the spawn, never sends
//!   the job-end event, and answers the namespace and process-table
//!   queries the way PRRTE does).

use crate::support::fake::tool_welcome;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::support::{
    cargo_bin, run_with_timeout, scrub_pmix_env, text, unique_tmpdir, Prte, ToolHost,
};
use pmix_tools::codec::{
    DataArray, Decoder, Encoder, Info, Proc, ProcInfo, Query, Size, Value, WireVersion,
};
use pmix_tools::conn::frame::{Header, HEADER_LEN, TAG_IOF, TAG_NOTIFY};
use pmix_tools::proto::status::Status;
use pmix_tools::proto::{cmd, keys};

/// Every pspawn run here must end well within this (its own bounds are a
/// few seconds); reaching it fails the test.
const RUN_DEADLINE: u64 = 60;

crate::prrte_3_test! {
    fn target_against_prrte_3_0_14_is_refused_and_nothing_runs() {
        let prte = Prte::start();
        let dir = unique_tmpdir("nohang-target");
        let marker = dir.path().join("ran");

        let mut cmd = prte.tool_command(cargo_bin("pspawn"));
        cmd.args(["--target", "some-allocation", "-n", "1", "touch"])
            .arg(&marker);
        let out = run_with_timeout(&mut cmd, RUN_DEADLINE);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(7), "stderr: {err}");
        assert!(err.contains("PMIX_ERR_NOT_SUPPORTED"), "{err}");
        assert!(err.contains("--target"), "{err}");
        assert!(!marker.exists(), "the job ran although it was refused");

        // The same in JSON: one error object naming the status.
        let mut cmd = prte.tool_command(cargo_bin("pspawn"));
        cmd.args([
            "--json", "--target", "a", "--target", "b", "-n", "1", "touch",
        ])
        .arg(&marker);
        let out = run_with_timeout(&mut cmd, RUN_DEADLINE);
        assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
        let line = text(&out.stdout);
        let rec: serde_json::Value = serde_json::from_str(line.trim()).expect(&line);
        assert_eq!(rec["status"], "PMIX_ERR_NOT_SUPPORTED", "{line}");
        assert_eq!(rec["exit_code"], 7, "{line}");
        assert!(!marker.exists(), "the job ran although it was refused");

        // The detection works: without --target the same job runs.
        let mut cmd = prte.tool_command(cargo_bin("pspawn"));
        cmd.args(["-n", "1", "touch"]).arg(&marker);
        let out = run_with_timeout(&mut cmd, RUN_DEADLINE);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(marker.exists(), "the untargeted job did not run");
    }
}

/// How the fake DVM answers the follower's questions about job `fake@2`.
#[derive(Clone, Copy)]
enum Scenario {
    /// Listed (process running) for the first `n` namespace queries, then
    /// gone from the list, as PRRTE does once a job is cleaned up.
    GoneAfter(usize),
    /// Always listed; its one process is shown aborted (terminated).
    Aborted,
    /// Always listed, its process shown running on this host with the pid
    /// of a process that has exited — what PRRTE 3.0.14 shows when it
    /// missed its child's exit.
    Stuck(u32),
    /// Always listed (even once stopped), its process shown running on
    /// this host with no pid — what PRRTE master shows of a job whose
    /// launch it lost.
    Unstarted,
    /// The job writes a line and fails with status 3 before the spawn is
    /// answered, which is then answered `PMIX_ERROR` naming no namespace —
    /// what PRRTE master does with a job that fails at once.
    FailedBeforeReply,
    /// The first spawn's job is ended at once with the bare `PMIX_ERROR`
    /// and no exit code — what PRRTE master does to a job it launches as
    /// another fails; the second runs, writes a line and succeeds.
    KilledUnrun,
    /// The job ends at once; its one line of output comes only after the
    /// answer to the next namespace query (the barrier), as PRRTE 3.0.14
    /// forwards some output after its barrier.
    OutputAfterBarrier,
    /// The job ends at once; its one line of output was cached by the DVM
    /// and comes only behind the answer to a pull of it, as PRRTE 3.0.14
    /// does with what a job wrote before its forwarding was set up.
    CachedUntilPulled,
    /// The first [`BUSY_TRIES`] spawns are answered
    /// `PMIX_ERR_JOB_FAILED_TO_MAP`, each after [`FLOOD`] notifications of
    /// another job's end (PRRTE master tells every tool of every launch
    /// that failed); the next one runs, writes a line and succeeds.
    BusyWhileFlooded,
    /// The job is gone from the namespace list at the first question, and
    /// its end event (status 0) comes a moment after that answer: what
    /// PRRTE master does, behind a palloc relaying for many steps.
    EndAfterGone,
    /// The first spawn is never answered, and its job [`LOST`] is listed
    /// with its process placed but never started (no pid, launch under
    /// way) — what PRRTE master does with a launch that crossed a grow of
    /// the DVM (issue 40); the next spawn runs, writes a line and succeeds.
    LaunchLostUnanswered,
    /// The first allocation request (a RELEASE) is never answered, the
    /// next one is: what PRRTE master does with a release that arrives
    /// while its DVM grows (it parks it and, outside its elastic mode,
    /// never takes it up again; issue 40).
    ReleaseParked,
}

/// The job whose launch [`Scenario::LaunchLostUnanswered`] loses.
const LOST: &str = "fake@5";
/// `pmix_proc_state_t`: launch under way.
const LAUNCH_UNDERWAY: u8 = 2;

/// Busy answers before the launch, in [`Scenario::BusyWhileFlooded`].
const BUSY_TRIES: usize = 3;
/// Notifications sent before each busy answer: three rounds are more than
/// the client's queue holds (8192).
const FLOOD: usize = 3000;

const JOB: &str = "fake@2";
/// How long after the barrier's answer [`Scenario::OutputAfterBarrier`]'s
/// line comes (well within the 20 ms a `v41` server's output must be quiet).
const LATE_BY: std::time::Duration = std::time::Duration::from_millis(5);
/// How long after the namespace answer [`Scenario::EndAfterGone`]'s end
/// event comes.
const END_LATE_BY: std::time::Duration = std::time::Duration::from_millis(500);
/// `pmix_proc_state_t`: running, aborted.
const RUNNING: u8 = 5;
const ABORTED: u8 = 52;

/// What the fake DVM saw.
#[derive(Default)]
struct Seen {
    commands: Vec<u8>,
    namespace_queries: usize,
    /// A job-control request (terminate) arrived: the job is gone after it.
    stopped: bool,
    spawns: usize,
    /// Allocation requests.
    allocs: usize,
    /// [`Scenario::OutputAfterBarrier`]'s line was sent.
    late_sent: bool,
}

/// A frame the server sends unasked (`tag`: output or event).
fn push(s: &mut TcpStream, tag: u32, bytes: Vec<u8>) {
    let h = Header {
        pindex: 0,
        tag,
        nbytes: bytes.len() as u32,
    };
    let _ = s.write_all(&h.encode());
    let _ = s.write_all(&bytes);
}

/// `line` on [`JOB`]'s rank 0's stdout.
fn job_output(line: &str) -> Vec<u8> {
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&Proc {
        nspace: JOB.into(),
        rank: 0,
    })
    .unwrap();
    e.pack_one(&pmix_tools::codec::IofChannel(2)).unwrap();
    e.pack_one(&Size(0)).unwrap();
    pmix_tools::codec::attrs::write_infos(&mut e, &[]).unwrap();
    e.pack_one(&pmix_tools::codec::ByteObject(line.as_bytes().to_vec()))
        .unwrap();
    e.into_bytes()
}

/// [`JOB`]'s end event: its termination status, and the exit code when
/// one is reported.
fn job_end(term: Status, exit: Option<i32>) -> Vec<u8> {
    job_end_of(JOB, term, exit)
}

/// The end of job `ns` as the DVM announces it.
fn job_end_of(ns: &str, term: Status, exit: Option<i32>) -> Vec<u8> {
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&pmix_tools::codec::Cmd(cmd::NOTIFY)).unwrap();
    e.pack_one(&Status::EVENT_JOB_END).unwrap();
    e.pack_one(&Proc {
        nspace: "fake@0".into(),
        rank: 0,
    })
    .unwrap();
    let mut info = vec![
        Info::new(
            keys::EVENT_AFFECTED_PROC,
            Value::Proc(Proc {
                nspace: ns.into(),
                rank: pmix_tools::codec::RANK_WILDCARD,
            }),
        ),
        Info::new(keys::JOB_TERM_STATUS, Value::Status(term)),
    ];
    if let Some(code) = exit {
        info.push(Info::new(keys::EXIT_CODE, code));
    }
    pmix_tools::codec::attrs::write_infos(&mut e, &info).unwrap();
    e.into_bytes()
}

/// Answer a spawn as `scenario` has it (the `n`th, from 1).
fn spawned(s: &mut TcpStream, tag: u32, scenario: Scenario, n: usize) {
    let launched = || {
        let mut e = status_only(Status::SUCCESS);
        e.pack_one(&JOB.to_string()).unwrap();
        e
    };
    match scenario {
        Scenario::BusyWhileFlooded if n <= BUSY_TRIES => {
            let other = job_end_of("fake@9", Status::ERR_JOB_FAILED_TO_MAP, None);
            for _ in 0..FLOOD {
                push(s, TAG_NOTIFY, other.clone());
            }
            reply(s, tag, &status_only(Status::ERR_JOB_FAILED_TO_MAP));
        }
        Scenario::FailedBeforeReply => {
            push(s, TAG_IOF, job_output("hello\n"));
            push(s, TAG_NOTIFY, job_end(Status::ERROR, Some(3)));
            reply(s, tag, &status_only(Status::ERROR));
        }
        Scenario::KilledUnrun if n == 1 => {
            reply(s, tag, &launched());
            push(s, TAG_NOTIFY, job_end(Status::ERROR, None));
        }
        Scenario::LaunchLostUnanswered if n == 1 => {}
        Scenario::KilledUnrun | Scenario::BusyWhileFlooded | Scenario::LaunchLostUnanswered => {
            reply(s, tag, &launched());
            push(s, TAG_IOF, job_output("ran\n"));
            push(s, TAG_NOTIFY, job_end(Status::SUCCESS, Some(0)));
        }
        Scenario::OutputAfterBarrier | Scenario::CachedUntilPulled => {
            reply(s, tag, &launched());
            push(s, TAG_NOTIFY, job_end(Status::SUCCESS, Some(0)));
        }
        _ => reply(s, tag, &launched()),
    }
}

fn read_frame(s: &mut TcpStream) -> Option<(u32, Vec<u8>)> {
    let mut h = [0u8; HEADER_LEN];
    s.read_exact(&mut h).ok()?;
    let h = Header::decode(&h);
    let mut b = vec![0u8; h.nbytes as usize];
    s.read_exact(&mut b).ok()?;
    Some((h.tag, b))
}

fn reply(s: &mut TcpStream, tag: u32, e: &Encoder) {
    let h = Header {
        pindex: 0,
        tag,
        nbytes: e.bytes().len() as u32,
    };
    let _ = s.write_all(&h.encode());
    let _ = s.write_all(e.bytes());
}

fn status_only(st: Status) -> Encoder {
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&st).unwrap();
    e
}

/// A fake DVM on loopback for one tool connection: it accepts the
/// registration and the spawn, never announces the job's end, and answers
/// queries per `scenario`. Returns its URI and what it saw.
fn fake_dvm(scenario: Scenario) -> (String, Arc<Mutex<Seen>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = l.accept() else { return };
        let mut h = [0u8; HEADER_LEN];
        if s.read_exact(&mut h).is_err() {
            return;
        }
        let mut ack = vec![0u8; Header::decode_connect_len(&h) as usize];
        if s.read_exact(&mut ack).is_err() || s.write_all(&tool_welcome()).is_err() {
            return;
        }
        while let Some((tag, body)) = read_frame(&mut s) {
            let mut d = Decoder::new(&body, WireVersion::V41);
            let Ok(c) = d.unpack_one::<pmix_tools::codec::Cmd>() else {
                return;
            };
            log.lock().unwrap().commands.push(c.0);
            match c.0 {
                cmd::REGEVENTS => reply(&mut s, tag, &status_only(Status::SUCCESS)),
                cmd::SPAWN => {
                    let n = {
                        let mut seen = log.lock().unwrap();
                        seen.spawns += 1;
                        seen.spawns
                    };
                    spawned(&mut s, tag, scenario, n);
                }
                cmd::QUERY => {
                    let Ok(Size(n)) = d.unpack_one::<Size>() else {
                        return;
                    };
                    let queries: Vec<Query> = d.unpack(n as usize).unwrap_or_default();
                    let key = queries
                        .first()
                        .and_then(|q| q.keys.first().cloned())
                        .unwrap_or_default();
                    let e = answer(&key, scenario, &log);
                    reply(&mut s, tag, &e);
                    if matches!(scenario, Scenario::EndAfterGone)
                        && key == keys::QUERY_NAMESPACES
                        && !std::mem::replace(&mut log.lock().unwrap().late_sent, true)
                    {
                        std::thread::sleep(END_LATE_BY);
                        push(&mut s, TAG_NOTIFY, job_end(Status::SUCCESS, Some(0)));
                    }
                    let late = matches!(scenario, Scenario::OutputAfterBarrier)
                        && key == keys::QUERY_NAMESPACES;
                    if late && !std::mem::replace(&mut log.lock().unwrap().late_sent, true) {
                        // The test's subject: the line comes a moment
                        // after the answer, not with it.
                        std::thread::sleep(LATE_BY);
                        push(&mut s, TAG_IOF, job_output("late\n"));
                    }
                }
                cmd::IOF_PULL if matches!(scenario, Scenario::CachedUntilPulled) => {
                    let mut e = status_only(Status::SUCCESS);
                    e.pack_one(&Size(1)).unwrap();
                    reply(&mut s, tag, &e);
                    push(&mut s, TAG_IOF, job_output("cached\n"));
                }
                cmd::ALLOC if matches!(scenario, Scenario::ReleaseParked) => {
                    let n = {
                        let mut seen = log.lock().unwrap();
                        seen.allocs += 1;
                        seen.allocs
                    };
                    if n > 1 {
                        reply(&mut s, tag, &status_only(Status::OPERATION_SUCCEEDED));
                    }
                }
                cmd::JOB_CONTROL => {
                    log.lock().unwrap().stopped = true;
                    reply(&mut s, tag, &status_only(Status::SUCCESS));
                }
                cmd::FINALIZE => {
                    reply(&mut s, tag, &status_only(Status::SUCCESS));
                    return;
                }
                _ => reply(&mut s, tag, &status_only(Status::ERR_NOT_SUPPORTED)),
            }
        }
    });
    (format!("fake@0.0;tcp4://127.0.0.1:{port}"), seen)
}

fn answer(key: &str, scenario: Scenario, log: &Mutex<Seen>) -> Encoder {
    let infos = |infos: Vec<Info>| {
        let mut e = status_only(Status::SUCCESS);
        e.pack_one(&Size(infos.len() as u64)).unwrap();
        e.pack(&infos).unwrap();
        e
    };
    let proc_table = |state: u8, host: String, pid: u32| {
        infos(vec![Info::new(
            keys::QUERY_PROC_TABLE,
            Value::DataArray(DataArray::Scalars(
                pmix_tools::codec::dt::PROC_INFO,
                vec![Value::ProcInfo(ProcInfo {
                    proc: Proc {
                        nspace: JOB.into(),
                        rank: 0,
                    },
                    hostname: Some(host),
                    executable_name: Some("/bin/true".into()),
                    pid,
                    state,
                })],
            )),
        )])
    };
    match (key, scenario) {
        (keys::QUERY_NAMESPACES, _) => {
            let n = {
                let mut seen = log.lock().unwrap();
                // The checks only: once the end is learned, pspawn pulls
                // what output the DVM may hold and sends a barrier query.
                if !seen.commands.contains(&cmd::IOF_PULL) {
                    seen.namespace_queries += 1;
                }
                seen.namespace_queries
            };
            let stopped = log.lock().unwrap().stopped;
            let listed = match scenario {
                Scenario::GoneAfter(k) => !stopped && n <= k,
                Scenario::Aborted | Scenario::Stuck(_) => !stopped,
                Scenario::Unstarted => true,
                Scenario::FailedBeforeReply
                | Scenario::KilledUnrun
                | Scenario::OutputAfterBarrier
                | Scenario::CachedUntilPulled
                | Scenario::BusyWhileFlooded
                | Scenario::EndAfterGone
                | Scenario::LaunchLostUnanswered
                | Scenario::ReleaseParked => false,
            };
            let list = if listed {
                format!("fake@1,{JOB}")
            } else {
                "fake@1".to_string()
            };
            infos(vec![Info::new(keys::QUERY_NAMESPACES, list)])
        }
        // A live pid on another host: nothing to learn locally.
        (keys::QUERY_PROC_TABLE, Scenario::GoneAfter(_)) => {
            proc_table(RUNNING, "elsewhere".into(), std::process::id())
        }
        (keys::QUERY_PROC_TABLE, Scenario::Aborted) => {
            proc_table(ABORTED, "elsewhere".into(), std::process::id())
        }
        (keys::QUERY_PROC_TABLE, Scenario::Stuck(pid)) => proc_table(RUNNING, hostname(), pid),
        (keys::QUERY_PROC_TABLE, Scenario::Unstarted) => proc_table(RUNNING, hostname(), 0),
        (keys::QUERY_PROC_TABLE, Scenario::LaunchLostUnanswered) => {
            proc_table(LAUNCH_UNDERWAY, "node9".into(), 0)
        }
        (keys::QUERY_NAMESPACE_INFO, Scenario::LaunchLostUnanswered) => {
            let proc = Info::new(
                keys::PROC_INFO_ARRAY,
                Value::DataArray(DataArray::infos(vec![
                    Info::new(keys::RANK, Value::Rank(0)),
                    Info::new(keys::HOSTNAME, "node9"),
                ])),
            );
            let lost = Info::new(
                "pmix.job.info.arr",
                Value::DataArray(DataArray::infos(vec![
                    Info::new(keys::NSPACE, LOST),
                    Info::new(keys::CMD_LINE, "/bin/true"),
                    Info::new(keys::JOB_SIZE, Value::Uint32(1)),
                    proc,
                ])),
            );
            // PRRTE master keeps listing it after it was stopped.
            infos(vec![Info::new(
                keys::QUERY_NAMESPACE_INFO,
                Value::DataArray(DataArray::infos(vec![lost])),
            )])
        }
        _ => status_only(Status::ERR_NOT_FOUND),
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("hostname")
        .trim()
        .to_string()
}

/// `pspawn ARGS` against the fake DVM at `uri` (bounded by [`RUN_DEADLINE`]).
fn pspawn_at(uri: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(cargo_bin("pspawn"));
    scrub_pmix_env(&mut cmd);
    cmd.args(["--uri", uri]).args(args);
    run_with_timeout(&mut cmd, RUN_DEADLINE)
}

/// `pspawn -v EXTRA -n 1 /bin/true` against the fake DVM at `uri`.
fn pspawn_against(uri: &str, extra: &[&str]) -> std::process::Output {
    let args: Vec<&str> = ["-v"]
        .into_iter()
        .chain(extra.iter().copied())
        .chain(["-n", "1", "/bin/true"])
        .collect();
    pspawn_at(uri, &args)
}

#[test]
fn a_lost_job_end_is_learned_from_the_namespace_list() {
    let (uri, seen) = fake_dvm(Scenario::GoneAfter(2));
    let out = pspawn_against(&uri, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "stderr: {err}");
    assert!(
        err.contains("never announced the end of job fake@2"),
        "{err}"
    );
    assert!(err.contains("outcome unknown (exit 9)"), "{err}");
    let seen = seen.lock().unwrap();
    // Listed twice (running), gone at the third question and still at the
    // fourth, which confirms it (PRRTE master drops a job from the list
    // before its end event arrives).
    assert_eq!(seen.namespace_queries, 4, "commands: {:?}", seen.commands);
    // The output the DVM may have cached for the job is asked for.
    assert!(
        seen.commands.contains(&cmd::IOF_PULL),
        "{:?}",
        seen.commands
    );
    assert_eq!(
        seen.commands.iter().filter(|c| **c == cmd::SPAWN).count(),
        1
    );
    assert_eq!(seen.commands.last(), Some(&cmd::FINALIZE));
}

/// Against the fake DVM playing `scenario`, an array of one task and a
/// single job both exit 0 having printed exactly `line`.
fn array_and_job_print(scenario: Scenario, line: &str) {
    for args in [
        &["--array", "1", "/bin/true"][..],
        &["-n", "1", "/bin/true"],
    ] {
        let (uri, _seen) = fake_dvm(scenario);
        let out = pspawn_at(&uri, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(text(&out.stdout), line, "{args:?}: {err}");
    }
}

/// A PRRTE 3.0 server (wire `v41`) forwards some output after the answer
/// to the barrier that follows a job's end: an array task, like a single
/// job, still prints it.
#[test]
fn output_a_v41_server_sends_after_the_barrier_is_printed() {
    array_and_job_print(Scenario::OutputAfterBarrier, "late\n");
}

/// A PRRTE 3.0 server (wire `v41`) keeps what a job wrote before its
/// forwarding was set up until it is pulled: an array task, like a single
/// job, pulls it at its end and prints it.
#[test]
fn output_a_v41_server_cached_is_pulled_and_printed() {
    array_and_job_print(Scenario::CachedUntilPulled, "cached\n");
}

#[test]
fn an_array_task_whose_end_is_lost_is_learned_from_the_namespace_list() {
    // Missing from the DVM's list at two checks in a row: ended, unannounced.
    let (uri, seen) = fake_dvm(Scenario::GoneAfter(0));
    let out = pspawn_at(&uri, &["--json", "--array", "7", "/bin/true"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "stderr: {err}");
    assert!(
        err.contains("array task 7: the DVM never announced the end of job fake@2"),
        "{err}"
    );
    let stdout = text(&out.stdout);
    let task: serde_json::Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "array_task")
        .expect(&stdout);
    assert_eq!(task["index"], 7, "{stdout}");
    assert_eq!(task["exit_code"], 9, "{stdout}");
    let seen = seen.lock().unwrap();
    assert!(seen.namespace_queries >= 2, "commands: {:?}", seen.commands);
    assert_eq!(
        seen.commands.iter().filter(|c| **c == cmd::SPAWN).count(),
        1
    );
}

#[test]
fn a_lost_job_end_with_an_aborted_process_reports_failure() {
    let (uri, seen) = fake_dvm(Scenario::Aborted);
    let out = pspawn_against(&uri, &["--json"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains("reported as 1"), "{err}");
    let stdout = text(&out.stdout);
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).expect(&stdout);
    assert_eq!(last["exit_code"], 1, "{stdout}");
    // Seen terminated at two checks in a row before it counts.
    assert_eq!(seen.lock().unwrap().namespace_queries, 2);
}

#[test]
fn a_job_the_dvm_shows_running_but_whose_local_process_exited_ends() {
    // A real process of ours that has exited (and been reaped): its pid is
    // what the DVM keeps showing as running.
    let mut child = Command::new("/bin/true").spawn().expect("run /bin/true");
    let pid = child.id();
    assert!(crate::support::wait_exit(&mut child, std::time::Duration::from_secs(10)).success());
    let (uri, seen) = fake_dvm(Scenario::Stuck(pid));
    let out = pspawn_against(&uri, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "stderr: {err}");
    assert!(
        err.contains("never announced the end of job fake@2"),
        "{err}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.namespace_queries, 2);
    // The DVM is told to stop the job, so it frees the job's slots.
    assert!(seen.stopped, "commands: {:?}", seen.commands);
}

#[test]
fn a_live_local_process_keeps_the_job_running() {
    // The DVM shows the job's process running with the pid of a live
    // process of this host carrying the job's namespace: it is running, so
    // only --timeout ends the job.
    let mut child = Command::new("sleep")
        .arg("30")
        .env("PMIX_NAMESPACE", JOB)
        .spawn()
        .expect("run sleep");
    let (uri, seen) = fake_dvm(Scenario::Stuck(child.id()));
    let out = pspawn_against(&uri, &["--timeout", "4s"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(out.status.code(), Some(8), "stderr: {}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("never announced"));
    assert!(seen.lock().unwrap().namespace_queries >= 2);
}

#[test]
fn a_timed_out_job_whose_end_is_lost_still_ends() {
    // Runs until --timeout; pspawn terminates it, the DVM drops it without
    // any end event: pspawn learns that by asking and reports the time-out.
    let (uri, seen) = fake_dvm(Scenario::GoneAfter(usize::MAX));
    let out = pspawn_against(&uri, &["--timeout", "1s"]);
    assert_eq!(out.status.code(), Some(8), "stderr: {}", text(&out.stderr));
    let seen = seen.lock().unwrap();
    assert!(seen.stopped, "the job was never terminated");
    assert!(seen.namespace_queries >= 1);
}

/// PRRTE master, as jobs fail around it, now and then loses a job's launch
/// and shows its process running with no pid for ever. One pspawn reports
/// the end it never announced; an array task is launched again (at most 3
/// times), and the job's launch stopped each time so it cannot run twice.
#[test]
fn a_job_whose_launch_the_dvm_lost_ends_and_an_array_task_is_launched_again() {
    let (uri, _) = fake_dvm(Scenario::Unstarted);
    let out = pspawn_against(&uri, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "stderr: {err}");
    assert!(
        err.contains("never announced the end of job fake@2"),
        "{err}"
    );

    let (uri, seen_array) = fake_dvm(Scenario::Unstarted);
    let out = pspawn_at(&uri, &["-v", "--array", "7", "/bin/true"]);
    let err = text(&out.stderr);
    assert_eq!(
        err.matches(
            "array task 7 (job fake@2): the DVM shows its process running but never started it"
        )
        .count(),
        3,
        "{err}"
    );
    assert_eq!(out.status.code(), Some(9), "stderr: {err}");
    let seen_array = seen_array.lock().unwrap();
    assert_eq!(seen_array.spawns, 4, "commands: {:?}", seen_array.commands);
    let stops = seen_array
        .commands
        .iter()
        .filter(|c| **c == cmd::JOB_CONTROL)
        .count();
    assert!(stops >= 3, "commands: {:?}", seen_array.commands);
}

/// Issue 40: PRRTE master, as a launch crosses a grow of the DVM, now and
/// then never answers the spawn and lists the job with its process placed
/// but never started. pspawn waited out its 30 s request time-out and
/// ended with "outcome unknown" (exit 9). It now finds that job while it
/// waits, stops it and spawns again: the second job runs.
#[test]
fn a_spawn_whose_launch_the_dvm_lost_unanswered_is_sent_again() {
    let (uri, seen) = fake_dvm(Scenario::LaunchLostUnanswered);
    let out = pspawn_against(&uri, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {err}");
    assert_eq!(text(&out.stdout), "ran\n", "stderr: {err}");
    assert!(
        err.contains(&format!("the DVM lost the launch of job {LOST}")),
        "{err}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.spawns, 2, "commands: {:?}", seen.commands);
    let stop = seen.commands.iter().position(|c| *c == cmd::JOB_CONTROL);
    let second = seen
        .commands
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == cmd::SPAWN)
        .nth(1)
        .map(|(i, _)| i);
    assert!(
        stop < second,
        "stopped before sent again: {:?}",
        seen.commands
    );
}

/// Issue 40: PRRTE master parks a RELEASE that arrives while its DVM
/// grows and never takes it up again; `prelease` (and palloc at its
/// command's end) waited 30 s and failed. The release is sent again when
/// unanswered, and the second is answered.
#[test]
fn a_release_the_dvm_parked_is_sent_again() {
    let (uri, seen) = fake_dvm(Scenario::ReleaseParked);
    let mut cmd = Command::new(cargo_bin("prelease"));
    scrub_pmix_env(&mut cmd);
    cmd.args(["--uri", &uri, "alloc.7"]);
    let out = run_with_timeout(&mut cmd, RUN_DEADLINE);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {err}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.allocs, 2, "commands: {:?}", seen.commands);
}

/// A job that fails before its spawn is answered: PRRTE master answers
/// `PMIX_ERROR` naming no namespace, but the end and the output still come.
/// The array task reports that job's status and line.
#[test]
fn an_array_task_failing_before_its_spawn_is_answered_keeps_its_status_and_output() {
    let (uri, seen) = fake_dvm(Scenario::FailedBeforeReply);
    let out = pspawn_at(&uri, &["--array", "7", "/bin/true"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr: {err}");
    assert_eq!(text(&out.stdout), "hello\n", "stderr: {err}");
    assert!(err.contains("1 of 1 tasks failed: exit 3: id 7"), "{err}");
    assert_eq!(seen.lock().unwrap().spawns, 1);
}

/// PRRTE master ends a job it launches just as another fails, with the bare
/// `PMIX_ERROR` and no exit code, before it runs: the array task is
/// launched again and its second run counts.
#[test]
fn an_array_task_the_dvm_ended_unrun_is_launched_again() {
    let (uri, seen) = fake_dvm(Scenario::KilledUnrun);
    let out = pspawn_at(&uri, &["-v", "--array", "7", "/bin/true"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {err}");
    assert_eq!(text(&out.stdout), "ran\n", "stderr: {err}");
    assert!(err.contains("array task 7 (job fake@2): the DVM ended its job with PMIX_ERROR and no exit status before it ran"), "{err}");
    assert_eq!(seen.lock().unwrap().spawns, 2);
}

/// Issue 40: a pspawn waiting for its allocation's busy slots took none of
/// the messages the DVM sent meanwhile; after enough tries its queue
/// (8192 messages) was full and it failed `PMIX_ERR_OUT_OF_RESOURCE`,
/// "spawn refused by the DVM". The wait now takes them: 9000 over three
/// busy answers, then the job runs and its output is printed.
#[test]
fn a_spawn_waiting_for_busy_slots_takes_what_comes_meanwhile() {
    let (uri, seen) = fake_dvm(Scenario::BusyWhileFlooded);
    let out = pspawn_at(&uri, &["-v", "--target", "a1", "-n", "1", "/bin/true"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("are busy"), "{err}");
    assert_eq!(text(&out.stdout), "ran\n", "{err}");
    assert_eq!(seen.lock().unwrap().spawns, BUSY_TRIES + 1);
}

/// Issue 40: PRRTE master drops a job from its namespace list before the
/// job's end event reaches the tool; pspawn took the job for ended
/// unannounced at once ("never announced", exit 9) though the end came a
/// moment later. Gone at two questions in a row is now what counts: the
/// end event, 500 ms after the first, wins with the job's own status.
#[test]
fn a_job_end_that_comes_after_the_job_left_the_list_is_taken() {
    let (uri, seen) = fake_dvm(Scenario::EndAfterGone);
    let out = pspawn_against(&uri, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("never announced"), "{err}");
    assert_eq!(seen.lock().unwrap().namespace_queries, 1, "{err}");
}
