//! pspawn output backpressure end to end (issue 10): while the tool that
//! spawned a job does not read, pdvm stops reading the job's pipes (the job
//! blocks on write) instead of buffering or dropping; not a byte is lost and
//! pdvm's memory stays bounded.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{show, text};
use pmix_tools::codec::{App, Cmd, Encoder, Size, WireVersion};
use pmix_tools::conn::frame::{Header, HEADER_LEN, TAG_IOF, TAG_NOTIFY};
use pmix_tools::ops::{events, iof, spawn};
use pmix_tools::proto::cmd;
use pmix_tools::proto::status::Status;

/// Bytes the job writes.
const TOTAL: u64 = 200_000_000;
/// pdvm's resident memory must stay below this while the reader lags
/// (it used to buffer 64 MiB for the peer, then drop it).
const RSS_BOUND_KIB: u64 = 48 * 1024;

/// Samples pdvm's resident memory until stopped; returns the peak.
struct RssProbe {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssProbe {
    fn start(pid: u32) -> RssProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let (s, p) = (stop.clone(), peak.clone());
        // A sample at every step until told to stop (no test runs an hour).
        let thread = std::thread::spawn(move || {
            wait::within(Duration::from_secs(3600), || {
                let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let kib = st
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                    .unwrap_or(0);
                p.fetch_max(kib, Ordering::Relaxed);
                s.load(Ordering::Relaxed)
            });
        });
        RssProbe {
            stop,
            peak,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

fn send(s: &mut TcpStream, tag: u32, e: Encoder) {
    let payload = e.into_bytes();
    let h = Header {
        pindex: 0,
        tag,
        nbytes: payload.len() as u32,
    }
    .encode();
    s.write_all(&h).expect("send header");
    s.write_all(&payload).expect("send payload");
}

fn read_frame(s: &mut TcpStream) -> (Header, Vec<u8>) {
    let mut hb = [0u8; HEADER_LEN];
    s.read_exact(&mut hb)
        .expect("frame header (pdvm dropped us?)");
    let h = Header::decode(&hb);
    let mut payload = vec![0u8; h.nbytes as usize];
    s.read_exact(&mut payload).expect("frame payload");
    (h, payload)
}

/// A raw tool spawns a job writing 200 MB to stdout, then reads nothing for
/// 3 s: pdvm pauses the job's pipe rather than buffering; afterwards every
/// byte arrives, followed by the job's end, and pdvm's RSS stayed bounded.
#[test]
fn unread_job_output_is_held_back_not_dropped() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut s = pdvm.raw_tool();
    let mut e = Encoder::new(WireVersion::V41);
    e.pack_one(&Cmd(cmd::SPAWN)).expect("cmd");
    pmix_tools::codec::attrs::write_infos(&mut e, &spawn::launcher_job_info()).expect("infos");
    let app = App {
        cmd: "sh".into(),
        argv: vec![
            "sh".into(),
            "-c".into(),
            format!("head -c {TOTAL} /dev/zero"),
        ],
        env: Vec::new(),
        cwd: None,
        maxprocs: 1,
        info: Vec::new(),
    };
    e.pack_one(&Size(1)).expect("size");
    e.pack(std::slice::from_ref(&app)).expect("app");
    send(&mut s, 200, e);
    let probe = RssProbe::start(pdvm.pid);
    // The reader lagging (reading nothing) for 3 s is the subject.
    std::thread::sleep(Duration::from_secs(3));
    let lagging_peak = probe.peak.load(Ordering::Relaxed);
    let mut got = 0u64;
    let mut ended = None;
    let mut spawned = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    while ended.is_none() {
        assert!(Instant::now() < deadline, "no job end after {got} bytes");
        let (h, payload) = read_frame(&mut s);
        let mut d = pmix_tools::codec::Decoder::new(&payload, WireVersion::V41);
        match h.tag {
            TAG_IOF => got += iof::decode_iof(&mut d).expect("iof").data.len() as u64,
            TAG_NOTIFY => {
                let ev = events::decode_notification(&mut d).expect("event");
                if ev.status == Status::EVENT_JOB_END {
                    ended = Some(ev);
                }
            }
            200 => {
                let st: Status = d.unpack_one().expect("spawn status");
                assert!(st.is_success(), "spawn refused: {st:?}");
                spawned = true;
            }
            _ => {}
        }
    }
    let peak = probe.finish();
    assert!(spawned, "spawn reply");
    assert_eq!(got, TOTAL, "bytes forwarded");
    eprintln!(
        "figure: pdvm peak RSS {lagging_peak} KiB while the reader lagged, {peak} KiB overall \
         (bound {RSS_BOUND_KIB} KiB)"
    );
    assert!(
        peak < RSS_BOUND_KIB,
        "pdvm's RSS reached {peak} KiB (bound {RSS_BOUND_KIB} KiB)"
    );
}

/// The user's view: `pspawn … | (sleep 3; wc -c)` counts every byte.
#[test]
fn pspawn_into_a_slow_reader_loses_nothing() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let probe = RssProbe::start(pdvm.pid);
    let pspawn = support::cargo_bin("pspawn");
    let script = format!(
        "{} -n 1 sh -c 'head -c {TOTAL} /dev/zero' | (sleep 3; wc -c)",
        pspawn.display()
    );
    let mut c = std::process::Command::new("sh");
    support::scrub_pmix_env(&mut c);
    c.env("TMPDIR", pdvm.tmpdir.path())
        .env("PATH", support::user_path())
        .args(["-c", &script])
        .stdin(Stdio::null());
    let o = support::run_with_timeout(&mut c, 120);
    let peak = probe.finish();
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(text(&o.stdout).trim(), TOTAL.to_string(), "{}", show(&o));
    eprintln!("figure: pdvm peak RSS {peak} KiB (bound {RSS_BOUND_KIB} KiB)");
    assert!(
        peak < RSS_BOUND_KIB,
        "pdvm's RSS reached {peak} KiB (bound {RSS_BOUND_KIB} KiB)"
    );
}
