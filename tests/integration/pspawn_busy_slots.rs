//! Issue 28, point 9: inside an allocation, pspawn waits for busy slots as
//! srun waits for its allocation's CPUs, saying so once on stderr, for as
//! long as they stay busy; `--immediate` refuses at once; a job the
//! allocation could never hold is refused, not waited for.

use std::process::Stdio;
use std::time::Duration;

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{show, text, tool, LineReader, Prte};

/// What pspawn says once when it starts waiting.
const WAITING: &str = "are busy (PMIX_ERR_JOB_FAILED_TO_MAP): waiting for them";

/// Inside `palloc -w HOST`: a gate job fills every slot of the node, then
/// `pspawn --immediate` is refused and a plain pspawn (and a `--detach`
/// one, which then runs) waits until the test
/// opens the gate, longer than the ten seconds pspawn used to give up after.
/// Only with `-v` (or a terminal) does it say that it waits: a waiting
/// pspawn run by a script leaves its stderr to the job's bytes (issue 40).
#[test]
fn pspawn_waits_for_busy_slots_as_long_as_they_stay_busy_on_prrte_master() {
    let dvm = Prte::start_master();
    let dir = support::unique_tmpdir("busy");
    let d = dir.path().display().to_string();
    let script = format!(
        "n=$(pwatch --status --what nodes | awk 'NR==2{{print $2}}')
pspawn -n $n sh -c 'touch {d}/started.$PMIX_RANK; while [ ! -e {d}/gate ]; do sleep 0.2; done' &
while [ $(ls {d} | grep -c started) -lt $n ]; do sleep 0.2; done
pspawn --immediate echo immediate; echo immediate=$?
(pspawn echo quiet 2>{d}/quiet.err; echo quiet=$?) &
(pspawn --detach sh -c 'echo ran > {d}/detached.out' >/dev/null; echo detached=$?) &
pspawn -v echo second; echo second=$?
wait
echo quiet_stderr=$(wc -c < {d}/quiet.err)"
    );
    let mut cmd = tool(&dvm, "palloc");
    cmd.args(["-w", &support::short_hostname(), "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start palloc");
    let err = LineReader::new(child.stderr.take().expect("stderr"));
    let mut said = String::new();
    while !said.contains(WAITING) {
        match err.next_line(Duration::from_secs(60)) {
            Some(l) => said.push_str(&format!("{l}\n")),
            None => panic!("palloc ended before pspawn waited:\n{said}\n{}", dvm.logs()),
        }
    }
    // Longer than the old ten-second limit: still waiting (palloc runs on),
    // nothing more said.
    let waits = wait::holds_for(Duration::from_secs(11), || {
        matches!(child.try_wait(), Ok(None))
    });
    assert!(waits, "palloc ended while the slots were busy:\n{said}");
    std::fs::write(dir.path().join("gate"), "").expect("open the gate");
    let out = support::wait_output(child, Duration::from_secs(60));
    said.push_str(&err.rest(Duration::from_secs(10)));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{said}");
    assert!(
        stdout.contains("immediate=4"),
        "--immediate refused: {stdout}\n{said}"
    );
    assert!(!stdout.contains("immediate\n"), "{stdout}");
    assert!(stdout.contains("second\nsecond=0"), "{stdout}\n{said}");
    assert!(stdout.contains("quiet\n"), "{stdout}\n{said}");
    assert!(stdout.contains("quiet=0"), "{stdout}\n{said}");
    assert!(stdout.contains("quiet_stderr=0"), "{stdout}\n{said}");
    assert_eq!(said.matches(WAITING).count(), 1, "said once: {said}");
    // A detached job waits for the slots too, then runs (it was refused,
    // exit 4, at once).
    assert!(stdout.contains("detached=0"), "{stdout}\n{said}");
    let ran = wait::within(Duration::from_secs(30), || {
        std::fs::read_to_string(dir.path().join("detached.out")).is_ok_and(|t| t == "ran\n")
    });
    assert!(ran, "the detached job ran: {stdout}\n{said}");
}

/// A job larger than its allocation is refused (exit 4) without waiting.
#[test]
fn a_job_larger_than_its_allocation_is_refused_not_waited_for_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let mut c = pdvm.tool("palloc");
    c.args(["-N", "1", "--", "pspawn", "-n", "5", "true"]);
    let o = support::run_with_timeout(c.stdin(Stdio::null()), 60);
    assert_eq!(o.status.code(), Some(4), "{}", show(&o));
    assert!(!text(&o.stderr).contains(WAITING), "{}", show(&o));
}
