//! A detached palloc's start in a session of its own holding only its
//! stdio (and the one descriptor it is to keep): the detached palloc
//! started for a request (`detach`) gets it before its exec, the ones an
//! agent starts ahead (`standby`) make it themselves. Its `unsafe` (the
//! `pre_exec` hook and the raw `close_range`, which nix 0.29 does not
//! wrap) is all here.

use std::os::fd::RawFd;

/// Have `cmd` start in a session of its own, holding only its stdio and
/// `keep` (if any): a detached palloc holds nothing the caller opened.
pub(super) fn in_own_session(cmd: &mut std::process::Command, keep: Option<RawFd>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid and close_range are async-signal-safe and touch no
    // memory of ours.
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            close_others(keep);
            Ok(())
        });
    }
}

/// Put this process, just started, in a session of its own holding only
/// its stdio: what [`in_own_session`] does for a child before its exec,
/// done by a standby palloc itself first thing, so that the agent can
/// start it without a pre-exec hook (a hook makes std fork the agent, page
/// tables and all, where it otherwise spawns the child without copying
/// them). False if no session could be made.
pub(super) fn become_own_session() -> bool {
    // Descriptors first: once in its own session, it holds only its own.
    close_others(None);
    nix::unistd::setsid().is_ok()
}

/// Close every descriptor above stderr but `keep` (in the child, before
/// exec, or in a process just started).
fn close_others(keep: Option<RawFd>) {
    let close = |lo: u32, hi: u32| {
        if lo <= hi {
            // Raw: nix (0.29) has no close_range(2) wrapper.
            // SAFETY: closes descriptors only; no memory is touched.
            unsafe { nix::libc::syscall(nix::libc::SYS_close_range, lo, hi, 0) };
        }
    };
    match keep {
        Some(keep) if keep > 2 => {
            let keep = keep as u32;
            close(3, keep - 1);
            close(keep + 1, u32::MAX);
        }
        _ => close(3, u32::MAX),
    }
}
