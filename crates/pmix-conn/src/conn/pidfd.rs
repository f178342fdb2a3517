//! A descriptor for a process: it turns readable when the process ends, so
//! a wait for another process's end is one more descriptor to poll.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::unistd::Pid;

/// pidfd_open(2) of process `pid`: a descriptor (close-on-exec) that turns
/// readable once `pid` has exited. `Errno::ESRCH` when no such process
/// exists (or it has been reaped); `Errno::ENOSYS` on kernels before 5.3.
///
/// A raw system call: nix (0.29) has no wrapper for pidfd_open, and this is
/// the one place pmix-tools makes it.
pub fn open(pid: Pid) -> Result<OwnedFd, Errno> {
    // SAFETY: pidfd_open takes a pid and flags (none) and touches no memory
    // of ours; it returns a new descriptor or -1 with errno set.
    let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid.as_raw(), 0) };
    let fd = Errno::result(fd)?;
    // A descriptor always fits in an int.
    let fd = RawFd::try_from(fd).map_err(|_| Errno::EOVERFLOW)?;
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
