//! Who is on the other end of a socket.
//!
//! `SO_PEERCRED` answers for Unix-domain sockets only; on a TCP socket Linux
//! reports uid -1. For loopback TCP the kernel still knows the owner of the
//! peer's socket: `/proc/net/tcp` (and `tcp6`) lists every socket with its
//! local and remote address and the uid that created it, so the peer's
//! uid is the one on the line whose local end is the peer's address and
//! whose remote end is ours.

use std::net::{SocketAddr, TcpStream};

/// The uid owning the peer end of `s`, when it can be established.
pub fn peer_uid(s: &TcpStream) -> Option<u32> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    if let Ok(c) = getsockopt(s, PeerCredentials) {
        if c.pid() != 0 && c.uid() != u32::MAX {
            return Some(c.uid());
        }
    }
    let (peer, local) = (s.peer_addr().ok()?, s.local_addr().ok()?);
    if let Some(uid) = super::sockdiag::tcp_owner(&peer, &local) {
        return Some(uid);
    }
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        if let Some(uid) = find_owner(&text, &peer, &local) {
            return Some(uid);
        }
    }
    None
}

/// Format an address as `/proc/net/tcp` prints it.
fn proc_addr(a: &SocketAddr) -> String {
    match a {
        SocketAddr::V4(v4) => format!(
            "{:08X}:{:04X}",
            u32::from_ne_bytes(v4.ip().octets()),
            v4.port()
        ),
        SocketAddr::V6(v6) => {
            let o = v6.ip().octets();
            let mut s = String::with_capacity(37);
            for w in o.chunks(4) {
                s.push_str(&format!(
                    "{:08X}",
                    u32::from_ne_bytes([w[0], w[1], w[2], w[3]])
                ));
            }
            format!("{s}:{:04X}", v6.port())
        }
    }
}

/// Find the uid of the socket whose local end is `peer` and remote end `local`.
pub fn find_owner(table: &str, peer: &SocketAddr, local: &SocketAddr) -> Option<u32> {
    let (want_l, want_r) = (proc_addr(peer), proc_addr(local));
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 7 && f[1].eq_ignore_ascii_case(&want_l) && f[2].eq_ignore_ascii_case(&want_r))
            .then(|| f[7].parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn loopback_peer_is_ourselves() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        assert_eq!(peer_uid(&s), Some(nix::unistd::getuid().as_raw()));
    }

    #[test]
    fn parses_proc_lines() {
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let line = format!(
            "  sl local rem\n   3: {} {} 01 00000000:00000000 00:00000000 00000000  1234        0 1 1\n",
            proc_addr(&peer),
            proc_addr(&local)
        );
        assert_eq!(find_owner(&line, &peer, &local), Some(1234));
        assert_eq!(find_owner(&line, &local, &peer), None);
    }
}
