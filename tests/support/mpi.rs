//! Real programs built by a test from the C sources in `tests/mpi/`: MPI
//! programs with the wheel's `mpicc` (Open MPI 5.0.11), plain PMIx clients
//! with Debian's libpmix 4.2.2 (`cc … -lpmix`). A compiler or library that
//! is missing panics, so such a test FAILS instead of skipping.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{run_with_timeout, show, venv_dir};

/// A C source of `tests/mpi/`.
fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mpi")
        .join(name)
}

/// Set the variables the wheel's Open MPI reads to find its own files.
pub fn mpi_env(cmd: &mut Command) -> &mut Command {
    let venv = venv_dir();
    for var in ["OPAL_PREFIX", "PRTE_PREFIX", "PMIX_INSTALL_PREFIX"] {
        cmd.env(var, &venv);
    }
    cmd
}

/// Build `tests/mpi/<name>` with the wheel's `mpicc` into `dir`; the
/// program's path.
pub fn mpicc(name: &str, dir: &Path) -> PathBuf {
    let out = dir.join(name.trim_end_matches(".c"));
    let mut cc = Command::new(venv_dir().join("bin/mpicc"));
    mpi_env(&mut cc).arg("-o").arg(&out).arg(source(name));
    let o = run_with_timeout(&mut cc, 120);
    assert!(o.status.success(), "mpicc {name} failed: {}", show(&o));
    out
}

/// Build `tests/mpi/<name>` against Debian's libpmix 4.2.2 into `dir`; the
/// program's path.
pub fn cc_libpmix(name: &str, dir: &Path) -> PathBuf {
    let flags = run_with_timeout(
        Command::new("pkg-config").args(["--cflags", "--libs", "pmix"]),
        30,
    );
    assert!(
        flags.status.success(),
        "libpmix-dev (pkg-config pmix) not found: {}",
        show(&flags)
    );
    let flags = String::from_utf8_lossy(&flags.stdout).into_owned();
    let out = dir.join(name.trim_end_matches(".c"));
    let mut cc = Command::new("cc");
    cc.arg("-o").arg(&out).arg(source(name));
    cc.args(flags.split_whitespace());
    let o = run_with_timeout(&mut cc, 120);
    assert!(o.status.success(), "cc {name} -lpmix failed: {}", show(&o));
    out
}
