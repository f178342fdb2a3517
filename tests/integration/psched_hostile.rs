//! psched against a hostile or broken DVM: a fake server on loopback (a
//! thread of this test speaking just enough of the protocol) that never
//! answers the handshake, closes in the middle of a frame, announces a
//! huge frame, or sends garbage requests. psched neither crashes nor hangs
//! nor grows: it answers what it can, drops the connection where it must,
//! attaches again, and stops promptly on SIGTERM.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::time::Duration;

use crate::support;
use crate::support::fake::scheduler_welcome;
use pmix_tools::codec::{AllocDirective, Cmd, Encoder, Size, WireVersion};
use pmix_tools::conn::frame::{encode_frame, FrameDecoder, Header};
use pmix_tools::psched::wire::SESSION_CTRL;

/// Bound on psched's resident memory whatever the DVM sends.
const RSS_BOUND_KIB: u64 = 100 * 1024;
/// First tag psched uses for its own messages (its answers use the DVM's).
const OWN_TAG_BASE: u32 = 0xF000_0000;

/// A fake DVM on loopback running `script` on each connection; its
/// `--uri` and a count of the connections accepted.
fn fake_dvm(script: impl Fn(TcpStream) + Send + Sync + 'static) -> (String, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&accepted);
    let script = Arc::new(script);
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let script = Arc::clone(&script);
            std::thread::spawn(move || script(s));
        }
    });
    (format!("fake@0.0;tcp4://127.0.0.1:{port}"), accepted)
}

/// [`fake_dvm`] whose script runs after the handshake.
fn welcoming_dvm(script: impl Fn(TcpStream) + Send + Sync + 'static) -> (String, Arc<AtomicU64>) {
    fake_dvm(move |mut s| {
        if support::read_connect_ack(&mut s) && s.write_all(&scheduler_welcome()).is_ok() {
            script(s);
        }
    })
}

/// psched attached (`--uri`) to `uri`, over one node, retrying every
/// second.
fn psched(uri: &str, dir: &std::path::Path) -> Child {
    let mut cmd = Command::new(support::cargo_bin("psched"));
    support::scrub_pmix_env(&mut cmd);
    cmd.args(["--nodes", "n1", "--retry", "1", "--uri", uri, "--ledger"])
        .arg(dir.join("ledger.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start psched")
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Wait (bounded, 60 s) until the fake DVM accepted `n` connections,
/// asserting psched stays alive meanwhile; psched's peak memory.
fn wait_attempts(p: &mut Child, accepted: &AtomicU64, n: u64) -> u64 {
    let mut peak = 0;
    let attached = support::wait::within(Duration::from_secs(60), || {
        if accepted.load(Ordering::SeqCst) >= n {
            return true;
        }
        assert!(
            matches!(p.try_wait(), Ok(None)),
            "psched exited: {:?}",
            p.try_wait()
        );
        peak = peak.max(rss_kib(p.id()));
        false
    });
    assert!(attached, "psched did not attach again");
    peak
}

/// SIGTERM, then psched must be gone within 15 s (the handshake's 10 s
/// time-out is the longest wait it may be in) with exit 0; its stderr.
fn stop(mut p: Child) -> String {
    let pid = nix::unistd::Pid::from_raw(p.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let st = support::wait_exit(&mut p, Duration::from_secs(15));
    let mut err = String::new();
    if let Some(mut e) = p.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert_eq!(st.code(), Some(0), "psched stopped cleanly: {err}");
    err
}

/// A DVM that accepts and never answers the handshake: psched gives up on
/// it (its handshake time-out), attaches again, and stops on SIGTERM.
#[test]
fn a_dvm_that_never_answers_is_left_and_retried() {
    let dir = support::unique_tmpdir("psched-hostile");
    let (uri, accepted) = fake_dvm(|mut s| {
        let mut b = [0u8; 4096];
        while matches!(s.read(&mut b), Ok(n) if n > 0) {}
    });
    let mut p = psched(&uri, dir.path());
    let peak = wait_attempts(&mut p, &accepted, 2);
    assert!(peak < RSS_BOUND_KIB, "psched's RSS {peak} KiB");
    stop(p);
}

/// A DVM that closes in the middle of a frame (half a header, then half a
/// payload), and one that announces a frame of 4 GiB: psched drops each
/// connection and attaches again, its memory bounded.
#[test]
fn a_dvm_closing_mid_frame_or_announcing_a_huge_frame_is_survived() {
    let dir = support::unique_tmpdir("psched-hostile");
    let (uri, accepted) = welcoming_dvm(|mut s| {
        let frame = encode_frame(0, 100, &[17u8; 64]).expect("frame");
        let _ = s.write_all(&frame[..8]);
    });
    let mut p = psched(&uri, dir.path());
    wait_attempts(&mut p, &accepted, 2);
    let err_mid = stop(p);
    let (uri, accepted) = welcoming_dvm(|mut s| {
        let frame = encode_frame(0, 100, &[17u8; 64]).expect("frame");
        let _ = s.write_all(&frame[..40]);
    });
    let mut p = psched(&uri, dir.path());
    wait_attempts(&mut p, &accepted, 2);
    stop(p);
    let (uri, accepted) = welcoming_dvm(|mut s| {
        let huge = Header {
            pindex: 0,
            tag: 100,
            nbytes: u32::MAX,
        };
        let _ = s.write_all(&huge.encode());
        let _ = s.write_all(&[0u8; 1 << 16]);
        let mut b = [0u8; 4096];
        while matches!(s.read(&mut b), Ok(n) if n > 0) {}
    });
    let mut p = psched(&uri, dir.path());
    let peak = wait_attempts(&mut p, &accepted, 2);
    assert!(peak < RSS_BOUND_KIB, "psched's RSS {peak} KiB");
    let err = stop(p);
    assert!(err_mid.contains("went away"), "{err_mid}");
    assert!(err.contains("went away"), "{err}");
}

/// Garbage requests, each answered (on its own tag) and none crashing psched.
fn garbage() -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new(), vec![17], vec![SESSION_CTRL], vec![0xFF; 3]];
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&Cmd(17)).expect("cmd");
    e.pack_one(&AllocDirective(1)).expect("directive");
    e.pack_one(&Size(1 << 60)).expect("a huge info count");
    out.push(e.into_bytes());
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&Cmd(17)).expect("cmd");
    e.pack_one(&AllocDirective(99))
        .expect("an unknown directive");
    e.pack_one(&Size(0)).expect("no infos");
    out.push(e.into_bytes());
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for len in [1usize, 7, 64, 1000, 60_000] {
        out.push(
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect(),
        );
    }
    out
}

/// Send every garbage request (tags 100…), then report on `tx` the tags
/// psched answered; keep the connection open until psched leaves.
fn send_garbage(mut s: TcpStream, tx: &Sender<Vec<u32>>) {
    let reqs = garbage();
    for (i, g) in reqs.iter().enumerate() {
        let f = encode_frame(0, 100 + i as u32, g).expect("frame");
        if s.write_all(&f).is_err() {
            return;
        }
    }
    let mut d = FrameDecoder::new(1 << 20);
    let mut answered = Vec::new();
    let mut b = [0u8; 4096];
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    while answered.len() < reqs.len() {
        while let Ok(Some((h, _))) = d.next_frame() {
            if h.tag < OWN_TAG_BASE {
                answered.push(h.tag);
            }
        }
        if answered.len() >= reqs.len() {
            break;
        }
        match s.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => d.feed(&b[..n]),
        }
    }
    let _ = tx.send(answered);
    let _ = s.set_read_timeout(None);
    while matches!(s.read(&mut b), Ok(n) if n > 0) {}
}

/// Garbage requests (empty, truncated, a 2^60 info count, an unknown
/// directive, random bytes up to 60 kB): psched answers every one with an
/// error status on its tag and stays attached.
#[test]
fn garbage_requests_are_answered_and_survived() {
    let dir = support::unique_tmpdir("psched-hostile");
    let (tx, rx) = channel();
    let tx = std::sync::Mutex::new(tx);
    let (uri, accepted) = welcoming_dvm(move |s| {
        let tx = tx.lock().expect("sender").clone();
        send_garbage(s, &tx);
    });
    let mut p = psched(&uri, dir.path());
    let mut answered = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the fake DVM reports");
    answered.sort_unstable();
    let want: Vec<u32> = (100..100 + garbage().len() as u32).collect();
    assert_eq!(answered, want, "every request answered");
    assert!(matches!(p.try_wait(), Ok(None)), "psched still runs");
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "and stayed attached");
    assert!(rss_kib(p.id()) < RSS_BOUND_KIB);
    stop(p);
}

/// A frame carrying one allocation request: `directive` for `nodes` nodes
/// (none: no count), naming `id` (if any), with a time limit in seconds.
fn alloc_frame(tag: u32, pindex: i32, directive: u8, nodes: u64, id: Option<&str>) -> Vec<u8> {
    use pmix_tools::codec::{Info, Value};
    use pmix_tools::proto::keys;
    let mut infos = Vec::new();
    if nodes > 0 {
        infos.push(Info::new(keys::ALLOC_NUM_NODES, Value::Uint64(nodes)));
    }
    if let Some(id) = id {
        infos.push(Info::new(keys::ALLOC_ID, id));
    }
    infos.push(Info::new(keys::ALLOC_TIME, "0:00:01:30"));
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&Cmd(17)).expect("cmd");
    e.pack_one(&AllocDirective(directive)).expect("directive");
    pmix_tools::codec::attrs::write_infos(&mut e, &infos).expect("infos");
    encode_frame(pindex, tag, &e.into_bytes()).expect("frame")
}

/// psched's decisions over many random request streams (NEW, EXTEND,
/// RELEASE, REQ_CANCEL of real and made-up ids, time passing, the DVM
/// dropping grants), some with bytes flipped: no node is ever granted
/// twice (`drive_stream` checks it after every frame), and the well-formed
/// ones are all served.
#[test]
fn random_request_streams_never_grant_a_node_twice() {
    use pmix_tools::psched::drive::drive_stream;
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut served = 0;
    for round in 0..300 {
        let mut data = vec![0u8];
        let n = 1 + next(40) as usize;
        for i in 0..n {
            let id = format!("alloc.{}", next(8));
            let named = (next(3) > 0).then_some(id.as_str());
            let d = 1 + next(5) as u8;
            data.extend(alloc_frame(
                100 + i as u32,
                next(90) as i32,
                d,
                next(4),
                named,
            ));
        }
        if round % 3 == 0 {
            for _ in 0..1 + next(8) {
                let at = 1 + next(data.len() as u64 - 1) as usize;
                data[at] ^= 1 << next(8);
            }
        } else {
            let r = drive_stream(&data);
            assert_eq!(r.frames, n, "every frame read");
            served += r.sent;
            continue;
        }
        drive_stream(&data);
    }
    assert!(served > 0, "requests were served");
    for g in garbage() {
        let f = encode_frame(1, 100, &g).expect("frame");
        drive_stream(&[&[0u8][..], &f].concat());
    }
}

/// The port of psched's status socket, once its URI file is written.
fn status_port(uri: &std::path::Path) -> u16 {
    support::wait::value_within(Duration::from_secs(30), || {
        let line = std::fs::read_to_string(uri).unwrap_or_default();
        line.lines()
            .next()
            .and_then(|l| l.rsplit(':').next())
            .and_then(|p| p.parse().ok())
    })
    .expect("no status URI written")
}

/// Whether the peer closed `s` (read returns end of file or an error
/// other than a time-out) within 20 s.
fn closed_by_peer(s: &mut TcpStream) -> bool {
    let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => {
                return e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::TimedOut
            }
        }
    }
}

/// A client of the status socket past the handshake.
fn welcomed_client(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.write_all(&Header::encode_connect(10)).expect("header");
    s.write_all(&[0u8; 10]).expect("body");
    let mut w = vec![0u8; 528];
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    s.read_exact(&mut w).expect("the tool welcome");
    assert_eq!(&w[..4], &[0, 0, 0, 0], "status 0");
    s
}

/// Hostile tools on psched's status socket (`--status-uri`): a 4 GiB
/// connect-ack, a 4 GiB frame, garbage requests. Each oversized one is
/// dropped, each garbage request answered on its tag, and `pwatch --status`
/// still gets psched's queue afterwards.
#[test]
fn hostile_status_clients_are_dropped_or_answered() {
    let dir = support::unique_tmpdir("psched-hostile");
    let (uri, _accepted) = welcoming_dvm(|mut s| {
        let mut b = [0u8; 4096];
        while matches!(s.read(&mut b), Ok(n) if n > 0) {}
    });
    let status_uri = dir.path().join("psched.uri");
    let mut cmd = Command::new(support::cargo_bin("psched"));
    support::scrub_pmix_env(&mut cmd);
    let mut p = cmd
        .args(["--nodes", "n1,n2", "--uri", &uri, "--ledger"])
        .arg(dir.path().join("ledger.json"))
        .arg("--status-uri")
        .arg(&status_uri)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start psched");
    let port = status_port(&status_uri);
    let mut a = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    a.write_all(&Header::encode_connect(u32::MAX))
        .expect("header");
    assert!(closed_by_peer(&mut a), "a 4 GiB connect-ack is dropped");
    let mut b = welcomed_client(port);
    let huge = Header {
        pindex: 0,
        tag: 100,
        nbytes: u32::MAX,
    };
    b.write_all(&huge.encode()).expect("huge frame");
    assert!(closed_by_peer(&mut b), "a 4 GiB frame is dropped");
    let mut c = welcomed_client(port);
    let reqs = garbage();
    for (i, g) in reqs.iter().enumerate() {
        c.write_all(&encode_frame(0, 100 + i as u32, g).expect("frame"))
            .expect("send");
    }
    let mut d = FrameDecoder::new(1 << 20);
    let mut tags = Vec::new();
    let mut buf = [0u8; 4096];
    while tags.len() < reqs.len() {
        while let Ok(Some((h, _))) = d.next_frame() {
            tags.push(h.tag);
        }
        if tags.len() >= reqs.len() {
            break;
        }
        let n = c.read(&mut buf).expect("psched answers");
        assert!(n > 0, "psched closed after {tags:?}");
        d.feed(&buf[..n]);
    }
    let want: Vec<u32> = (100..100 + reqs.len() as u32).collect();
    assert_eq!(tags, want, "every garbage request answered, in order");
    let o = support::run_with_timeout(
        Command::new(support::cargo_bin("pwatch"))
            .args(["--status", "--json", "--what", "scheduler", "--uri"])
            .arg(format!("file:{}", status_uri.display()))
            .env_remove("PMIX_TOOLS_URI"),
        60,
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::show(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["scheduler"][0]["nodes"], 2, "{v}");
    assert!(matches!(p.try_wait(), Ok(None)), "psched still runs");
    assert!(rss_kib(p.id()) < RSS_BOUND_KIB);
    stop(p);
}
