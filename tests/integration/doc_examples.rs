//! The docs cannot drift (issue 43): the README's walk-through and the pdvm
//! guide's examples run as written. The walk-through: every `$ ` command of
//! its console blocks, after the line that
//! starts pdvm, runs in one shell inside `pdvm --nodes 1 --scheduler-nodes
//! 4 --slots 2`, in a folder holding the files the walk-through shows; each
//! exits 0, and each output line shown without a `…` placeholder, a time
//! or a table is printed.

use std::process::{Command, Stdio};

use crate::support;
use crate::support::{show, text};

/// The walk-through's console blocks: the commands and the lines shown.
fn walkthrough() -> (Vec<String>, Vec<String>) {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let part = readme
        .split("## A first walk-through")
        .nth(1)
        .and_then(|r| r.split("\n## ").next())
        .expect("the walk-through section");
    let (mut cmds, mut shown) = (Vec::new(), Vec::new());
    let mut in_block = false;
    for line in part.lines() {
        if line.starts_with("```") {
            in_block = line.starts_with("```console");
            continue;
        }
        if !in_block {
            continue;
        }
        match line.strip_prefix("$ ") {
            Some(cmd) if cmd.starts_with("pdvm ") => {}
            Some(cmd) => cmds.push(cmd.to_string()),
            None => shown.push(line.to_string()),
        }
    }
    (cmds, shown)
}

/// A shown line the run must print as it is.
fn literal(line: &str) -> bool {
    let table = line.starts_with(' ') || line.starts_with('#');
    !line.contains('…') && !table && !line.contains("DVM ready") && !line.is_empty()
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let (cmds, shown) = walkthrough();
    assert!(cmds.len() >= 8, "commands found: {cmds:?}");
    let dir = support::unique_tmpdir("readme");
    let files = [
        ("step.sh", "#!/bin/sh\necho step on $PMIX_HOSTNAME\n"),
        ("task.sh", "#!/bin/sh\necho task $PMIX_ARRAY_TASK_ID\n"),
    ];
    for (name, body) in files {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("fixture");
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
    }
    // nightly.sh as the README shows it (its `cat` prints it).
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let nightly: String = readme
        .split("$ cat nightly.sh\n")
        .nth(1)
        .and_then(|r| r.split("\n$ ").next())
        .expect("nightly.sh in the README")
        .to_string();
    let p = dir.path().join("nightly.sh");
    std::fs::write(&p, format!("{nightly}\n")).expect("nightly.sh");
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut script = String::new();
    for (i, c) in cmds.iter().enumerate() {
        script.push_str(&format!("{c}\necho \"rc[{i}]=$?\"\n"));
    }
    // The batch job ends before pdvm does.
    script.push_str("for i in $(seq 200); do grep -q 'exited with status' palloc-nightly.out 2>/dev/null && break; sleep 0.1; done\n");
    let mut c = Command::new(support::cargo_bin("pdvm"));
    c.env("PATH", support::user_path())
        .current_dir(dir.path())
        .args([
            "--nodes",
            "1",
            "--scheduler-nodes",
            "4",
            "--slots",
            "2",
            "--tmpdir",
        ])
        .arg(dir.path())
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 120);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    for (i, c) in cmds.iter().enumerate() {
        assert!(
            all.contains(&format!("rc[{i}]=0")),
            "`{c}` failed: {}",
            show(&o)
        );
    }
    for line in shown.iter().filter(|l| literal(l)) {
        assert!(
            all.contains(line.as_str()),
            "README shows {line:?}: {}",
            show(&o)
        );
    }
    for i in 1..=100 {
        let f = std::fs::read_dir(dir.path())
            .expect("folder")
            .flatten()
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(&format!("_{i}.txt"))
            });
        assert!(f, "task {i}'s output file: {}", show(&o));
    }
}

/// The console blocks of the pdvm guide (docs/pdvm.md: MPI programs built
/// with the wheel's `mpicc`, on two simulated nodes) run as written, from
/// the repository's root, and print every line shown but `DVM ready`.
#[test]
fn the_pdvm_guides_examples_run_as_written() {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/pdvm.md"))
        .expect("docs/pdvm.md");
    let mut blocks: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut in_block = false;
    for line in guide.lines().map(str::trim) {
        if line.starts_with("```") {
            in_block = line.starts_with("```console");
            if in_block {
                blocks.push((Vec::new(), Vec::new()));
            }
            continue;
        }
        if let (true, Some((cmds, shown))) = (in_block, blocks.last_mut()) {
            match line.strip_prefix("$ ") {
                Some(c) => cmds.push(c.to_string()),
                None => shown.push(line.to_string()),
            }
        }
    }
    assert!(blocks.len() >= 2, "console blocks found: {blocks:?}");
    let dir = support::unique_tmpdir("pdvm-guide");
    let venv_bin = support::peers_dir().join("venv/bin");
    for (cmds, shown) in &blocks {
        let script = cmds
            .iter()
            .map(|c| c.replace(" -o ", &format!(" -o {}/", dir.path().display())))
            .map(|c| c.replace("./", &format!("{}/", dir.path().display())))
            .collect::<Vec<_>>()
            .join(" && ");
        let mut c = Command::new("sh");
        crate::support::mpi::mpi_env(&mut c);
        c.env(
            "PATH",
            format!("{}:{}", venv_bin.display(), support::user_path()),
        )
        .env("TMPDIR", dir.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-c", &script])
        .stdin(Stdio::null());
        let o = support::run_with_timeout(&mut c, 180);
        assert_eq!(o.status.code(), Some(0), "`{script}`: {}", show(&o));
        let out = text(&o.stdout);
        for line in shown.iter().filter(|l| literal(l)) {
            assert!(
                out.contains(line.as_str()),
                "docs/pdvm.md shows {line:?}: {}",
                show(&o)
            );
        }
    }
}
