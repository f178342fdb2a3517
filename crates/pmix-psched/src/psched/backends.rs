//! Which node source psched runs ([`make`]): its own pool (the pure
//! scheduler's state) or the site's Slurm.

use crate::error::Result;

use super::backend::{Backend, BackendKind};
use super::ledger::Ledger;
use super::slurm::SlurmBackend;
use super::state::State;

/// The backend `kind` over `cfg`'s pool and partitions, taking back `ledger`.
pub fn make(kind: BackendKind, cfg: &super::Config, ledger: Ledger) -> Result<Box<dyn Backend>> {
    Ok(match kind {
        BackendKind::Pool => {
            let mut st = State::new(&cfg.nodes, cfg.partitions.clone(), ledger);
            st.set_time_scale(cfg.time_scale);
            Box::new(st)
        }
        BackendKind::Slurm => {
            let mut b =
                SlurmBackend::new(ledger, super::slurm::ledger_tag(&absolute(&cfg.ledger)))?;
            b.set_slots(cfg.slots);
            Box::new(b)
        }
    })
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
