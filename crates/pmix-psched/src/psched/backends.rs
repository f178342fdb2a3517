//! Which node source psched runs ([`make`]): its own pool (the pure
//! scheduler's state) or the site's Slurm, behind the DVM's requests
//! ([`Requests`]).

use crate::error::Result;

use super::ledger::Ledger;
use super::requests::Requests;
use super::slurm::SlurmBackend;
use super::source::NodeSource;
use super::state::State;

/// Which node source psched runs with (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendKind {
    /// psched's own pool (`--nodes`).
    #[default]
    Pool,
    /// The Slurm that `SLURM_CONF` (or Slurm's default) names.
    Slurm,
}

/// The DVM's requests over the node source `kind`, from `cfg`'s pool and
/// partitions, taking back `ledger`.
pub fn make(kind: BackendKind, cfg: &super::Config, mut ledger: Ledger) -> Result<Requests> {
    let source: Box<dyn NodeSource> = match kind {
        BackendKind::Pool => {
            let mut st = State::new(&cfg.nodes, cfg.partitions.clone(), &mut ledger);
            st.set_time_scale(cfg.time_scale);
            Box::new(st)
        }
        BackendKind::Slurm => {
            let tag = super::slurm::ledger_tag(&absolute(&cfg.ledger));
            let mut b = SlurmBackend::new(&mut ledger, tag)?;
            b.set_slots(cfg.slots);
            Box::new(b)
        }
    };
    Ok(Requests::new(source, ledger))
}

/// `path` made absolute (its directory resolved), so the same ledger gives
/// the same tag whichever directory psched starts in.
fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(d), Some(f)) => d.join(f),
        _ => path.to_path_buf(),
    }
}
