//! Readiness-based I/O for pdvm: one epoll instance holding the listener,
//! the signalfd, every connection and every captured output pipe, each
//! registered once. Interest changes only when something changes: a peer
//! starts or stops needing writes, stops being read (its replies are not
//! read: backpressure), or a job's pipes pause because their reader lags.
//! Level-triggered, so a source with data left is reported again.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use nix::poll::PollTimeout;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::signalfd::SignalFd;

/// What an epoll event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Token {
    /// The listening socket.
    Listener,
    /// The signalfd.
    Signals,
    /// Connection `id`.
    Conn(u64),
    /// Captured output pipe `id`.
    Pipe(u64),
    /// The spawner thread's eventfd: processes it started.
    Spawned,
}

const KIND_SHIFT: u32 = 62;
const ID_MASK: u64 = (1 << KIND_SHIFT) - 1;

impl Token {
    fn encode(self) -> u64 {
        match self {
            Token::Listener => 0,
            Token::Signals => 1,
            Token::Spawned => 2,
            Token::Conn(id) => (1 << KIND_SHIFT) | (id & ID_MASK),
            Token::Pipe(id) => (2 << KIND_SHIFT) | (id & ID_MASK),
        }
    }

    fn decode(v: u64) -> Token {
        match v >> KIND_SHIFT {
            0 if v == 0 => Token::Listener,
            0 if v == 2 => Token::Spawned,
            0 => Token::Signals,
            1 => Token::Conn(v & ID_MASK),
            _ => Token::Pipe(v & ID_MASK),
        }
    }
}

/// Readiness of one source.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ready {
    /// The source.
    pub token: Token,
    /// Readable, or at end of stream / in error (reading tells which).
    pub readable: bool,
    /// Writable.
    pub writable: bool,
}

/// Interest of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Interest {
    read: bool,
    write: bool,
}

impl Interest {
    fn flags(self) -> EpollFlags {
        let mut f = EpollFlags::empty();
        if self.read {
            f |= EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP;
        }
        if self.write {
            f |= EpollFlags::EPOLLOUT;
        }
        f
    }
}

/// The epoll instance, the signalfd, and what each source is registered for.
pub(crate) struct Reactor {
    ep: Epoll,
    sigfd: SignalFd,
    conns: HashMap<u64, Interest>,
    pipes: HashMap<u64, bool>,
    listening: bool,
    events: Vec<EpollEvent>,
}

/// Longest a timer is set ahead (a later one is set again when it fires).
pub(crate) const LONGEST_TIMER: Duration = Duration::from_secs(3600);

/// Longest one epoll wait, in milliseconds (timers are re-read after it).
const LONGEST_WAIT_MS: u32 = 60_000;

fn no_timeout_beyond(d: Duration) -> PollTimeout {
    // Round up, so a deadline 0.4 ms away is not spun on.
    let ms = d
        .as_micros()
        .div_ceil(1000)
        .min(u128::from(LONGEST_WAIT_MS)) as u32;
    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
}

impl Reactor {
    /// A reactor over `listener` and `sigfd`.
    pub(crate) fn new(listener: BorrowedFd<'_>, sigfd: SignalFd) -> std::io::Result<Reactor> {
        let ep = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        ep.add(
            listener,
            EpollEvent::new(EpollFlags::EPOLLIN, Token::Listener.encode()),
        )?;
        ep.add(
            &sigfd,
            EpollEvent::new(EpollFlags::EPOLLIN, Token::Signals.encode()),
        )?;
        Ok(Reactor {
            ep,
            sigfd,
            conns: HashMap::new(),
            pipes: HashMap::new(),
            listening: true,
            events: vec![EpollEvent::empty(); 1024],
        })
    }

    /// The signalfd.
    pub(crate) fn sigfd(&self) -> &SignalFd {
        &self.sigfd
    }

    /// Wait up to `timeout` and return what is ready.
    pub(crate) fn wait(&mut self, timeout: Duration) -> Vec<Ready> {
        let n = match self.ep.wait(&mut self.events, no_timeout_beyond(timeout)) {
            Ok(n) => n,
            // EINTR: the caller goes round again.
            Err(_) => return Vec::new(),
        };
        let hup = EpollFlags::EPOLLIN
            | EpollFlags::EPOLLHUP
            | EpollFlags::EPOLLERR
            | EpollFlags::EPOLLRDHUP;
        self.events[..n]
            .iter()
            .map(|e| Ready {
                token: Token::decode(e.data()),
                readable: e.events().intersects(hup),
                writable: e.events().contains(EpollFlags::EPOLLOUT),
            })
            .collect()
    }

    /// Accept connections or not (paused when out of descriptors).
    pub(crate) fn set_listening(&mut self, listener: BorrowedFd<'_>, on: bool) {
        if self.listening == on {
            return;
        }
        let flags = if on {
            EpollFlags::EPOLLIN
        } else {
            EpollFlags::empty()
        };
        let mut ev = EpollEvent::new(flags, Token::Listener.encode());
        if self.ep.modify(listener, &mut ev).is_ok() {
            self.listening = on;
        }
    }

    /// Register a new connection, for reading.
    pub(crate) fn add_conn(&mut self, id: u64, fd: impl AsFd) -> std::io::Result<()> {
        let i = Interest {
            read: true,
            write: false,
        };
        self.ep
            .add(fd, EpollEvent::new(i.flags(), Token::Conn(id).encode()))?;
        self.conns.insert(id, i);
        Ok(())
    }

    /// Set what a connection waits for; a no-op when unchanged.
    pub(crate) fn set_conn(&mut self, id: u64, fd: impl AsFd, read: bool, write: bool) {
        let want = Interest { read, write };
        let Some(have) = self.conns.get_mut(&id) else {
            return;
        };
        if *have == want {
            return;
        }
        let mut ev = EpollEvent::new(want.flags(), Token::Conn(id).encode());
        if self.ep.modify(fd, &mut ev).is_ok() {
            *have = want;
        }
    }

    /// Forget a connection (before its socket closes).
    pub(crate) fn remove_conn(&mut self, id: u64, fd: impl AsFd) {
        if self.conns.remove(&id).is_some() {
            let _ = self.ep.delete(fd);
        }
    }

    /// Register the spawner thread's eventfd, for reading.
    pub(crate) fn add_spawner(&mut self, fd: impl AsFd) -> std::io::Result<()> {
        self.ep.add(
            fd,
            EpollEvent::new(EpollFlags::EPOLLIN, Token::Spawned.encode()),
        )?;
        Ok(())
    }

    /// Register a captured pipe, armed for reading.
    pub(crate) fn add_pipe(&mut self, id: u64, fd: impl AsFd) -> std::io::Result<()> {
        self.ep.add(
            fd,
            EpollEvent::new(EpollFlags::EPOLLIN, Token::Pipe(id).encode()),
        )?;
        self.pipes.insert(id, true);
        Ok(())
    }

    /// Read a pipe or leave it unread (its reader lags); a no-op when unchanged.
    pub(crate) fn arm_pipe(&mut self, id: u64, fd: impl AsFd, on: bool) {
        let Some(armed) = self.pipes.get_mut(&id) else {
            return;
        };
        if *armed == on {
            return;
        }
        let flags = if on {
            EpollFlags::EPOLLIN
        } else {
            EpollFlags::empty()
        };
        let mut ev = EpollEvent::new(flags, Token::Pipe(id).encode());
        if self.ep.modify(fd, &mut ev).is_ok() {
            *armed = on;
        }
    }

    /// True when pipe `id` is being read.
    pub(crate) fn pipe_armed(&self, id: u64) -> bool {
        self.pipes.get(&id).copied().unwrap_or(false)
    }

    /// Forget a pipe (before it closes).
    pub(crate) fn remove_pipe(&mut self, id: u64, fd: impl AsFd) {
        if self.pipes.remove(&id).is_some() {
            let _ = self.ep.delete(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        for t in [
            Token::Listener,
            Token::Signals,
            Token::Conn(0),
            Token::Conn(7),
            Token::Pipe(0),
            Token::Pipe(ID_MASK),
        ] {
            assert_eq!(Token::decode(t.encode()), t);
        }
    }

    #[test]
    fn timeouts_round_up_and_are_capped() {
        assert_eq!(
            no_timeout_beyond(Duration::from_micros(400)),
            PollTimeout::try_from(1u32).unwrap()
        );
        assert_eq!(
            no_timeout_beyond(Duration::ZERO),
            PollTimeout::try_from(0u32).unwrap()
        );
        assert_eq!(
            no_timeout_beyond(Duration::from_secs(3600)),
            PollTimeout::try_from(LONGEST_WAIT_MS).unwrap()
        );
    }
}
