//! Who is on the other end of a socket.
//!
//! `SO_PEERCRED` answers for Unix-domain sockets only; on a TCP socket Linux
//! reports uid -1. For loopback TCP the kernel still knows the peer's socket:
//! a `NETLINK_SOCK_DIAG` request for the exact 4-tuple (the peer's address as
//! source, ours as destination) returns that one socket's owner uid and
//! inode, at a constant cost whatever the number of sockets on the host.
//! Where sock_diag is unavailable (no `inet_diag` in the kernel), the uid is
//! looked up in `/proc/net/tcp` (and `tcp6`), which lists every socket.

use std::io::{Error as IoError, ErrorKind};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{
    recv, sendto, setsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag,
    SockProtocol, SockType,
};
use nix::sys::time::TimeVal;

/// What the kernel says about the peer's end of a loopback TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PeerSocket {
    /// The uid that created the peer's socket.
    pub uid: u32,
    /// The inode of the peer's socket (`socket:[INODE]` in its fd table);
    /// 0 when only the uid is known.
    pub inode: u64,
}

/// The uid owning the peer end of `s`, when it can be established.
/// (`SO_PEERCRED` is not asked: on TCP Linux always answers uid -1.)
pub fn peer_uid(s: &TcpStream) -> Option<u32> {
    peer_socket(s).map(|p| p.uid)
}

/// The peer's socket owner and inode: one sock_diag lookup, else the uid
/// from `/proc/net/tcp*`.
pub(crate) fn peer_socket(s: &TcpStream) -> Option<PeerSocket> {
    let (peer, local) = (s.peer_addr().ok()?, s.local_addr().ok()?);
    if let Ok(found) = sock_diag_lookup(&peer, &local) {
        return found;
    }
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        if let Some(uid) = find_owner(&text, &peer, &local) {
            return Some(PeerSocket { uid, inode: 0 });
        }
    }
    None
}

/// Whether the peer's socket is held by process `pid`, one of its
/// descendants, or a member of its process group (a job's process leads its
/// own group; a background child orphaned by a shell stays in it). `None`
/// when the kernel cannot tell (no socket inode, no
/// `/proc/PID/task/TID/children`).
pub fn peer_in_tree(s: &TcpStream, pid: Option<i32>) -> Option<bool> {
    let pid = pid?;
    let inode = peer_socket(s).map(|p| p.inode).filter(|&i| i != 0)?;
    let want = format!("socket:[{inode}]");
    let holds = |p: i32| {
        std::fs::read_dir(format!("/proc/{p}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == want.as_str())
            })
        })
    };
    let mut todo = vec![pid];
    let mut seen = 0usize;
    while let Some(p) = todo.pop() {
        seen += 1;
        if seen > 4096 {
            return None;
        }
        if holds(p) {
            return Some(true);
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(kids) = std::fs::read_to_string(t.path().join("children")) else {
                return None;
            };
            todo.extend(
                kids.split_whitespace()
                    .filter_map(|k| k.parse::<i32>().ok()),
            );
        }
    }
    // Orphaned members of the job's process group.
    let procs = std::fs::read_dir("/proc").ok()?;
    for e in procs.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if process_group(p) == Some(pid) && holds(p) {
            return Some(true);
        }
    }
    Some(false)
}

/// The process group of `pid` (field 5 of `/proc/PID/stat`).
fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_HDRLEN: usize = 16;
/// Offsets in `struct inet_diag_msg` (after the netlink header).
const DIAG_UID_AT: usize = 4 + 48 + 12;
const DIAG_INODE_AT: usize = DIAG_UID_AT + 4;

fn sockid(src: &SocketAddr, dst: &SocketAddr) -> [u8; 48] {
    let mut id = [0u8; 48];
    id[0..2].copy_from_slice(&src.port().to_be_bytes());
    id[2..4].copy_from_slice(&dst.port().to_be_bytes());
    let put = |a: &SocketAddr, out: &mut [u8]| match a {
        SocketAddr::V4(v) => out[..4].copy_from_slice(&v.ip().octets()),
        SocketAddr::V6(v) => out.copy_from_slice(&v.ip().octets()),
    };
    put(src, &mut id[4..20]);
    put(dst, &mut id[20..36]);
    // idiag_if = 0; idiag_cookie = INET_DIAG_NOCOOKIE.
    id[40..48].copy_from_slice(&[0xff; 8]);
    id
}

/// One exact sock_diag lookup of the TCP socket `src` → `dst`.
/// `Err` when sock_diag itself is unavailable; `Ok(None)` when the kernel
/// knows no such socket.
fn sock_diag_lookup(src: &SocketAddr, dst: &SocketAddr) -> Result<Option<PeerSocket>, IoError> {
    let family = match src {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    } as u8;
    // One netlink socket per thread, kept between lookups (a socket and its
    // options cost more syscalls than the lookup itself); each request has
    // its own sequence number, so a late answer to an earlier one is skipped.
    DIAG.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.is_none() {
            *cached = Some((diag_socket()?, 0));
        }
        let Some((fd, seq)) = cached.as_mut() else {
            return Err(IoError::other("no sock_diag socket"));
        };
        *seq = seq.wrapping_add(1);
        let r = diag_request(fd, *seq, family, src, dst);
        if r.is_err() {
            // A socket in an unknown state is not reused.
            *cached = None;
        }
        r
    })
}

thread_local! {
    static DIAG: std::cell::RefCell<Option<(OwnedFd, u32)>> = const { std::cell::RefCell::new(None) };
}

/// A `NETLINK_SOCK_DIAG` socket whose reads time out after a second.
fn diag_socket() -> Result<OwnedFd, IoError> {
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )?;
    let _ = setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(1, 0));
    Ok(fd)
}

/// One sock_diag request (sequence number `seq`) and its answer.
fn diag_request(
    fd: &OwnedFd,
    seq: u32,
    family: u8,
    src: &SocketAddr,
    dst: &SocketAddr,
) -> Result<Option<PeerSocket>, IoError> {
    let mut req = Vec::with_capacity(NLMSG_HDRLEN + 56);
    req.extend_from_slice(&((NLMSG_HDRLEN + 56) as u32).to_ne_bytes());
    req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(&[family, SockProtocol::Tcp as u8, 0, 0]);
    req.extend_from_slice(&u32::MAX.to_ne_bytes());
    req.extend_from_slice(&sockid(src, dst));
    // Port 0, no multicast group: the kernel.
    sendto(
        fd.as_raw_fd(),
        &req,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )?;
    let mut buf = [0u8; 1024];
    let mut tries = 0;
    let b = loop {
        let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty())?;
        let b = &buf[..n];
        if b.len() < NLMSG_HDRLEN {
            return Err(IoError::new(ErrorKind::InvalidData, "short netlink reply"));
        }
        let got = u32::from_ne_bytes([b[8], b[9], b[10], b[11]]);
        tries += 1;
        if got == seq {
            break b;
        }
        if tries > 8 {
            return Err(IoError::new(
                ErrorKind::InvalidData,
                "no netlink reply to this request",
            ));
        }
    };
    let ty = u16::from_ne_bytes([b[4], b[5]]);
    if ty == NLMSG_ERROR {
        let errno = b
            .get(NLMSG_HDRLEN..NLMSG_HDRLEN + 4)
            .map(|e| -i32::from_ne_bytes([e[0], e[1], e[2], e[3]]))
            .unwrap_or(0);
        // ENOENT: no such socket; anything else: sock_diag is not usable.
        return if errno == Errno::ENOENT as i32 {
            Ok(None)
        } else {
            Err(IoError::from_raw_os_error(errno))
        };
    }
    let at = |o: usize| {
        b.get(NLMSG_HDRLEN + o..NLMSG_HDRLEN + o + 4)
            .map(|x| u32::from_ne_bytes([x[0], x[1], x[2], x[3]]))
    };
    match (ty, at(DIAG_UID_AT), at(DIAG_INODE_AT)) {
        (SOCK_DIAG_BY_FAMILY, Some(uid), Some(inode)) => Ok(Some(PeerSocket {
            uid,
            inode: u64::from(inode),
        })),
        _ => Err(IoError::new(
            ErrorKind::InvalidData,
            "unexpected netlink reply",
        )),
    }
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
pub(crate) fn find_owner(table: &str, peer: &SocketAddr, local: &SocketAddr) -> Option<u32> {
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
    fn sock_diag_finds_the_exact_peer_socket_and_its_holder() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let found = sock_diag_lookup(&s.peer_addr().unwrap(), &s.local_addr().unwrap())
            .expect("sock_diag available on this kernel")
            .expect("the peer socket is known");
        assert_eq!(found.uid, nix::unistd::getuid().as_raw());
        let link = std::fs::read_link(format!("/proc/self/fd/{}", c.as_raw_fd())).unwrap();
        assert_eq!(link.to_string_lossy(), format!("socket:[{}]", found.inode));
        let me = std::process::id() as i32;
        assert_eq!(peer_in_tree(&s, Some(me)), Some(true));
        // A process that does not hold it (a child sleeping) is not the peer.
        let mut kid = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert_eq!(peer_in_tree(&s, Some(kid.id() as i32)), Some(false));
        let _ = kid.kill();
        let _ = kid.wait();
        // A socket nobody has: NOT found, not an error.
        let gone: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(
            sock_diag_lookup(&gone, &s.local_addr().unwrap()).unwrap(),
            None
        );
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
