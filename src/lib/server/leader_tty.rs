//! `pdvm -- $SHELL` at a terminal: the session leader gets pdvm's terminal
//! as its stdin and becomes the terminal's foreground process group, so an
//! interactive shell reads its input and has job control (as `flux start`
//! gives). Elsewhere (no terminal, or pdvm in the background) the leader's
//! stdin stays /dev/null.

use std::io::IsTerminal;

/// Whether pdvm's stdin is a terminal whose foreground process group is
/// pdvm's (a pdvm put in the background with `&` leaves the terminal to
/// the shell that started it).
pub(crate) fn stdin_is_terminal() -> bool {
    let stdin = std::io::stdin();
    stdin.is_terminal()
        && nix::unistd::tcgetpgrp(&stdin).is_ok_and(|fg| fg == nix::unistd::getpgrp())
}

/// In the forked child, before exec: make its own process group (already
/// set with `setpgid`) the terminal's foreground group. SIGTTOU is blocked
/// meanwhile, since a background group changing the foreground would get
/// it; the caller then clears the signal mask. Async-signal-safe calls only.
pub(crate) fn take_foreground() -> std::io::Result<()> {
    // SAFETY: sigemptyset, sigaddset, pthread_sigmask, getpid and tcsetpgrp
    // are async-signal-safe and touch only this stack's set.
    unsafe {
        let mut set: nix::libc::sigset_t = std::mem::zeroed();
        nix::libc::sigemptyset(&mut set);
        nix::libc::sigaddset(&mut set, nix::libc::SIGTTOU);
        nix::libc::pthread_sigmask(nix::libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if nix::libc::tcsetpgrp(0, nix::libc::getpid()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
