//! Issue 28, point 5: `pspawn -o/-e` open each file once and share it
//! between ranks and streams; nothing is lost. pspawn writes the files
//! while it follows the job (so the same holds on PRRTE master); with
//! --detach the processes append to files pspawn emptied once.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support;
use crate::support::pdvm::Pdvm;
use crate::support::{show, text, tool, Prte};

fn run(cmd: &mut Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 90)
}

/// Each rank prints `RANK:1` … `RANK:500`.
const FIVE_HUNDRED_EACH: &str = "seq 1 500 | sed \"s/^/$PMIX_RANK:/\"";

/// Each rank prints 200 lines on stdout and 200 on stderr, alternating.
const BOTH_STREAMS: &str =
    "i=1; while [ $i -le 200 ]; do echo out$PMIX_RANK.$i; echo err$PMIX_RANK.$i >&2; i=$((i+1)); done";

/// The only file in `dir` whose name starts with `prefix`.
fn only_file(dir: &Path, prefix: &str) -> String {
    let names: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    assert_eq!(names.len(), 1, "one {prefix}* file: {names:?}");
    std::fs::read_to_string(&names[0]).expect("read output file")
}

/// The lines of `got` that start with `prefix`, in order.
fn lines_of<'a>(got: &'a str, prefix: &str) -> Vec<&'a str> {
    got.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// Four ranks of 500 lines in one `job-%j.out`: 2000 whole lines, each
/// rank's in order.
fn assert_four_ranks_in_one_file(got: &str) {
    assert_eq!(got.lines().count(), 2000, "all 2000 lines kept");
    for rank in 0..4 {
        let want: Vec<String> = (1..=500).map(|i| format!("{rank}:{i}")).collect();
        assert_eq!(lines_of(got, &format!("{rank}:")), want, "rank {rank}");
    }
}

/// `-o f -e f`: both streams of one rank, each whole and in order.
fn assert_both_streams_kept(got: &str) {
    assert_eq!(got.lines().count(), 400, "{got}");
    for stream in ["out", "err"] {
        let want: Vec<String> = (1..=200).map(|i| format!("{stream}0.{i}")).collect();
        assert_eq!(lines_of(got, stream), want, "{stream}");
    }
}

#[test]
fn four_ranks_into_one_job_file_keep_all_2000_lines_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--slots", "2"]);
    let dir = support::unique_tmpdir("ofiles");
    let out = run(pdvm.tool("pspawn").current_dir(dir.path()).args([
        "-n",
        "4",
        "-o",
        "job-%j.out",
        "sh",
        "-c",
        FIVE_HUNDRED_EACH,
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_four_ranks_in_one_file(&only_file(dir.path(), "job-"));
}

#[test]
fn the_same_file_for_stdout_and_stderr_keeps_both_streams_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let dir = support::unique_tmpdir("ofiles");
    std::fs::write(dir.path().join("f"), "old content\n").expect("write");
    let out = run(pdvm.tool("pspawn").current_dir(dir.path()).args([
        "-o",
        "f",
        "-e",
        "./f",
        "sh",
        "-c",
        BOTH_STREAMS,
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_both_streams_kept(&only_file(dir.path(), "f"));
}

#[test]
fn per_rank_files_each_hold_exactly_their_ranks_lines_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--slots", "2"]);
    let dir = support::unique_tmpdir("ofiles");
    let out = run(pdvm.tool("pspawn").current_dir(dir.path()).args([
        "-n",
        "3",
        "-o",
        "r-%t.out",
        "-e",
        "r-%r.err",
        "sh",
        "-c",
        "printf 'a%s\\nb%s' $PMIX_RANK $PMIX_RANK; printf 'e%s\\n' $PMIX_RANK >&2",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for rank in 0..3 {
        let read = |n: String| std::fs::read_to_string(dir.path().join(n)).unwrap_or_default();
        // The last line has no newline: written as it came, byte for byte.
        assert_eq!(read(format!("r-{rank}.out")), format!("a{rank}\nb{rank}"));
        assert_eq!(read(format!("r-{rank}.err")), format!("e{rank}\n"));
    }
}

#[test]
fn detached_ranks_sharing_one_file_keep_every_byte_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "2", "--slots", "2"]);
    let dir = support::unique_tmpdir("ofiles");
    std::fs::write(dir.path().join("shared.out"), "old content\n").expect("write");
    let out = run(pdvm.tool("pspawn").current_dir(dir.path()).args([
        "--detach",
        "--parsable",
        "-n",
        "4",
        "-o",
        "shared.out",
        "sh",
        "-c",
        FIVE_HUNDRED_EACH,
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let ns = text(&out.stdout).trim().to_string();
    let waited = run(pdvm
        .tool("pwatch")
        .args(["--job", &ns, "--event", "job-end", "--count", "1"]));
    assert_eq!(waited.status.code(), Some(0), "{}", show(&waited));
    let got = only_file(dir.path(), "shared.out");
    // Each process appends its own buffers: every byte is there, emptied once.
    let want: usize = (0..4)
        .map(|r| (1..=500).map(|i| format!("{r}:{i}\n").len()).sum::<usize>())
        .sum();
    assert_eq!(got.len(), want, "{got}");
    assert!(!got.contains("old content"), "emptied before the job");
}

#[test]
fn shared_output_files_keep_every_line_on_prrte_master() {
    let dvm = Prte::start_master();
    let dir = support::unique_tmpdir("ofiles");
    let pspawn = |args: &[&str]| {
        let mut cmd = tool(&dvm, "pspawn");
        cmd.current_dir(dir.path()).args(args);
        run(&mut cmd)
    };
    let out = pspawn(&[
        "-n",
        "4",
        "--map-by",
        ":OVERSUBSCRIBE",
        "-o",
        "job-%j.out",
        "sh",
        "-c",
        FIVE_HUNDRED_EACH,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_four_ranks_in_one_file(&only_file(dir.path(), "job-"));

    let out = pspawn(&["-o", "f", "-e", "f", "sh", "-c", BOTH_STREAMS]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_both_streams_kept(&only_file(dir.path(), "f"));
}

#[test]
fn an_output_file_that_cannot_be_created_is_refused_before_the_job_runs_on_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let dir = support::unique_tmpdir("ofiles");
    let marker = dir.path().join("ran");
    let out = run(pdvm.tool("pspawn").current_dir(dir.path()).args([
        "-o",
        "no-such-dir/out-%t",
        "touch",
        &marker.to_string_lossy(),
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("nothing was launched"),
        "{}",
        show(&out)
    );
    assert!(!marker.exists(), "the job did not run");
}

/// `-o` in a directory others write to: another user's file there is
/// never emptied or written to, and a link is never followed (its target
/// keeps its bytes); both are refused before the job runs, as a new file
/// of ours is created and written.
#[test]
fn an_output_file_of_another_user_or_a_link_is_refused_not_emptied_on_pdvm() {
    use std::os::unix::fs::PermissionsExt;
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2"]);
    let dir = support::unique_tmpdir("ofiles-shared");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let theirs = dir.path().join("theirs.out");
    std::fs::write(&theirs, "their bytes\n").unwrap();
    let nobody = nix::unistd::User::from_name("nobody")
        .unwrap()
        .expect("user nobody");
    nix::unistd::chown(&theirs, Some(nobody.uid), None).unwrap();
    let target = dir.path().join("precious");
    std::fs::write(&target, "precious bytes\n").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("link.out")).unwrap();
    for name in ["theirs.out", "link.out"] {
        let out = run(pdvm
            .tool("pspawn")
            .current_dir(dir.path())
            .args(["-o", name, "echo", "job"]));
        assert_eq!(out.status.code(), Some(2), "{name}: {}", show(&out));
        assert!(text(&out.stderr).contains(name), "{}", show(&out));
    }
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "their bytes\n");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "precious bytes\n"
    );
    // Our own file is emptied and written, as srun -o does.
    let ours = dir.path().join("ours.out");
    std::fs::write(&ours, "old\n").unwrap();
    let out = run(pdvm
        .tool("pspawn")
        .current_dir(dir.path())
        .args(["-o", "ours.out", "echo", "job"]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(std::fs::read_to_string(&ours).unwrap(), "job\n");
}
