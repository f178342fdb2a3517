//! pdvm's own life: `--daemonize`, `--terminate`, `--report-uri`, and jobs
//! ended by job control or by tearing the DVM down.

use crate::support;

use std::time::{Duration, Instant};

use pmix_tools::codec::Value;
use pmix_tools::ops::{control, events};
use pmix_tools::proto::keys;
use pmix_tools::proto::status::Status;

use crate::support::pdvm::{app, follow_job, Pdvm};
use crate::support::wait;
use pmix_tools::ops::spawn;

fn alive(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
}

#[test]
fn daemonize_then_terminate() {
    let tmp = support::unique_tmpdir("pdvm-daemon");
    let report = tmp.path().join("uri.txt");
    let pdvm = support::cargo_bin("pdvm");
    let mut cmd = std::process::Command::new(&pdvm);
    support::scrub_pmix_env(&mut cmd);
    cmd.args(["--nodes", "1", "--daemonize", "--tmpdir"])
        .arg(tmp.path())
        .arg("--report-uri")
        .arg(&report);
    let out = support::run_with_timeout(&mut cmd, 20);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "DVM ready\n");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "stdout stays clean"
    );
    let uri = std::fs::read_to_string(&report).expect("report-uri file");
    assert!(
        uri.lines().next().unwrap().contains(";tcp4://127.0.0.1:"),
        "{uri}"
    );
    assert_eq!(
        uri.lines().nth(1),
        Some(pmix_tools::server::listener::ANNOUNCED_VERSION)
    );
    let pid: u32 = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_prefix("pdvm.")?
                .parse()
                .ok()
        })
        .next()
        .expect("rendezvous dir of the daemon");
    assert!(alive(pid));

    let mut term = std::process::Command::new(&pdvm);
    term.args(["--terminate", "--tmpdir"]).arg(tmp.path());
    let out = support::run_with_timeout(&mut term, 20);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        wait::within(Duration::from_secs(5), || !alive(pid)),
        "daemon {pid} survived --terminate"
    );
    assert!(!report.exists(), "report-uri file left behind");

    // Nothing left to terminate: exit 3.
    let mut again = std::process::Command::new(&pdvm);
    again.args(["--terminate", "--tmpdir"]).arg(tmp.path());
    assert_eq!(
        support::run_with_timeout(&mut again, 20).status.code(),
        Some(3)
    );
}

#[test]
fn job_control_terminates_a_job() {
    let dvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let s = dvm.session();
    events::register(&s, &[Status::EVENT_JOB_END], &[]).unwrap();
    let job = spawn::spawn(
        &s,
        &spawn::launcher_job_info(),
        &[app(&["/bin/sleep", "30"], 2)],
    )
    .unwrap();
    let t0 = Instant::now();
    control::terminate_job(&s, &job).unwrap();
    let seen = follow_job(&s, &job, 10);
    let end = seen.job_end(&job).expect("job-end after terminate");
    // killed by SIGTERM: 128 + 15
    assert_eq!(
        end.get(keys::JOB_TERM_STATUS).and_then(Value::as_i64),
        Some(143)
    );
    eprintln!("FIGURE terminate to job end: {:?}", t0.elapsed());
}

#[test]
fn sigterm_tears_down_running_jobs() {
    let dvm = Pdvm::start(&["--nodes", "1"]);
    let s = dvm.session();
    let marker = dvm.tmpdir.path().join("child.pid");
    let script = format!("echo $$ > {}; exec sleep 60", marker.display());
    spawn::spawn(&s, &[], &[app(&["/bin/sh", "-c", &script], 1)]).unwrap();
    // The file exists before the shell has written the pid into it: wait
    // for the pid itself.
    let mut written = String::new();
    let child: u32 = wait::value_within(Duration::from_secs(20), || {
        written = std::fs::read_to_string(&marker).unwrap_or_default();
        written.trim().parse().ok()
    })
    .unwrap_or_else(|| panic!("the job never wrote its pid: {written:?}"));
    assert!(alive(child));
    let st = dvm.stop();
    assert!(st.success(), "{st}");
    assert!(!alive(child), "job process {child} survived the DVM");
}

/// pdvm's stderr lines go through one place (`server::diag`, the binary's
/// and the server's): with `PDVM_LOG_TIMES` each starts with the time;
/// with a stderr that takes nothing (`/dev/full`) pdvm still ends as it
/// would, exit 3 (with `eprintln!` it panicked: exit 101).
#[test]
fn pdvm_log_lines_carry_the_time_when_asked_and_a_full_stderr_is_no_panic() {
    use std::process::{Command, Stdio};
    let tmp = support::unique_tmpdir("pdvm-log");
    let mut c = Command::new(support::cargo_bin("pdvm"));
    c.args(["--terminate", "--tmpdir"])
        .arg(tmp.path())
        .env("PDVM_LOG_TIMES", "1");
    let o = support::run_with_timeout(&mut c, 30);
    assert_eq!(o.status.code(), Some(3), "{}", support::show(&o));
    let said = support::text(&o.stderr);
    let (time, rest) = said.split_once(' ').unwrap_or_default();
    assert!(
        time.parse::<f64>().is_ok_and(|t| t > 1.0e9)
            && rest.starts_with("pdvm: no running pdvm found"),
        "{said}"
    );
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut child = Command::new(support::cargo_bin("pdvm"))
        .args(["--terminate", "--tmpdir"])
        .arg(tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(full)
        .spawn()
        .expect("start pdvm");
    let status = support::wait_exit(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(3), "{status:?}");
}
