//! psched as a service (issue 46, point 3): the systemd units in
//! `dist/systemd/` (per user: `pmix-dvm.service` and `psched.service`; the
//! site form: `pmix-dvm@.service` and `psched@.service`, one instance per
//! user) pass `systemd-analyze verify` without one remark, restart on
//! failure, and psched's command line in them is one psched takes: run
//! with its specifiers filled in and `--check` added, it finds the ledger's
//! folder and the pool it was given (no DVM runs here: that finding fails,
//! as it should). `install.sh` installs them pointing at its own psched.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{cargo_bin, master_dir, run_with_timeout, show, text, unique_tmpdir};

const USER_UNITS: [&str; 2] = ["pmix-dvm.service", "psched.service"];
const SITE_UNITS: [&str; 2] = ["pmix-dvm@.service", "psched@.service"];

fn units() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dist/systemd")
}

/// `unit` with the commands pointing at this build's psched and PRRTE
/// master's prte, written into `dir` as `name`.
fn localized(unit: &Path, dir: &Path, name: &str) -> PathBuf {
    let prte = master_dir().join("prrte/bin/prte");
    let text = std::fs::read_to_string(unit).expect("unit file");
    let text = text
        .replace(
            "/usr/bin/psched",
            &cargo_bin("psched").display().to_string(),
        )
        .replace("ExecStart=prte ", &format!("ExecStart={} ", prte.display()));
    let out = dir.join(name);
    std::fs::write(&out, text).expect("write unit");
    out
}

/// `systemd-analyze [--user] verify` of `files` with psched's page on
/// MANPATH (the units name it as their documentation).
fn verify(dir: &Path, user: bool, files: &[PathBuf]) {
    let man = dir.join("man/man1");
    std::fs::create_dir_all(&man).unwrap();
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("man/psched.1"),
        man.join("psched.1"),
    )
    .unwrap();
    let runtime = dir.join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let mut c = Command::new("systemd-analyze");
    if user {
        c.arg("--user");
    }
    c.arg("verify")
        .args(files)
        .env("MANPATH", dir.join("man"))
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdin(Stdio::null());
    let o = run_with_timeout(&mut c, 120);
    assert_eq!(o.status.code(), Some(0), "{files:?}: {}", show(&o));
    assert_eq!(text(&o.stderr).trim(), "", "{files:?}: {}", show(&o));
}

#[test]
fn the_units_verify_and_restart_on_failure() {
    let d = unique_tmpdir("units");
    let user: Vec<PathBuf> = USER_UNITS
        .iter()
        .map(|u| localized(&units().join("user").join(u), d.path(), u))
        .collect();
    verify(d.path(), true, &user);
    // An instance per user: verified as the instance for root.
    let site: Vec<PathBuf> = SITE_UNITS
        .iter()
        .map(|u| {
            let instance = u.replace("@.", "@root.");
            localized(&units().join("system").join(u), d.path(), &instance)
        })
        .collect();
    verify(d.path(), false, &site);
    for u in user.iter().chain(&site) {
        let t = std::fs::read_to_string(u).unwrap();
        assert!(t.contains("\nRestart=on-failure\n"), "{}", u.display());
    }
}

/// The value of `key=` in `unit`'s text (the last one).
fn setting(unit: &str, key: &str) -> String {
    unit.lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {unit}"))
        .to_string()
}

#[test]
fn psched_takes_the_command_line_of_its_units() {
    for (unit, specifiers) in [
        ("user/psched.service", &[("%t", "rt"), ("%S", "state")][..]),
        (
            "system/psched@.service",
            &[
                ("/run/pmix-tools/%i", "rt"),
                ("/var/lib/pmix-tools/%i", "state"),
            ][..],
        ),
    ] {
        let d = unique_tmpdir("unit-cmd");
        let text_of = std::fs::read_to_string(units().join(unit)).unwrap();
        let mut line = setting(&text_of, "ExecStart");
        for (spec, sub) in specifiers {
            line = line.replace(spec, &d.path().join(sub).display().to_string());
        }
        // The state folder is the service's StateDirectory: systemd makes it.
        std::fs::create_dir_all(d.path().join("state/pmix-tools")).unwrap();
        std::fs::create_dir_all(d.path().join("state")).unwrap();
        let line = line.replace("$PSCHED_ARGS", "--nodes n[1-2] --slots 2");
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some("/usr/bin/psched"), "{unit}: {line}");
        let mut c = Command::new(cargo_bin("psched"));
        c.args(words)
            .arg("--check")
            .env("TMPDIR", d.path())
            .stdin(Stdio::null());
        let o = run_with_timeout(&mut c, 60);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{unit}: {}", show(&o));
        assert!(out.contains("FAIL  DVM"), "{unit}: {}", show(&o));
        assert!(
            out.lines().any(|l| l.starts_with("ok    ledger")),
            "{unit}: {}",
            show(&o)
        );
        assert!(
            out.contains("ok    nodes    psched's own pool: 2 node(s) of 2 slot(s)"),
            "{unit}: {}",
            show(&o)
        );
    }
}
