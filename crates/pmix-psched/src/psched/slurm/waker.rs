//! How Slurm's worker threads wake psched's one wait: an eventfd each
//! thread writes to after handing over a result, which the serving loop
//! polls beside the DVM's socket. The loop then waits until something
//! happens instead of looking for answers every few milliseconds.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use nix::sys::eventfd::{EfdFlags, EventFd};

/// A shared eventfd: [`Waker::wake`] makes it readable, [`Waker::drain`]
/// quiet again.
#[derive(Clone)]
pub struct Waker(Arc<EventFd>);

impl Waker {
    /// A new, quiet waker (non-blocking, closed on exec so a `salloc` or
    /// `scontrol` never inherits it).
    pub fn new() -> std::io::Result<Waker> {
        let fd = EventFd::from_value_and_flags(0, EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?;
        Ok(Waker(Arc::new(fd)))
    }

    /// Make the descriptor readable (a result is waiting).
    pub fn wake(&self) {
        // Only a counter at its maximum fails: it is readable then anyway.
        let _ = self.0.write(1);
    }

    /// Take every wake-up so far: the descriptor is quiet until the next
    /// [`Waker::wake`]. Call before collecting results, so a result handed
    /// over meanwhile wakes the loop again.
    pub fn drain(&self) {
        let _ = self.0.read();
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

    fn readable(w: &Waker) -> bool {
        let mut fds = [PollFd::new(w.fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO).unwrap() == 1
    }

    #[test]
    fn a_wake_from_another_thread_makes_it_readable_until_drained() {
        let w = Waker::new().unwrap();
        assert!(!readable(&w));
        let other = w.clone();
        std::thread::spawn(move || {
            other.wake();
            other.wake();
        })
        .join()
        .unwrap();
        assert!(readable(&w));
        w.drain();
        assert!(!readable(&w));
    }
}
