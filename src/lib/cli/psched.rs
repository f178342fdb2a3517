//! psched's flags: how to find the DVM (the tools' connection flags), the
//! node pool, its partitions and the ledger.

use std::path::PathBuf;

use clap::Parser;

use super::common::ConnectArgs;
use super::parse::{expand_nodelist, parse_duration_secs};
use crate::psched::{BackendKind, Config, Partition};

/// psched: a PMIx scheduler for PRRTE. Attaches to a DVM started with its
/// ras/pmix component (`prte --prtemca ras_pmix_system_scheduler 1`) and
/// grants nodes of its pool to the allocation requests the DVM forwards:
/// time limits, a warning before expiry, the end of an expired allocation.
#[derive(Debug, Clone, Parser)]
#[command(name = "psched", version, args_override_self = true)]
pub struct PschedArgs {
    /// The nodes psched owns, as a list with ranges: `node[03-08]`,
    /// `n1,n2` (the pool backend; with `--backend slurm` Slurm has the nodes).
    #[arg(long, value_name = "LIST", required_unless_present_any = ["status", "release", "backend", "check"])]
    pub nodes: Option<String>,

    /// Where the nodes come from: `pool` (psched's own, `--nodes`) or
    /// `slurm` (the Slurm that SLURM_CONF names: each allocation is an
    /// exclusive Slurm job; time limits, partitions and queueing are Slurm's).
    #[arg(long, value_name = "pool|slurm", value_parser = parse_backend)]
    pub backend: Option<BackendKind>,

    /// Slots per node (recorded in the ledger, and said to PRRTE master as
    /// it first hears of the node: `node02:2`; without it PRRTE gives a
    /// scheduler's node one slot).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub slots: u32,

    /// A partition: `NAME[:DEFAULT[:MAX]]` with time limits such as `10m`,
    /// `1h`, `30s`; the first is used when a request names none. Default:
    /// `batch` without limits.
    #[arg(long = "partition", value_name = "SPEC", value_parser = parse_partition)]
    pub partitions: Vec<Partition>,

    /// The ledger file (grants survive a restart).
    #[arg(long, value_name = "PATH", default_value = "psched-ledger.json")]
    pub ledger: PathBuf,

    /// Seconds between attempts to attach to the DVM.
    #[arg(long, default_value_t = 1, value_name = "SECS")]
    pub retry: u64,

    /// Exit when the DVM goes away instead of waiting for a new one.
    #[arg(long)]
    pub once: bool,

    /// Run psched's clock F times faster, for trying workflows: a request's
    /// time limit and warning threshold are divided by F (the ledger keeps
    /// real times), a warning's seconds left multiplied back. As `pdvm
    /// --time-scale`: with 60 a minute lasts a second.
    #[arg(long, value_name = "F", value_parser = super::pdvm::parse_time_scale, default_value = "1")]
    pub time_scale: f64,

    /// Print psched's state from its ledger as one JSON object and exit:
    /// queues (partitions with their limits), pool, free nodes, nodes the
    /// DVM kept (retained), pending requests, and each grant with its
    /// expiry (`expires_at_ms`) and seconds left (`left_secs`).
    #[arg(long)]
    pub status: bool,

    /// Serve status queries on a loopback socket and write its URI (and
    /// PMIx version) to PATH, so that `pwatch --status --uri file:PATH`
    /// shows psched's queues (nodes, free nodes, pending requests), its
    /// grants as reservations with their expiry, and its pool as nodes.
    #[arg(long, value_name = "PATH")]
    pub status_uri: Option<PathBuf>,

    /// Let every local user query the status socket. Without it only
    /// psched's own user and root are answered (the grants name every
    /// user's jobs); others are closed at once.
    #[arg(long, requires = "status_uri")]
    pub status_public: bool,

    /// Check the setup and exit, printing one line per finding (`ok`,
    /// `warn`, `FAIL` and what to do): the DVM is found and takes a
    /// scheduler, no other psched serves it, the ledger's folder is
    /// writable, and with `--backend slurm` Slurm's commands are on PATH,
    /// its controller answers and it has partitions. Exit 0 when nothing
    /// failed, 1 otherwise.
    #[arg(long, conflicts_with_all = ["status", "release"])]
    pub check: bool,

    /// Release the grant ID as the scheduler (which may release any
    /// reservation, spec 001 §8.2.1.7), through the psched serving
    /// --ledger: its nodes return to the pool and the DVM is told to end
    /// the session. Waits at most 15 s for psched to act.
    #[arg(long, value_name = "ID", conflicts_with = "status")]
    pub release: Option<String>,

    /// How to reach the DVM (the OpenPMIx connection flags).
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `pool` or `slurm`.
pub fn parse_backend(s: &str) -> Result<BackendKind, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "pool" => Ok(BackendKind::Pool),
        "slurm" => Ok(BackendKind::Slurm),
        _ => Err(format!("'{s}': a backend is pool or slurm")),
    }
}

/// `NAME[:DEFAULT[:MAX]]`.
pub fn parse_partition(s: &str) -> Result<Partition, String> {
    let mut it = s.split(':');
    let name = it.next().unwrap_or_default().trim();
    if name.is_empty() {
        return Err(format!(
            "'{s}': a partition is NAME[:DEFAULT[:MAX]], e.g. batch:10m:1h"
        ));
    }
    let lim = |x: Option<&str>| -> Result<Option<u32>, String> {
        match x.map(str::trim).filter(|x| !x.is_empty()) {
            None => Ok(None),
            Some(t) => parse_duration_secs(t).map(|v| Some(v.min(u64::from(u32::MAX)) as u32)),
        }
    };
    let p = Partition {
        name: name.to_string(),
        default_secs: lim(it.next())?,
        max_secs: lim(it.next())?,
    };
    if let (Some(d), Some(m)) = (p.default_secs, p.max_secs) {
        if d > m {
            return Err(format!("'{s}': the default limit is above the maximum"));
        }
    }
    Ok(p)
}

impl PschedArgs {
    /// The run configuration; a bad node list is refused (usage error).
    pub fn config(&self) -> Result<Config, String> {
        let nodes = match &self.nodes {
            Some(n) => expand_nodelist(n).map_err(|e| format!("--nodes: {e}"))?,
            None => Vec::new(),
        };
        let backend = self.backend.unwrap_or_default();
        match (backend, nodes.is_empty()) {
            (BackendKind::Slurm, false) => {
                return Err(
                    "--nodes names psched's own pool; with --backend slurm the nodes \
are Slurm's (choose them with its partitions)"
                        .into(),
                )
            }
            (BackendKind::Pool, true) if !self.status && !self.check && self.release.is_none() => {
                return Err("--backend pool needs --nodes LIST (the pool's nodes)".into())
            }
            _ => {}
        }
        let mut connect = self.connect.to_options();
        connect.force_tool = true;
        let partitions = if self.partitions.is_empty() {
            vec![Partition {
                name: "batch".into(),
                default_secs: None,
                max_secs: None,
            }]
        } else {
            self.partitions.clone()
        };
        Ok(Config {
            connect,
            nodes,
            slots: self.slots,
            partitions,
            ledger: self.ledger.clone(),
            retry: std::time::Duration::from_secs(self.retry.max(1)),
            once: self.once,
            backend,
            time_scale: self.time_scale,
            status_uri: self.status_uri.clone(),
            status_public: self.status_public,
        })
    }
}
