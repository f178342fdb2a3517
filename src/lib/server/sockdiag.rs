//! The owner of one loopback TCP socket, asked of the kernel directly
//! (netlink `sock_diag`, `SOCK_DIAG_BY_FAMILY` with the exact address
//! pair): one small request instead of reading the whole of
//! `/proc/net/tcp`, which on a busy host (thousands of sockets) costs
//! pdvm 10–20 ms per connecting tool.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use nix::sys::socket::{
    recv, sendto, socket, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType,
};

/// `SOCK_DIAG_BY_FAMILY` (linux/sock_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLM_F_REQUEST`.
const NLM_F_REQUEST: u16 = 1;
/// `NLMSG_ERROR`.
const NLMSG_ERROR: u16 = 2;
/// Length of `struct nlmsghdr`.
const NLMSG_HDR: usize = 16;
/// Offset of `idiag_uid` in `struct inet_diag_msg` (family, state, timer,
/// retrans: 4 bytes; `inet_diag_sockid`: 48; expires, rqueue, wqueue: 12).
const UID_OFFSET: usize = 4 + 48 + 12;

/// The uid that owns the TCP socket whose local end is `src` and remote end
/// `dst`, when the kernel tells; `None` when it cannot be asked (no
/// `sock_diag`) or knows no such socket.
pub fn tcp_owner(src: &SocketAddr, dst: &SocketAddr) -> Option<u32> {
    let family = match (src, dst) {
        (SocketAddr::V4(_), SocketAddr::V4(_)) => libc_af(AddressFamily::Inet),
        (SocketAddr::V6(_), SocketAddr::V6(_)) => libc_af(AddressFamily::Inet6),
        _ => return None,
    };
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )
    .ok()?;
    let req = request(family, src, dst);
    sendto(
        fd.as_raw_fd(),
        &req,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .ok()?;
    // The answer is one message; wait for it at most briefly.
    let tv = nix::sys::time::TimeVal::new(0, 200_000);
    nix::sys::socket::setsockopt(&fd, nix::sys::socket::sockopt::ReceiveTimeout, &tv).ok()?;
    let mut buf = [0u8; 1024];
    let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()).ok()?;
    parse_uid(&buf[..n])
}

fn libc_af(a: AddressFamily) -> u8 {
    a as i32 as u8
}

/// `nlmsghdr` + `inet_diag_req_v2` asking for the one socket `src` → `dst`.
fn request(family: u8, src: &SocketAddr, dst: &SocketAddr) -> Vec<u8> {
    let mut body = Vec::with_capacity(56);
    body.push(family);
    body.push(6); // IPPROTO_TCP
    body.push(0); // idiag_ext
    body.push(0); // pad
    body.extend_from_slice(&u32::MAX.to_ne_bytes()); // every state
    body.extend_from_slice(&src.port().to_be_bytes());
    body.extend_from_slice(&dst.port().to_be_bytes());
    for a in [src, dst] {
        let mut addr = [0u8; 16];
        match a {
            SocketAddr::V4(v4) => addr[..4].copy_from_slice(&v4.ip().octets()),
            SocketAddr::V6(v6) => addr.copy_from_slice(&v6.ip().octets()),
        }
        body.extend_from_slice(&addr);
    }
    body.extend_from_slice(&0u32.to_ne_bytes()); // idiag_if
    body.extend_from_slice(&u32::MAX.to_ne_bytes()); // INET_DIAG_NOCOOKIE
    body.extend_from_slice(&u32::MAX.to_ne_bytes());
    let len = (NLMSG_HDR + body.len()) as u32;
    let mut msg = Vec::with_capacity(len as usize);
    msg.extend_from_slice(&len.to_ne_bytes());
    msg.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    msg.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // seq
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    msg.extend_from_slice(&body);
    msg
}

/// The uid in a `SOCK_DIAG_BY_FAMILY` answer; `None` for an error answer.
fn parse_uid(msg: &[u8]) -> Option<u32> {
    let ty = u16::from_ne_bytes(msg.get(4..6)?.try_into().ok()?);
    if ty == NLMSG_ERROR || ty != SOCK_DIAG_BY_FAMILY {
        return None;
    }
    let at = NLMSG_HDR + UID_OFFSET;
    Some(u32::from_ne_bytes(msg.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn finds_our_own_loopback_socket() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let (peer, local) = (s.peer_addr().unwrap(), s.local_addr().unwrap());
        assert_eq!(
            tcp_owner(&peer, &local),
            Some(nix::unistd::getuid().as_raw())
        );
        // No such socket: nothing.
        let gone: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(tcp_owner(&gone, &local), None);
        drop(c);
    }

    #[test]
    fn finds_another_users_socket() {
        // As root, a connection made by `nobody` (65534) must be reported
        // as nobody's, not ours: the uid is read at the right place.
        if !nix::unistd::getuid().is_root() {
            return;
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let script = format!(
            "import socket,time; s=socket.create_connection(('127.0.0.1',{port})); time.sleep(3)"
        );
        let mut child = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(["/usr/bin/python3", "-c", &script])
            .current_dir("/")
            .spawn()
            .expect("setpriv");
        l.set_nonblocking(true).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let s = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Err(e) => {
                    let _ = child.kill();
                    panic!("nobody's connection never came: {e}");
                }
            }
        };
        let (peer, local) = (s.peer_addr().unwrap(), s.local_addr().unwrap());
        assert_eq!(tcp_owner(&peer, &local), Some(65534));
        let _ = child.kill();
        let _ = child.wait();
    }
}
