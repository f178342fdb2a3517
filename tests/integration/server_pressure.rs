//! Never lose a byte (issue 15), bounded and on loopback only: pdvm's
//! memory budget is charged with bytes actually held, never sizes
//! announced, so connections that announce megabytes and send nothing
//! cannot squat it; forwarded output is never discarded; a partial message
//! that makes no progress is closed; a tool whose own reader is gone says
//! so and fails instead of reporting success.

use crate::support;

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::{show, text};

/// A shell pipeline run against `pdvm` (tools on PATH), with a deadline.
fn sh(pdvm: &Pdvm, script: &str, secs: u64) -> Output {
    let mut c = Command::new("bash");
    support::scrub_pmix_env(&mut c);
    let bin = support::cargo_bin("pspawn");
    let dir = bin.parent().expect("bin dir").display().to_string();
    c.env("TMPDIR", pdvm.tmpdir.path())
        .env("NO_COLOR", "1")
        .env("PATH", format!("{dir}:{}", support::user_path()))
        .args(["-c", script])
        .stdin(Stdio::null());
    support::run_with_timeout(&mut c, secs)
}

/// A frame header announcing `nbytes` on `tag` (pdvm's steady-state framing).
fn header(tag: u32, nbytes: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(16);
    h.extend_from_slice(&0u32.to_be_bytes());
    h.extend_from_slice(&tag.to_be_bytes());
    h.extend_from_slice(&nbytes.to_be_bytes());
    h.extend_from_slice(&0u32.to_be_bytes());
    h
}

/// Sixteen handshaken connections, each sending only a header that
/// announces (just under) 16 MiB — 256 bytes in all, 256 MiB announced —
/// used to fill pdvm's whole budget:
/// forwarded output was then discarded while pspawn exited 0, and
/// `pwatch --status` failed with OUT_OF_RESOURCE. Every byte must arrive.
#[test]
fn announced_sizes_cannot_squat_the_budget() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut squat = Vec::new();
    for i in 0..16u32 {
        let mut s = pdvm.raw_tool();
        s.write_all(&header(700 + i, 16 * 1024 * 1024 - 32))
            .expect("header");
        squat.push(s);
    }
    let o = sh(&pdvm, "pspawn -n 1 seq 1 200000 | wc -c", 60);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(text(&o.stdout).trim(), "1288895", "{}", show(&o));
    let st = sh(&pdvm, "pwatch --status --json", 30);
    assert!(st.status.success(), "pwatch --status: {}", show(&st));
    drop(squat);
}

/// A handshaken connection that sends part of a message and then nothing
/// is closed after a bounded time (it used to be kept forever).
#[test]
fn stalled_partial_message_is_closed() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let mut s = pdvm.raw_tool();
    let mut m = header(900, 1024 * 1024);
    m.extend_from_slice(&[0u8; 100]);
    s.write_all(&m).expect("partial message");
    // A peer that keeps sending is not closed meanwhile.
    let mut busy = pdvm.raw_tool();
    busy.write_all(&header(901, 1024 * 1024)).expect("header");
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let mut b = [0u8; 1];
    let mut feed = busy.try_clone().expect("clone");
    let feeder = std::thread::spawn(move || {
        for _ in 0..25 {
            if feed.write_all(&[0u8; 64]).is_err() {
                return false;
            }
            // A slow but steady sender is the subject.
            std::thread::sleep(Duration::from_millis(500));
        }
        true
    });
    let r = s.read(&mut b);
    let closed = match &r {
        Ok(0) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        Ok(_) => false,
    };
    assert!(closed, "stalled connection not closed: {r:?}");
    eprintln!(
        "FIGURE stalled partial message closed after {:.1}s",
        t.elapsed().as_secs_f64()
    );
    assert!(
        feeder.join().expect("feeder"),
        "a progressing peer was closed"
    );
    let st = sh(&pdvm, "pwatch --status --json", 30);
    assert!(st.status.success(), "pwatch --status: {}", show(&st));
}

/// Several pspawns whose output nobody reads for a while, then read: every
/// byte arrives (the jobs block on their pipes meanwhile), exit 0 each.
#[test]
fn unread_pspawns_deliver_every_byte_once_read() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "64"]);
    let n = 12;
    let size = 20_000_000u64;
    let mut script = String::from("set -u; d=$(mktemp -d); ");
    for i in 0..n {
        script.push_str(&format!(
            "( pspawn -n 1 head -c {size} /dev/zero | (sleep 4; wc -c) > $d/{i}.out; \
             echo ${{PIPESTATUS[0]}} > $d/{i}.rc ) & "
        ));
    }
    script
        .push_str("wait; for f in $d/*.out; do echo $(cat $f) $(cat ${f%.out}.rc); done; rm -r $d");
    let o = sh(&pdvm, &script, 240);
    assert!(o.status.success(), "{}", show(&o));
    let lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), n, "{}", show(&o));
    for l in &lines {
        assert_eq!(
            l,
            &format!("{size} 0"),
            "bytes and pspawn's exit: {}",
            show(&o)
        );
    }
}

/// When the output cannot be delivered because our reader is gone
/// (`| head -1`), pspawn says so and exits non-zero: never 0 with output
/// silently lost.
#[test]
fn gone_reader_fails_the_tool_with_a_sentence() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    let o = sh(
        &pdvm,
        "e=$(mktemp); pspawn -n 1 seq 1 3000000 2>$e | head -1; echo rc=${PIPESTATUS[0]}; cat $e; rm $e",
        60,
    );
    let out = text(&o.stdout);
    assert!(out.starts_with("1\n"), "{}", show(&o));
    assert!(
        !out.contains("rc=0"),
        "pspawn reported success: {}",
        show(&o)
    );
    assert!(out.contains("could not be delivered"), "{}", show(&o));
}
