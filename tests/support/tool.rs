//! The one way a test runs one of our tools next to a DVM: [`tool`], for
//! any DVM (or server) that says how a program finds it ([`ToolHost`]).
//!
//! * [`ToolHost`] is implemented for [`Pdvm`] (its tmpdir as `TMPDIR`),
//!   [`Prte`] (its `TMPDIR` and PSEC mode), [`Cluster`] (inside its network
//!   namespace), [`Py422`] (as its job's process), and for a bare
//!   temporary directory ([`Tmpdir`]) or server URI ([`Uri`]).
//! * [`ToolCommand`] holds what some tests add to that command
//!   (`NO_COLOR=1`, `--tmpdir DIR`, a Slurm's configuration).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use crate::support::cluster::Cluster;
use crate::support::pdvm::Pdvm;
use crate::support::py::Py422;
use crate::support::slurm::Slurm;
use crate::support::{cargo_bin, scrub_pmix_env, user_path, Prte, PSEC};

/// A DVM (or server) a program can be pointed at.
pub trait ToolHost {
    /// A command for `program` that finds this DVM and no other: inherited
    /// PMIx/PRRTE variables removed and what leads to this one set.
    fn tool_command(&self, program: impl AsRef<OsStr>) -> Command;
}

/// A borrowed host is the host.
impl<T: ToolHost> ToolHost for &T {
    fn tool_command(&self, program: impl AsRef<OsStr>) -> Command {
        (**self).tool_command(program)
    }
}

/// One of our tools (`palloc`, `pspawn`, …) as a user runs it next to
/// `dvm`: [`ToolHost::tool_command`] for its built binary, with `PATH` =
/// [`user_path`] (our binaries first).
pub fn tool(dvm: &impl ToolHost, name: &str) -> Command {
    let mut cmd = dvm.tool_command(cargo_bin(name));
    cmd.env("PATH", user_path());
    cmd
}

/// Whatever DVM keeps its rendezvous files under this directory (none, for
/// an empty one), found through `TMPDIR`.
pub struct Tmpdir<'a>(pub &'a Path);

impl ToolHost for Tmpdir<'_> {
    fn tool_command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        scrub_pmix_env(&mut cmd);
        cmd.env("TMPDIR", self.0);
        cmd
    }
}

/// The server listening at this PMIx URI, named by `--uri URI` (the
/// program's first arguments); `TMPDIR` is left as inherited.
pub struct Uri<'a>(pub &'a str);

impl ToolHost for Uri<'_> {
    fn tool_command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        scrub_pmix_env(&mut cmd);
        cmd.arg("--uri").arg(self.0);
        cmd
    }
}

/// Found through its tmpdir (`TMPDIR`).
impl ToolHost for Pdvm {
    fn tool_command(&self, program: impl AsRef<OsStr>) -> Command {
        Tmpdir(self.tmpdir.path()).tool_command(program)
    }
}

/// [`Prte::env`] set (`TMPDIR` = [`Prte::tmpdir`]) and the PSEC mode the
/// peers use.
impl ToolHost for Prte {
    fn tool_command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        scrub_pmix_env(&mut cmd);
        cmd.envs(self.env()).env(PSEC.0, PSEC.1);
        cmd
    }
}

/// Run inside the cluster's network namespace with the head node's
/// `TMPDIR` ([`Cluster::command`]).
impl ToolHost for Cluster {
    fn tool_command(&self, program: impl AsRef<OsStr>) -> Command {
        self.command(program)
    }
}

/// Run as the server's job's process: the environment the server handed
/// its rank 0 ([`Py422::env`]).
impl ToolHost for Py422 {
    fn tool_command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        scrub_pmix_env(&mut cmd);
        cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        cmd
    }
}

/// What some tests add to a tool's command ([`tool`]), each consuming it
/// and giving it back (`tool(&dvm, "pwatch").no_color().args(…)`).
pub trait ToolCommand {
    /// `NO_COLOR=1`: plain output whatever the test inherited.
    fn no_color(self) -> Command;
    /// `--tmpdir DIR` as the next arguments (before the tool's others): the
    /// tool looks for its DVM under `DIR` only.
    fn tmpdir_arg(self, dir: impl AsRef<OsStr>) -> Command;
    /// As a user of this Slurm runs it: `SLURM_CONF` = [`Slurm::conf`], and
    /// its commands first on `PATH`, then [`user_path`] (so a script can ask
    /// `squeue`).
    fn on_slurm(self, slurm: &Slurm) -> Command;
}

impl ToolCommand for Command {
    fn no_color(mut self) -> Command {
        self.env("NO_COLOR", "1");
        self
    }

    fn tmpdir_arg(mut self, dir: impl AsRef<OsStr>) -> Command {
        self.arg("--tmpdir").arg(dir);
        self
    }

    fn on_slurm(mut self, slurm: &Slurm) -> Command {
        self.env("SLURM_CONF", &slurm.conf)
            .env("PATH", slurm.version.path_before(&user_path()));
        self
    }
}

/// A `pwatch` in events mode, read line by line, that has said it is
/// watching (so no event sent after [`watching`] returns is missed).
pub struct Watching {
    /// The running `pwatch`.
    pub child: std::process::Child,
    /// Its standard output: one line per event.
    pub events: crate::support::LineReader,
    /// Its standard error, after "watching for events".
    pub said: crate::support::LineReader,
}

/// Start `cmd` (a `pwatch` command, given `-v` here) with its output read
/// by line, and return once it says it is watching for events; panics with
/// what it said when it does not within 30 s.
pub fn watching(cmd: &mut Command) -> Watching {
    use std::process::Stdio;
    let mut child = cmd
        .arg("-v")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pwatch");
    let events = crate::support::LineReader::new(child.stdout.take().expect("stdout"));
    let said = crate::support::LineReader::new(child.stderr.take().expect("stderr"));
    said.until("watching for events", std::time::Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("pwatch never started watching: {e}"));
    Watching {
        child,
        events,
        said,
    }
}
