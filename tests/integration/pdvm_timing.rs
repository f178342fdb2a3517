//! Scheduler time through pdvm (with `--time-scale`): the timeout warning
//! reaches only the requesting process, expiry reclaims the nodes, and a
//! queued request is answered when the nodes come free.

use std::time::{Duration, Instant};

use pmix_tools::codec::{Info, Value};
use pmix_tools::conn::Unsolicited;
use pmix_tools::ops::{alloc, events, Session};
use pmix_tools::proto::keys;
use pmix_tools::proto::status::Status;

use crate::support::pdvm::Pdvm;

fn drain_events(s: &Session, for_: Duration) -> Vec<events::Event> {
    let end = Instant::now() + for_;
    let mut v = Vec::new();
    while Instant::now() < end {
        if let Some(Unsolicited::Notify(b)) = s.conn().next_unsolicited(Duration::from_millis(100))
        {
            v.push(events::decode_notification(&mut s.decoder(&b)).unwrap());
        }
    }
    v
}

#[test]
fn warning_goes_to_requester_only_and_queued_request_is_granted_on_expiry() {
    // 60x: one simulated minute per real second.
    let dvm = Pdvm::start(&[
        "--nodes",
        "1",
        "--scheduler-nodes",
        "1",
        "--time-scale",
        "60",
    ]);
    let a = dvm.session();
    let b = dvm.session();
    events::register(&b, &[], &[]).unwrap();
    let t0 = Instant::now();
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
    .unwrap();
    let id = r.alloc_id.unwrap();
    std::thread::scope(|sc| {
        // B asks for the only scheduler node: queued until A's expires.
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
        let seen_a = drain_events(&a, Duration::from_millis(2500));
        let warn: Vec<_> = seen_a
            .iter()
            .filter(|e| e.status == Status::ALLOC_TIMEOUT_WARNING)
            .collect();
        assert_eq!(warn.len(), 1, "{seen_a:?}");
        assert_eq!(
            warn[0].get(keys::ALLOC_ID).and_then(Value::as_str),
            Some(id.as_str())
        );
        assert_eq!(
            warn[0].get(keys::ALLOC_REQ_ID).and_then(Value::as_str),
            Some("a-req")
        );
        let rem = warn[0]
            .get(keys::TIME_REMAINING)
            .and_then(Value::as_u64)
            .unwrap();
        assert!((100..=120).contains(&rem), "{rem}");
        // Bounded: the waiter's request has the session's 30 s deadline.
        let granted = waiter.join().unwrap().expect("queued request granted");
        let waited = t0.elapsed();
        assert!(
            waited >= Duration::from_millis(2500),
            "granted after {waited:?}, before expiry"
        );
        assert!(granted.alloc_id.is_some_and(|x| x != id));
        assert_eq!(granted.request_id.as_deref(), Some("b-req"));
    });
    // B registered for every event yet never saw A's warning.
    let seen_b = drain_events(&b, Duration::from_millis(300));
    assert!(
        seen_b
            .iter()
            .all(|e| e.status != Status::ALLOC_TIMEOUT_WARNING),
        "{seen_b:?}"
    );
}
