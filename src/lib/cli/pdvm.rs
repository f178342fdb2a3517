//! `pdvm`: the embedded reference DVM's flags.

use super::parse::{parse_count, parse_nonneg_count};
use clap::Parser;
use std::path::PathBuf;

/// `--job-history`'s default: the model's `dvm::JOB_HISTORY` (a test
/// holds them equal; `cli` does not import the model).
pub const JOB_HISTORY: &str = "1000";

const ABOUT: &str = "Run a throw-away local DVM implementing node reservations (spec 001)";

const LONG_ABOUT: &str = "\
Start a PMIx DVM on this machine with N simulated nodes of S slots each (the \
default session) and a simulated scheduler holding M further nodes, write \
rendezvous files as PRRTE does (so palloc, pspawn, prelease and pwatch find it \
with no flags), and print `DVM ready` on stderr (stdout is left to CMD). \
A tmpdir already served by a live pdvm is refused, naming its pid. When \
another user (or a symlink) holds pdvm.<pid>, pdvm uses pdvm.<pid>.1 (…) and \
says which path it passed over and who owns it.

A job's output is never dropped: while the tool that spawned it does not \
read, pdvm stops reading the job's pipes (the job waits). Each user's \
connections have a 256 MiB budget of bytes actually held (large requests or \
replies beyond it are refused PMIX_ERR_OUT_OF_RESOURCE); a connection that \
does not finish its handshake within 10 s, or holds part of a message and \
sends nothing more for 10 s, is closed. It keeps the last 1000 ended jobs \
(--job-history N) for `pwatch --status --all` and a late `pwatch --job`; an \
older job is forgotten (pwatch says the DVM has no record of it, `prelease` \
that no job of that name runs), so memory does not grow with the jobs run. \
A namespace is never reused: pdvm numbers its own, and a name a tool chose \
stays refused once it is gone.

With `-- CMD ARGS…` it runs CMD as a job of its own namespace — the session \
leader of the spec's workflows: every tool invoked from CMD acts for that \
namespace — with the tools on PATH, then exits with CMD's status and tears \
everything down. Run in the foreground of a terminal, CMD gets the terminal \
(its stdin, and the foreground process group), so `pdvm -- $SHELL` is an \
interactive shell with job control, as `flux start` gives; otherwise CMD's \
stdin is /dev/null. Without CMD it runs until SIGTERM or `pdvm --terminate`; \
--daemonize detaches.

--time-scale F makes simulated time run F times faster (allocation time limits, \
warnings, expiry), for tests. --pmix-compat behaves as a DVM whose PMIx lacks \
the five reservation attributes (§8.2.1.10): a non-default --inherit is refused \
with PMIX_ERR_NOT_SUPPORTED.";

const AFTER_HELP: &str = "\
EXIT STATUS:
  with CMD: CMD's status (128+N for signal N); otherwise 0 after a clean stop
  2 usage error   3 --terminate or --release found no DVM
  5 --release: no such allocation
  1 other error (e.g. cannot bind, or the tmpdir is already served by a live pdvm)

EXAMPLES:
  pdvm --nodes 4 --scheduler-nodes 8 -- ./workflow.sh
  pdvm --nodes 2 --daemonize --report-uri uri.txt && pspawn hostname
  pdvm --release alloc.3                 the scheduler takes alloc.3 back
  pdvm --terminate";

/// `pdvm` flags.
#[derive(Debug, Clone, Parser)]
#[command(name = "pdvm", version, args_override_self = true, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct PdvmArgs {
    /// Simulated nodes in the default session.
    #[arg(long, value_name = "N", value_parser = parse_count, default_value = "1")]
    pub nodes: u64,

    /// Slots per node.
    #[arg(long, value_name = "S", value_parser = parse_count, default_value = "1")]
    pub slots: u64,

    /// Further nodes the simulated scheduler can grant (0 allowed).
    #[arg(long, value_name = "M", value_parser = parse_nonneg_count, default_value = "0")]
    pub scheduler_nodes: u64,

    /// Directory for rendezvous files (default $TMPDIR).
    #[arg(long, value_name = "DIR")]
    pub tmpdir: Option<PathBuf>,

    /// Run simulated time this many times faster (a positive number).
    #[arg(long, value_name = "F", value_parser = parse_time_scale, default_value = "1")]
    pub time_scale: f64,

    /// Behave as a DVM whose PMIx lacks the reservation attributes (§8.2.1.10).
    #[arg(long)]
    pub pmix_compat: bool,

    /// Keep the last N ended jobs for `pwatch --status --all` and a late
    /// `pwatch --job` (0 allowed); older ones are forgotten, so pdvm's
    /// memory does not grow with the jobs it has run.
    #[arg(long, value_name = "N", value_parser = parse_nonneg_count, default_value = JOB_HISTORY)]
    pub job_history: u64,

    /// Detach and run in the background once ready.
    #[arg(long, conflicts_with = "command")]
    pub daemonize: bool,

    /// Stop the running pdvm found through the rendezvous files.
    #[arg(long, conflicts_with_all = ["daemonize", "command", "pmix_compat", "report_uri"])]
    pub terminate: bool,

    /// Release allocation ALLOC_ID as the simulated scheduler, whoever owns it
    /// (an administrator's `scancel`; the scheduler is an implicit owner of
    /// every reservation, spec §8.2.1.7): its nodes go back to the
    /// scheduler and its owner is told, as at an expiry.
    #[arg(long, value_name = "ALLOC_ID", value_parser = super::parse::parse_id,
          conflicts_with_all = ["daemonize", "command", "pmix_compat", "report_uri", "terminate"])]
    pub release: Option<String>,

    /// Write the server URI (and PMIx version) into FILE, like `prte --report-uri`.
    #[arg(long, value_name = "FILE")]
    pub report_uri: Option<PathBuf>,

    /// Print less (repeatable).
    #[arg(short = 'q', long = "quiet", action = clap::ArgAction::Count)]
    pub quiet: u8,

    /// Print more: requests and decisions on stderr (repeatable).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Command to run as the session leader job (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Parse `--time-scale`: a finite number greater than zero.
pub fn parse_time_scale(s: &str) -> Result<f64, String> {
    const FORMS: &str = "a number greater than zero such as 1, 10 or 0.5";
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("`{s}` is not a valid time scale: expected {FORMS}")),
    }
}

impl PdvmArgs {
    /// Checks spanning several flags; an error means exit 2.
    pub fn validate(&self) -> Result<(), String> {
        let total = self.nodes.checked_add(self.scheduler_nodes);
        match total {
            Some(t) if t <= super::parse::MAX_NODES as u64 => Ok(()),
            _ => Err(format!(
                "--nodes plus --scheduler-nodes may be at most {} simulated nodes",
                super::parse::MAX_NODES
            )),
        }
    }
}
