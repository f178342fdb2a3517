//! Installing like site software (issue 43): `scripts/install.sh` into a
//! prefix puts every binary, man page and completion where man, the shells
//! and `module load` look, and `--uninstall` leaves nothing; `cargo deb`
//! builds a package with the same files under /usr.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{cargo_bin, run_with_timeout, show, text};

const BINARIES: [&str; 6] = ["palloc", "pspawn", "prelease", "pwatch", "pdvm", "psched"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn install_sh(args: &[&str]) -> std::process::Output {
    let bin_dir = cargo_bin("palloc")
        .parent()
        .expect("binaries' folder")
        .to_path_buf();
    let mut c = Command::new("bash");
    c.arg(repo().join("scripts/install.sh"))
        .args(args)
        .arg("--from")
        .arg(&bin_dir);
    run_with_timeout(&mut c, 120)
}

fn uninstall(prefix: &Path) -> std::process::Output {
    let mut c = Command::new("bash");
    c.arg(repo().join("scripts/install.sh"))
        .arg("--prefix")
        .arg(prefix)
        .arg("--uninstall");
    run_with_timeout(&mut c, 120)
}

/// Every entry left under `dir`.
fn left(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            out.push(e.path().display().to_string());
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// A login-like shell with Debian's Environment Modules loaded.
fn module_shell(script: &str) -> std::process::Output {
    let mut c = Command::new("bash");
    c.args([
        "-c",
        &format!("source /usr/share/modules/init/bash && {script}"),
    ]);
    run_with_timeout(&mut c, 60)
}

#[test]
fn install_sh_puts_everything_where_man_shells_and_modules_look_and_uninstall_leaves_nothing() {
    let tmp = crate::support::unique_tmpdir("install");
    let prefix = tmp.path().join("opt/pmix-tools");
    let p = prefix.display().to_string();
    let o = install_sh(&["--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    for b in BINARIES {
        for f in [
            format!("bin/{b}"),
            format!("share/man/man1/{b}.1"),
            format!("share/bash-completion/completions/{b}"),
            format!("share/zsh/site-functions/_{b}"),
            format!("share/fish/vendor_completions.d/{b}.fish"),
        ] {
            assert!(prefix.join(&f).is_file(), "{f} installed: {}", show(&o));
        }
        // man finds and renders each page from the prefix.
        let mut man = Command::new("man");
        man.env("MANPATH", prefix.join("share/man"))
            .args(["-P", "cat", b]);
        let m = run_with_timeout(&mut man, 30);
        assert_eq!(m.status.code(), Some(0), "man {b}: {}", show(&m));
        assert!(text(&m.stdout).contains("NAME"), "man {b}: {}", show(&m));
    }
    // psched's service units, pointing at the prefix's psched.
    for unit in [
        "user/psched.service",
        "user/pmix-dvm.service",
        "system/psched@.service",
        "system/pmix-dvm@.service",
        "psched.env",
    ] {
        let f = prefix.join("share/pmix-tools/systemd").join(unit);
        let t = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{unit}: {e}"));
        if unit.starts_with("user/psched") || unit.starts_with("system/psched") {
            assert!(
                t.contains(&format!("ExecStart={p}/bin/psched ")),
                "{unit}: {t}"
            );
        }
    }
    let version = env!("CARGO_PKG_VERSION");
    assert!(prefix
        .join(format!("share/modulefiles/pmix-tools/{version}"))
        .is_file());
    // `module load` puts the prefix's palloc first on PATH and its pages on MANPATH.
    let o = module_shell(&format!(
        "module use {p}/share/modulefiles && module load pmix-tools && command -v palloc && \
         man -w pspawn && palloc --version"
    ));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.contains(&format!("{p}/bin/palloc")), "{}", show(&o));
    assert!(
        out.contains(&format!("{p}/share/man/man1/pspawn.1")),
        "{}",
        show(&o)
    );
    assert!(out.contains(version), "{}", show(&o));
    // Installing twice is refused; uninstall removes every file and folder made.
    let again = install_sh(&["--prefix", &p]);
    assert_ne!(again.status.code(), Some(0), "{}", show(&again));
    assert!(
        text(&again.stderr).contains("already installed"),
        "{}",
        show(&again)
    );
    let o = uninstall(&prefix);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(left(tmp.path()), Vec::<String>::new());
}

/// Folders the prefix had before (a site's /usr/local/bin) and their other
/// files stay at uninstall.
#[test]
fn uninstall_keeps_what_was_there_before() {
    let tmp = crate::support::unique_tmpdir("install-shared");
    std::fs::create_dir_all(tmp.path().join("bin")).expect("bin");
    std::fs::write(tmp.path().join("bin/other-tool"), "x").expect("other");
    let p = tmp.path().display().to_string();
    let o = install_sh(&["--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let o = uninstall(tmp.path());
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        left(tmp.path()),
        [format!("{p}/bin"), format!("{p}/bin/other-tool")]
    );
}

/// `cargo deb` packages the same files under /usr (built from the debug
/// binaries here, as the test command has them; a site builds release).
#[test]
fn cargo_deb_packages_the_binaries_pages_and_completions() {
    let tmp = crate::support::unique_tmpdir("deb");
    let mut c = Command::new("cargo");
    c.current_dir(repo())
        .args([
            "deb",
            "--no-build",
            "--no-strip",
            "--fast",
            "--profile",
            "dev",
            "--output",
        ])
        .arg(tmp.path());
    let o = run_with_timeout(&mut c, 300);
    assert_eq!(
        o.status.code(),
        Some(0),
        "cargo deb (scripts/install-peers.sh installs cargo-deb): {}",
        show(&o)
    );
    let deb = std::fs::read_dir(tmp.path())
        .expect("output folder")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .expect("a .deb");
    let mut c = Command::new("dpkg-deb");
    c.arg("-c").arg(&deb);
    let listing = text(&run_with_timeout(&mut c, 60).stdout);
    for b in BINARIES {
        for f in [
            format!("./usr/bin/{b}"),
            format!("./usr/share/man/man1/{b}.1"),
            format!("./usr/share/bash-completion/completions/{b}"),
            format!("./usr/share/zsh/vendor-completions/_{b}"),
            format!("./usr/share/fish/vendor_completions.d/{b}.fish"),
        ] {
            assert!(
                listing
                    .lines()
                    .any(|l| l.ends_with(&f) || l.contains(&format!("{f}.gz"))),
                "{f} in the package:\n{listing}"
            );
        }
    }
    for f in [
        "./usr/lib/systemd/user/psched.service",
        "./usr/lib/systemd/user/pmix-dvm.service",
        "./lib/systemd/system/psched@.service",
        "./lib/systemd/system/pmix-dvm@.service",
    ] {
        assert!(
            listing.lines().any(|l| l.ends_with(f)),
            "{f} in the package:\n{listing}"
        );
    }
    let mut c = Command::new("dpkg-deb");
    c.arg("-f")
        .arg(&deb)
        .args(["Package", "Version", "Depends"]);
    let fields = text(&run_with_timeout(&mut c, 60).stdout);
    assert!(fields.contains("Package: pmix-tools"), "{fields}");
    assert!(fields.contains(env!("CARGO_PKG_VERSION")), "{fields}");
    assert!(fields.contains("libc6"), "{fields}");
    // The packaged palloc runs.
    let x = tmp.path().join("x");
    let mut c = Command::new("dpkg-deb");
    c.arg("-x").arg(&deb).arg(&x);
    assert_eq!(run_with_timeout(&mut c, 60).status.code(), Some(0));
    let mut c = Command::new(x.join("usr/bin/palloc"));
    c.arg("--version");
    let o = run_with_timeout(&mut c, 30);
    assert!(
        text(&o.stdout).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        show(&o)
    );
}
