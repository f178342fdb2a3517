//! The simulated scheduler on its own: inventory, FIFO queue, cancel,
//! release, unreserve, deadlines.

use pmix_tools::sched::{
    node_name, NodeAsk, NodeOrigin, SchedError, SchedEvent, SchedRequest, Scheduler, Submit,
};

fn count(k: u32) -> SchedRequest {
    SchedRequest {
        ask: NodeAsk::Count(k),
        exclude: Vec::new(),
        time_secs: None,
        warn_secs: None,
    }
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn node_names_are_zero_padded_to_at_least_three_digits() {
    assert_eq!(node_name('n', 1, 5), "n001");
    assert_eq!(node_name('n', 42, 1200), "n0042");
    let s = Scheduler::new(3, 1);
    assert_eq!(s.own_node_names(), names(&["s001", "s002", "s003"]));
    let s = Scheduler::new(2, 11);
    assert_eq!(s.own_node_names(), names(&["s011", "s012"]));
}

#[test]
fn count_requests_use_own_nodes_lowest_first_and_honour_exclude() {
    let mut s = Scheduler::new(4, 1);
    s.add_carvable(&names(&["n001"]));
    let mut r = count(2);
    r.exclude = names(&["s001"]);
    let (id, sub) = s.submit_new(&r, 0).unwrap();
    assert_eq!(id, "alloc.1");
    assert_eq!(sub, Submit::Granted(names(&["s002", "s003"])));
    assert!(
        s.is_free("n001"),
        "count requests never carve startup nodes"
    );
    assert_eq!(s.node_origin("n001"), Some(NodeOrigin::Startup));
}

#[test]
fn impossible_requests_are_refused_without_minting_an_id() {
    let mut s = Scheduler::new(2, 1);
    assert_eq!(s.submit_new(&count(3), 0), Err(SchedError::TooMany));
    let mut l = count(0);
    l.ask = NodeAsk::List(names(&["s001", "nope"]));
    assert_eq!(s.check(&l), Err(SchedError::UnknownNode));
    l.ask = NodeAsk::List(names(&["s001"]));
    l.exclude = names(&["s001"]);
    assert_eq!(s.check(&l), Err(SchedError::DuplicateNode));
    assert_eq!(s.peek_next_id(), "alloc.1");
}

#[test]
fn strict_fifo_queue_grants_in_order_when_nodes_free() {
    let mut s = Scheduler::new(2, 1);
    let (a, _) = s.submit_new(&count(2), 0).unwrap();
    let (b, sb) = s.submit_new(&count(2), 0).unwrap();
    let (c, sc) = s.submit_new(&count(1), 0).unwrap();
    assert_eq!((sb, sc), (Submit::Queued, Submit::Queued));
    let (back, ev) = s.release(&a, None, 5).unwrap();
    assert_eq!(back, names(&["s001", "s002"]));
    assert_eq!(
        ev,
        vec![SchedEvent::QueuedGranted {
            alloc_id: b.clone(),
            nodes: names(&["s001", "s002"]),
            extend: false
        }]
    );
    assert_eq!(s.queue_len(), 1);
    let (n, was_new, ev) = s.cancel(&c, 5).unwrap();
    assert_eq!((n, was_new), (1, true));
    assert!(ev.is_empty());
    assert!(s.allocation(&c).is_none());
    assert_eq!(s.cancel(&c, 5), Err(SchedError::NothingQueued));
}

#[test]
fn warning_then_expiry_then_queued_grant() {
    let mut s = Scheduler::new(1, 1);
    let mut r = count(1);
    r.time_secs = Some(10);
    r.warn_secs = Some(3);
    let (a, _) = s.submit_new(&r, 1_000).unwrap();
    let (b, _) = s.submit_new(&count(1), 1_000).unwrap();
    assert_eq!(s.next_deadline(), Some(8_000));
    assert_eq!(
        s.advance(8_000),
        vec![SchedEvent::WarnDue {
            alloc_id: a.clone(),
            remaining_secs: 3
        }]
    );
    assert_eq!(s.next_deadline(), Some(11_000));
    assert_eq!(
        s.advance(11_500),
        vec![
            SchedEvent::Expired {
                alloc_id: a,
                nodes: names(&["s001"])
            },
            SchedEvent::QueuedGranted {
                alloc_id: b,
                nodes: names(&["s001"]),
                extend: false
            }
        ]
    );
    assert_eq!(s.next_deadline(), None);
}

#[test]
fn extend_adds_time_from_current_expiry() {
    let mut s = Scheduler::new(2, 1);
    let mut r = count(1);
    r.time_secs = Some(10);
    let (a, _) = s.submit_new(&r, 0).unwrap();
    let mut e = count(0);
    e.ask = NodeAsk::Nothing;
    e.time_secs = Some(5);
    assert_eq!(
        s.submit_extend(&a, &e, 2_000),
        Ok(Submit::Granted(Vec::new()))
    );
    assert_eq!(s.allocation(&a).unwrap().expires_at_ms, Some(15_000));
    assert_eq!(s.next_deadline(), Some(15_000));
    assert_eq!(
        s.submit_extend("alloc.9", &e, 0),
        Err(SchedError::NoSuchAllocation)
    );
}

#[test]
fn unreserve_retains_own_nodes_and_frees_carved_ones() {
    let mut s = Scheduler::new(1, 1);
    s.add_carvable(&names(&["n001"]));
    let mut l = count(0);
    l.ask = NodeAsk::List(names(&["s001", "n001"]));
    let (a, sub) = s.submit_new(&l, 0).unwrap();
    assert_eq!(sub, Submit::Granted(names(&["s001", "n001"])));
    s.unreserve(&a, 0);
    assert!(s.is_free("n001"));
    assert!(
        !s.is_free("s001"),
        "retained in the DVM, not back in the pool"
    );
    assert_eq!(s.free_own_count(), 0);
    s.teardown();
    assert_eq!(s.free_own_count(), 1);
}

#[test]
fn retained_nodes_can_be_listed_again_and_then_returned() {
    let mut s = Scheduler::new(1, 1);
    let (a, _) = s.submit_new(&count(1), 0).unwrap();
    s.unreserve(&a, 0);
    assert_eq!(s.submit_new(&count(1), 0).unwrap().1, Submit::Queued);
    let mut l = count(0);
    l.ask = NodeAsk::List(names(&["s001"]));
    // The queue is strict FIFO: cancel the waiting count request first.
    s.cancel("alloc.2", 0).unwrap();
    let (b, sub) = s.submit_new(&l, 0).unwrap();
    assert_eq!(sub, Submit::Granted(names(&["s001"])));
    let (back, _) = s.release(&b, None, 0).unwrap();
    assert_eq!(back, names(&["s001"]));
    assert_eq!(s.free_own_count(), 1);
}
