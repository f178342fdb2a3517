//! A broken or hostile server cannot crash, hang or exhaust the library:
//! scripted fake servers on loopback answer the handshake and then misbehave.

use crate::support::fake::tool_welcome;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use pmix_tools::conn::discover::Target;
use pmix_tools::conn::frame::{Header, HEADER_LEN};
use pmix_tools::conn::{Connection, Identity, ServerUri};
use pmix_tools::ops::{self, Session};
use pmix_tools::proto::status::Status;
use proptest::prelude::*;

/// Start a fake server running `script` on its one connection.
fn fake(script: impl FnOnce(TcpStream) + Send + 'static) -> Target {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            script(s)
        }
    });
    Target {
        uri: ServerUri::parse(&format!("fake@0.0;tcp4://127.0.0.1:{port}")).unwrap(),
        version: Some("5.0.11".into()),
        identity: Identity::Tool,
        found_by: "test".into(),
        holder_of: None,
    }
}

/// Keep `s` open answering nothing until the client closes it (a stalled
/// server that outlasts any client deadline).
fn silent_until_closed(mut s: TcpStream) {
    let _ = std::io::copy(&mut s, &mut std::io::sink());
}

fn welcomed(then: impl FnOnce(TcpStream) + Send + 'static) -> Target {
    fake(move |mut s| {
        assert!(crate::support::read_connect_ack(&mut s), "no connect-ack");
        s.write_all(&tool_welcome()).unwrap();
        then(s)
    })
}

#[test]
fn a_server_that_stops_answering_times_out_at_the_request_deadline() {
    let t = welcomed(silent_until_closed);
    let mut sess = Session::from_connection(Connection::open(t, Duration::from_secs(2)).unwrap());
    sess.set_timeout(Duration::from_millis(300));
    let start = Instant::now();
    let e = ops::query::namespaces(&sess).unwrap_err();
    // Our 300 ms deadline, not the server (which stays silent until we
    // close; a close would be a lost connection), ended the request.
    assert_eq!(e.status, Status::ERR_TIMEOUT);
    eprintln!(
        "FIGURE request deadline 300 ms: failed after {:?}",
        start.elapsed()
    );
}

#[test]
fn a_server_that_closes_mid_request_fails_it_at_once() {
    let t = welcomed(|mut s| {
        let mut b = [0u8; 64];
        let _ = s.read(&mut b);
        drop(s)
    });
    let sess = Session::from_connection(Connection::open(t, Duration::from_secs(2)).unwrap());
    let start = Instant::now();
    let e = ops::query::namespaces(&sess).unwrap_err();
    // Lost, not timed out (the 30 s request deadline did not decide).
    assert_eq!(e.status, Status::ERR_LOST_CONNECTION, "{e}");
    eprintln!(
        "FIGURE closed mid-request: failed after {:?}",
        start.elapsed()
    );
}

#[test]
fn a_silent_server_cannot_hang_the_handshake() {
    let t = fake(silent_until_closed);
    let start = Instant::now();
    let e = Connection::open(t, Duration::from_millis(300))
        .err()
        .expect("must fail");
    // Our deadline ended it (the server stays silent until we close).
    assert_eq!(e.status, Status::ERR_TIMEOUT, "{e}");
    eprintln!(
        "FIGURE handshake deadline 300 ms: failed after {:?}",
        start.elapsed()
    );
}

#[test]
fn a_lying_length_costs_nothing_and_fails_cleanly() {
    let t = welcomed(|mut s| {
        let mut b = [0u8; 64];
        let _ = s.read(&mut b);
        // reply on tag 100 announcing 60 MiB, send 10 bytes, close
        let h = Header {
            pindex: 0,
            tag: 100,
            nbytes: 60 << 20,
        }
        .encode();
        let _ = s.write_all(&h);
        let _ = s.write_all(&[1; 10]);
    });
    let sess = Session::from_connection(Connection::open(t, Duration::from_secs(2)).unwrap());
    let e = ops::query::namespaces(&sess).unwrap_err();
    assert_eq!(e.status, Status::ERR_LOST_CONNECTION, "{e}");
}

#[test]
fn an_oversized_announcement_is_refused() {
    let t = welcomed(|mut s| {
        let mut b = [0u8; 64];
        let _ = s.read(&mut b);
        let h = Header {
            pindex: 0,
            tag: 100,
            nbytes: u32::MAX,
        }
        .encode();
        let _ = s.write_all(&h);
        // Open until the client gives up on it: its end is no lost
        // connection.
        silent_until_closed(s);
    });
    let sess = Session::from_connection(Connection::open(t, Duration::from_secs(2)).unwrap());
    let e = ops::query::namespaces(&sess).unwrap_err();
    assert_eq!(e.status, Status::ERR_UNPACK_FAILURE, "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Random bytes as the handshake reply: a result, never a panic or hang.
    #[test]
    fn random_handshake_replies_are_handled(reply in proptest::collection::vec(any::<u8>(), 0..700)) {
        let t = fake(move |mut s| {
            assert!(crate::support::read_connect_ack(&mut s), "no connect-ack");
            let _ = s.write_all(&reply);
        });
        let _ = Connection::open(t, Duration::from_millis(500));
    }

    /// Random bytes as a query reply payload: a typed error, never a panic.
    #[test]
    fn random_reply_payloads_are_typed_errors(payload in proptest::collection::vec(any::<u8>(), 0..200)) {
        let p2 = payload.clone();
        let t = welcomed(move |mut s| {
            let mut h = [0u8; HEADER_LEN];
            if s.read_exact(&mut h).is_err() { return; }
            let n = Header::decode(&h).nbytes as usize;
            let mut b = vec![0u8; n];
            let _ = s.read_exact(&mut b);
            let tag = Header::decode(&h).tag;
            let _ = s.write_all(&Header { pindex: 0, tag, nbytes: p2.len() as u32 }.encode());
            let _ = s.write_all(&p2);
            // Closed once the client has taken the reply: its next
            // request (the goodbye) or its close.
            let _ = s.read_exact(&mut h);
        });
        let sess = Session::from_connection(Connection::open(t, Duration::from_secs(2)).unwrap());
        // Either a (garbage-tolerant) answer or a typed error; reaching here is the point.
        if let Err(e) = ops::query::namespaces(&sess) {
            prop_assert!(!e.status.is_success());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    /// Unsolicited messages (events, forwarded output) from a hostile peer
    /// decode to a value or a typed error, never a panic.
    #[test]
    fn random_notifications_and_output_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        for wire in pmix_tools::codec::WireVersion::all() {
            let mut d = pmix_tools::codec::Decoder::new(&bytes, wire);
            let _ = ops::events::decode_notification(&mut d);
            let mut d = pmix_tools::codec::Decoder::new(&bytes, wire);
            let _ = ops::iof::decode_iof(&mut d);
        }
    }
}
