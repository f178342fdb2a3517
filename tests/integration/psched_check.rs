//! `psched --check` (issue 46, point 3): an administrator's look at a setup
//! before starting psched. Each case is a real setup: PRRTE master waiting
//! for a scheduler (all ok), the same DVM served already (a warning),
//! PRRTE 3.0.14 (no scheduler support: FAIL), no DVM and an unwritable
//! ledger folder (FAIL each), and psched's Slurm backend on a private
//! Slurm 22.05 (its version and partitions) and on a Slurm whose
//! controller is down (FAIL).

use std::process::{Command, Output, Stdio};

use crate::support::cluster::Cluster;
use crate::support::slurm::{slurm_in, Select, Version};
use crate::support::tool::ToolHost;
use crate::support::{cargo_bin, run_with_timeout, show, text, unique_tmpdir, Prte};

fn check(mut c: Command) -> Output {
    run_with_timeout(c.stdin(Stdio::null()), 60)
}

/// The findings whose first word is `verdict` and second `what`.
fn lines(o: &Output, verdict: &str, what: &str) -> Vec<String> {
    text(&o.stdout)
        .lines()
        .filter(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some(verdict) && w.next() == Some(what)
        })
        .map(String::from)
        .collect()
}

/// `psched --check` run in `c`'s namespace, naming `c`'s DVM and ledger.
fn check_on(c: &Cluster, extra: &[&str]) -> Command {
    let mut cmd = c.command(cargo_bin("psched"));
    cmd.arg("--check")
        .arg("--uri")
        .arg(format!("file:{}", c.uri_file().display()))
        .arg("--ledger")
        .arg(c.ledger_path())
        .args(extra);
    cmd
}

#[test]
fn a_dvm_waiting_for_a_scheduler_checks_out_and_a_served_one_warns() {
    let mut c = Cluster::start_for_scheduler(1, 2, &[]);
    let nodes = c.pool.join(",");
    let o = check(check_on(&c, &["--nodes", &nodes]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(lines(&o, "ok", "DVM").len(), 1, "{}", show(&o));
    assert_eq!(lines(&o, "ok", "ledger").len(), 1, "{}", show(&o));
    assert!(
        lines(&o, "ok", "nodes")[0].contains("2 node(s)"),
        "{}",
        show(&o)
    );
    assert!(!text(&o.stdout).contains("FAIL"), "{}", show(&o));
    c.start_psched(&[]);
    let o = check(check_on(&c, &["--nodes", &nodes]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let warn = lines(&o, "warn", "DVM");
    assert!(
        warn.len() == 1 && warn[0].contains("a scheduler already serves it"),
        "{}",
        show(&o)
    );
}

crate::prrte_3_test! {
    fn prrte_3_no_dvm_and_an_unwritable_ledger_each_fail_saying_what_to_do() {
        let prte = Prte::start();
        let d = unique_tmpdir("psched-check");
        let mut c = prte.tool_command(cargo_bin("psched"));
        c.args([
            "--check",
            "--nodes",
            "n1",
            "--pid",
            &prte.pid.to_string(),
            "--ledger",
        ])
        .arg(d.path().join("l.json"));
        let o = check(c);
        assert_eq!(o.status.code(), Some(1), "{}", show(&o));
        let fail = lines(&o, "FAIL", "DVM");
        assert!(
            fail.len() == 1 && fail[0].contains("takes no scheduler"),
            "{}",
            show(&o)
        );
        let mut c = Command::new(cargo_bin("psched"));
        c.args(["--check", "--nodes", "n1", "--uri"])
            .arg(format!("file:{}", d.path().join("no-such-uri").display()))
            .arg("--ledger")
            .arg(d.path().join("no-such-folder/l.json"));
        let o = check(c);
        assert_eq!(o.status.code(), Some(1), "{}", show(&o));
        assert!(
            lines(&o, "FAIL", "DVM")[0].contains("ras_pmix_system_scheduler"),
            "{}",
            show(&o)
        );
        assert!(
            lines(&o, "FAIL", "ledger")[0].contains("no-such-folder"),
            "{}",
            show(&o)
        );
    }
}

#[test]
fn the_slurm_backend_checks_slurms_controller_version_and_partitions() {
    let c = Cluster::start_for_scheduler(1, 2, &[]);
    let mut s = slurm_in(&c, Version::Debian22, Select::WholeNodes);
    let mut cmd = check_on(&c, &["--backend", "slurm"]);
    cmd.envs(s.env());
    let o = check(cmd);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    print!("{}", text(&o.stdout));
    let ok = lines(&o, "ok", "Slurm");
    assert!(
        ok.iter()
            .any(|l| l.contains("22.05") && l.contains("controller answers")),
        "{}",
        show(&o)
    );
    assert!(
        ok.iter()
            .any(|l| l.contains("partitions:") && l.contains("2 node(s)")),
        "{}",
        show(&o)
    );
    s.stop_controller();
    let mut cmd = check_on(&c, &["--backend", "slurm"]);
    cmd.envs(s.env());
    let o = check(cmd);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(
        lines(&o, "FAIL", "Slurm")[0].contains("scontrol ping"),
        "{}",
        show(&o)
    );
}

/// psched's log lines go through one place (`psched::diag`): with
/// `PSCHED_LOG_TIMES` each starts with the time; with a stderr that takes
/// nothing (`/dev/full`) psched still ends as it would, exit 1 (with
/// `eprintln!` it panicked: exit 101).
#[test]
fn psched_log_lines_carry_the_time_when_asked_and_a_full_stderr_is_no_panic() {
    let dir = unique_tmpdir("psched-log");
    let ledger = dir.path().join("ledger.json");
    let o = run_with_timeout(
        Command::new(cargo_bin("psched"))
            .args(["--release", "nosuch", "--ledger"])
            .arg(&ledger)
            .env("PSCHED_LOG_TIMES", "1"),
        30,
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let said = text(&o.stderr);
    let (time, rest) = said.split_once(' ').unwrap_or_default();
    assert!(
        time.parse::<f64>().is_ok_and(|t| t > 1.0e9)
            && rest.starts_with("psched: nosuch is not a grant"),
        "{said}"
    );
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut child = Command::new(cargo_bin("psched"))
        .args(["--release", "nosuch", "--ledger"])
        .arg(&ledger)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(full)
        .spawn()
        .expect("start psched");
    let status = crate::support::wait_exit(&mut child, std::time::Duration::from_secs(30));
    assert_eq!(status.code(), Some(1), "{status:?}");
}
