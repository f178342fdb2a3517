//! Files the tools write into a directory others may write to (the
//! current directory of a batch submission, `/tmp`): a name there may be a
//! symbolic link or a file another user prepared. Such a file is opened
//! without following a link and never truncated: it is created anew
//! (mode 0600), or, when it already exists, appended to only if it is a
//! regular file of this user with no other link (as sbatch appends to its
//! own log with `--open-mode=append`); anything else is refused.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;

/// Why a file in a shared directory was not opened.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The name is a symbolic link (never followed).
    Link,
    /// It exists and belongs to another user (uid).
    NotOurs(u32),
    /// It exists and is not a regular file (a FIFO, a device, a directory).
    NotRegular,
    /// It is a regular file of ours with other hard links.
    Linked,
    /// The system refused (no permission, no such directory, …).
    Io(std::io::Error),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Link => write!(f, "it is a symbolic link, which is never followed"),
            Refusal::NotOurs(uid) => write!(f, "it exists and belongs to uid {uid}, not to you"),
            Refusal::NotRegular => write!(f, "it exists and is not a regular file"),
            Refusal::Linked => write!(f, "it has other hard links"),
            Refusal::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Open `path` for output (see the module doc): a new file, or an
/// existing regular file of ours, appended to; never through a link,
/// never truncated.
pub(crate) fn open_for_output(path: &Path) -> Result<File, Refusal> {
    open_checked(path, 0o600)
}

/// Open `path` as `srun -o` does, emptied (a job's output file): created
/// anew (mode 0666 less the umask), or, when it exists, emptied only when
/// it is a regular file of ours with no other link (so another user's
/// file or a link is never emptied or written through); appended to from
/// then on, so ranks and streams sharing it keep every byte.
pub(crate) fn open_emptied(path: &Path) -> Result<File, Refusal> {
    let f = open_checked(path, 0o666)?;
    f.set_len(0).map_err(Refusal::Io)?;
    Ok(f)
}

/// [`open_for_output`] creating with `mode` (less the umask).
fn open_checked(path: &Path, mode: u32) -> Result<File, Refusal> {
    let flags = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let created = std::fs::OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(flags.bits())
        .open(path);
    match created {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(Refusal::Io(e)),
        Err(_) => {}
    }
    // O_NONBLOCK: a FIFO put there must not block the open.
    let existing = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags((flags | OFlag::O_NONBLOCK).bits())
        .open(path)
        .map_err(|e| match e.raw_os_error().map(Errno::from_raw) {
            Some(Errno::ELOOP) => Refusal::Link,
            // A FIFO nobody reads (opened without blocking).
            Some(Errno::ENXIO) => Refusal::NotRegular,
            _ => Refusal::Io(e),
        })?;
    let meta = existing.metadata().map_err(Refusal::Io)?;
    if !meta.file_type().is_file() {
        return Err(Refusal::NotRegular);
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(Refusal::NotOurs(meta.uid()));
    }
    if meta.nlink() != 1 {
        return Err(Refusal::Linked);
    }
    clear_nonblock(&existing);
    Ok(existing)
}

/// Writes to the file block as usual again.
fn clear_nonblock(f: &File) {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    use std::os::fd::AsRawFd;
    if let Ok(bits) = fcntl(f.as_raw_fd(), FcntlArg::F_GETFL) {
        let mut flags = OFlag::from_bits_truncate(bits);
        flags.remove(OFlag::O_NONBLOCK);
        let _ = fcntl(f.as_raw_fd(), FcntlArg::F_SETFL(flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "shared-dir-file-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_new_file_is_created_and_our_own_file_is_appended_to_never_truncated() {
        let d = dir();
        let p = d.join("log");
        open_for_output(&p).unwrap().write_all(b"one\n").unwrap();
        open_for_output(&p).unwrap().write_all(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one\ntwo\n");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_symbolic_link_is_refused_and_its_target_untouched() {
        let d = dir();
        let target = d.join("victim");
        std::fs::write(&target, "keep").unwrap();
        let link = d.join("log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(open_for_output(&link), Err(Refusal::Link)));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_fifo_or_a_hard_linked_file_is_refused() {
        let d = dir();
        let fifo = d.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(open_for_output(&fifo), Err(Refusal::NotRegular)));
        let a = d.join("a");
        std::fs::write(&a, "").unwrap();
        std::fs::hard_link(&a, d.join("b")).unwrap();
        assert!(matches!(open_for_output(&a), Err(Refusal::Linked)));
        let _ = std::fs::remove_dir_all(&d);
    }
}
