//! Hostile and broken peers: each is dropped without disturbing the others,
//! and announced lengths never buy memory before the bytes arrive.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use pmix_tools::conn::handshake::{build_connect_ack, Hello, Identity};
use pmix_tools::ops::query;

use crate::support::pdvm::Pdvm;

/// Read until the server closes the socket; the bytes received.
fn read_until_closed(s: &mut TcpStream, secs: u64) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(secs);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return got,
        }
    }
    panic!("server kept the connection open for {secs} s");
}

fn tool_hello() -> Hello {
    Hello {
        identity: Identity::Tool,
        version: "5.0.11".into(),
        bfrops: "v41".into(),
        buffer_kind: 1,
        uid: nix::unistd::geteuid().as_raw(),
        gid: nix::unistd::getegid().as_raw(),
        info_blob: vec![],
    }
}

#[test]
fn garbage_sender_is_dropped_and_others_keep_working() {
    let dvm = Pdvm::start(&["--nodes", "1"]);
    let good = dvm.session();
    assert!(!query::namespaces(&good).unwrap().is_empty());

    // Garbage before any handshake.
    let mut bad = TcpStream::connect(dvm.addr()).unwrap();
    let mut junk = vec![0xffu8; 8];
    junk.extend_from_slice(&200u32.to_le_bytes());
    junk.extend_from_slice(&[0; 4]);
    junk.extend((0..200u32).map(|i| (i * 37 % 251) as u8));
    bad.write_all(&junk).unwrap();
    let reply = read_until_closed(&mut bad, 5);
    assert!(reply.len() <= 4, "a refusal is at most a status: {reply:?}");
    if reply.len() == 4 {
        assert!(i32::from_be_bytes([reply[0], reply[1], reply[2], reply[3]]) < 0);
    }

    // A handshaken tool that then sends an undecodable request gets an
    // error reply; one that breaks the framing is dropped.
    let mut t = TcpStream::connect(dvm.addr()).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    t.write_all(&build_connect_ack(&tool_hello())).unwrap();
    let mut welcome = [0u8; 4 + 256 + 4 + 256 + 4 + 4];
    t.read_exact(&mut welcome).unwrap();
    assert_eq!(&welcome[..4], &[0, 0, 0, 0]);
    let mut msg = Vec::new();
    msg.extend_from_slice(&0i32.to_be_bytes());
    msg.extend_from_slice(&200u32.to_be_bytes());
    msg.extend_from_slice(&3u32.to_be_bytes());
    msg.extend_from_slice(&[0; 4]);
    msg.extend_from_slice(&[0x7f, 0xff, 0xff]);
    t.write_all(&msg).unwrap();
    let mut hdr = [0u8; 16];
    t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    t.read_exact(&mut hdr).unwrap();
    assert_eq!(
        u32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]),
        200,
        "reply on the request's tag"
    );

    // The good session is undisturbed, and new ones are served.
    assert!(!query::namespaces(&good).unwrap().is_empty());
    let again = dvm.session();
    assert!(query::namespaces(&again).unwrap().contains(&again.me().0));
}

#[test]
fn huge_lengths_are_refused_without_allocating() {
    let dvm = Pdvm::start(&["--nodes", "1"]);
    let before = dvm.rss_kib();

    // A connect-ack announcing 4 GiB.
    let mut a = TcpStream::connect(dvm.addr()).unwrap();
    let mut h = vec![0xffu8; 8];
    h.extend_from_slice(&0xffff_fff0u32.to_le_bytes());
    h.extend_from_slice(&[0; 4]);
    a.write_all(&h).unwrap();
    read_until_closed(&mut a, 5);

    // A handshaken tool announcing a 4 GiB request.
    let mut t = TcpStream::connect(dvm.addr()).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    t.write_all(&build_connect_ack(&tool_hello())).unwrap();
    let mut welcome = [0u8; 4 + 256 + 4 + 256 + 4 + 4];
    t.read_exact(&mut welcome).unwrap();
    let mut m = Vec::new();
    m.extend_from_slice(&0i32.to_be_bytes());
    m.extend_from_slice(&101u32.to_be_bytes());
    m.extend_from_slice(&u32::MAX.to_be_bytes());
    m.extend_from_slice(&[0; 4]);
    m.extend_from_slice(&[1, 2, 3]);
    t.write_all(&m).unwrap();
    read_until_closed(&mut t, 5);

    // A packed count of 2^31 items inside a small request.
    let s = dvm.session();
    let mut e = s.request(pmix_tools::proto::cmd::QUERY).unwrap();
    e.raw().extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    let r = s.call(e).unwrap();
    let st: pmix_tools::proto::status::Status = s.decoder(&r).unpack_one().unwrap();
    assert!(!st.is_success());

    let after = dvm.rss_kib();
    assert!(
        after < before + 16 * 1024,
        "pdvm grew from {before} to {after} KiB"
    );
    assert!(!query::namespaces(&s).unwrap().is_empty());
}

#[test]
fn many_idle_tools_are_all_served() {
    let dvm = Pdvm::start(&["--nodes", "1"]);
    let base = dvm.rss_kib();
    let mut held = Vec::new();
    for _ in 0..200 {
        let mut t = TcpStream::connect(dvm.addr()).unwrap();
        t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        t.write_all(&build_connect_ack(&tool_hello())).unwrap();
        let mut welcome = [0u8; 4 + 256 + 4 + 256 + 4 + 4];
        t.read_exact(&mut welcome).unwrap();
        held.push(t);
    }
    let s = dvm.session();
    let ns = query::namespaces(&s).unwrap();
    assert!(ns.len() >= 201, "{}", ns.len());
    let per_conn = (dvm.rss_kib().saturating_sub(base)) * 1024 / 200;
    eprintln!("approximate memory per idle connection: {per_conn} bytes");
    assert!(per_conn < 64 * 1024, "{per_conn} bytes per idle connection");
}
