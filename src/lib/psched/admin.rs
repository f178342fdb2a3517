//! Administrator requests to a running psched (`psched --release ID`):
//! each is a small file beside the ledger, `<ledger>.release.<unique>`,
//! holding one allocation id. The running psched picks them up within a
//! second, acts, and removes them; the requester sees the file go.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Most requests psched reads per round (bounded work per round).
pub const MAX_PER_ROUND: usize = 64;
/// Longest id read from a request file.
const MAX_ID: u64 = 1024;

fn prefix(ledger: &Path) -> String {
    let name = ledger.file_name().unwrap_or_default().to_string_lossy();
    format!("{name}.release.")
}

fn dir(ledger: &Path) -> PathBuf {
    match ledger.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Ask the psched serving `ledger` to release `alloc_id`; the request
/// file's path (it disappears once psched has acted).
pub fn submit(ledger: &Path, alloc_id: &str) -> std::io::Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let unique = format!("{}{}-{nanos}", prefix(ledger), std::process::id());
    let path = dir(ledger).join(&unique);
    let tmp = dir(ledger).join(format!(".{unique}.tmp"));
    fs::write(&tmp, alloc_id)?;
    fs::rename(&tmp, &path)?;
    Ok(path)
}

/// The release requests waiting for the psched of `ledger`: each file's
/// path and the id it names (at most [`MAX_PER_ROUND`]).
pub fn pending(ledger: &Path) -> Vec<(PathBuf, String)> {
    let want = prefix(ledger);
    let Ok(entries) = fs::read_dir(dir(ledger)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&want))
        .take(MAX_PER_ROUND)
        .filter_map(|e| {
            let mut id = String::new();
            let f = fs::File::open(e.path()).ok()?;
            f.take(MAX_ID).read_to_string(&mut id).ok()?;
            Some((e.path(), id.trim().to_string()))
        })
        .collect()
}
