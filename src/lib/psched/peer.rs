//! Who is at the other end of a loopback TCP connection: the kernel's
//! socket table (`/proc/net/tcp`, `/proc/net/tcp6`) lists the peer's
//! socket, with its owner's uid, under the addresses seen from its side.

use std::net::{IpAddr, SocketAddr};

/// `addr` as the socket table writes it (`0100007F:1F90`).
fn table_form(addr: SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V4(ip) => format!(
            "{:08X}:{:04X}",
            u32::from_ne_bytes(ip.octets()),
            addr.port()
        ),
        IpAddr::V6(ip) => {
            let o = ip.octets();
            let words: String = o
                .chunks(4)
                .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
                .collect();
            format!("{words}:{:04X}", addr.port())
        }
    }
}

/// The uid owning the socket connected from `peer` to our `local`.
pub fn uid_of(local: SocketAddr, peer: SocketAddr) -> Option<u32> {
    let (theirs, ours) = (table_form(peer), table_form(local));
    let file = if peer.is_ipv4() {
        "/proc/net/tcp"
    } else {
        "/proc/net/tcp6"
    };
    let table = std::fs::read_to_string(file).ok()?;
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.get(1) == Some(&theirs.as_str()) && f.get(2) == Some(&ours.as_str()))
            .then(|| f.get(7)?.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn the_peer_of_a_loopback_connection_is_us() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let uid = uid_of(s.local_addr().unwrap(), s.peer_addr().unwrap());
        assert_eq!(uid, Some(nix::unistd::geteuid().as_raw()));
        drop(c);
    }
}
