//! pdvm's typed peer identity (issues 8 and 10): a tool with a given
//! identity of non-zero rank gets exactly its own replies and warnings; a
//! client rank is accepted only while it lives and only from its job.

use crate::support;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{show, text};
use pmix_tools::codec::{Info, Value};
use pmix_tools::conn::{ConnectOptions, Unsolicited};
use pmix_tools::ops::{alloc, events, Session};
use pmix_tools::proto::keys;
use pmix_tools::proto::status::Status;

fn with_id(pdvm: &Pdvm, nspace: &str, rank: u32) -> ConnectOptions {
    ConnectOptions {
        tool_id: Some((nspace.to_string(), rank)),
        ..pdvm.opts()
    }
}

fn events_for(s: &Session, for_: Duration) -> Vec<events::Event> {
    let end = Instant::now() + for_;
    let mut v = Vec::new();
    while Instant::now() < end {
        if let Some(Unsolicited::Notify(b)) = s.conn().next_unsolicited(Duration::from_millis(100))
        {
            v.push(events::decode_notification(&mut s.decoder(&b)).expect("event decodes"));
        }
    }
    v
}

/// Tools with given identities of rank 5 and 3: the timeout warning reaches
/// the rank-5 requester (it used to be addressed to rank 0 and reach no
/// one), and the rank-3 tool's queued request is answered on its own
/// connection when the nodes come free.
#[test]
fn given_identity_with_nonzero_rank_gets_its_own_warning_and_grant() {
    let dvm = Pdvm::start(&[
        "--nodes",
        "1",
        "--scheduler-nodes",
        "1",
        "--time-scale",
        "60",
    ]);
    let a = Session::connect(&with_id(&dvm, "ranked@1", 5)).expect("tool ranked@1:5");
    let b = Session::connect(&with_id(&dvm, "ranked@2", 3)).expect("tool ranked@2:3");
    assert_eq!(a.me(), ("ranked@1".to_string(), 5));
    let r = alloc::allocate(
        &a,
        pmix_tools::proto::Directive::New,
        &[
            Info::new(keys::ALLOC_NUM_NODES, 1u64),
            Info::new(
                keys::ALLOC_TIME,
                pmix_tools::codec::attrs::alloc_time_value(a.server_version(), 180),
            ),
            Info::new(keys::ALLOC_WARN_TIMEOUT, Value::Uint32(120)),
            Info::new(keys::ALLOC_REQ_ID, "a-req"),
        ],
    )
    .expect("a's allocation");
    let id = r.alloc_id.expect("alloc id");
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| {
            alloc::allocate(
                &b,
                pmix_tools::proto::Directive::New,
                &[
                    Info::new(keys::ALLOC_NUM_NODES, 1u64),
                    Info::new(keys::ALLOC_REQ_ID, "b-req"),
                ],
            )
        });
        let seen = events_for(&a, Duration::from_millis(2500));
        let warn: Vec<_> = seen
            .iter()
            .filter(|e| e.status == Status::ALLOC_TIMEOUT_WARNING)
            .collect();
        assert_eq!(warn.len(), 1, "rank-5 tool's events: {seen:?}");
        assert_eq!(
            warn[0].get(keys::ALLOC_ID).and_then(Value::as_str),
            Some(id.as_str())
        );
        let granted = waiter
            .join()
            .expect("waiter thread")
            .expect("b's queued request granted");
        assert_eq!(granted.request_id.as_deref(), Some("b-req"));
        assert!(granted.alloc_id.is_some_and(|x| x != id));
    });
}

fn run(mut cmd: Command) -> Output {
    support::run_with_timeout(cmd.stdin(Stdio::null()), 30)
}

/// Inside a job, a tool connects as the job's client (its namespace and
/// rank). While a connection holds rank 0, a process outside the job that
/// copies the job's `PMIX_*` environment is refused; tools the job itself
/// runs alongside (from its own process tree, as the kernel tells) are
/// accepted; once the job has ended, its identity is refused to everyone.
#[test]
fn client_rank_is_bound_to_the_live_job_process_tree() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--slots", "2", "--scheduler-nodes", "2"]);
    let dir = pdvm.tmpdir.path().join("twice");
    std::fs::create_dir(&dir).expect("mkdir");
    let d = dir.display();
    let body = format!(
        "env | grep '^PMIX_' >{d}/env.tmp; mv {d}/env.tmp {d}/env\n\
         pwatch --event alloc --count 1000 --json >{d}/ev 2>{d}/ev.err &\n\
         W=$!\n\
         i=0; while [ ! -e {d}/gate ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done\n\
         pwatch --status --json >/dev/null 2>{d}/second.err; echo $? >{d}/rc1.tmp; mv {d}/rc1.tmp {d}/rc1\n\
         i=0; while [ ! -e {d}/gate2 ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done\n\
         kill $W; wait $W; exit 0\n"
    );
    let mut spawn = pdvm.tool("pspawn");
    spawn.args(["-n", "1", "sh", "-c", &body]);
    let job = std::thread::spawn(move || run(spawn));
    // Events from our own allocations prove the job's watcher is connected
    // (and registered) as the job's rank 0: one allocation after another,
    // each given 50 ms to show, until one does.
    let seen = || std::fs::read_to_string(dir.join("ev")).is_ok_and(|s| !s.is_empty());
    let saw = wait::within(Duration::from_secs(20), || {
        if seen() {
            return true;
        }
        let mut p = pdvm.tool("palloc");
        p.args(["-N", "1", "--inherit", "none"]);
        let o = run(p);
        assert!(o.status.success(), "palloc: {}", show(&o));
        wait::within(Duration::from_millis(50), seen)
    });
    assert!(
        saw,
        "the job's watcher never saw an event: {}",
        std::fs::read_to_string(dir.join("ev.err")).unwrap_or_default()
    );
    let env = crate::support::wait_file(&dir.join("env"), Duration::from_secs(20));
    let forged = || {
        let mut c = pdvm.tool("pwatch");
        c.args(["--status", "--json"]);
        for line in env.lines() {
            if let Some((k, v)) = line.split_once('=') {
                c.env(k, v);
            }
        }
        run(c)
    };
    let o = forged();
    assert!(
        !o.status.success(),
        "an outside process took the job's connected rank 0: {}",
        show(&o)
    );
    std::fs::write(dir.join("gate"), "").expect("gate");
    let rc1 = crate::support::wait_file(&dir.join("rc1"), Duration::from_secs(30));
    assert_eq!(
        rc1.trim(),
        "0",
        "a second tool of the job itself is accepted: {}",
        std::fs::read_to_string(dir.join("second.err")).unwrap_or_default()
    );
    std::fs::write(dir.join("gate2"), "").expect("gate2");
    let o = job.join().expect("job thread");
    assert!(o.status.success(), "the job: {}", show(&o));
    let o = forged();
    assert!(
        !o.status.success(),
        "the ended job's identity was accepted: {}",
        show(&o)
    );
    let _ = text(&o.stdout);
}
