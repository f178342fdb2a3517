//! Administrator requests to a running psched (`psched --release ID`):
//! each is a small file beside the ledger, `<ledger>.release.<unique>`,
//! holding one allocation id. The running psched hears of it at once (it
//! watches the directory with inotify), acts, and removes it; the requester
//! sees the file go. Only files of psched's own user or root count.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use super::files::{dir_of, read, replace};

/// Most requests psched reads per round (bounded work per round).
pub const MAX_PER_ROUND: usize = 64;
/// Longest id read from a request file.
const MAX_ID: u64 = 1024;

fn prefix(ledger: &Path) -> String {
    let name = ledger.file_name().unwrap_or_default().to_string_lossy();
    format!("{name}.release.")
}

/// Ask the psched serving `ledger` to release `alloc_id`; the request
/// file's path (it disappears once psched has acted).
pub fn submit(ledger: &Path, alloc_id: &str) -> std::io::Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let unique = format!("{}{}-{nanos}", prefix(ledger), std::process::id());
    let path = dir_of(ledger).join(unique);
    replace(&path, alloc_id.as_bytes(), 0o644)?;
    Ok(path)
}

/// Whether `name` is a finished request file: it starts with `prefix`, and
/// is not the temporary file [`submit`] writes first and renames into place
/// (`….tmp`). Read while being written, that file was acted on and removed
/// under the writer, whose rename then failed: `psched --release` said it
/// could not write its request although psched had released the grant.
fn is_request(name: &str, prefix: &str) -> bool {
    name.starts_with(prefix) && !name.ends_with(".tmp")
}

/// The release requests waiting for the psched of `ledger`: each file's
/// path and the id it names (at most [`MAX_PER_ROUND`]). A file of another
/// user than psched's and root is removed unread.
pub fn pending(ledger: &Path) -> Vec<(PathBuf, String)> {
    let want = prefix(ledger);
    let Ok(entries) = std::fs::read_dir(dir_of(ledger)) else {
        return Vec::new();
    };
    let me = nix::unistd::geteuid().as_raw();
    entries
        .flatten()
        .filter(|e| is_request(&e.file_name().to_string_lossy(), &want))
        .take(MAX_PER_ROUND)
        .filter_map(|e| {
            let (body, owner) = read(&e.path(), MAX_ID).ok()?;
            if owner != me && owner != 0 {
                say!(
                    "psched: ignored {} (uid {owner} is neither psched's user nor root)",
                    e.path().display()
                );
                let _ = std::fs::remove_file(e.path());
                return None;
            }
            let id = String::from_utf8_lossy(&body).trim().to_string();
            Some((e.path(), id))
        })
        .collect()
}

/// Wait until psched has acted on request `path` (the file is gone) or
/// `deadline` passes: whether it is gone. Woken by the directory's
/// deletions (inotify), not by looking again and again; where inotify is
/// missing, one look at the deadline.
pub fn wait_gone(path: &Path, deadline: Instant) -> bool {
    let watch = Inotify::init(InitFlags::IN_CLOEXEC).ok().filter(|i| {
        i.add_watch(
            &dir_of(path),
            AddWatchFlags::IN_DELETE | AddWatchFlags::IN_MOVED_FROM,
        )
        .is_ok()
    });
    // Watched before the first look: a removal after it wakes the wait.
    while path.exists() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let ms = i32::try_from(left.as_millis().saturating_add(1)).unwrap_or(i32::MAX);
        let timeout = nix::poll::PollTimeout::try_from(ms).unwrap_or(nix::poll::PollTimeout::MAX);
        match &watch {
            Some(i) => {
                let mut fds = [nix::poll::PollFd::new(
                    i.as_fd(),
                    nix::poll::PollFlags::POLLIN,
                )];
                if nix::poll::poll(&mut fds, timeout).unwrap_or(0) > 0 {
                    let _ = i.read_events();
                }
            }
            None => super::wait::until(deadline, super::wait::Why::NoInotify),
        }
    }
    true
}

/// Wakes psched when a release request appears beside its ledger (not
/// when psched writes its own ledger there).
pub struct Watch {
    inotify: Option<Inotify>,
    prefix: String,
}

impl Watch {
    /// Watch the directory of `ledger`; without inotify, psched still
    /// looks at each turn of its loop.
    pub fn new(ledger: &Path) -> Watch {
        let w = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok();
        let inotify = w.filter(|i| {
            i.add_watch(
                &dir_of(ledger),
                AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_CLOSE_WRITE,
            )
            .is_ok()
        });
        Watch {
            inotify,
            prefix: prefix(ledger),
        }
    }

    /// The descriptor that becomes readable on a new file.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.inotify.as_ref().map(|i| i.as_fd())
    }

    /// Read what woke us: whether a release request was among it.
    pub fn take(&self) -> bool {
        let Some(i) = &self.inotify else {
            return true;
        };
        let mut asked = false;
        while let Ok(v) = i.read_events() {
            if v.is_empty() {
                break;
            }
            asked |= v.iter().any(|e| {
                e.name
                    .as_ref()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&self.prefix))
            });
        }
        asked
    }

    /// Wait until `deadline` or a release request, whichever comes first.
    pub fn wait(&self, deadline: Instant) {
        let fds: Vec<BorrowedFd<'_>> = self.fd().into_iter().collect();
        while crate::conn::client::poll_readable(&fds, Some(deadline)).is_some() {
            if self.take() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_still_being_written_is_not_taken() {
        let dir = std::env::temp_dir().join(format!("admin-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let ledger = dir.join("psched-ledger.json");
        let unique = format!("{}1-2", prefix(&ledger));
        std::fs::write(dir.join(format!("{unique}.3.tmp")), "alloc.1").unwrap();
        assert!(pending(&ledger).is_empty(), "a temporary file was taken");
        let done = submit(&ledger, "alloc.2").unwrap();
        let got = pending(&ledger);
        assert_eq!(got, vec![(done, "alloc.2".to_string())]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
