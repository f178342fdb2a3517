//! Finding a job's program on `PATH`, with a short memory.
//!
//! Each lookup of a bare name tries every `PATH` directory in turn (one
//! `stat` each); an array of 2000 `sh` tasks did that 4000 times. A name
//! found stays remembered for [`FRESH`], and a remembered path is checked
//! again (one `stat`) before it is used, as a shell's command hash would
//! be, but forgetting soon: a program installed earlier on `PATH` is seen
//! within a second.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a found program is remembered.
const FRESH: Duration = Duration::from_secs(1);

/// Most names remembered; past it the memory starts again.
const MOST: usize = 256;

/// A name looked up, and the directory it was run from.
type Lookup = (String, Option<String>);

/// Programs found recently: `(name, directory run in)` → path, when found.
#[derive(Debug, Default)]
pub(crate) struct ProgramCache {
    found: RefCell<HashMap<Lookup, (PathBuf, Instant)>>,
}

impl ProgramCache {
    /// `cmd` looked up on `dirs()` (relative directories from `dir`):
    /// from memory when found less than [`FRESH`] ago and still there.
    pub(crate) fn find(
        &self,
        cmd: &str,
        dir: Option<&str>,
        dirs: impl FnOnce() -> Vec<PathBuf>,
    ) -> Option<PathBuf> {
        let key = (cmd.to_owned(), dir.map(str::to_owned));
        let now = Instant::now();
        if let Some((p, at)) = self.found.borrow().get(&key) {
            if now.duration_since(*at) < FRESH && is_exec(p) {
                return Some(p.clone());
            }
        }
        let p = dirs()
            .into_iter()
            .map(|d| d.join(cmd))
            .find(|p| is_exec(p))?;
        let mut found = self.found.borrow_mut();
        if found.len() >= MOST {
            found.clear();
        }
        found.insert(key, (p.clone(), now));
        Some(p)
    }
}

/// A regular file someone may execute.
pub(crate) fn is_exec(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}
