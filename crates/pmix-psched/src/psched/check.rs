//! `psched --check`: what an administrator needs to know before starting
//! psched, or when it does not serve: whether the DVM is found and can take
//! a scheduler, whether another psched serves it already, whether the
//! ledger can be kept, and, with `--backend slurm`, whether Slurm's
//! commands are there and its controller answers. Each finding is a
//! [`Finding`]; psched's front end prints them and exits non-zero when one
//! is a [`Verdict::Fail`].

use std::path::Path;

use crate::conn::discover::{self, ConnectOptions, ProcessEnv};
use crate::conn::{sched_contact, Connection};

use super::{BackendKind, Config};

/// How a finding bears on starting psched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// As it should be.
    Ok,
    /// psched runs, but not as one would want (said why).
    Warn,
    /// psched cannot serve until this is fixed.
    Fail,
}

impl Verdict {
    /// The word printed in front of the finding.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One thing checked and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What was checked (`DVM`, `ledger`, `Slurm`, …).
    pub what: &'static str,
    /// How it bears on psched.
    pub verdict: Verdict,
    /// What was found, and for a failure what to do.
    pub said: String,
}

fn finding(what: &'static str, verdict: Verdict, said: String) -> Finding {
    Finding {
        what,
        verdict,
        said,
    }
}

/// Every check for `cfg`, in the order a setup is built: the DVM, the
/// ledger, the nodes' source, the contact file's folder.
pub fn run(cfg: &Config) -> Vec<Finding> {
    let mut v = dvm(&cfg.connect);
    v.push(ledger(&cfg.ledger));
    match cfg.backend {
        BackendKind::Pool => v.push(pool(cfg)),
        BackendKind::Slurm => v.extend(slurm()),
    }
    v.push(contact_dir());
    v
}

/// The oldest server PMIx major version whose DVM takes a scheduler
/// (PRRTE master's ras/pmix runs on OpenPMIx 6.1 and later).
const SCHEDULER_PMIX_MAJOR: u32 = 6;

/// The DVM psched would attach to: found, recent enough, not served yet.
fn dvm(connect: &ConnectOptions) -> Vec<Finding> {
    let opts = ConnectOptions {
        force_tool: true,
        ..connect.clone()
    };
    let found = discover::discover(&opts, &ProcessEnv)
        .and_then(|t| Connection::open(t, std::time::Duration::from_secs(10)));
    let conn = match found {
        Ok(c) => c,
        Err(e) => {
            return vec![finding(
                "DVM",
                Verdict::Fail,
                format!(
                    "{}; start PRRTE master with a scheduler slot (`prte --prtemca \
ras_pmix_system_scheduler 1 --report-uri FILE`) and name it with --uri file:FILE or --pid PID",
                    e.context
                ),
            )]
        }
    };
    let nspace = conn.server().0.to_string();
    let target = conn.target();
    let version = target.version.clone().unwrap_or_else(|| "unknown".into());
    let mut v = vec![finding(
        "DVM",
        Verdict::Ok,
        format!(
            "{nspace} at {} (PMIx {version}), found by {}",
            target.uri.address, target.found_by
        ),
    )];
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok());
    if major.is_some_and(|m| m < SCHEDULER_PMIX_MAJOR) {
        v.push(finding(
            "DVM",
            Verdict::Fail,
            format!(
                "PMIx {version} takes no scheduler: psched attaches to PRRTE master (OpenPMIx \
{SCHEDULER_PMIX_MAJOR}.1 or later) started with `--prtemca ras_pmix_system_scheduler 1`"
            ),
        ));
    }
    if let Some(p) = sched_contact::find(&nspace, connect, &ProcessEnv) {
        v.push(finding(
            "DVM",
            Verdict::Warn,
            format!(
                "a scheduler already serves it (its contact file {}): stop that psched first, \
or this one waits for the DVM's scheduler slot",
                p.display()
            ),
        ));
    }
    v
}

/// The ledger can be written where it is named, and read if it is there.
fn ledger(path: &Path) -> Finding {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if let Err(e) = writable(&dir) {
        return finding(
            "ledger",
            Verdict::Fail,
            format!(
                "cannot write in {} ({e}): psched keeps its grants there across restarts; \
create the folder for psched's user or name another with --ledger",
                dir.display()
            ),
        );
    }
    if !path.exists() {
        return finding(
            "ledger",
            Verdict::Ok,
            format!("{} (new: nothing held yet)", path.display()),
        );
    }
    match super::ledger::Ledger::load(path) {
        Ok(l) => finding(
            "ledger",
            Verdict::Ok,
            format!(
                "{}: {} grant(s), {} request(s) pending",
                path.display(),
                l.grants.len(),
                l.pending.len()
            ),
        ),
        Err(e) => finding(
            "ledger",
            Verdict::Fail,
            format!("{}: {}", path.display(), e.context),
        ),
    }
}

/// The pool backend's nodes.
fn pool(cfg: &Config) -> Finding {
    let parts: Vec<&str> = cfg.partitions.iter().map(|p| p.name.as_str()).collect();
    finding(
        "nodes",
        Verdict::Ok,
        format!(
            "psched's own pool: {} node(s) of {} slot(s) each; partition(s) {}",
            cfg.nodes.len(),
            cfg.slots,
            parts.join(", ")
        ),
    )
}

/// The Slurm commands psched runs.
const SLURM_COMMANDS: [&str; 5] = ["salloc", "scontrol", "scancel", "squeue", "sinfo"];

/// Slurm's commands, its controller, its version and partitions.
fn slurm() -> Vec<Finding> {
    let missing: Vec<&str> = SLURM_COMMANDS
        .iter()
        .copied()
        .filter(|c| on_path(c).is_none())
        .collect();
    if !missing.is_empty() {
        return vec![finding(
            "Slurm",
            Verdict::Fail,
            format!(
                "not on PATH: {}; install Slurm's client commands where psched runs",
                missing.join(", ")
            ),
        )];
    }
    if let Some(conf) = std::env::var_os("SLURM_CONF") {
        if std::fs::metadata(&conf).is_err() {
            return vec![finding(
                "Slurm",
                Verdict::Fail,
                format!(
                    "SLURM_CONF names {}, which cannot be read",
                    Path::new(&conf).display()
                ),
            )];
        }
    }
    if !super::slurm::ctl::controller_up() {
        return vec![finding(
            "Slurm",
            Verdict::Fail,
            "the controller does not answer `scontrol ping`: start slurmctld, or point \
SLURM_CONF at the cluster's configuration"
                .into(),
        )];
    }
    let mut v = vec![finding(
        "Slurm",
        Verdict::Ok,
        format!("{}, its controller answers", slurm_version()),
    )];
    v.push(match super::slurm::ctl::partitions() {
        Ok(parts) if parts.is_empty() => finding(
            "Slurm",
            Verdict::Fail,
            "sinfo lists no partition: psched has nowhere to ask for nodes".into(),
        ),
        Ok(parts) => {
            let names: Vec<String> = parts
                .iter()
                .map(|p| format!("{} ({}, {} node(s))", p.name, p.state, p.nodes.len()))
                .collect();
            finding(
                "Slurm",
                Verdict::Ok,
                format!("partitions: {}", names.join(", ")),
            )
        }
        Err(e) => finding("Slurm", Verdict::Fail, format!("sinfo: {}", e.0)),
    });
    v
}

/// `squeue --version`'s words (`slurm 22.05.8`).
fn slurm_version() -> String {
    std::process::Command::new("squeue")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "Slurm (version unknown)".into())
}

/// Where `program` is on PATH.
fn on_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The folder psched writes its contact file in, for `pwatch --status`.
fn contact_dir() -> Finding {
    let dir = sched_contact::publish_dir(&ProcessEnv);
    match writable(&dir) {
        Ok(()) => finding(
            "contact",
            Verdict::Ok,
            format!(
                "the contact file for `pwatch --status` goes in {}",
                dir.display()
            ),
        ),
        Err(e) => finding(
            "contact",
            Verdict::Warn,
            format!(
                "cannot write in {} ({e}): `pwatch --status` will show only what the DVM keeps \
of psched's grants; set TMPDIR to a folder psched and its users share",
                dir.display()
            ),
        ),
    }
}

/// Whether a file can be created in `dir` (tried, then removed).
fn writable(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".psched-check.{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}
