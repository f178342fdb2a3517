//! Hostile and corner-case requesters (issue 10): ownership exactly as
//! §8.2.1.5.1 / §8.2.1.9.1 say whoever `PMIX_ALLOC_TARGET` names, a draining
//! CHILD reservation switched by EXTEND, RFC 002's REQ_CANCEL rules and
//! out-of-range inheritance in both modes.
//!
//! Requests the tools cannot send (RELEASE/REQ_CANCEL carrying TARGET, a
//! REQ_CANCEL naming nothing, requests left queued while another is sent on
//! the same connection) go through the library's session layer, as a tool.

use std::sync::mpsc;
use std::time::Duration;

use pmix_tools::codec::attrs::write_infos;
use pmix_tools::codec::{AllocDirective, Cmd, Info, Value};
use pmix_tools::conn::ConnectOptions;
use pmix_tools::ops::Session;
use pmix_tools::proto::status::Status;
use pmix_tools::proto::{cmd, keys};

use crate::support::blackbox::{
    comparable, eventually, palloc_into_a, printed_alloc, strings, Dvm, GateJob,
};

const NEW: u8 = 1;
const EXTEND: u8 = 2;
const RELEASE: u8 = 3;
const REQ_CANCEL: u8 = 5;

/// A tool session with `dvm` (a fresh tool namespace), bounded replies.
fn tool_session(dvm: &Dvm) -> Session {
    let opts = ConnectOptions {
        tmpdir: Some(dvm.tmpdir.path().to_path_buf()),
        force_tool: true,
        ..Default::default()
    };
    let mut s = Session::connect(&opts).expect("connect to pdvm as a tool");
    s.set_timeout(Duration::from_secs(15));
    s
}

fn alloc_payload(s: &Session, directive: u8, info: &[Info]) -> Vec<u8> {
    let mut e = s.encoder();
    e.pack_one(&Cmd(cmd::ALLOC)).expect("pack");
    e.pack_one(&AllocDirective(directive)).expect("pack");
    write_infos(&mut e, info).expect("pack");
    e.into_bytes()
}

fn status_of(s: &Session, reply: &[u8]) -> Status {
    s.decoder(reply)
        .unpack_one::<Status>()
        .expect("reply status")
}

/// Send an allocation request and wait for its status.
fn call(s: &Session, directive: u8, info: &[Info]) -> Status {
    let reply = s
        .conn()
        .request(&alloc_payload(s, directive, info), Duration::from_secs(15))
        .expect("a reply");
    status_of(s, &reply)
}

/// Send an allocation request without waiting: its reply arrives on the
/// returned channel. Frames of one connection are handled in order, so a
/// later [`call`] on the same session sees this one already processed.
fn post(s: &Session, directive: u8, info: &[Info]) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    s.conn()
        .relay(
            &alloc_payload(s, directive, info),
            Box::new(move |r| {
                let _ = tx.send(r.unwrap_or_default());
            }),
        )
        .expect("send");
    rx
}

fn granted_id(s: &Session, info: &[Info]) -> String {
    let reply = s
        .conn()
        .request(&alloc_payload(s, NEW, info), Duration::from_secs(15))
        .expect("a reply");
    let mut d = s.decoder(&reply);
    let st: Status = d.unpack_one().expect("status");
    assert!(st.is_success(), "NEW refused: {st}");
    let infos = pmix_tools::ops::session::read_infos(&mut d).expect("infos");
    pmix_tools::ops::session::find(&infos, keys::ALLOC_ID)
        .and_then(Value::as_str)
        .expect("alloc id")
        .to_string()
}

fn id(k: &str, v: &str) -> Info {
    Info::new(k, v)
}

fn n(k: u64) -> Info {
    Info::new(keys::ALLOC_NUM_NODES, k)
}

/// A tool outside the owner set that names the owner in
/// `PMIX_ALLOC_TARGET` gets `PMIX_ERR_NO_PERMISSIONS` for EXTEND, whole and
/// partial RELEASE and REQ_CANCEL (palloc exits 6), and nothing changes:
/// TARGET names whose reservation it is, not who is asking.
#[test]
fn s8_2_1_9_1_foreign_tool_naming_owner_as_target_changes_nothing() {
    let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "4", "--scheduler-nodes", "3"]);
    let leader = dvm.leader();
    let a = dvm.app("palloc -N 2 --json").alloc_id();
    let job = GateJob::new(&dvm, "owner-job");
    dvm.app(&format!("pspawn --detach --target {a} -n 1 {}", job.cmd))
        .expect_code(0);
    let pid = job.pid();
    let before = comparable(&dvm.status());

    let o = dvm.tool(
        "palloc",
        &[
            "--extend",
            &a,
            "--target",
            &leader,
            "-N",
            "1",
            "--inherit",
            "none",
            "--json",
        ],
    );
    assert_eq!(o.code, 6, "foreign EXTEND with TARGET:\n{o}");
    assert_eq!(
        o.error_status().as_deref(),
        Some("PMIX_ERR_NO_PERMISSIONS"),
        "{o}"
    );

    let s = tool_session(&dvm);
    let target = id(keys::ALLOC_TARGET, &leader);
    let aid = id(keys::ALLOC_ID, &a);
    for (what, dir, info) in [
        ("EXTEND", EXTEND, vec![aid.clone(), target.clone(), n(1)]),
        ("whole RELEASE", RELEASE, vec![aid.clone(), target.clone()]),
        (
            "partial RELEASE",
            RELEASE,
            vec![aid.clone(), target.clone(), n(1)],
        ),
        ("REQ_CANCEL", REQ_CANCEL, vec![aid.clone(), target.clone()]),
    ] {
        assert_eq!(
            call(&s, dir, &info),
            Status::ERR_NO_PERMISSIONS,
            "{what} naming the owner as TARGET"
        );
    }
    assert_eq!(comparable(&dvm.status()), before, "a refusal changed state");
    assert!(
        crate::support::blackbox::alive(pid),
        "the owner's job was killed"
    );
    let r = dvm.reservation(&a).expect("reservation intact");
    assert_eq!(strings(&r["nodes"]).len(), 2, "{r}");
    assert_eq!(r["inherit"], "default", "{r}");
    job.open();
}

/// A draining CHILD reservation (owner gone, child alive) whose child sends
/// EXTEND with `--inherit none|default` does not stay `active` forever: the
/// new disposition applies at once (the owner has already ended).
#[test]
fn s8_2_1_9_2_draining_child_switched_by_extend_ends() {
    for (inherit, node_stays) in [("default", true), ("none", false)] {
        let mut dvm = Dvm::with_leader(&["--nodes", "1", "--slots", "4", "--scheduler-nodes", "1"]);
        let gate = dvm.path("extend.gate");
        let rc = dvm.path("extend.rc");
        let child = dvm.script(
            "child.sh",
            &format!(
                "i=0; while [ ! -e {gate} ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done\n\
                 palloc --extend \"$1\" --inherit {inherit}; echo $? >{rc}.tmp; mv {rc}.tmp {rc}\n"
            ),
        );
        let started = dvm.path("child.started");
        let mut body = palloc_into_a("-N 1 --inherit child");
        body.push_str(&format!(
            "pspawn --detach --target \"$A\" -n 1 sh -c 'touch {started}; sh {child} \"$0\"' \"$A\"\n\
             i=0; while [ ! -e {started} ] && [ $i -lt 750 ]; do sleep 0.02; i=$((i+1)); done\n"
        ));
        let owner = dvm.script("owner.sh", &body);
        let o = dvm.app(&format!("pspawn -n 1 sh {owner}"));
        o.expect_code(0);
        let a = printed_alloc(&o);
        eventually("the reservation drains", || {
            dvm.reservation(&a)
                .is_some_and(|r| r["state"] == "draining")
        });
        std::fs::write(&gate, "").expect("open gate");
        eventually(
            &format!("EXTEND --inherit {inherit} ends the reservation"),
            || dvm.reservation(&a).is_none(),
        );
        if node_stays {
            eventually("the child's EXTEND reported", || {
                std::path::Path::new(&rc).exists()
            });
            assert_eq!(std::fs::read_to_string(&rc).unwrap().trim(), "0");
            let node = dvm.node("s001").expect("DEFAULT keeps the node in the DVM");
            assert!(node["alloc_id"].is_null(), "{node}");
        } else {
            eventually("NONE returns the node to the scheduler", || {
                dvm.node("s001").is_none()
            });
        }
    }
}

/// RFC 002: REQ_CANCEL naming no allocation cancels every outstanding
/// request of the requester (was PMIX_ERR_BAD_PARAM), each answered
/// PMIX_ERR_JOB_CANCELED; the granted allocation is untouched.
#[test]
fn rfc002_req_cancel_without_id_cancels_all_outstanding() {
    let dvm = Dvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let s = tool_session(&dvm);
    let a = granted_id(&s, &[n(1)]);
    let ext = post(&s, EXTEND, &[id(keys::ALLOC_ID, &a), n(1)]);
    let new = post(&s, NEW, &[id(keys::ALLOC_REQ_ID, "later"), n(1)]);
    assert_eq!(call(&s, REQ_CANCEL, &[]), Status::SUCCESS);
    for (what, rx) in [("EXTEND", ext), ("NEW", new)] {
        let reply = rx
            .recv_timeout(Duration::from_secs(15))
            .unwrap_or_else(|_| panic!("queued {what} never answered"));
        assert_eq!(status_of(&s, &reply), Status::ERR_JOB_CANCELED, "{what}");
    }
    let rs = dvm.reservations();
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(strings(&rs[0]["nodes"]).len(), 1);
    // Nothing outstanding any more.
    assert_eq!(call(&s, REQ_CANCEL, &[]), Status::ERR_NOT_FOUND);
}

/// RFC 002: a queued EXTEND is cancelled by its own request id, and leaves
/// no side effect: its inheritance is not applied, and the nodes freed
/// later do not reach the allocation.
#[test]
fn rfc002_queued_extend_cancelled_by_request_id_leaves_nothing() {
    let dvm = Dvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let s = tool_session(&dvm);
    let other = tool_session(&dvm);
    let a = granted_id(&s, &[n(1)]);
    let b = granted_id(&other, &[n(1)]);
    let ext = post(
        &s,
        EXTEND,
        &[
            id(keys::ALLOC_ID, &a),
            id(keys::ALLOC_REQ_ID, "ext-1"),
            Info::new(keys::ALLOC_INHERITANCE, 1u32),
            n(1),
        ],
    );
    assert_eq!(
        call(&s, REQ_CANCEL, &[id(keys::ALLOC_REQ_ID, "ext-1")]),
        Status::SUCCESS,
        "cancel of the queued EXTEND by its request id"
    );
    let reply = ext
        .recv_timeout(Duration::from_secs(15))
        .expect("the EXTEND is answered");
    assert_eq!(status_of(&s, &reply), Status::ERR_JOB_CANCELED);
    assert_eq!(
        call(&other, RELEASE, &[id(keys::ALLOC_ID, &b)]),
        Status::SUCCESS
    );
    let r = dvm.reservation(&a).expect("a stays");
    assert_eq!(
        r["inherit"], "default",
        "cancelled EXTEND's inheritance: {r}"
    );
    assert_eq!(strings(&r["nodes"]).len(), 1, "{r}");
}

/// An inheritance value outside 1..=4 is PMIX_ERR_BAD_PARAM with and
/// without `--pmix-compat` (compat refused it NOT_SUPPORTED before).
#[test]
fn s8_2_1_10_out_of_range_inheritance_same_status_in_compat() {
    for args in [
        &["--nodes", "1", "--scheduler-nodes", "1"][..],
        &["--nodes", "1", "--scheduler-nodes", "1", "--pmix-compat"],
    ] {
        let dvm = Dvm::start(args);
        let s = tool_session(&dvm);
        for v in [0u32, 5, 200] {
            assert_eq!(
                call(&s, NEW, &[n(1), Info::new(keys::ALLOC_INHERITANCE, v)]),
                Status::ERR_BAD_PARAM,
                "inheritance {v} with {args:?}"
            );
        }
        assert!(dvm.reservations().is_empty());
    }
}

/// Warnings received on `s` within `window` (the session must be registered).
fn warnings_within(s: &Session, window: Duration) -> usize {
    let end = std::time::Instant::now() + window;
    let mut seen = 0;
    loop {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return seen;
        }
        if let Some(pmix_tools::conn::Unsolicited::Notify(p)) = s.conn().next_unsolicited(left) {
            let ev = pmix_tools::ops::events::decode_notification(&mut s.decoder(&p))
                .expect("notification");
            if ev.status == Status::ALLOC_TIMEOUT_WARNING {
                seen += 1;
            }
        }
    }
}

/// §8.2.1.9.5: an EXTEND that leaves the deadline where it is (more nodes,
/// no more time) does not deliver again a warning already delivered; one
/// that moves the deadline arms a new one.
#[test]
fn s8_2_1_9_5_extend_not_moving_deadline_does_not_rewarn() {
    let dvm = Dvm::start(&[
        "--nodes",
        "1",
        "--scheduler-nodes",
        "2",
        "--time-scale",
        "60",
    ]);
    let s = tool_session(&dvm);
    pmix_tools::ops::events::register(&s, &[Status::ALLOC_TIMEOUT_WARNING], &[])
        .expect("register for warnings");
    let time = |secs| {
        Info::new(
            keys::ALLOC_TIME,
            pmix_tools::codec::attrs::alloc_time_value(s.server_version(), secs),
        )
    };
    // 4 simulated minutes, warned 3 minutes ahead: the warning comes after
    // about 1 s of real time, the expiry after 4 s.
    let a = granted_id(
        &s,
        &[n(1), time(240), Info::new(keys::ALLOC_WARN_TIMEOUT, 180u32)],
    );
    assert_eq!(
        warnings_within(&s, Duration::from_secs(3)),
        1,
        "first warning"
    );
    assert_eq!(
        call(&s, EXTEND, &[id(keys::ALLOC_ID, &a), n(1)]),
        Status::SUCCESS
    );
    assert_eq!(
        warnings_within(&s, Duration::from_millis(600)),
        0,
        "an EXTEND that did not move the deadline warned again"
    );
    let r = dvm.reservation(&a).expect("still there");
    assert_eq!(strings(&r["nodes"]).len(), 2, "{r}");
}
