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
/// it; the caller then clears the signal mask. Async-signal-safe calls only:
/// nix's `SigSet`, `pthread_sigmask`, `getpid` and `tcsetpgrp` are the bare
/// system calls on this stack's memory (no allocation, no lock), and stdin
/// is borrowed as descriptor 0, not through `std::io::stdin()`, which
/// would allocate its buffer.
pub(crate) fn take_foreground() -> std::io::Result<()> {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGTTOU);
    let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None);
    // SAFETY: descriptor 0 is the child's stdin, pdvm's terminal (a leader
    // is given the terminal only with it), open throughout this call.
    let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    nix::unistd::tcsetpgrp(stdin, nix::unistd::getpid())?;
    Ok(())
}
