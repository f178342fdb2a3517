//! Housekeeping of holders (issue 14): the sockets and logs of holders
//! that have gone are swept, and a detached palloc keeps none of the
//! caller's descriptors. Each test has its own holder registry
//! (XDG_RUNTIME_DIR).

use crate::support;

use std::process::{Command, Output, Stdio};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{show, text, tool, TempDir};

fn run(mut cmd: Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 60)
}

fn sh(pdvm: &Pdvm, xdg: &TempDir, script: &str) -> Command {
    let mut c = support::command_like(
        tool(pdvm, "pwatch").env("XDG_RUNTIME_DIR", xdg.path()),
        "sh",
    );
    c.args(["-c", script]);
    c
}

fn registry(xdg: &TempDir) -> Vec<String> {
    std::fs::read_dir(xdg.path().join("pmix-tools-holders"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The pid in a detached palloc's log name (`palloc.NAME.PID.log`).
fn log_pid(name: &str) -> Option<i32> {
    let stem = name.strip_prefix("palloc.")?.strip_suffix(".log")?;
    stem.rsplit_once('.')?.1.parse().ok().filter(|p| *p > 1)
}

/// Whether process `pid` has ended (gone, or a zombie).
fn ended(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().next());
    matches!(state, None | Some("Z") | Some("X"))
}

/// Make the registry's last sweep look a minute old, so the next holder
/// sweeps.
fn age_sweep_marker(xdg: &TempDir) {
    let marker = xdg.path().join("pmix-tools-holders/.swept");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    if let Ok(f) = std::fs::File::options().write(true).open(&marker) {
        f.set_modified(old).expect("aging the sweep marker");
    }
}

#[test]
fn sockets_and_logs_of_dead_holders_are_swept() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let xdg = support::unique_tmpdir("xdg-sweep");
    // Five holders killed with -9 leave their sockets.
    let script = "for i in 1 2 3 4 5; do \
                    palloc -q -N 1 --hold --parsable > id.$i & P=$!; \
                    until [ -s id.$i ] || ! kill -0 $P 2>/dev/null; do sleep 0.02; done; \
                    kill -9 $P; wait $P; \
                  done; true";
    let dir = support::unique_tmpdir("sweep-ids");
    let mut c = sh(&pdvm, &xdg, script);
    c.current_dir(dir.path());
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // (allocation sockets: a holder also links its request id to its own)
    let allocs = |xdg: &TempDir| -> Vec<String> {
        registry(xdg)
            .into_iter()
            .filter(|n| n.ends_with(".sock") && n.contains('+'))
            .collect()
    };
    // A dead holder's name is free at once (its lock went with it), but
    // its files wait for the next sweep: at most one every 30 s, so a
    // crowd of holders starting at once does not each look at all the
    // others. Make the last sweep look old.
    assert_eq!(allocs(&xdg).len(), 5, "{:?}", registry(&xdg));
    age_sweep_marker(&xdg);
    // The next holder sweeps them all.
    let mut next = tool(&pdvm, "palloc");
    next.env("XDG_RUNTIME_DIR", xdg.path())
        .args(["-q", "-N", "1", "--parsable"]);
    let n = run(next);
    let id = text(&n.stdout).trim().to_string();
    let left = allocs(&xdg);
    assert_eq!(
        left.len(),
        1,
        "only the live holder's socket stays: {left:?}"
    );
    // Its log goes once it has ended (released), at the next sweep.
    let mut rel = tool(&pdvm, "prelease");
    rel.env("XDG_RUNTIME_DIR", xdg.path()).arg(&id);
    assert_eq!(run(rel).status.code(), Some(0));
    let ten_s = std::time::Duration::from_secs(10);
    wait::within(ten_s, || {
        !registry(&xdg).iter().any(|n| n.ends_with(".sock"))
    });
    // (and its process has ended: every palloc a log is named after)
    wait::eventually_within("the released holder's process has ended", ten_s, || {
        registry(&xdg).iter().filter_map(|n| log_pid(n)).all(ended)
    });
    age_sweep_marker(&xdg);
    let mut again = tool(&pdvm, "palloc");
    again
        .env("XDG_RUNTIME_DIR", xdg.path())
        .args(["-q", "-N", "1", "--parsable"]);
    let g = run(again);
    let logs: Vec<String> = registry(&xdg)
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect();
    assert_eq!(logs.len(), 1, "only the live holder's log stays: {logs:?}");
    let mut rel = tool(&pdvm, "prelease");
    rel.env("XDG_RUNTIME_DIR", xdg.path())
        .arg(text(&g.stdout).trim());
    assert_eq!(run(rel).status.code(), Some(0));
}

#[test]
fn a_detached_palloc_keeps_none_of_the_callers_descriptors() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let xdg = support::unique_tmpdir("xdg-fds");
    let dir = support::unique_tmpdir("fds");
    let script = format!(
        "exec 7> {d}/seven; exec 9< /dev/null; palloc -N 1 --parsable 2> {d}/err",
        d = dir.path().display()
    );
    let o = run(sh(&pdvm, &xdg, &script));
    let id = text(&o.stdout).trim().to_string();
    assert!(id.starts_with("alloc."), "{}", show(&o));
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap_or_default();
    let pid: i32 = err
        .split("palloc (pid ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {err}"));
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .map(|t| t.display().to_string())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !fds.is_empty(),
        "cannot see the detached palloc's descriptors"
    );
    assert!(
        !fds.iter().any(|t| t.ends_with("/seven")),
        "the caller's descriptor 7 leaked into the detached palloc: {fds:?}"
    );
    let mut rel = tool(&pdvm, "prelease");
    rel.env("XDG_RUNTIME_DIR", xdg.path()).arg(&id);
    assert_eq!(run(rel).status.code(), Some(0));
}

/// 200 holders started at once: every one is registered under its id for
/// as long as it runs (a sweep never removes a live holder's socket, even
/// between its bind and its listen), no live holder is ever connected to
/// by another's start, and when they end nothing is left.
#[test]
fn a_crowd_of_holders_started_at_once_are_all_registered() {
    const N: usize = 200;
    let pdvm = Pdvm::start(&["--scheduler-nodes", &N.to_string()]);
    let xdg = support::unique_tmpdir("xdg-crowd");
    let dir = support::unique_tmpdir("crowd-ids");
    // Each holder's sweep (all of them due: no marker yet) races the
    // others' binds.
    let script = format!(
        "pids=; for i in $(seq {N}); do palloc -q -N 1 --hold --parsable > id.$i 2> err.$i & pids=\"$pids $!\"; done; \
         n=0; while [ $n -lt 600 ]; do \
           ready=0; for i in $(seq {N}); do [ -s id.$i ] && ready=$((ready+1)); done; \
           [ $ready -eq {N} ] && break; n=$((n+1)); sleep 0.1; done; \
         ls $XDG_RUNTIME_DIR/pmix-tools-holders > registered; \
         kill $pids; wait; true"
    );
    let mut c = sh(&pdvm, &xdg, &script);
    c.current_dir(dir.path());
    let o = support::run_with_timeout(c.stdin(Stdio::null()), 180);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let registered = std::fs::read_to_string(dir.path().join("registered")).unwrap_or_default();
    let mut missing = Vec::new();
    for i in 1..=N {
        let id = std::fs::read_to_string(dir.path().join(format!("id.{i}"))).unwrap_or_default();
        let id = id.trim();
        assert!(id.starts_with("alloc."), "holder {i} printed no id");
        if !registered
            .lines()
            .any(|n| n.ends_with(&format!("+{id}.sock")))
        {
            missing.push(id.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "live holders not registered: {missing:?}"
    );
    // Ended by SIGTERM, each removed its own names.
    let left: Vec<String> = registry(&xdg)
        .into_iter()
        .filter(|n| n.ends_with(".sock") || n.ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// 100 clients of one holder each announce a 4 MiB request and send 1 MiB
/// of it, then nothing: the holder keeps at most its budget of unfinished
/// requests (16 MiB, not 100 MiB), drops each stalled client after 10 s
/// (as pdvm does), and serves a real client throughout.
#[test]
fn a_holders_memory_for_unfinished_requests_is_bounded_and_stalled_clients_are_dropped() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    let pdvm = Pdvm::start(&["--scheduler-nodes", "1"]);
    let xdg = support::unique_tmpdir("xdg-partial");
    let dir = support::unique_tmpdir("partial");
    let mut hold = tool(&pdvm, "palloc");
    hold.env("XDG_RUNTIME_DIR", xdg.path())
        .args(["-q", "-N", "1", "--hold", "--parsable"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut holder = hold.spawn().expect("palloc --hold");
    let mut id = String::new();
    let mut out = holder.stdout.take().expect("stdout");
    let mut byte = [0u8; 1];
    while out.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        id.push(byte[0] as char);
    }
    assert!(id.starts_with("alloc."), "no id: {id:?}");
    let sock = registry(&xdg)
        .into_iter()
        .find(|n| n.ends_with(&format!("+{id}.sock")))
        .map(|n| xdg.path().join("pmix-tools-holders").join(n))
        .expect("the holder's socket");
    let pid = holder.id() as i32;
    let before = rss_kib(pid);
    let mut header = [0u8; 16];
    header[4..8].copy_from_slice(&200u32.to_be_bytes());
    header[8..12].copy_from_slice(&(4 * 1024 * 1024 - 1u32).to_be_bytes());
    // Each sends 1 MiB of its request, or what the holder takes of it in
    // 5 s (a holder that stops reading makes the write wait).
    let writers: Vec<_> = (0..100)
        .map(|_| {
            let s = UnixStream::connect(&sock).expect("connecting to the holder");
            std::thread::spawn(move || {
                let mut s = s;
                s.set_write_timeout(Some(std::time::Duration::from_secs(5)))
                    .unwrap();
                let _ = s.write_all(&header);
                let _ = s.write_all(&vec![0u8; 1024 * 1024]);
                s
            })
        })
        .collect();
    let mut squatters: Vec<UnixStream> = writers
        .into_iter()
        .map(|w| w.join().expect("writer"))
        .collect();
    for s in &squatters {
        s.set_nonblocking(true).unwrap();
    }
    let grown = rss_kib(pid).saturating_sub(before);
    // A real client is served meanwhile.
    let mut spawn = tool(&pdvm, "pspawn");
    spawn
        .env("XDG_RUNTIME_DIR", xdg.path())
        .args(["--target", &id, "echo", "served"]);
    let o = run(spawn);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(text(&o.stdout).trim(), "served");
    assert!(
        grown < 40 * 1024,
        "the holder grew by {grown} KiB for 100 unfinished requests"
    );
    // Each stalled client is dropped (its socket reads end of file).
    let mut open = squatters.len();
    wait::within(std::time::Duration::from_secs(60), || {
        open = 0;
        for s in &mut squatters {
            let mut buf = [0u8; 65536];
            loop {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        open += 1;
                        break;
                    }
                    Err(_) => break,
                }
            }
        }
        open == 0
    });
    assert_eq!(open, 0, "stalled clients still connected");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = holder.wait();
}

/// Set a file's (or folder's) time `ago` in the past.
fn age_by(path: &std::path::Path, ago: std::time::Duration) {
    let f = std::fs::File::open(path).expect("opening to age it");
    f.set_modified(std::time::SystemTime::now() - ago)
        .expect("aging a registry entry");
}

/// Batch records older than a week go, whichever DVM wrote them (a DVM's
/// name changes with each start: the folders of DVMs long gone would
/// otherwise stay for ever), and a folder left empty goes once nobody has
/// written in it for an hour; a starting script looks at most once an
/// hour, so a busy user's jobs do not each read every record.
#[test]
fn batch_records_of_gone_dvms_are_pruned_at_most_hourly() {
    use std::time::Duration;
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let xdg = support::unique_tmpdir("xdg-prune");
    let batch = xdg.path().join("pmix-tools-holders/batch");
    let gone = batch.join("pdvm-gone-1@0");
    let empty = batch.join("pdvm-gone-2@0");
    for d in [&gone, &empty] {
        // private, as the registry must be
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(d)
            .unwrap();
    }
    let week = Duration::from_secs(8 * 24 * 3600);
    for (name, ago) in [("old", week), ("recent", Duration::from_secs(3600))] {
        let f = gone.join(format!("{name}.json"));
        std::fs::write(&f, "{}").unwrap();
        age_by(&f, ago);
    }
    age_by(&empty, Duration::from_secs(2 * 3600));
    let dir = support::unique_tmpdir("prune-jobs");
    let job = |name: &str| {
        let script = format!(
            "palloc -q -N 1 -J {name} --no-wait -- /bin/true >/dev/null && \
             until pwatch --status --all --json | grep -q '\"request_id\":\"{name}\".*\"exited\"'; \
             do sleep 0.05; done"
        );
        let mut c = sh(&pdvm, &xdg, &script);
        c.current_dir(dir.path());
        let o = run(c);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    };
    job("first");
    let listing = std::process::Command::new("ls")
        .arg("-laR")
        .arg(&batch)
        .output()
        .unwrap();
    assert!(
        !gone.join("old.json").exists(),
        "a week-old record stays: {}",
        text(&listing.stdout)
    );
    assert!(gone.join("recent.json").exists(), "an hour-old record went");
    assert!(!empty.exists(), "an empty folder untouched for 2 h stays");
    // Within the hour, nothing is looked at again.
    let later = gone.join("later.json");
    std::fs::write(&later, "{}").unwrap();
    age_by(&later, week);
    job("second");
    assert!(later.exists(), "records were read again within the hour");
    // An hour on, they are.
    age_by(&batch.join(".pruned"), Duration::from_secs(3601));
    job("third");
    assert!(!later.exists(), "a week-old record stays after the hour");
}
