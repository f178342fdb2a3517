//! pdvm end to end with the library's own connection and operations layers:
//! discovery, a tool's query / allocate / spawn / output / job-end flow,
//! exit statuses, and a launched process connecting back as a client.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use pmix_tools::codec::{Info, Value};
use pmix_tools::conn::discover::{discover, ProcessEnv};
use pmix_tools::ops::{alloc, events, query};
use pmix_tools::proto::keys;
use pmix_tools::proto::status::Status;

use crate::support::pdvm::{app, follow_job, Pdvm};
use pmix_tools::ops::spawn;

#[test]
fn writes_private_rendezvous_files_and_is_discovered() {
    let dvm = Pdvm::start(&["--nodes", "2"]);
    let host = support::short_hostname();
    let dir = dvm.rendezvous_dir();
    let mode = std::fs::metadata(&dir)
        .expect("rendezvous dir")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700, "{}", dir.display());
    let nspace = format!("pdvm-{host}-{}@0", dvm.pid);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want = vec![
        format!("pmix.{host}.tool"),
        format!("pmix.{host}.tool.{}", dvm.pid),
        format!("pmix.{host}.tool.{nspace}"),
    ];
    want.sort();
    assert_eq!(names, want);
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    for n in &names {
        let p = dir.join(n);
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let body = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = body.lines().collect();
        assert!(
            lines[0].starts_with(&format!("{nspace}.0;tcp4://127.0.0.1:")),
            "{body}"
        );
        assert_eq!(lines[1], pmix_tools::server::listener::ANNOUNCED_VERSION);
        assert_eq!(lines[2], dvm.pid.to_string());
        assert_eq!(lines[3], format!("{uid}:{gid}"));
        assert!(!lines[4].is_empty());
    }
    // No flags beyond where to look: discovery finds it.
    let t = discover(&dvm.opts(), &ProcessEnv).expect("discover");
    assert_eq!(t.uri.nspace, nspace);
    assert_eq!(
        t.version.as_deref(),
        Some(pmix_tools::server::listener::ANNOUNCED_VERSION)
    );
    let s = dvm.session();
    assert_eq!(s.conn().wire(), pmix_tools::codec::WireVersion::V61);
    assert_eq!(s.conn().server().0, nspace);
    assert!(s.me().0.starts_with(&format!("pdvm-{host}-{}@", dvm.pid)));
    s.finalize().unwrap();
    let st = dvm.stop();
    assert!(st.success(), "{st}");
    assert!(!dir.exists(), "rendezvous files left behind");
}

#[test]
fn tool_allocates_spawns_into_reservation_and_sees_output_and_end() {
    let dvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let s = dvm.session();
    let me = s.me().0;
    let ns = query::namespaces(&s).unwrap();
    assert!(ns.contains(&me), "{me} not in {ns:?}");

    let r = alloc::allocate(
        &s,
        pmix_tools::proto::Directive::New,
        &[
            Info::new(keys::ALLOC_NUM_NODES, 1u64),
            Info::new(keys::ALLOC_REQ_ID, "req-1"),
        ],
    )
    .expect("NEW granted");
    let id = r.alloc_id.clone().expect("reply carries PMIX_ALLOC_ID");
    assert_eq!(r.request_id.as_deref(), Some("req-1"));

    events::register(&s, &[Status::EVENT_JOB_END], &[]).unwrap();
    let mut info = spawn::launcher_job_info();
    info.push(Info::new(keys::SPAWN_TARGET, id.as_str()));
    let job = spawn::spawn(
        &s,
        &info,
        &[app(
            &[
                "/bin/sh",
                "-c",
                "echo hi; echo node=$PMIX_HOSTNAME alloc=$PMIX_ALLOC_ID",
            ],
            1,
        )],
    )
    .expect("spawn into the reservation");
    let seen = follow_job(&s, &job, 20);
    let out = String::from_utf8_lossy(&seen.stdout).into_owned();
    assert!(out.starts_with("hi\n"), "{out:?}");
    // placed on the scheduler node granted to the reservation
    assert!(out.contains("node=s001"), "{out:?}");
    assert!(out.contains(&format!("alloc={id}")), "{out:?}");
    let end = seen.job_end(&job).expect("job-end event");
    assert_eq!(
        end.get(keys::JOB_TERM_STATUS).and_then(Value::as_i64),
        Some(0)
    );
    assert_eq!(end.get(keys::EXIT_CODE).and_then(Value::as_i64), Some(0));

    // The job is now in the reservation's owner set (pdvm's own table).
    let rows = pmix_tools::ops::status_query::reservations(&s, Some(&id)).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].owners.contains(&job), "{rows:?}");
    s.finalize().unwrap();
}

#[test]
fn failing_job_reports_its_exit_status() {
    let dvm = Pdvm::start(&["--nodes", "2", "--slots", "2"]);
    let s = dvm.session();
    events::register(&s, &[], &[]).unwrap();
    let job = spawn::spawn(
        &s,
        &spawn::launcher_job_info(),
        &[app(
            &[
                "/bin/sh",
                "-c",
                "if [ $PMIX_RANK = 1 ]; then exit 7; fi; echo rank$PMIX_RANK >&2",
            ],
            3,
        )],
    )
    .unwrap();
    let seen = follow_job(&s, &job, 20);
    let end = seen.job_end(&job).expect("job-end event");
    assert_eq!(
        end.get(keys::JOB_TERM_STATUS).and_then(Value::as_i64),
        Some(7)
    );
    let err = String::from_utf8_lossy(&seen.stderr).into_owned();
    assert!(
        err.contains("rank0") && err.contains("rank2") && !err.contains("rank1"),
        "{err:?}"
    );
}

#[test]
fn unknown_executable_is_refused() {
    let dvm = Pdvm::start(&["--nodes", "1"]);
    let s = dvm.session();
    let e = spawn::spawn(&s, &[], &[app(&["/nonexistent/program"], 1)]).unwrap_err();
    assert_eq!(e.status, Status::ERR_NOT_FOUND);
    // and the server still answers
    assert!(!query::namespaces(&s).unwrap().is_empty());
}

#[test]
fn launched_process_connects_back_as_client() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let s = dvm.session();
    let probe = support::example("client_probe");
    let job = spawn::spawn(
        &s,
        &spawn::launcher_job_info(),
        &[app(&[probe.to_str().unwrap()], 2)],
    )
    .unwrap();
    let seen = follow_job(&s, &job, 60);
    let out = String::from_utf8_lossy(&seen.stdout).into_owned();
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    for rank in 0..2 {
        let me = lines
            .iter()
            .find(|v| v["rank"] == rank)
            .unwrap_or_else(|| panic!("no line of rank {rank} in {out:?}"));
        assert_eq!(me["identity"], "client", "{me}");
        assert_eq!(me["nspace"], job.as_str(), "{me}");
        let listed = me["namespaces"].as_array().expect("namespaces");
        assert!(listed.iter().any(|n| n == job.as_str()), "{me}");
    }
    let end = seen.job_end(&job).expect("job-end event");
    assert_eq!(
        end.get(keys::JOB_TERM_STATUS).and_then(Value::as_i64),
        Some(0)
    );
}

#[test]
fn command_runs_as_session_leader_and_sets_exit_status() {
    let tmp = support::unique_tmpdir("pdvm-cmd");
    let mut cmd = std::process::Command::new(support::cargo_bin("pdvm"));
    support::scrub_pmix_env(&mut cmd);
    cmd.args(["--nodes", "2", "--tmpdir"]).arg(tmp.path()).args([
        "--",
        "/bin/sh",
        "-c",
        "echo ns=$PMIX_NAMESPACE rank=$PMIX_RANK; case :$PATH: in *:$(dirname $(command -v pdvm)):*) echo tools-on-path;; esac; exit 5",
    ]);
    let out = support::run_with_timeout(&mut cmd, 30);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(5), "{text}");
    let host = support::short_hostname();
    assert!(!text.contains("DVM ready"), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("DVM ready\n"),
        "DVM ready goes to stderr"
    );
    assert!(
        text.contains(&format!("ns=pdvm-{host}-")) && text.contains("@1 rank=0"),
        "{text}"
    );
    assert!(text.contains("tools-on-path"), "{text}");
    // torn down: no rendezvous directory left
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = Duration::from_secs(0);
}

/// A peer announcing wire `v61` is spoken to in v61: it can carry the
/// inheritance type (75) that v41 cannot, and pdvm records it.
#[test]
fn v61_peer_is_served_in_v61() {
    use pmix_tools::codec::AllocInheritance;
    use pmix_tools::conn::{Connection, Target};
    let dvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let mut t: Target = discover(&dvm.opts(), &ProcessEnv).unwrap();
    t.version = Some("6.1.0".into());
    let c = Connection::open(t, Duration::from_secs(10)).expect("v61 handshake");
    assert_eq!(c.wire(), pmix_tools::codec::WireVersion::V61);
    let s = pmix_tools::ops::Session::from_connection(c);
    assert!(query::namespaces(&s).unwrap().contains(&s.me().0));
    let r = alloc::allocate(
        &s,
        pmix_tools::proto::Directive::New,
        &[
            Info::new(keys::ALLOC_NUM_NODES, 1u64),
            Info::new(
                keys::ALLOC_INHERITANCE,
                Value::AllocInherit(AllocInheritance::CHILD),
            ),
        ],
    )
    .expect("granted");
    let rows = pmix_tools::ops::status_query::reservations(&s, r.alloc_id.as_deref()).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        rows[0].inherit,
        Some(pmix_tools::proto::Inheritance::Child),
        "{rows:?}"
    );
}

/// A session leader that cannot start is refused in the system's words: a
/// script without a `#!` line (exec says "Exec format error") gets the
/// hint, and one without the execute bit is said to be so, as a user of
/// `salloc ./script` needs to see why.
#[test]
fn a_leader_script_without_a_shebang_is_refused_with_the_reason() {
    let tmp = support::unique_tmpdir("pdvm-noexec");
    let script = tmp.path().join("job.sh");
    std::fs::write(&script, "echo never\n").expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut cmd = std::process::Command::new(support::cargo_bin("pdvm"));
    support::scrub_pmix_env(&mut cmd);
    cmd.args(["--nodes", "1", "--tmpdir"])
        .arg(tmp.path())
        .arg("--")
        .arg(&script);
    let out = support::run_with_timeout(&mut cmd, 30);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Exec format error"), "{err}");
    assert!(err.contains("needs a #! line"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("never"));

    // Without the execute bit it is not "not found": a shell would say
    // "Permission denied".
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    let out = support::run_with_timeout(&mut cmd, 30);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not executable (permission denied)"),
        "{err}"
    );
}

/// A job's script that runs pspawn itself: the outer pspawn follows the
/// jobs the application spawns (MPI_Comm_spawn), not those its own tools
/// launch. A detached job of the script's pspawn outlives the script
/// without holding the outer pspawn, and a failure the script handled is
/// not the outer pspawn's (both broke when pspawn began following spawn
/// trees: the outer waited for the detached job and took its status).
#[test]
fn a_scripts_own_pspawns_are_not_the_outer_pspawns_business() {
    let pdvm = crate::support::pdvm::Pdvm::start(&["--nodes", "1", "--slots", "4"]);
    let mut c = pdvm.tool("pspawn");
    c.args([
        "sh",
        "-c",
        "pspawn --detach sleep 60 >/dev/null && pspawn sh -c 'exit 3' || echo handled $?",
    ]);
    // Killed at 50 s (not 0) if it waits for the detached job.
    let o = crate::support::run_with_timeout(c.stdin(std::process::Stdio::null()), 50);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::show(&o));
    assert_eq!(crate::support::text(&o.stdout), "handled 3\n");
}
