//! The tools under a bad server, as a user runs them: a server flooding
//! notifications cannot grow a tool's memory without bound, a server
//! dripping its handshake or stopped with SIGSTOP makes a tool exit 8
//! (time-out) naming what it waited for, a status query answered with an
//! error or not at all is a failure, a 10,000-argument command line
//! launches, and rendezvous files of other users are not trusted.
//!
//! The fake servers are threads of this test speaking just enough of the
//! protocol (the connect-ack, the tool welcome, frames).

use crate::support;
use crate::support::fake::tool_welcome;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::tool::{Tmpdir, Uri};
use crate::support::wait;
use crate::support::{show, text, tool};
use pmix_tools::codec::{Encoder, WireVersion};
use pmix_tools::conn::frame::{encode_frame, FrameDecoder, TAG_NOTIFY};
use pmix_tools::proto::status::Status;

/// Bound on a tool's resident memory while a server floods it.
const RSS_BOUND_KIB: u64 = 200 * 1024;

/// A fake server on loopback running `script` on each connection (on a
/// thread of its own); returns its `--uri` value and a count of the
/// connections it accepted.
fn fake_server(script: impl Fn(TcpStream) + Send + Sync + 'static) -> (String, Arc<AtomicU64>) {
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

/// [`fake_server`] whose script starts after the handshake (connect-ack
/// read, tool welcome sent), with a decoder for what the tool sends next.
fn welcomed_server(
    script: impl Fn(TcpStream, FrameDecoder) + Send + Sync + 'static,
) -> (String, Arc<AtomicU64>) {
    fake_server(move |mut s| {
        if support::read_connect_ack(&mut s) && s.write_all(&tool_welcome()).is_ok() {
            script(s, FrameDecoder::new(1 << 20));
        }
    })
}

/// A server that completes the handshake, then reads every request and
/// answers none, until the tool leaves.
fn silent_server() -> String {
    welcomed_server(|mut s, mut d| while next_request(&mut s, &mut d).is_some() {}).0
}

/// Read frames until one with a tag of the request/reply space arrives;
/// returns its tag (`None` when the tool went away).
fn next_request(s: &mut TcpStream, d: &mut FrameDecoder) -> Option<u32> {
    let mut buf = [0u8; 4096];
    loop {
        while let Ok(Some((h, _))) = d.next_frame() {
            if h.tag >= 100 {
                return Some(h.tag);
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => d.feed(&buf[..n]),
        }
    }
}

fn status_reply(st: Status) -> Vec<u8> {
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&st).expect("pack a status");
    e.into_bytes()
}

/// Wait for `child` (stdout and stderr piped) until `timeout`, killing it
/// then; its output.
fn finish(mut child: Child, timeout: Duration) -> std::process::Output {
    let end = Instant::now() + timeout;
    let (status, _) = support::wait_until(&mut child, end);
    let status = match status {
        Some(st) => st,
        None => {
            let _ = child.kill();
            child.wait().expect("wait for the killed tool")
        }
    };
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_end(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_end(&mut stderr);
    }
    std::process::Output {
        status,
        stdout,
        stderr,
    }
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Sample the resident memory of `child` (at every step of the wait)
/// until `window` has passed or it exits; the largest sample.
fn peak_rss_while(child: &mut Child, window: Duration) -> u64 {
    let mut peak = 0;
    wait::within(window, || {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        if let Some(kib) = rss_kib(child.id()) {
            peak = peak.max(kib);
        }
        false
    });
    peak
}

/// A server that welcomes a tool and then sends notifications as fast as
/// the tool takes them (64 KiB each), never answering anything; counts
/// the bytes it managed to send.
fn flooding_server(sent: Arc<AtomicU64>, stop: Arc<AtomicBool>) -> String {
    let (uri, _) = welcomed_server(move |mut s, _| {
        let frame = encode_frame(0, TAG_NOTIFY, &vec![0x5a; 64 * 1024]).expect("frame");
        let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
        while !stop.load(Ordering::SeqCst) {
            match s.write_all(&frame) {
                Ok(()) => {
                    sent.fetch_add(frame.len() as u64, Ordering::SeqCst);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return,
            }
        }
    });
    uri
}

#[test]
fn a_flooding_server_cannot_grow_pwatch_and_its_query_fails_cleanly() {
    let sent = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let uri = flooding_server(Arc::clone(&sent), Arc::clone(&stop));
    let mut child = tool(&Uri(&uri), "pwatch")
        .args(["--status", "--json"])
        .env("PMIX_TOOLS_TIMEOUT", "20")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pwatch");
    let peak = peak_rss_while(&mut child, Duration::from_secs(20));
    let out = finish(child, Duration::from_secs(30));
    stop.store(true, Ordering::SeqCst);
    eprintln!(
        "FIGURE flood vs pwatch --status: peak RSS {peak} KiB, server sent {} MB",
        sent.load(Ordering::SeqCst) / 1_000_000
    );
    assert!(peak > 0, "no memory sample of pwatch was taken");
    assert!(
        peak < RSS_BOUND_KIB,
        "pwatch grew to {peak} KiB under a notification flood (bound {RSS_BOUND_KIB} KiB)"
    );
    // The query's reply is stuck behind a full queue: a clean, typed
    // failure, never a success with empty tables.
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("PMIX_ERR_OUT_OF_RESOURCE") || err.contains("unsolicited"),
        "{}",
        show(&out)
    );
}

#[test]
fn a_flooding_server_cannot_grow_a_waiting_palloc() {
    let sent = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let uri = flooding_server(Arc::clone(&sent), Arc::clone(&stop));
    let mut child = tool(&Uri(&uri), "palloc")
        .args(["-N", "1", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start palloc");
    let peak = peak_rss_while(&mut child, Duration::from_secs(6));
    let before_int = sent.load(Ordering::SeqCst);
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "palloc must still be waiting for its grant"
    );
    // Ctrl-C: palloc withdraws its queued request and exits 130.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let out = finish(child, Duration::from_secs(30));
    stop.store(true, Ordering::SeqCst);
    eprintln!(
        "FIGURE flood vs waiting palloc: peak RSS {peak} KiB, server sent {} MB while palloc waited",
        before_int / 1_000_000
    );
    assert!(peak > 0, "no memory sample of palloc was taken");
    assert!(
        peak < RSS_BOUND_KIB,
        "palloc grew to {peak} KiB under a notification flood (bound {RSS_BOUND_KIB} KiB)"
    );
    assert!(
        before_int > 0,
        "the fake server sent nothing: the test did not flood"
    );
    assert_eq!(out.status.code(), Some(130), "{}", show(&out));
}

#[test]
fn a_dripping_handshake_times_out_with_exit_8() {
    let (uri, _) = fake_server(|mut s| {
        if !support::read_connect_ack(&mut s) {
            return;
        }
        // One byte of the welcome every 200 ms (the slow writer is the
        // subject): each read succeeds, the whole would take almost two
        // minutes.
        for b in tool_welcome() {
            if s.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let out = support::run_with_timeout(
        tool(&Uri(&uri), "pwatch")
            .args(["--status"])
            .env("PMIX_TOOLS_TIMEOUT", "2"),
        30,
    );
    assert_eq!(out.status.code(), Some(8), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(err.contains("handshake"), "names what it waited for: {err}");
    assert!(!err.contains("os error"), "{err}");
}

#[test]
fn a_stopped_pdvm_makes_new_tools_time_out_not_fail_to_connect() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let pid = nix::unistd::Pid::from_raw(pdvm.pid as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("SIGSTOP pdvm");
    let out = support::try_run_with_timeout(
        pdvm.tool("pwatch")
            .args(["--status"])
            .env("PMIX_TOOLS_TIMEOUT", "2"),
        Duration::from_secs(30),
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).expect("SIGCONT pdvm");
    let out = out.unwrap_or_else(|o| panic!("pwatch hung on a stopped pdvm: {}", show(&o)));
    assert_eq!(out.status.code(), Some(8), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(err.contains("no answer from the DVM"), "{err}");
    assert!(!err.contains("os error 11"), "{err}");
    assert!(!err.contains("Start one"), "no 'start one' hint: {err}");
    pdvm.stop();
}

/// A DVM that stops answering while a job runs (PRRTE master can wedge so,
/// docs/conformance.md D5) ends pspawn with exit 8 after the request
/// deadline, naming the job, instead of leaving it waiting for ever.
#[test]
fn pspawn_ends_with_exit_8_when_the_dvm_stops_answering_mid_job() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let pid = nix::unistd::Pid::from_raw(pdvm.pid as i32);
    let mark = pdvm.tmpdir.path().join("job-started");
    let script = format!("touch {}; exec sleep 60", mark.display());
    let child = pdvm
        .tool("pspawn")
        .args(["-n", "1", "sh", "-c", &script])
        .env("PMIX_TOOLS_TIMEOUT", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pspawn");
    // Stop the DVM once the job runs.
    wait::eventually_within("the job has started", Duration::from_secs(20), || {
        mark.exists()
    });
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("SIGSTOP pdvm");
    let out = support::wait_output(child, Duration::from_secs(60));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).expect("SIGCONT pdvm");
    assert_eq!(out.status.code(), Some(8), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(err.contains("stopped answering"), "{err}");
    assert!(err.contains("end is unknown"), "{err}");
    pdvm.stop();
}

#[test]
fn a_status_query_answered_with_an_error_is_a_failure() {
    let (uri, _) = welcomed_server(|mut s, mut d| {
        // Every request (queries, the goodbye) is answered PMIX_ERROR.
        while let Some(tag) = next_request(&mut s, &mut d) {
            let reply = encode_frame(0, tag, &status_reply(Status::ERROR)).expect("frame");
            if s.write_all(&reply).is_err() {
                return;
            }
        }
    });
    let out =
        support::run_with_timeout(tool(&Uri(&uri), "pwatch").args(["--status", "--json"]), 60);
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("PMIX_ERROR"),
        "says what the DVM answered: {}",
        show(&out)
    );
}

#[test]
fn a_status_query_never_answered_times_out_naming_the_query() {
    let uri = silent_server();
    let out = support::run_with_timeout(
        tool(&Uri(&uri), "pwatch")
            .args(["--status"])
            .env("PMIX_TOOLS_TIMEOUT", "2"),
        60,
    );
    assert_eq!(out.status.code(), Some(8), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(err.contains("no answer from the DVM to the query"), "{err}");
}

#[test]
fn pspawn_launches_a_command_line_of_10000_arguments() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let args: Vec<String> = (0..10_000).map(|i| format!("arg{i:06}")).collect();
    let total: usize = args.iter().map(|a| a.len() + 1).sum();
    assert!(total > 64 * 1024, "the command line must exceed 64 KB");
    let out = support::run_with_timeout(
        pdvm.tool("pspawn")
            .args(["-n", "1", "/bin/sh", "-c", "echo $# ${10000}", "sh"])
            .args(&args),
        60,
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        text(&out.stdout).trim(),
        "10000 arg009999",
        "{}",
        show(&out)
    );
    pdvm.stop();
}

/// A rendezvous file pointing at `uri`, as a PMIx server writes it.
fn write_rendezvous(path: &std::path::Path, uri: &str) {
    let pid = std::process::id();
    std::fs::write(path, format!("{uri}\nv5.0.11\n{pid}\n")).expect("write rendezvous");
}

#[test]
fn rendezvous_files_of_other_users_or_writable_by_others_are_skipped() {
    use std::os::unix::fs::PermissionsExt;
    // A server that would answer whoever came: it must see nobody.
    let (uri, accepted) = fake_server(|mut s| {
        if support::read_connect_ack(&mut s) {
            let _ = s.write_all(&tool_welcome());
        }
    });
    let host = support::short_hostname();

    // Writable by others: planted or not, anyone could have rewritten it.
    let open = support::unique_tmpdir("rdv-open");
    let file = open.path().join(format!("pmix.{host}.tool"));
    write_rendezvous(&file, &uri);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let out = support::run_with_timeout(
        tool(&Tmpdir(open.path()), "pwatch").args(["--status", "-v"]),
        30,
    );
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(err.contains("untrusted"), "{err}");
    assert!(err.contains("writable by group or others"), "{err}");

    // In a directory others may write to (without the sticky bit).
    let shared = support::unique_tmpdir("rdv-dir");
    let sub = shared.path().join("prte.1");
    std::fs::create_dir(&sub).expect("mkdir");
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o777)).expect("chmod dir");
    let file = sub.join(format!("pmix.{host}.tool"));
    write_rendezvous(&file, &uri);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let out = support::run_with_timeout(
        tool(&Tmpdir(shared.path()), "pwatch").args(["--status"]),
        30,
    );
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("its directory"),
        "{}",
        show(&out)
    );

    // Owned by another user (uid 65534): needs root to plant.
    if nix::unistd::geteuid().is_root() {
        let planted = support::unique_tmpdir("rdv-uid");
        let file = planted.path().join(format!("pmix.{host}.tool"));
        write_rendezvous(&file, &uri);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        nix::unistd::chown(
            &file,
            Some(nix::unistd::Uid::from_raw(65534)),
            Some(nix::unistd::Gid::from_raw(65534)),
        )
        .expect("chown to 65534");
        let out = support::run_with_timeout(
            tool(&Tmpdir(planted.path()), "pwatch").args(["--status", "-v"]),
            30,
        );
        assert_eq!(out.status.code(), Some(3), "{}", show(&out));
        assert!(
            text(&out.stderr).contains("owned by uid 65534"),
            "{}",
            show(&out)
        );
    } else {
        eprintln!("not root: the foreign-owner case is covered by the mode cases only");
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "a tool connected to the server an untrusted file named"
    );

    // The same file, private and ours, is used.
    let mine = support::unique_tmpdir("rdv-mine");
    let file = mine.path().join(format!("pmix.{host}.tool"));
    write_rendezvous(&file, &uri);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let _ = support::run_with_timeout(
        tool(&Tmpdir(mine.path()), "pwatch")
            .args(["--status"])
            .env("PMIX_TOOLS_TIMEOUT", "2"),
        30,
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "a private rendezvous file of ours is trusted"
    );
}

#[test]
fn palloc_no_wait_reports_a_refusal_that_takes_a_second() {
    use pmix_tools::codec::{Cmd, Decoder};
    // Answers every request in order, the allocation request one second
    // late and with PMIX_ERR_NOT_SUPPORTED (as a DVM without reservations
    // that first asks its scheduler would).
    let (uri, _) = welcomed_server(|mut s, mut d| {
        let mut buf = [0u8; 4096];
        loop {
            while let Ok(Some((h, payload))) = d.next_frame() {
                if h.tag < 100 {
                    continue;
                }
                let cmd = Decoder::new(&payload, WireVersion::V41).unpack_one::<Cmd>();
                let st = if matches!(cmd, Ok(Cmd(17))) {
                    // The late answer is the subject.
                    std::thread::sleep(Duration::from_secs(1));
                    Status::ERR_NOT_SUPPORTED
                } else {
                    Status::SUCCESS
                };
                let reply = encode_frame(0, h.tag, &status_reply(st)).expect("frame");
                if s.write_all(&reply).is_err() {
                    return;
                }
            }
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => d.feed(&buf[..n]),
            }
        }
    });
    let out = support::run_with_timeout(
        tool(&Uri(&uri), "palloc").args(["--no-wait", "-N", "1", "--request-id", "late-refusal"]),
        60,
    );
    assert_eq!(
        text(&out.stdout).trim(),
        "late-refusal",
        "the request id comes first: {}",
        show(&out)
    );
    assert_eq!(out.status.code(), Some(7), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("PMIX_ERR_NOT_SUPPORTED"),
        "{}",
        show(&out)
    );
}

#[test]
fn palloc_facing_a_silent_dvm_times_out_naming_the_allocation_request() {
    let uri = silent_server();
    let out = support::run_with_timeout(
        tool(&Uri(&uri), "palloc")
            .args(["-N", "1"])
            .env("PMIX_TOOLS_TIMEOUT", "2"),
        60,
    );
    // Sent and unanswered: it may still be granted, so it is not "failed".
    assert_eq!(out.status.code(), Some(9), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("no answer from the DVM to the allocation request"),
        "{}",
        show(&out)
    );
    assert!(
        err.contains("outcome unknown") && err.contains("pwatch --status"),
        "{err}"
    );
}

/// The documented bound: a tool whose DVM stops answering ends within
/// `PMIX_TOOLS_TIMEOUT` plus one second (its goodbye does not come on top;
/// it used to add up to four seconds).
#[test]
fn a_silent_dvm_ends_a_tool_within_its_deadline() {
    for (name, args) in [
        ("pwatch", &["--status"][..]),
        ("prelease", &["fake-alloc-1"][..]),
    ] {
        let uri = silent_server();
        let t = Instant::now();
        let out = support::run_with_timeout(
            tool(&Uri(&uri), name)
                .args(args)
                .env("PMIX_TOOLS_TIMEOUT", "2"),
            60,
        );
        let took = t.elapsed();
        eprintln!("FIGURE {name} with PMIX_TOOLS_TIMEOUT=2 against a silent DVM: {took:?}");
        // Ended by its deadline (8: timed out; 9: outcome unknown), not
        // by the harness's 60 s.
        assert!(
            matches!(out.status.code(), Some(8 | 9)),
            "{name} with PMIX_TOOLS_TIMEOUT=2: {}",
            show(&out)
        );
    }
}

/// A release that was sent and not answered may still take effect (the
/// DVM may only be stopped): exit 9, "outcome unknown", and how to check;
/// never reported as failed.
#[test]
fn an_unanswered_release_is_outcome_unknown() {
    let uri = silent_server();
    let out = support::run_with_timeout(
        tool(&Uri(&uri), "prelease")
            .args(["fake-alloc-1"])
            .env("PMIX_TOOLS_TIMEOUT", "2"),
        60,
    );
    assert_eq!(out.status.code(), Some(9), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(err.contains("outcome unknown"), "{err}");
    assert!(err.contains("pwatch --status"), "{err}");
}

#[test]
fn a_queued_palloc_outlives_the_request_deadline() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    // The one node is held...
    let mut first = pdvm
        .tool("palloc")
        .args(["-N", "1", "--parsable", "--hold"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the first palloc");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(first.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("the first grant");
    let held = line.trim().to_string();
    assert!(!held.is_empty(), "the first palloc printed no id");
    // ...so a second request queues, and keeps waiting well past the
    // per-request deadline (1 s here): the DVM answered the barrier.
    let mut second = pdvm
        .tool("palloc")
        .args(["-N", "1", "--parsable"])
        .env("PMIX_TOOLS_TIMEOUT", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the second palloc");
    let waited = crate::support::pdvm::wait_for(&mut second, Duration::from_secs(4));
    assert!(
        waited.is_none(),
        "the queued palloc ended while queued: {waited:?}"
    );
    // Releasing the held node grants it.
    let rel = support::run_with_timeout(pdvm.tool("prelease").arg(&held), 30);
    assert_eq!(rel.status.code(), Some(0), "{}", show(&rel));
    let out = finish(second, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!text(&out.stdout).trim().is_empty(), "{}", show(&out));
    let _ = crate::support::pdvm::wait_for(&mut first, Duration::from_secs(20));
    pdvm.stop();
}
