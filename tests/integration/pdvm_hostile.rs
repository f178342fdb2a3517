//! pdvm under hostile clients (issue 10), bounded and on loopback only:
//! identities bound to the connection that proved them, floods of frames,
//! giant queries. Every test has deadlines; none depends on timing
//! thresholds (measured times are printed as figures).

use crate::support;

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{show, tool, ToolCommand};
use pmix_tools::conn::ConnectOptions;
use pmix_tools::ops::Session;

fn run(mut cmd: Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 30)
}

fn with_id(pdvm: &Pdvm, nspace: &str) -> ConnectOptions {
    ConnectOptions {
        tool_id: Some((nspace.to_string(), 0)),
        ..pdvm.opts()
    }
}

// ---- identity ---------------------------------------------------------------

/// A given tool identity in use is refused; one used before is refused too
/// (a namespace is never reused), so the first tool's reservations are not
/// disposed of by someone else's disconnect.
#[test]
fn given_tool_identity_in_use_or_used_before_is_refused() {
    // -v: pdvm says when the first tool's connection is gone.
    let pdvm = Pdvm::builder(&["-v", "--nodes", "1", "--scheduler-nodes", "1"])
        .lenient_ready()
        .start();
    let first = Session::connect(&with_id(&pdvm, "mine@1")).expect("first use of mine@1");
    let second = Session::connect(&with_id(&pdvm, "mine@1"));
    assert!(second.is_err(), "a second connection took mine@1");
    first.finalize().expect("finalize");
    wait::eventually("pdvm has seen mine@1 leave", || {
        pdvm.logs().contains("pdvm: tool mine@1 disconnected")
    });
    let again = Session::connect(&with_id(&pdvm, "mine@1"));
    assert!(again.is_err(), "mine@1 was reused after it ended");
    // Fresh identities still work.
    Session::connect(&with_id(&pdvm, "other@7")).expect("a fresh given identity");
}

/// A tool may not claim pdvm's own namespace, nor one pdvm assigns.
#[test]
fn tool_may_not_claim_pdvm_namespaces() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let s = pdvm.session();
    let (server_ns, _) = s.conn().server();
    let server_ns = server_ns.to_string();
    let (mine, _) = s.me();
    let prefix = server_ns.rsplit_once('@').expect("ns@n").0.to_string();
    for ns in [server_ns.clone(), mine.clone(), format!("{prefix}@99")] {
        assert!(
            Session::connect(&with_id(&pdvm, &ns)).is_err(),
            "a tool claimed {ns}"
        );
    }
}

/// A process outside a job that copies the job's `PMIX_NAMESPACE` /
/// `PMIX_RANK` / server URI is not accepted as that job's client: it cannot
/// release the job's reservation. The job itself still can.
#[test]
fn forged_client_identity_is_refused() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "1"]);
    let dir = pdvm.tmpdir.path().join("forge");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.display();
    let body = format!(
        "palloc -N 1 --json >{d}/a.tmp; mv {d}/a.tmp {d}/a.json\n\
         env | grep '^PMIX_' >{d}/env.tmp; mv {d}/env.tmp {d}/env\n\
         i=0; while [ ! -e {d}/gate ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done\n\
         prelease \"$(sed -n 's/.*\"alloc_id\":\"\\([^\"]*\\)\".*/\\1/p' {d}/a.json | head -n 1)\"\n\
         echo $? >{d}/rc.tmp; mv {d}/rc.tmp {d}/rc\n"
    );
    let mut spawn = tool(&pdvm, "pspawn").no_color();
    spawn.args(["--detach", "-n", "1", "sh", "-c", &body]);
    let o = run(spawn);
    assert!(o.status.success(), "{}", show(&o));
    let a = support::wait_file(&dir.join("a.json"), Duration::from_secs(20));
    let alloc: serde_json::Value = a
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|v: &serde_json::Value| v["type"] == "allocation")
        .expect("allocation record");
    let id = alloc["alloc_id"].as_str().unwrap().to_string();
    let env = support::wait_file(&dir.join("env"), Duration::from_secs(20));
    let mut forged = tool(&pdvm, "prelease").no_color();
    forged.arg(&id);
    for line in env.lines() {
        if let Some((k, v)) = line.split_once('=') {
            forged.env(k, v);
        }
    }
    let o = run(forged);
    assert!(
        !o.status.success(),
        "a forged client released the job's reservation: {}",
        show(&o)
    );
    assert_eq!(
        pdvm.reservation_ids(),
        vec![id.clone()],
        "reservation intact"
    );
    std::fs::write(dir.join("gate"), "").unwrap();
    assert_eq!(
        support::wait_file(&dir.join("rc"), Duration::from_secs(20)).trim(),
        "0",
        "the job itself may"
    );
    assert!(pdvm.reservation_ids().is_empty());
}

// ---- bounded work -----------------------------------------------------------

fn pwatch_status_timed(pdvm: &Pdvm) -> (Output, Duration) {
    let t = Instant::now();
    let mut c = tool(pdvm, "pwatch").no_color();
    c.args(["--status", "--json"]);
    let o = run(c);
    (o, t.elapsed())
}

/// 400k empty frames in one burst from one client: pdvm stays responsive —
/// a concurrent `pwatch --status` succeeds (its time is printed as a
/// figure) — and alive.
#[test]
fn burst_of_empty_frames_does_not_stall_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut s = pdvm.raw_tool();
    let frames = 400_000usize;
    let mut burst = Vec::with_capacity(frames * 16);
    for i in 0..frames {
        // header: pindex, tag, nbytes (network order), no payload
        burst.extend_from_slice(&0u32.to_be_bytes());
        burst.extend_from_slice(&(1000 + i as u32).to_be_bytes());
        burst.extend_from_slice(&0u32.to_be_bytes());
        burst.extend_from_slice(&0u32.to_be_bytes());
    }
    let (started, under_way) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let t = Instant::now();
        // The first eighth, then word that the burst is under way, then
        // the rest.
        let (head, rest) = burst.split_at(burst.len() / 8);
        let head_sent = s.write_all(head).is_ok();
        let _ = started.send(());
        if head_sent {
            let _ = s.write_all(rest);
        }
        (s, t.elapsed())
    });
    under_way
        .recv_timeout(Duration::from_secs(60))
        .expect("the burst never got under way");
    let (o, took) = pwatch_status_timed(&pdvm);
    assert!(
        o.status.success(),
        "pwatch --status during the burst: {}",
        show(&o)
    );
    let (_s, sent) = support::join_within(writer, Duration::from_secs(120), "writer");
    eprintln!(
        "FIGURE burst: {frames} empty frames ({} MB) written in {:.2}s; concurrent pwatch --status took {:.3}s",
        frames * 16 / 1_000_000,
        sent.as_secs_f64(),
        took.as_secs_f64()
    );
    assert!(pmix_alive(&pdvm), "pdvm died");
    let (o, _) = pwatch_status_timed(&pdvm);
    assert!(o.status.success(), "after the burst: {}", show(&o));
}

fn pmix_alive(pdvm: &Pdvm) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pdvm.pid as i32), None).is_ok()
}

/// One QUERY repeating `pmix.query.allc` 200k times (repeats are folded): pdvm stays alive
/// (refused or answered within its budget) and a concurrent
/// `pwatch --status` succeeds.
#[test]
fn giant_repeated_query_is_bounded() {
    use pmix_tools::codec::{Cmd, Query, Size};
    let pdvm = Pdvm::start(&["--nodes", "2", "--scheduler-nodes", "4"]);
    // Something to report in every answer.
    let mut p = tool(&pdvm, "palloc").no_color();
    p.args(["-N", "2", "--hold"]);
    let mut holder = p
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("palloc --hold");
    let s = pdvm.session();
    wait::eventually_within("palloc --hold is granted", Duration::from_secs(20), || {
        !pdvm.reservation_ids().is_empty()
    });
    let n = 200_000usize;
    let mut e = s.encoder();
    e.pack_one(&Cmd(pmix_tools::proto::cmd::QUERY)).unwrap();
    e.pack_one(&Size(1)).unwrap();
    let q = Query {
        keys: vec!["pmix.query.allc".to_string(); n],
        qualifiers: Vec::new(),
    };
    e.pack_one(&q).unwrap();
    let payload = e.into_bytes();
    let rss_before = pdvm.rss_kib();
    let t = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    s.conn()
        .relay(
            &payload,
            Box::new(move |r| {
                let _ = tx.send(r.map(|b| b.len()));
            }),
        )
        .expect("send the giant query");
    let (o, took) = pwatch_status_timed(&pdvm);
    assert!(
        o.status.success(),
        "pwatch --status beside the giant query: {}",
        show(&o)
    );
    let answer = rx.recv_timeout(Duration::from_secs(30));
    let rss_after = pdvm.rss_kib();
    eprintln!(
        "FIGURE giant query: {} MB request, answer {:?} after {:.2}s, concurrent pwatch --status {:.3}s, pdvm RSS {} -> {} KiB",
        payload.len() / 1_000_000,
        answer.as_ref().map(|r| r.as_ref().map_err(|e| e.to_string())),
        t.elapsed().as_secs_f64(),
        took.as_secs_f64(),
        rss_before,
        rss_after
    );
    assert!(answer.is_ok(), "the giant query was never answered");
    assert!(pmix_alive(&pdvm), "pdvm died");
    assert_eq!(pdvm.reservation_ids().len(), 1, "reservation lost");
    let _ = holder.kill();
    let _ = holder.wait();
}

fn frame(tag: u32, payload_len: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(16);
    h.extend_from_slice(&0u32.to_be_bytes());
    h.extend_from_slice(&tag.to_be_bytes());
    h.extend_from_slice(&payload_len.to_be_bytes());
    h.extend_from_slice(&0u32.to_be_bytes());
    h
}

/// Reads one reply on each connection (at most 200 ms each) and returns how
/// many were `PMIX_ERR_OUT_OF_RESOURCE`.
fn count_out_of_resource(conns: &mut [TcpStream]) -> usize {
    let mut refused = 0;
    for s in conns.iter_mut() {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut h = [0u8; 16];
        if std::io::Read::read_exact(s, &mut h).is_ok() {
            let n = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
            let mut body = vec![0u8; n];
            std::io::Read::read_exact(s, &mut body).expect("reply body");
            let st: pmix_tools::proto::status::Status =
                pmix_tools::codec::Decoder::new(&body, pmix_tools::codec::WireVersion::V41)
                    .unpack_one()
                    .expect("status");
            assert_eq!(st, pmix_tools::proto::status::Status::ERR_OUT_OF_RESOURCE);
            refused += 1;
        }
    }
    refused
}

/// 96 connections each announcing a request of 16 MiB − 1 and sending only
/// its start: pdvm charges the bytes that came (4 KiB each), not the sizes
/// announced, so none is refused, and it stays alive and responsive.
#[test]
fn partial_giant_frames_are_charged_what_they_hold() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut conns = Vec::new();
    for i in 0..96u32 {
        let mut s = pdvm.raw_tool();
        let mut m = frame(500 + i, 16 * 1024 * 1024 - 1);
        m.extend_from_slice(&[0u8; 4096]);
        s.write_all(&m).expect("send partial frame");
        conns.push(s);
    }
    let (o, took) = pwatch_status_timed(&pdvm);
    assert!(o.status.success(), "pwatch --status: {}", show(&o));
    let refused = count_out_of_resource(&mut conns);
    let rss = pdvm.rss_kib();
    eprintln!(
        "FIGURE partial giants: {refused} of 96 refused; pwatch --status {:.3}s; pdvm RSS {rss} KiB",
        took.as_secs_f64()
    );
    assert_eq!(refused, 0, "announced sizes were charged");
    assert!(pmix_alive(&pdvm));
}

/// Partial requests whose bytes really arrive: once one user's peers hold
/// more than the memory budget (256 MiB), further large requests are
/// refused `PMIX_ERR_OUT_OF_RESOURCE` and discarded as they arrive.
#[test]
fn partial_requests_beyond_the_budget_are_refused() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut conns = Vec::new();
    let chunk = vec![0u8; 15 * 1024 * 1024];
    for i in 0..19u32 {
        let mut s = pdvm.raw_tool();
        s.write_all(&frame(600 + i, 16 * 1024 * 1024 - 1))
            .expect("header");
        s.write_all(&chunk).expect("body");
        conns.push(s);
    }
    let (o, took) = pwatch_status_timed(&pdvm);
    assert!(o.status.success(), "pwatch --status: {}", show(&o));
    let refused = count_out_of_resource(&mut conns);
    eprintln!(
        "FIGURE 19 x 15 MiB partial requests: {refused} refused; pwatch --status {:.3}s",
        took.as_secs_f64()
    );
    assert!(refused >= 1, "nothing refused beyond the budget");
    assert!(pmix_alive(&pdvm));
}

/// Requests pipelined by a peer that never reads its replies: pdvm stops
/// reading it (backpressure) instead of buffering, and every other tool is
/// still served.
#[test]
fn unread_replies_do_not_lock_others_out() {
    use pmix_tools::codec::{Cmd, Query, Size};
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let s = pdvm.raw_tool();
    let mut e = pmix_tools::codec::Encoder::new(pmix_tools::codec::WireVersion::V41);
    e.pack_one(&Cmd(pmix_tools::proto::cmd::QUERY)).unwrap();
    e.pack_one(&Size(1)).unwrap();
    e.pack_one(&Query {
        keys: vec![pmix_tools::proto::keys::QUERY_NAMESPACES.to_string()],
        qualifiers: Vec::new(),
    })
    .unwrap();
    let q = e.into_bytes();
    let n = 200_000u32;
    let mut w = s.try_clone().unwrap();
    let sent = Arc::new(AtomicU32::new(0));
    let count = Arc::clone(&sent);
    let writer = std::thread::spawn(move || {
        for i in 0..n {
            let mut m = frame(1000 + i, q.len() as u32);
            m.extend_from_slice(&q);
            if w.write_all(&m).is_err() {
                break;
            }
            count.fetch_add(1, Ordering::SeqCst);
        }
        count.load(Ordering::SeqCst)
    });
    // Beside the flood once it is under way and has stalled (pdvm no longer
    // reads it, or the writer is done), or has run for 15 s.
    wait::within(wait::DEADLINE, || {
        let now = sent.load(Ordering::SeqCst);
        now > 0
            && wait::holds_for(Duration::from_millis(200), || {
                sent.load(Ordering::SeqCst) == now
            })
    });
    let rss_mid = pdvm.rss_kib();
    let (o, took) = pwatch_status_timed(&pdvm);
    assert!(
        o.status.success(),
        "pwatch --status beside the flood: {}",
        show(&o)
    );
    let again = Session::connect(&pdvm.opts());
    assert!(again.is_ok(), "a new tool could not connect");
    let _ = s.shutdown(std::net::Shutdown::Both);
    let sent = writer.join().expect("writer");
    eprintln!(
        "FIGURE unread replies: {sent} of {n} requests accepted by the socket before backpressure; pwatch --status {:.3}s; pdvm RSS {rss_mid} KiB",
        took.as_secs_f64()
    );
    assert!(pmix_alive(&pdvm));
}

/// Connections that never complete a handshake are closed after the
/// pre-authentication timeout (10 s).
#[test]
fn idle_unauthenticated_connections_are_closed() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut idle: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(pdvm.addr()).expect("connect"))
        .collect();
    let t = Instant::now();
    for s in idle.iter_mut() {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut b = [0u8; 1];
        let r = std::io::Read::read(s, &mut b);
        let closed = match &r {
            Ok(0) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            Ok(_) => false,
        };
        assert!(closed, "idle connection not closed: {r:?}");
    }
    eprintln!(
        "FIGURE pre-auth: 50 idle connections closed after {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let (o, _) = pwatch_status_timed(&pdvm);
    assert!(o.status.success(), "{}", show(&o));
}

/// pdvm's CPU time per connection: 1000 tool handshakes in a row (accept,
/// peer credentials, namespace, reply) and disconnects. Printed as a
/// figure; all must succeed.
#[test]
fn handshake_cost_figure() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let ticks = |pid: u32| -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let rest: Vec<&str> = s.rsplit_once(')').unwrap().1.split_whitespace().collect();
        rest[11].parse::<u64>().unwrap() + rest[12].parse::<u64>().unwrap()
    };
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let n = 1000;
    let before = ticks(pdvm.pid);
    let t = Instant::now();
    for _ in 0..n {
        let s = pdvm.raw_tool();
        drop(s);
    }
    let wall = t.elapsed();
    let cpu = (ticks(pdvm.pid) - before) as f64 / hz;
    eprintln!(
        "FIGURE handshakes: {n} tool connects in {:.2}s wall; pdvm CPU {:.0} us each (accept, sock_diag, handshake, disconnect)",
        wall.as_secs_f64(),
        cpu * 1e6 / n as f64
    );
    assert!(pmix_alive(&pdvm));
    let (o, _) = pwatch_status_timed(&pdvm);
    assert!(o.status.success(), "{}", show(&o));
}

/// kill -9 of pdvm does not orphan its jobs: they die with it.
#[test]
fn jobs_die_with_a_killed_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let pidfile = pdvm.tmpdir.path().join("job.pid");
    let mut c = tool(&pdvm, "pspawn").no_color();
    c.args([
        "--detach",
        "-n",
        "1",
        "sh",
        "-c",
        &format!(
            "echo $$ >{0}.tmp; mv {0}.tmp {0}; exec sleep 60",
            pidfile.display()
        ),
    ]);
    let o = run(c);
    assert!(o.status.success(), "{}", show(&o));
    let job: i32 = support::wait_file(&pidfile, Duration::from_secs(20))
        .trim()
        .parse()
        .expect("job pid");
    let alive = |p: i32| nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None).is_ok();
    assert!(alive(job));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pdvm.pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill -9 pdvm");
    // A zombie still answers kill(0): look at its state.
    let stat = || std::fs::read_to_string(format!("/proc/{job}/stat")).unwrap_or_default();
    let gone = |st: &str| {
        st.is_empty()
            || st
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    };
    wait::within(Duration::from_secs(10), || !alive(job) || gone(&stat()));
    let st = stat();
    assert!(gone(&st), "job {job} outlived pdvm: {st}");
}

// ---- files and signals --------------------------------------------------------

/// `pdvm --terminate` signals only a pdvm of ours identified by its
/// rendezvous file and process, not any pid a `pdvm.<N>` directory names.
#[test]
fn terminate_signals_only_a_real_pdvm() {
    use std::os::unix::fs::PermissionsExt;
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut victim = Command::new("sleep").arg("30").spawn().expect("sleep");
    let vpid = victim.id();
    // A planted directory naming the victim, with a plausible file.
    let planted = pdvm.tmpdir.path().join(format!("pdvm.{vpid}"));
    std::fs::create_dir(&planted).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(
        planted.join("pmix.host.tool"),
        format!("x.0;tcp4://127.0.0.1:1\n7.0.0\n{vpid}\n"),
    )
    .unwrap();
    let found = pmix_tools::server::listener::find_running(Some(pdvm.tmpdir.path()));
    assert_eq!(found, vec![pdvm.pid], "only the real pdvm");
    let mut t = Command::new(support::cargo_bin("pdvm"));
    support::scrub_pmix_env(&mut t);
    t.arg("--terminate").arg("--tmpdir").arg(pdvm.tmpdir.path());
    let o = run(t);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        victim.try_wait().unwrap().is_none(),
        "pdvm --terminate killed an unrelated process"
    );
    let _ = victim.kill();
    let _ = victim.wait();
}

/// A pre-existing symlink where pdvm's rendezvous directory goes is refused:
/// not followed, its target not chmodded.
#[test]
fn planted_rendezvous_symlink_is_refused() {
    use pmix_tools::server::listener::{RendezvousFiles, ServerIdent};
    use std::os::unix::fs::PermissionsExt;
    let tmp = support::unique_tmpdir("rdv");
    let target = tmp.path().join("elsewhere");
    std::fs::create_dir(&target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pid = 4_000_000u32;
    std::os::unix::fs::symlink(&target, tmp.path().join(format!("pdvm.{pid}"))).unwrap();
    let ident = ServerIdent {
        host: "h".into(),
        pid,
        prefix: format!("pdvm-h-{pid}"),
        nspace: format!("pdvm-h-{pid}@0"),
        address: "tcp4://127.0.0.1:1".into(),
    };
    // The symlink is passed over (said in a note), never followed.
    let other = RendezvousFiles::write(&ident, tmp.path(), None).expect("another private name");
    assert_eq!(other.dir(), tmp.path().join(format!("pdvm.{pid}.1")));
    assert!(
        other.notes().iter().any(|n| n.contains("symlink")),
        "{:?}",
        other.notes()
    );
    drop(other);
    use std::os::unix::fs::MetadataExt;
    let mode = std::fs::metadata(&target).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o755, "the symlink's target was chmodded");
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "files written through it"
    );
    // A stale directory of ours is replaced by a fresh one.
    let pid2 = 4_000_001u32;
    let stale = tmp.path().join(format!("pdvm.{pid2}"));
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("pmix.h.tool"), "old").unwrap();
    let ident2 = ServerIdent { pid: pid2, ..ident };
    let r = RendezvousFiles::write(&ident2, tmp.path(), None).expect("stale dir replaced");
    let body = std::fs::read_to_string(stale.join("pmix.h.tool")).unwrap();
    assert!(body.contains(&pid2.to_string()), "{body}");
    drop(r);
}
