//! The byte stream under a connection: TCP to a PMIx server, or a Unix
//! socket to a palloc holder (see [`super::holder`]).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// A connected stream of either kind.
#[derive(Debug)]
pub(crate) enum Stream {
    /// TCP (PRRTE, pdvm and every PMIx server reach tools this way).
    Tcp(TcpStream),
    /// A Unix socket (a palloc holder).
    Unix(UnixStream),
}

impl Stream {
    /// A second handle on the same socket (for a reader thread).
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    /// Close both directions.
    pub(crate) fn shutdown(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        }
    }

    /// Bound each read (`None`: block).
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    /// Bound each write (`None`: block).
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(t),
            Stream::Unix(s) => s.set_write_timeout(t),
        }
    }

    /// Acknowledge received TCP segments at once rather than after the
    /// delayed-ACK timer. Servers such as PRRTE write a reply's header and
    /// body in separate segments with Nagle's algorithm on; with our ACK
    /// delayed, every small reply would wait ~40 ms. Linux resets the mode
    /// after a while, so it is set again before each read. No-op for Unix
    /// sockets.
    pub(crate) fn quick_ack(&self) {
        #[cfg(target_os = "linux")]
        if let Stream::Tcp(s) = self {
            use std::os::fd::AsRawFd;
            let one: nix::libc::c_int = 1;
            // Raw: nix (0.29) has no socket option for TCP_QUICKACK (and its
            // `sockopt_impl!` is not exported).
            // SAFETY: a valid socket descriptor we own, a pointer to a live
            // c_int and its exact size; failure only leaves the default ACK
            // behaviour.
            unsafe {
                nix::libc::setsockopt(
                    s.as_raw_fd(),
                    nix::libc::IPPROTO_TCP,
                    nix::libc::TCP_QUICKACK,
                    (&one as *const nix::libc::c_int).cast(),
                    std::mem::size_of::<nix::libc::c_int>() as nix::libc::socklen_t,
                );
            }
        }
    }
}

impl std::os::fd::AsRawFd for Stream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}
