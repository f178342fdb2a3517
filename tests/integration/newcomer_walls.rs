//! Walls a newcomer hit (issue 43, point 4), each as a script would meet
//! it, on pdvm: a batch script that cannot start is refused before
//! anything is queued; two batch jobs of one name in one folder each get
//! their own id and log; a job the caller started inside an allocation is
//! cancelled by `prelease NSPACE`; `-o o_%A_%a.txt` names an array's files
//! as sbatch does; `--stdin-tasks --json` output records carry the task.

use std::process::{Command, Stdio};

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::{show, text, ToolHost};

/// `script` run by sh in a fresh folder next to `pdvm`; its output and the folder.
fn sh(pdvm: &Pdvm, script: &str) -> (std::process::Output, support::TempDir) {
    let dir = support::unique_tmpdir("walls");
    let mut c: Command = pdvm.tool_command("sh");
    c.env("PATH", support::user_path())
        .current_dir(dir.path())
        .args(["-c", script])
        .stdin(Stdio::null());
    (support::run_with_timeout(&mut c, 120), dir)
}

fn pdvm() -> Pdvm {
    Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "2"])
}

#[test]
fn a_batch_script_that_cannot_start_is_refused_before_anything_is_queued() {
    let pdvm = pdvm();
    let (o, dir) = sh(
        &pdvm,
        "printf 'echo hi\\n' > noexec.sh
palloc --no-wait -N 1 -- ./missing.sh; echo missing=$?
palloc --no-wait -N 1 -- ./noexec.sh; echo noexec=$?
ls",
    );
    let out = text(&o.stdout);
    assert!(out.contains("missing=127"), "{}", show(&o));
    assert!(out.contains("noexec=126"), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("cannot run `./missing.sh`"),
        "{}",
        show(&o)
    );
    assert!(
        !out.contains("palloc-"),
        "no log, nothing submitted: {}",
        show(&o)
    );
    drop(dir);
}

#[test]
fn two_batch_jobs_of_one_name_get_their_own_ids_and_logs() {
    let pdvm = pdvm();
    let (o, dir) = sh(
        &pdvm,
        "printf '#!/bin/sh\\necho run $1\\n' > job.sh; chmod +x job.sh
a=$(palloc --no-wait -J nightly -N 1 -- ./job.sh one)
b=$(palloc --no-wait -J nightly -N 1 -- ./job.sh two)
echo ids=$a,$b
for i in $(seq 200); do
  grep -q 'exited with status' palloc-$a.out 2>/dev/null && grep -q 'exited with status' palloc-$b.out 2>/dev/null && break
  sleep 0.1
done
grep '^run' palloc-$a.out; grep '^run' palloc-$b.out",
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.contains("ids=nightly,nightly.2"), "{}", show(&o));
    assert!(
        out.contains("run one\nrun two"),
        "each log its own job's: {}",
        show(&o)
    );
    assert!(
        text(&o.stderr).contains("this job is nightly.2"),
        "{}",
        show(&o)
    );
    drop(dir);
}

#[test]
fn prelease_of_a_job_started_inside_an_allocation_cancels_it() {
    let pdvm = pdvm();
    let (o, _dir) = sh(
        &pdvm,
        r#"palloc -N 1 -- sh -c 'pspawn --detach sleep 60 > ns; ns=$(cat ns); prelease $ns; echo rc=$?
for i in $(seq 100); do pwatch --status --what namespaces | grep -q "^ *$ns .*running" || break; sleep 0.1; done
echo still_running=$(pwatch --status --what namespaces | grep -c "^ *$ns .*running")'"#,
    );
    let out = text(&o.stdout);
    assert!(out.contains("rc=0"), "{}", show(&o));
    assert!(out.contains("still_running=0"), "{}", show(&o));
    assert!(text(&o.stderr).contains("cancelled job"), "{}", show(&o));
}

#[test]
fn an_arrays_files_take_percent_a_capital_and_stdin_task_records_their_index() {
    let pdvm = pdvm();
    let (o, dir) = sh(
        &pdvm,
        "pspawn --array 1-3 -o 'o_%A_%a.txt' sh -c 'echo task $PMIX_ARRAY_TASK_ID'; echo rc=$?
ls o_* | sed 's/_[^_]*_/_ID_/'
printf '{\"id\":\"a\",\"argv\":[\"echo\",\"hi\"]}\\n' | pspawn --stdin-tasks 2 --json",
    );
    let out = text(&o.stdout);
    assert!(out.contains("rc=0"), "{}", show(&o));
    assert!(
        out.contains("o_ID_1.txt\no_ID_2.txt\no_ID_3.txt"),
        "{}",
        show(&o)
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("o_"))
        .collect();
    let ids: std::collections::HashSet<&str> =
        names.iter().filter_map(|n| n.split('_').nth(1)).collect();
    assert_eq!(ids.len(), 1, "one array id in every name: {names:?}");
    let rec = out
        .lines()
        .find(|l| l.contains("\"type\":\"output\""))
        .unwrap_or_else(|| panic!("an output record: {}", show(&o)));
    assert!(rec.contains("\"index\":1"), "{rec}");
}

/// A batch script carries its own options: `#SBATCH` lines of a script
/// brought from Slurm (the ones that mean the same here; the others are
/// named in a warning) and `#PALLOC` lines, read before the first
/// command; the command line wins, as with sbatch.
#[test]
fn a_batch_script_carries_its_options_and_the_command_line_wins() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "3"]);
    let (o, _dir) = sh(
        &pdvm,
        r#"cat > job.sh <<'EOS'
#!/bin/sh
#SBATCH -N 2 -t 30 --job-name=nightly
#SBATCH --mail-user=me@example.org -o night.%j.log
# a comment between directives
#PALLOC --inherit none
echo in $PMIX_ALLOC_ID
#SBATCH -N 3
EOS
chmod +x job.sh
palloc --no-wait -t 10 -- ./job.sh
for i in $(seq 200); do grep -q 'exited with status' night.nightly.log 2>/dev/null && break; sleep 0.1; done
cat night.nightly.log"#,
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("nightly\n"),
        "the -J of the script: {}",
        show(&o)
    );
    assert!(
        out.contains(": 2 nodes "),
        "-N 2, not the -N 3 after the command: {}",
        show(&o)
    );
    assert!(
        out.contains("time limit 10m 00s"),
        "the command line's -t: {}",
        show(&o)
    );
    assert!(
        out.contains("inherit none"),
        "#PALLOC --inherit none: {}",
        show(&o)
    );
    assert!(out.contains("in alloc."), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("#SBATCH --mail-user=me@example.org: not an option palloc takes"),
        "{}",
        show(&o)
    );
}

/// A batch job waiting for its allocation is in `pwatch --status`'s batch
/// table as queued (it was missing until it started), and gone once its
/// request is cancelled.
#[test]
fn a_queued_batch_job_is_listed_until_it_is_cancelled() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let (o, _dir) = sh(
        &pdvm,
        r#"printf '#!/bin/sh\necho ran\n' > job.sh; chmod +x job.sh
palloc --hold -N 1 > /dev/null 2>&1 & H=$!
for i in $(seq 100); do pwatch --status --what reservations | grep -q active && break; sleep 0.1; done
palloc --no-wait -N 1 -J later -- ./job.sh > /dev/null
for i in $(seq 100); do pwatch --status | grep -q '^ *later .*queued' && break; sleep 0.1; done
pwatch --status --json | grep -o '"batch_jobs":\[[^]]*\]'
prelease --cancel later >&2 2>&1; echo "cancel=$?" >&2
echo after; pwatch --status --json | grep -o '"batch_jobs":\[[^]]*\]'
kill $H"#,
    );
    let out = text(&o.stdout);
    let (before, after) = out
        .split_once("after")
        .unwrap_or_else(|| panic!("{}", show(&o)));
    assert!(before.contains("\"request_id\":\"later\""), "{}", show(&o));
    assert!(before.contains("\"state\":\"queued\""), "{}", show(&o));
    assert!(after.contains("\"batch_jobs\":[]"), "{}", show(&o));
}

/// `palloc --json` says in a record that its request waits (it printed
/// nothing until the grant), then the grant.
#[test]
fn palloc_json_says_a_request_is_queued() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let (o, _dir) = sh(
        &pdvm,
        r#"palloc --hold -N 1 -J first > /dev/null 2>&1 & H=$!
for i in $(seq 100); do pwatch --status --what reservations | grep -q active && break; sleep 0.1; done
palloc --json -N 1 -J second -- true > second.json 2>/dev/null & S=$!
for i in $(seq 100); do grep -q queued second.json && break; sleep 0.1; done
kill $H; wait $S; cat second.json"#,
    );
    let out = text(&o.stdout);
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        r#"{"type":"request","request_id":"second","state":"queued"}"#,
        "{}",
        show(&o)
    );
    assert!(
        out.contains(r#""type":"allocation""#),
        "granted after: {}",
        show(&o)
    );
}

/// A shell whose XDG_RUNTIME_DIR differs from the holding palloc's finds no
/// holder and reaches the DVM as a tool that owns nothing: the refusal
/// says so and what to do (it read as a plain permission refusal).
#[test]
fn a_shell_that_cannot_see_the_holder_is_told_why_it_was_refused() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let (o, _dir) = sh(
        &pdvm,
        r#"mkdir -m 700 a b
XDG_RUNTIME_DIR=$PWD/a palloc --hold -N 1 -J held > /dev/null 2>&1 & H=$!
for i in $(seq 100); do pwatch --status --what reservations | grep -q active && break; sleep 0.1; done
id=$(pwatch --status --what reservations | awk '/held/{print $1}')
XDG_RUNTIME_DIR=$PWD/b pspawn --target $id true; echo spawn=$?
XDG_RUNTIME_DIR=$PWD/b prelease $id; echo release=$?
XDG_RUNTIME_DIR=$PWD/a pspawn --target $id echo through-the-holder
kill $H"#,
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(
        out.contains("spawn=6") && out.contains("release=6"),
        "{}",
        show(&o)
    );
    assert_eq!(
        err.matches("No palloc holding alloc.").count(),
        2,
        "{}",
        show(&o)
    );
    assert!(err.contains("set XDG_RUNTIME_DIR as there"), "{}", show(&o));
    assert!(out.contains("through-the-holder"), "{}", show(&o));
}

/// A batch job whose log's filesystem fills up: the job's record says how
/// many bytes of its output were lost (its log held 64 KB of 1 MB and
/// nothing said so), and the detached palloc lives on to record how the
/// script ended. Run in a private mount namespace over a 64 KiB tmpfs.
#[test]
fn a_batch_log_on_a_full_filesystem_says_what_was_lost() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let (o, _dir) = sh(
        &pdvm,
        r#"printf '#!/bin/sh\nhead -c 1000000 /dev/zero | tr "\\000" x\necho done\n' > big.sh; chmod +x big.sh
mkdir small
unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs small && cd small &&
  palloc --no-wait -J big -N 1 -- ../big.sh > /dev/null &&
  for i in $(seq 100); do pwatch --status --all --json | grep -q "\"state\":\"exited\"" && break; sleep 0.1; done'
pwatch --status --all --json"#,
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value =
        serde_json::from_str(text(&o.stdout).lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    let job = &v["batch_jobs"][0];
    assert_eq!(job["request_id"], "big", "{v}");
    assert_eq!(job["state"], "exited", "the detached palloc lived on: {v}");
    assert_eq!(job["exit_code"], 0, "{v}");
    let lost = job["output_lost_bytes"].as_u64().unwrap_or(0);
    assert!(lost > 900_000 && lost <= 1_000_005, "{v}");
}
