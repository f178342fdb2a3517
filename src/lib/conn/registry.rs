//! The holder registry: the per-user directory where a palloc that holds an
//! allocation (or waits for one, detached) registers its socket under the
//! allocation's or request's id, so tools in the user's other shells find
//! it by name.
//!
//! # Who holds a name
//! A name `X.sock` belongs to whoever holds an exclusive `flock(2)` on its
//! companion `X.lock` ([`Claim`]). A holder takes the lock *before* it
//! binds the socket and lets go of it only after removing the socket, so:
//! - finding a holder is one path (`registered_path`), whatever the crowd;
//! - telling a live holder from a dead one is one `flock` attempt on a
//!   file, never a connection to the holder (which would wake it);
//! - a sweep cannot remove a socket between its bind and its listen (the
//!   lock is already held), and removes a dead holder's files only while
//!   holding their lock itself.
//!
//! The kernel drops a lock when its holder dies, however it dies, so a
//! `kill -9`'d holder's name is free at once; its files stay until the next
//! sweep, which runs at most every [`SWEEP_EVERY`] (a `.swept` marker in
//! the directory), so starting a holder costs the same with 1 or 1000
//! others alive.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use nix::fcntl::{Flock, FlockArg};

/// Names tried for the registry after the first, when another user holds it.
const REGISTRY_ALTERNATIVES: usize = 8;

/// The in-memory file system most Linux systems mount for everyone.
const SHM: &str = "/dev/shm";

/// Whether `dir` is a directory on an in-memory file system (tmpfs).
fn in_memory(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
        && nix::sys::statfs::statfs(dir)
            .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
}

/// Least time between two sweeps of the registry.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// The marker whose modification time says when the registry was last swept.
pub(crate) const SWEEP_MARKER: &str = ".swept";

/// Most entries of the registry looked at by one sweep.
const SWEEP_MAX: usize = 8192;

/// Attempts at a name whose lock is held, before deciding a live holder
/// has it (a sweep holds a dead name's lock for a moment).
const CLAIM_TRIES: usize = 4;

/// The per-user directory where holders register their sockets by
/// allocation id: `$XDG_RUNTIME_DIR/pmix-tools-holders`, else
/// `/dev/shm/pmix-tools-holders.<uid>` (in memory: a crowd of holders
/// creating and removing names there costs no disk inode searches, which
/// on a busy /tmp cost each palloc milliseconds), else
/// `/tmp/pmix-tools-holders.<uid>`; created with mode 0700 (see [`registry`]).
pub(crate) fn registry_dir() -> Option<PathBuf> {
    registry().ok()
}

/// The holder registry: the first of `BASE`, `BASE.1` … `BASE.7` that is
/// (or can be made) a real private directory of ours, so a path another
/// user pre-created does not take it away (every tool of ours picks the
/// same one); or why none can be used, naming each path and its owner.
pub(crate) fn registry() -> std::result::Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let uid = nix::unistd::geteuid().as_raw();
    let base = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_dir() => d.join("pmix-tools-holders"),
        _ if in_memory(Path::new(SHM)) => PathBuf::from(format!("{SHM}/pmix-tools-holders.{uid}")),
        _ => PathBuf::from(format!("/tmp/pmix-tools-holders.{uid}")),
    };
    let mut refused = Vec::new();
    for n in 0..REGISTRY_ALTERNATIVES {
        let dir = match n {
            0 => base.clone(),
            _ => PathBuf::from(format!("{}.{n}", base.display())),
        };
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0 => return Ok(dir),
            Ok(m) => refused.push(format!(
                "{} is {} owned by uid {} (mode {:o})",
                dir.display(),
                if m.file_type().is_symlink() {
                    "a symlink"
                } else if m.is_dir() {
                    "a directory"
                } else {
                    "a file"
                },
                m.uid(),
                m.mode() & 0o7777
            )),
            Err(e) => refused.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!(
        "the holder registry cannot be used: {}",
        refused.join("; ")
    ))
}

/// What a holder is registered under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeldBy {
    /// A granted allocation's id.
    Alloc,
    /// A queued request's id (a detached palloc waiting for the grant).
    Request,
}

/// Where the holder of `id` (an allocation id, or a queued request's id:
/// `held`) on the DVM whose namespace is `server` registers its socket (in
/// [`registry_dir`]): ids are unique only within one DVM, and a request id
/// may look like an allocation id, so the two never share a name
/// (`SERVER+ID.sock`, `SERVER=ID.sock`). Characters other than letters,
/// digits and `@._-` are replaced by `_`.
pub(crate) fn registered_path(server: &str, id: &str, held: HeldBy) -> Option<PathBuf> {
    if id.is_empty() || id.len() + server.len() > 200 {
        return None;
    }
    let sep = match held {
        HeldBy::Alloc => '+',
        HeldBy::Request => '=',
    };
    let name = format!("{}{sep}{}.sock", file_word(server), file_word(id));
    Some(registry_dir()?.join(name))
}

/// `s` as part of a file name in the registry: characters other than
/// letters, digits and `@._-` become `_`.
pub(crate) fn file_word(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "@._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A name of the registry held by this process: the lock on `X.lock` for
/// the entry `X.sock`. Dropping it removes the entry (whatever was put
/// there: a socket, a link), then the lock file, and only then lets go of
/// the lock.
pub(crate) struct Claim {
    entry: PathBuf,
    lock_path: PathBuf,
    // Dropped last (fields drop after `Drop::drop`): the lock.
    _lock: Flock<File>,
}

impl Claim {
    /// The entry claimed (`X.sock`).
    pub(crate) fn entry(&self) -> &Path {
        &self.entry
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.entry);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// The lock file of entry `X.sock`: `X.lock`.
fn lock_path_of(entry: &Path) -> Option<PathBuf> {
    let name = entry.file_name()?.to_str()?;
    let stem = name.strip_suffix(".sock")?;
    Some(entry.with_file_name(format!("{stem}.lock")))
}

/// Take the name `entry` (`X.sock`) for this process: `None` when a live
/// holder has it (or the lock cannot be made). A dead holder's leftover
/// socket or link at `entry` is removed, so the caller can bind anew.
pub(crate) fn claim(entry: &Path) -> Option<Claim> {
    claim_tries(entry, CLAIM_TRIES)
}

/// [`claim`] with at most `tries` attempts while the lock is held.
fn claim_tries(entry: &Path, tries: usize) -> Option<Claim> {
    let lock_path = lock_path_of(entry)?;
    for attempt in 0..tries {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc_flags())
            .open(&lock_path)
            .ok()?;
        let Ok(lock) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
            continue;
        };
        // A sweep may have removed the file between our open and our lock:
        // then this lock guards nothing, try again with the file now there.
        if !still_named(&lock, &lock_path) {
            continue;
        }
        if std::fs::symlink_metadata(entry).is_ok() {
            let _ = std::fs::remove_file(entry);
        }
        return Some(Claim {
            entry: entry.to_path_buf(),
            lock_path,
            _lock: lock,
        });
    }
    None
}

/// Flags for opening a lock file: never through a link, not inherited.
fn libc_flags() -> i32 {
    (nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_CLOEXEC).bits()
}

/// Whether `path` still names the file `open` is.
fn still_named(open: &File, path: &Path) -> bool {
    match (open.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Sweep the registry `dir` unless it was swept in the last
/// [`SWEEP_EVERY`] (see [`sweep_now`]); the marker is renewed first, so of
/// a crowd of holders starting at once one sweeps.
pub(crate) fn sweep(dir: &Path) {
    let marker = dir.join(SWEEP_MARKER);
    let recent = std::fs::symlink_metadata(&marker)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|m| m.modified().ok())
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < SWEEP_EVERY);
    if recent {
        return;
    }
    let _ = std::fs::remove_file(&marker);
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&marker);
    // Another holder renewed it between our look and ours: it sweeps.
    if made.is_ok() {
        sweep_now(dir);
    }
}

/// Remove from the registry `dir` the entries of holders that have gone
/// (their name's lock is free: taken and let go at once, which removes
/// them) and the logs of detached pallocs that have ended
/// (`palloc.NAME.PID.log`). A live holder is never connected to.
pub(crate) fn sweep_now(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names = std::collections::BTreeSet::new();
    for e in entries.filter_map(std::result::Result::ok).take(SWEEP_MAX) {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name
            .strip_suffix(".sock")
            .or_else(|| name.strip_suffix(".lock"))
        {
            names.insert(stem.to_string());
        } else if log_pid(&name).is_some_and(|pid| !alive(pid)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    for stem in names {
        // Taken only when nobody holds it: dropping it removes the files.
        drop(claim_tries(&dir.join(format!("{stem}.sock")), 1));
    }
}

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: i32) -> bool {
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
        == Err(nix::errno::Errno::ESRCH)
    {
        return false;
    }
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let state = state
        .as_deref()
        .and_then(|s| s.rsplit(')').next())
        .and_then(|r| r.split_whitespace().next());
    !matches!(state, Some("Z") | Some("X"))
}

/// The pid in a detached palloc's log name (`palloc.NAME.PID.log`).
fn log_pid(name: &str) -> Option<i32> {
    let stem = name.strip_prefix("palloc.")?.strip_suffix(".log")?;
    stem.rsplit_once('.')?.1.parse().ok().filter(|p| *p > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_id_never_names_an_allocations_holder() {
        let a = registered_path("dvm@0", "alloc.4", HeldBy::Alloc);
        let r = registered_path("dvm@0", "alloc.4", HeldBy::Request);
        assert!(a.is_some() && r.is_some());
        assert_ne!(a, r);
        // Separators in ids cannot forge the other kind's name.
        assert_ne!(
            registered_path("dvm@0", "x=alloc.4", HeldBy::Alloc),
            registered_path("dvm@0+x", "alloc.4", HeldBy::Request)
        );
    }

    #[test]
    fn log_names_carry_the_detached_pallocs_pid() {
        assert_eq!(log_pid("palloc.nightly.1234.log"), Some(1234));
        assert_eq!(log_pid("palloc.a.b.77.log"), Some(77));
        assert_eq!(log_pid("palloc.nightly.log"), None);
        assert_eq!(log_pid("other.1234.log"), None);
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("registry-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_claimed_name_is_nobody_elses_until_dropped() {
        let d = scratch("claim");
        let entry = d.join("dvm+alloc.1.sock");
        let first = claim(&entry).expect("a free name");
        std::fs::write(first.entry(), b"socket").unwrap();
        assert!(claim(&entry).is_none(), "a held name");
        // A sweep leaves a live holder's entry alone.
        sweep_now(&d);
        assert!(entry.exists() && d.join("dvm+alloc.1.lock").exists());
        drop(first);
        assert!(!entry.exists() && !d.join("dvm+alloc.1.lock").exists());
        assert!(claim(&entry).is_some(), "a name let go");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_sweep_removes_what_nobody_holds_and_is_rate_limited() {
        let d = scratch("sweep");
        // A dead holder's leftovers: a socket with its unlocked lock file,
        // a lock file alone.
        std::fs::write(d.join("dvm+alloc.2.sock"), b"").unwrap();
        std::fs::write(d.join("dvm+alloc.2.lock"), b"").unwrap();
        std::fs::write(d.join("dvm=req.3.lock"), b"").unwrap();
        sweep(&d);
        let left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec![SWEEP_MARKER.to_string()], "{left:?}");
        // Within SWEEP_EVERY, the next sweep does not look.
        std::fs::write(d.join("dvm+alloc.4.sock"), b"").unwrap();
        sweep(&d);
        assert!(d.join("dvm+alloc.4.sock").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
