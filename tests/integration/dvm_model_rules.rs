//! One black-box test per rule of the reservation contract, driving the DVM
//! model and the simulated scheduler directly. Names follow the clause.

use pmix_tools::dvm::{
    AllocAttrs, AllocRequest, AllocStatus, Dvm, DvmConfig, DvmError, Effect, EndHow, EndWhy,
    Requester, Rule,
};
use pmix_tools::proto::{Directive, Inheritance, Received};
use pmix_tools::render::ReservationState;
use pmix_tools::sched::Scheduler;

const NONE: Inheritance = Inheritance::None;
const CHILD: Inheritance = Inheritance::Child;
const DEFAULT: Inheritance = Inheritance::Default;
const CHILD_DEFAULT: Inheritance = Inheritance::ChildDefault;

fn setup(n: usize, m: usize) -> (Dvm, Scheduler) {
    setup_mode(n, m, false)
}

fn setup_mode(n: usize, m: usize, compat: bool) -> (Dvm, Scheduler) {
    let mut s = Scheduler::new(m, 1);
    let d = Dvm::new(
        DvmConfig {
            nodes: n,
            slots: 2,
            compat,
        },
        &mut s,
    );
    (d, s)
}

fn req(r: &Requester, dir: impl Into<Received<Directive>>, attrs: AllocAttrs) -> AllocRequest {
    AllocRequest {
        requester: r.clone(),
        directive: dir.into(),
        attrs,
    }
}

fn nodes(k: u32) -> AllocAttrs {
    AllocAttrs {
        num_nodes: Some(k),
        ..AllocAttrs::default()
    }
}

fn list(names: &[&str]) -> AllocAttrs {
    AllocAttrs {
        node_list: Some(names.iter().map(|s| s.to_string()).collect()),
        ..AllocAttrs::default()
    }
}

fn by_id(id: &str) -> AllocAttrs {
    AllocAttrs {
        alloc_id: Some(id.to_string()),
        ..AllocAttrs::default()
    }
}

fn targets(t: &[&str]) -> Vec<String> {
    t.iter().map(|s| s.to_string()).collect()
}

/// A tool `tool` connected and a NEW of `k` scheduler nodes with `extra`.
fn new_alloc(d: &mut Dvm, s: &mut Scheduler, r: &Requester, extra: AllocAttrs) -> String {
    let out = d
        .allocate(&req(r, Directive::New, extra), s, 0)
        .expect("allocation granted");
    assert!(matches!(out.status, AllocStatus::Granted { .. }));
    out.alloc_id
}

fn killed(fx: &[Effect]) -> Vec<String> {
    let mut v: Vec<String> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::KillJob { nspace, .. } => Some(nspace.clone()),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

fn ended(fx: &[Effect]) -> Vec<(String, EndHow, EndWhy)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::ReservationEnded { alloc_id, how, why } => Some((alloc_id.clone(), *how, *why)),
            _ => None,
        })
        .collect()
}

fn session_of(d: &Dvm, node: &str) -> Option<Option<String>> {
    d.nodes()
        .into_iter()
        .find(|n| n.name == node)
        .map(|n| n.session)
}

/// Runs `f`, which must fail with `want`, and checks nothing observable moved.
fn rejected_without_effect(
    d: &mut Dvm,
    s: &mut Scheduler,
    want: DvmError,
    f: impl FnOnce(&mut Dvm, &mut Scheduler) -> Result<(), DvmError>,
) {
    let before = d.snapshot(s, 0);
    let err = f(d, s).expect_err("request must be rejected");
    assert_eq!(err, want);
    assert_eq!(d.snapshot(s, 0), before, "a rejection changed state");
}

// ---- §8.2.1.5 decision table -------------------------------------------

#[test]
fn s8_2_1_5_tool_target_reserves_for_target() {
    let (mut d, mut s) = setup(4, 4);
    let t = Requester::tool("tool-1");
    d.tool_connected("tool-1").unwrap();
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            target: Some("leader".into()),
            ..nodes(2)
        },
    );
    let r = d.reservation(&id, &s, 0).unwrap();
    assert_eq!(r.owner_nspace, "leader");
    assert_eq!(r.owners, vec!["leader".to_string()]);
    assert!(!r.share);
    for n in &r.nodes {
        assert_eq!(session_of(&d, n), Some(Some(id.clone())));
    }
}

#[test]
fn s8_2_1_5_tool_no_target_reserves_for_tool() {
    let (mut d, mut s) = setup(4, 4);
    let t = Requester::tool("tool-1");
    d.tool_connected("tool-1").unwrap();
    let id = new_alloc(&mut d, &mut s, &t, nodes(1));
    let r = d.reservation(&id, &s, 0).unwrap();
    assert_eq!(r.owner_nspace, "tool-1");
    assert_eq!(session_of(&d, &r.nodes[0]), Some(Some(id)));
}

#[test]
fn s8_2_1_5_tool_share_goes_to_default_session() {
    let (mut d, mut s) = setup(4, 4);
    let t = Requester::tool("tool-1");
    d.tool_connected("tool-1").unwrap();
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            share: Some(true),
            ..nodes(2)
        },
    );
    let r = d.reservation(&id, &s, 0).unwrap();
    assert!(r.share);
    assert_eq!(r.owner_nspace, "tool-1");
    for n in &r.nodes {
        assert_eq!(
            session_of(&d, n),
            Some(None),
            "shared node must be in default"
        );
    }
    // Anyone may now use them through the default session.
    let other = Requester::tool("other");
    let plan = d.plan_spawn(&other, None, &[1]).unwrap();
    assert!(plan.pool.contains(&r.nodes[0]));
}

#[test]
fn s8_2_1_5_tool_target_share_default_session_owned_by_target() {
    let (mut d, mut s) = setup(2, 2);
    let t = Requester::tool("tool-1");
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            target: Some("leader".into()),
            share: Some(true),
            inherit: Some(NONE.into()),
            ..nodes(1)
        },
    );
    let r = d.reservation(&id, &s, 0).unwrap();
    assert!(r.share);
    assert_eq!(r.owner_nspace, "leader");
    assert_eq!(session_of(&d, &r.nodes[0]), Some(None));
}

#[test]
fn s8_2_1_5_app_no_target_reserves_for_app() {
    let (mut d, mut s) = setup(4, 4);
    let tool = Requester::tool("tool-1");
    d.tool_connected("tool-1").unwrap();
    d.spawn(&tool, "job-1", None, &[1]).unwrap();
    let app = Requester::app("job-1", 0);
    let id = new_alloc(&mut d, &mut s, &app, nodes(1));
    let r = d.reservation(&id, &s, 0).unwrap();
    assert_eq!(r.owner_nspace, "job-1");
    assert_eq!(session_of(&d, &r.nodes[0]), Some(Some(id)));
}

#[test]
fn s8_2_1_5_app_share_goes_to_default_session() {
    let (mut d, mut s) = setup(4, 4);
    let app = Requester::app("job-1", 3);
    let id = new_alloc(
        &mut d,
        &mut s,
        &app,
        AllocAttrs {
            share: Some(true),
            ..nodes(1)
        },
    );
    let r = d.reservation(&id, &s, 0).unwrap();
    assert!(r.share);
    assert_eq!(r.owner_nspace, "job-1");
    assert_eq!(session_of(&d, &r.nodes[0]), Some(None));
}

#[test]
fn s8_2_1_5_app_target_rejected() {
    let (mut d, mut s) = setup(4, 4);
    let app = Requester::app("job-1", 0);
    for share in [None, Some(false), Some(true)] {
        let r = req(
            &app,
            Directive::New,
            AllocAttrs {
                target: Some("x".into()),
                share,
                ..nodes(1)
            },
        );
        rejected_without_effect(
            &mut d,
            &mut s,
            DvmError::NoPermissions(Rule::AppTarget),
            |d, s| d.allocate(&r, s, 0).map(|_| ()),
        );
    }
}

#[test]
fn s8_2_1_5_1_new_twice_two_reservations() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let a = new_alloc(&mut d, &mut s, &t, nodes(1));
    let b = new_alloc(&mut d, &mut s, &t, nodes(1));
    assert_ne!(a, b);
    let rs = d.reservations(&s, 0);
    assert_eq!(rs.len(), 2);
    assert!(rs.iter().all(|r| r.owner_nspace == "tool-1"));
    assert_ne!(rs[0].nodes, rs[1].nodes);
}

#[test]
fn s8_2_1_5_1_extend_by_alloc_id() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(1));
    let out = d
        .allocate(
            &req(
                &t,
                Directive::Extend,
                AllocAttrs {
                    num_nodes: Some(2),
                    ..by_id(&id)
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(out.alloc_id, id);
    assert_eq!(d.reservation(&id, &s, 0).unwrap().nodes.len(), 3);
    assert_eq!(d.reservations(&s, 0).len(), 1);
}

#[test]
fn s8_2_1_5_1_extend_by_req_id() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            req_id: Some("mine".into()),
            ..nodes(1)
        },
    );
    let out = d
        .allocate(
            &req(
                &t,
                Directive::Extend,
                AllocAttrs {
                    req_id: Some("mine".into()),
                    num_nodes: Some(1),
                    ..AllocAttrs::default()
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(out.alloc_id, id);
    assert_eq!(out.req_id.as_deref(), Some("mine"));
    assert_eq!(d.reservation(&id, &s, 0).unwrap().nodes.len(), 2);
}

#[test]
fn s8_2_1_5_2_reply_carries_alloc_id_and_echoes_req_id() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let out = d
        .allocate(
            &req(
                &t,
                Directive::New,
                AllocAttrs {
                    req_id: Some("job-42".into()),
                    ..nodes(1)
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert!(out.alloc_id.starts_with("alloc."));
    assert_eq!(out.req_id.as_deref(), Some("job-42"));
    assert!(d.reservation(&out.alloc_id, &s, 0).is_some());
    let plain = d
        .allocate(&req(&t, Directive::New, nodes(1)), &mut s, 0)
        .unwrap();
    assert_eq!(plain.req_id, None);
    assert_ne!(plain.alloc_id, out.alloc_id);
}

// ---- §8.2.1.8 error table ------------------------------------------------

#[test]
fn s8_2_1_8_app_target_no_permissions() {
    let (mut d, mut s) = setup(2, 2);
    let app = Requester::app("job-1", 0);
    let r = req(
        &app,
        Directive::Extend,
        AllocAttrs {
            target: Some("job-1".into()),
            ..by_id("alloc.1")
        },
    );
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NoPermissions(Rule::AppTarget),
        |d, s| d.allocate(&r, s, 0).map(|_| ()),
    );
    let e = DvmError::NoPermissions(Rule::AppTarget);
    assert_eq!(e.status().0, -23);
    assert_eq!(e.status().name(), "PMIX_ERR_NO_PERMISSIONS");
    assert!(e.rule().starts_with("§8.2.1.8 row 1"));
}

#[test]
fn s8_2_1_8_extend_not_owner() {
    let (mut d, mut s) = setup(2, 4);
    let owner = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &owner, nodes(1));
    let stranger = Requester::app("job-9", 0);
    let r = req(
        &stranger,
        Directive::Extend,
        AllocAttrs {
            num_nodes: Some(1),
            ..by_id(&id)
        },
    );
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NoPermissions(Rule::ExtendNotOwner),
        |d, s| d.allocate(&r, s, 0).map(|_| ()),
    );
    assert_eq!(
        DvmError::NoPermissions(Rule::ExtendNotOwner).rule(),
        "§8.2.1.8 row 2: PMIX_ALLOC_EXTEND names an allocation the requester does not own"
    );
}

#[test]
fn s8_2_1_8_extend_not_found() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    new_alloc(&mut d, &mut s, &t, nodes(1));
    for attrs in [
        by_id("alloc.999"),
        AllocAttrs {
            req_id: Some("never".into()),
            ..AllocAttrs::default()
        },
    ] {
        let r = req(
            &t,
            Directive::Extend,
            AllocAttrs {
                num_nodes: Some(1),
                ..attrs
            },
        );
        rejected_without_effect(
            &mut d,
            &mut s,
            DvmError::NotFound(Rule::ExtendNotFound),
            |d, s| d.allocate(&r, s, 0).map(|_| ()),
        );
    }
    assert_eq!(DvmError::NotFound(Rule::ExtendNotFound).status().0, -46);
}

#[test]
fn s8_2_1_8_extend_no_id() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    new_alloc(&mut d, &mut s, &t, nodes(1));
    let r = req(&t, Directive::Extend, nodes(1));
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::BadParam(Rule::ExtendNoId),
        |d, s| d.allocate(&r, s, 0).map(|_| ()),
    );
    assert_eq!(DvmError::BadParam(Rule::ExtendNoId).status().0, -27);
}

#[test]
fn s8_2_1_8_spawn_target_not_found() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(1));
    let tg = targets(&[&id, "alloc.77"]);
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NotFound(Rule::SpawnTargetNotFound),
        |d, _| d.spawn(&t, "job-1", Some(&tg), &[1]).map(|_| ()),
    );
}

#[test]
fn s8_2_1_8_spawn_target_not_owner() {
    let (mut d, mut s) = setup(2, 4);
    let a = Requester::tool("tool-a");
    let b = Requester::tool("tool-b");
    let ida = new_alloc(&mut d, &mut s, &a, nodes(1));
    let idb = new_alloc(&mut d, &mut s, &b, nodes(1));
    // One permitted entry and one foreign entry: the whole spawn is refused.
    let tg = targets(&[&ida, &idb]);
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NoPermissions(Rule::SpawnTargetNotOwner),
        |d, _| d.spawn(&a, "job-1", Some(&tg), &[1]).map(|_| ()),
    );
    assert!(d.jobs().is_empty(), "a rejected spawn launches nothing");
}

#[test]
fn s8_2_1_8_inheritance_not_supported_compat() {
    let (mut d, mut s) = setup_mode(2, 4, true);
    let t = Requester::tool("tool-1");
    for v in [NONE, CHILD, CHILD_DEFAULT] {
        let r = req(
            &t,
            Directive::New,
            AllocAttrs {
                inherit: Some(v.into()),
                ..nodes(1)
            },
        );
        rejected_without_effect(
            &mut d,
            &mut s,
            DvmError::NotSupported(Rule::InheritNotSupported),
            |d, s| d.allocate(&r, s, 0).map(|_| ()),
        );
    }
    assert_eq!(
        DvmError::NotSupported(Rule::InheritNotSupported).status().0,
        -47
    );
}

#[test]
fn s6_5_1_2_inheritance_out_of_range_bad_param() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    for v in [0u8, 5, 255] {
        let r = req(
            &t,
            Directive::New,
            AllocAttrs {
                inherit: Some(Inheritance::received(v)),
                ..nodes(1)
            },
        );
        rejected_without_effect(
            &mut d,
            &mut s,
            DvmError::BadParam(Rule::InheritInvalid),
            |d, s| d.allocate(&r, s, 0).map(|_| ()),
        );
    }
}

#[test]
fn s8_2_1_8_rejections_are_not_charged_to_the_scheduler() {
    let (mut d, mut s) = setup(2, 3);
    let t = Requester::tool("tool-1");
    let cases = [
        (nodes(4), DvmError::OutOfResource(Rule::TooManyNodes)),
        (
            list(&["s001", "zz9"]),
            DvmError::BadParam(Rule::UnknownNode),
        ),
        (
            list(&["s001", "s001"]),
            DvmError::BadParam(Rule::DuplicateNode),
        ),
        (AllocAttrs::default(), DvmError::BadParam(Rule::NoNodes)),
        (
            AllocAttrs {
                time_secs: Some(0),
                ..nodes(1)
            },
            DvmError::BadParam(Rule::ZeroTime),
        ),
    ];
    for (attrs, want) in cases {
        let r = req(&t, Directive::New, attrs);
        rejected_without_effect(&mut d, &mut s, want, |d, s| {
            d.allocate(&r, s, 0).map(|_| ())
        });
    }
    // The next accepted request still receives the first id.
    let id = new_alloc(&mut d, &mut s, &t, nodes(1));
    assert_eq!(id, "alloc.1");
}

#[test]
fn reaquire_is_not_supported() {
    let (mut d, mut s) = setup(2, 2);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(1));
    let r = req(&t, Directive::Reaquire, by_id(&id));
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NotSupported(Rule::ReacquireNotSupported),
        |d, s| d.allocate(&r, s, 0).map(|_| ()),
    );
    let bad = req(&t, Received::Unknown(9), by_id(&id));
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::BadParam(Rule::BadDirective),
        |d, s| d.allocate(&bad, s, 0).map(|_| ()),
    );
}

// ---- §8.2.1.6 spawn targeting ------------------------------------------

#[test]
fn s8_2_1_6_absent_or_invalid_target_uses_default_session() {
    let (mut d, mut s) = setup(3, 2);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(1));
    let rnode = d.reservation(&id, &s, 0).unwrap().nodes[0].clone();
    for tg in [None, Some(targets(&[""]))] {
        let plan = d.plan_spawn(&t, tg.as_deref(), &[1]).unwrap();
        assert_eq!(plan.pool, vec!["n001", "n002", "n003"]);
        assert!(!plan.pool.contains(&rnode));
        assert!(plan.default_pool);
    }
}

#[test]
fn s8_2_1_6_union_of_reservations() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let a = new_alloc(&mut d, &mut s, &t, nodes(1));
    let b = new_alloc(&mut d, &mut s, &t, nodes(2));
    let plan = d.plan_spawn(&t, Some(&targets(&[&a, &b])), &[6]).unwrap();
    let mut want: Vec<String> = d.reservation(&a, &s, 0).unwrap().nodes;
    want.extend(d.reservation(&b, &s, 0).unwrap().nodes);
    assert_eq!(plan.pool, want);
    assert!(!plan.default_pool);
    assert!(plan.procs.iter().all(|p| want.contains(&p.node)));
}

#[test]
fn s8_2_1_6_union_plus_default_pool() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let a = new_alloc(&mut d, &mut s, &t, nodes(1));
    let plan = d.plan_spawn(&t, Some(&targets(&[&a, ""])), &[1]).unwrap();
    let mut want = d.reservation(&a, &s, 0).unwrap().nodes;
    want.extend(["n001".to_string(), "n002".to_string()]);
    assert_eq!(plan.pool, want);
    assert!(plan.default_pool);
}

#[test]
fn s8_2_1_6_default_pool_isolation() {
    // Reserve two of the three startup nodes: a default-session job must
    // only ever see the third, even when that oversubscribes it.
    let (mut d, mut s) = setup(3, 0);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, list(&["n001", "n002"]));
    let plan = d.plan_spawn(&Requester::tool("other"), None, &[5]).unwrap();
    assert_eq!(plan.pool, vec!["n003"]);
    assert!(plan.procs.iter().all(|p| p.node == "n003"));
    // The owner targeting its reservation sees exactly its two nodes.
    let own = d.plan_spawn(&t, Some(&targets(&[&id])), &[1]).unwrap();
    assert_eq!(own.pool, vec!["n001", "n002"]);
}

#[test]
fn s8_2_1_6_placement_fills_slots_then_oversubscribes() {
    let (mut d, mut s) = setup(2, 0);
    let t = Requester::tool("tool-1");
    let plan = d.plan_spawn(&t, None, &[3, 3]).unwrap();
    let on: Vec<&str> = plan.procs.iter().map(|p| p.node.as_str()).collect();
    assert_eq!(on, ["n001", "n001", "n002", "n002", "n001", "n002"]);
    assert_eq!(plan.procs[5].app, 1);
    assert_eq!(plan.procs[5].rank, 5);
    d.commit_spawn(&plan, "job-1", Some("tool-1")).unwrap();
    let n1 = d.nodes().into_iter().find(|n| n.name == "n001").unwrap();
    assert_eq!(n1.in_use, 3);
    // A pool with no node at all: reserve every startup node, then spawn
    // into the (now empty) default session.
    let _ = new_alloc(&mut d, &mut s, &t, list(&["n001", "n002"]));
    assert_eq!(
        d.plan_spawn(&t, None, &[1]),
        Err(DvmError::OutOfResource(Rule::SpawnNoSlots))
    );
}

// ---- §8.2.1.7 ownership ------------------------------------------------

#[test]
fn s8_2_1_7_owner_set_grows_with_spawn() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(2));
    d.spawn(&t, "job-1", Some(&targets(&[&id])), &[1]).unwrap();
    assert_eq!(
        d.reservation(&id, &s, 0).unwrap().owners,
        vec!["tool-1".to_string(), "job-1".to_string()]
    );
    // The child may now spawn onto the reservation itself.
    let child = Requester::app("job-1", 0);
    d.spawn(&child, "job-2", Some(&targets(&[&id])), &[1])
        .unwrap();
    assert_eq!(d.reservation(&id, &s, 0).unwrap().owners.len(), 3);
    // A job spawned into the default session joins no owner set.
    d.spawn(&t, "job-3", None, &[1]).unwrap();
    assert!(!d
        .reservation(&id, &s, 0)
        .unwrap()
        .owners
        .contains(&"job-3".to_string()));
}

#[test]
fn s8_2_1_7_ownership_not_transitive() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let a = new_alloc(&mut d, &mut s, &t, nodes(1));
    let b = new_alloc(&mut d, &mut s, &t, nodes(1));
    d.spawn(&t, "job-1", Some(&targets(&[&a])), &[1]).unwrap();
    let child = Requester::app("job-1", 0);
    let tg = targets(&[&b]);
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NoPermissions(Rule::SpawnTargetNotOwner),
        |d, _| d.spawn(&child, "job-2", Some(&tg), &[1]).map(|_| ()),
    );
    // Nor may the child extend its parent's other reservation.
    let r = req(
        &child,
        Directive::Extend,
        AllocAttrs {
            num_nodes: Some(1),
            ..by_id(&b)
        },
    );
    assert_eq!(
        d.allocate(&r, &mut s, 0),
        Err(DvmError::NoPermissions(Rule::ExtendNotOwner))
    );
}

#[test]
fn s8_2_1_7_scheduler_is_implicit_owner() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(2));
    let sch = Requester::scheduler("sched");
    d.spawn(&sch, "job-s", Some(&targets(&[&id])), &[1])
        .unwrap();
    let out = d
        .allocate(&req(&sch, Directive::Release, by_id(&id)), &mut s, 0)
        .unwrap();
    assert_eq!(
        ended(&out.effects),
        vec![(id, EndHow::Released, EndWhy::SchedulerRelease)]
    );
}

// ---- §8.2.1.9.1 unconditional triggers -------------------------------------

#[test]
fn s8_2_1_9_1_any_owner_may_release() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(2));
    d.spawn(&t, "job-1", Some(&targets(&[&id])), &[1]).unwrap();
    let stranger = Requester::tool("tool-9");
    let r = req(&stranger, Directive::Release, by_id(&id));
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NoPermissions(Rule::ReleaseNotOwner),
        |d, s| d.allocate(&r, s, 0).map(|_| ()),
    );
    let child = Requester::app("job-1", 0);
    let out = d
        .allocate(&req(&child, Directive::Release, by_id(&id)), &mut s, 0)
        .unwrap();
    assert!(d.reservation(&id, &s, 0).is_none());
    assert_eq!(killed(&out.effects), vec!["job-1".to_string()]);
}

#[test]
fn s8_2_1_9_4_release_startup_nodes_nobody_killed() {
    let (mut d, mut s) = setup(3, 0);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, list(&["n001", "n002"]));
    d.spawn(&t, "job-1", Some(&targets(&[&id])), &[4]).unwrap();
    let out = d
        .allocate(&req(&t, Directive::Release, by_id(&id)), &mut s, 0)
        .unwrap();
    assert!(killed(&out.effects).is_empty());
    assert_eq!(session_of(&d, "n001"), Some(None));
    assert_eq!(d.jobs()[0].state, "running");
    assert_eq!(d.nodes().len(), 3, "startup nodes never leave");
    assert!(s.is_free("n001"), "carved nodes are carvable again");
}

#[test]
fn s8_2_1_9_4_release_scheduler_nodes_kills_jobs() {
    let (mut d, mut s) = setup(1, 2);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(2));
    d.spawn(&t, "job-in", Some(&targets(&[&id])), &[2]).unwrap();
    d.spawn(&t, "job-out", None, &[1]).unwrap();
    let out = d
        .allocate(&req(&t, Directive::Release, by_id(&id)), &mut s, 0)
        .unwrap();
    assert_eq!(killed(&out.effects), vec!["job-in".to_string()]);
    assert!(out
        .effects
        .iter()
        .any(|e| matches!(e, Effect::NodesLeft { nodes } if nodes.len() == 2)));
    assert_eq!(d.nodes().len(), 1);
    assert_eq!(s.free_own_count(), 2);
}

#[test]
fn s8_2_1_9_1_partial_release_by_count_and_list() {
    let (mut d, mut s) = setup(1, 4);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(4));
    let out = d
        .allocate(
            &req(
                &t,
                Directive::Release,
                AllocAttrs {
                    num_nodes: Some(1),
                    ..by_id(&id)
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(
        out.status,
        AllocStatus::Released {
            nodes: vec!["s004".into()]
        }
    );
    let out = d
        .allocate(
            &req(
                &t,
                Directive::Release,
                AllocAttrs {
                    node_list: Some(vec!["s001".into()]),
                    ..by_id(&id)
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(
        out.status,
        AllocStatus::Released {
            nodes: vec!["s001".into()]
        }
    );
    assert_eq!(
        d.reservation(&id, &s, 0).unwrap().nodes,
        vec!["s002", "s003"]
    );
    let bad = req(
        &t,
        Directive::Release,
        AllocAttrs {
            node_list: Some(vec!["s004".into()]),
            ..by_id(&id)
        },
    );
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::BadParam(Rule::ReleaseBadPart),
        |d, s| d.allocate(&bad, s, 0).map(|_| ()),
    );
}

#[test]
fn s8_2_1_9_1_teardown_ends_everything() {
    let (mut d, mut s) = setup(2, 2);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(2));
    d.spawn(&t, "job-1", Some(&targets(&[&id])), &[1]).unwrap();
    d.spawn(&t, "job-2", None, &[1]).unwrap();
    let fx = d.teardown(&mut s);
    assert_eq!(killed(&fx), vec!["job-1".to_string(), "job-2".to_string()]);
    assert_eq!(ended(&fx), vec![(id, EndHow::Released, EndWhy::Teardown)]);
    assert!(d.reservations(&s, 0).is_empty());
    assert_eq!(d.nodes().len(), 2);
    assert_eq!(s.free_own_count(), 2);
}

#[test]
fn s8_2_1_9_1_expiry_kills_jobs_on_departing_nodes() {
    let (mut d, mut s) = setup(1, 2);
    let t = Requester::tool("tool-1");
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            time_secs: Some(10),
            ..nodes(2)
        },
    );
    d.spawn(&t, "job-1", Some(&targets(&[&id])), &[1]).unwrap();
    assert_eq!(s.next_deadline(), Some(10_000));
    assert!(d.advance(&mut s, 9_999).is_empty());
    let fx = d.advance(&mut s, 10_000);
    assert_eq!(killed(&fx), vec!["job-1".to_string()]);
    assert_eq!(ended(&fx), vec![(id, EndHow::Released, EndWhy::Expired)]);
    assert_eq!(d.jobs()[0].state, "killing");
    // The server reports the kill completed: the job terminates normally.
    d.job_terminated("job-1", 143, &mut s, 10_001).unwrap();
    assert_eq!(d.jobs()[0].exit_status, Some(143));
}

// ---- §8.2.1.9.2 dispositions ---------------------------------------------

/// Tool `tool-1`, leader job `lead` (owner) holding a reservation of two
/// scheduler nodes with `inherit`; `kid` spawned by `lead` into it when
/// `with_child`.
fn owner_with(inherit: Option<Inheritance>, with_child: bool) -> (Dvm, Scheduler, String) {
    let (mut d, mut s) = setup(2, 2);
    let t = Requester::tool("tool-1");
    d.tool_connected("tool-1").unwrap();
    d.spawn(&t, "lead", None, &[1]).unwrap();
    let lead = Requester::app("lead", 0);
    let id = new_alloc(
        &mut d,
        &mut s,
        &lead,
        AllocAttrs {
            inherit: inherit.map(Received::from),
            ..nodes(2)
        },
    );
    if with_child {
        d.spawn(&lead, "kid", Some(&targets(&[&id])), &[1]).unwrap();
    }
    (d, s, id)
}

#[test]
fn s8_2_1_9_2_none_owner_death_with_children_releases_and_kills() {
    let (mut d, mut s, id) = owner_with(Some(NONE), true);
    let fx = d.job_terminated("lead", 0, &mut s, 0).unwrap();
    assert_eq!(
        ended(&fx),
        vec![(
            id,
            EndHow::Released,
            EndWhy::Disposition(pmix_tools::proto::Inheritance::None)
        )]
    );
    assert_eq!(killed(&fx), vec!["kid".to_string()]);
    assert_eq!(s.free_own_count(), 2);
}

#[test]
fn s8_2_1_9_2_none_owner_death_without_children_releases() {
    let (mut d, mut s, id) = owner_with(Some(NONE), false);
    let fx = d.job_terminated("lead", 0, &mut s, 0).unwrap();
    assert_eq!(ended(&fx).len(), 1);
    assert_eq!(ended(&fx)[0].0, id);
    assert_eq!(d.nodes().len(), 2, "scheduler nodes left the DVM");
}

#[test]
fn s8_2_1_9_2_child_outlives_owner_until_last_child() {
    let (mut d, mut s, id) = owner_with(Some(CHILD), true);
    let fx = d.job_terminated("lead", 0, &mut s, 0).unwrap();
    assert!(ended(&fx).is_empty());
    assert_eq!(
        d.reservation(&id, &s, 0).unwrap().state,
        ReservationState::Draining
    );
    let fx = d.job_terminated("kid", 0, &mut s, 0).unwrap();
    assert_eq!(
        ended(&fx),
        vec![(
            id,
            EndHow::Released,
            EndWhy::Disposition(pmix_tools::proto::Inheritance::Child)
        )]
    );
    assert_eq!(s.free_own_count(), 2);
}

#[test]
fn s8_2_1_9_2_child_without_children_releases_at_owner_death() {
    let (mut d, mut s, id) = owner_with(Some(CHILD), false);
    let fx = d.job_terminated("lead", 0, &mut s, 0).unwrap();
    assert_eq!(ended(&fx)[0].0, id);
    assert_eq!(ended(&fx)[0].1, EndHow::Released);
}

#[test]
fn s8_2_1_9_2_default_owner_death_unreserves_nobody_killed() {
    let (mut d, mut s, id) = owner_with(Some(DEFAULT), true);
    let nodes_before = d.reservation(&id, &s, 0).unwrap().nodes;
    let fx = d.job_terminated("lead", 0, &mut s, 0).unwrap();
    assert_eq!(ended(&fx)[0].1, EndHow::Unreserved);
    assert!(killed(&fx).is_empty());
    for n in &nodes_before {
        assert_eq!(
            session_of(&d, n),
            Some(None),
            "node stays, in default session"
        );
    }
    assert_eq!(s.free_own_count(), 0, "nothing returned to the scheduler");
    assert_eq!(
        d.jobs().iter().find(|j| j.nspace == "kid").unwrap().state,
        "running"
    );
}

#[test]
fn s8_2_1_9_2_default_owner_death_without_children_unreserves() {
    let (mut d, mut s, _id) = owner_with(Some(DEFAULT), false);
    let fx = d.job_terminated("lead", 0, &mut s, 0).unwrap();
    assert_eq!(ended(&fx)[0].1, EndHow::Unreserved);
    assert_eq!(d.nodes().len(), 4);
}

#[test]
fn s8_2_1_9_2_child_default_unreserves_after_last_child() {
    let (mut d, mut s, id) = owner_with(Some(CHILD_DEFAULT), true);
    assert!(ended(&d.job_terminated("lead", 0, &mut s, 0).unwrap()).is_empty());
    let fx = d.job_terminated("kid", 0, &mut s, 0).unwrap();
    assert_eq!(
        ended(&fx)[0],
        (
            id,
            EndHow::Unreserved,
            EndWhy::Disposition(pmix_tools::proto::Inheritance::ChildDefault)
        )
    );
    assert_eq!(d.nodes().len(), 4);
    assert_eq!(s.free_own_count(), 0);
}

#[test]
fn s8_2_1_9_2_child_default_without_children_unreserves_at_owner_death() {
    let (mut d, mut s, _id) = owner_with(Some(CHILD_DEFAULT), false);
    let fx = d.job_terminated("lead", 0, &mut s, 0).unwrap();
    assert_eq!(ended(&fx)[0].1, EndHow::Unreserved);
}

#[test]
fn s8_2_1_9_3_absent_inheritance_behaves_as_default() {
    let (mut d, mut s, id) = owner_with(None, true);
    assert_eq!(
        d.reservation(&id, &s, 0).unwrap().inherit,
        Some(Inheritance::Default)
    );
    let fx = d.job_terminated("lead", 0, &mut s, 0).unwrap();
    assert_eq!(
        ended(&fx),
        vec![(
            id,
            EndHow::Unreserved,
            EndWhy::Disposition(pmix_tools::proto::Inheritance::Default)
        )]
    );
}

#[test]
fn s8_2_1_9_2_child_drain_waits_for_grandchild_in_other_session() {
    let (mut d, mut s, id) = owner_with(Some(CHILD), true);
    // kid spawns a grandchild into the default session (not the reservation).
    let kid = Requester::app("kid", 0);
    d.spawn(&kid, "grandkid", None, &[1]).unwrap();
    assert!(ended(&d.job_terminated("lead", 0, &mut s, 0).unwrap()).is_empty());
    assert!(ended(&d.job_terminated("kid", 0, &mut s, 0).unwrap()).is_empty());
    assert!(
        d.reservation(&id, &s, 0).is_some(),
        "grandchild holds it open"
    );
    let fx = d.job_terminated("grandkid", 0, &mut s, 0).unwrap();
    assert_eq!(ended(&fx)[0].0, id);
    assert!(
        killed(&fx).is_empty(),
        "grandkid already ended; no one left"
    );
}

#[test]
fn s8_2_1_9_2_tool_owner_disposition_fires_on_disconnect() {
    let (mut d, mut s) = setup(2, 2);
    let t = Requester::tool("tool-1");
    d.tool_connected("tool-1").unwrap();
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            inherit: Some(CHILD.into()),
            ..nodes(1)
        },
    );
    d.spawn(&t, "job-1", Some(&targets(&[&id])), &[1]).unwrap();
    assert!(d.tool_disconnected("tool-1", &mut s, 0).unwrap().is_empty());
    let fx = d.job_terminated("job-1", 0, &mut s, 0).unwrap();
    assert_eq!(
        ended(&fx)[0],
        (
            id,
            EndHow::Released,
            EndWhy::Disposition(pmix_tools::proto::Inheritance::Child)
        )
    );
}

#[test]
fn s8_2_1_4_shared_allocation_none_returns_nodes_at_owner_death() {
    let (mut d, mut s) = setup(1, 2);
    let app = Requester::app("job-1", 0);
    let tool = Requester::tool("tool-1");
    d.spawn(&tool, "job-1", None, &[1]).unwrap();
    let id = new_alloc(
        &mut d,
        &mut s,
        &app,
        AllocAttrs {
            share: Some(true),
            inherit: Some(NONE.into()),
            ..nodes(2)
        },
    );
    // Someone else uses the shared nodes from the default session.
    d.spawn(&tool, "user", None, &[6]).unwrap();
    let fx = d.job_terminated("job-1", 0, &mut s, 0).unwrap();
    assert_eq!(ended(&fx)[0].0, id);
    assert_eq!(ended(&fx)[0].1, EndHow::Released);
    assert_eq!(killed(&fx), vec!["user".to_string()]);
    assert_eq!(s.free_own_count(), 2);
}

// ---- §8.2.1.9.5 timeout warning --------------------------------------------

/// (recipient, alloc id, req id, seconds remaining) of each warning.
type WarnSeen = ((String, u32), String, Option<String>, u32);

fn warns(fx: &[Effect]) -> Vec<WarnSeen> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Warn {
                to,
                alloc_id,
                req_id,
                remaining_secs,
            } => Some((
                to.clone(),
                alloc_id.clone(),
                req_id.clone(),
                *remaining_secs,
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn s8_2_1_9_5_warning_only_to_requester() {
    let (mut d, mut s) = setup(1, 2);
    let tool = Requester::tool("tool-1");
    d.spawn(&tool, "job-1", None, &[2]).unwrap();
    let app = Requester::app("job-1", 1);
    let id = new_alloc(
        &mut d,
        &mut s,
        &app,
        AllocAttrs {
            req_id: Some("r1".into()),
            time_secs: Some(60),
            warn_timeout: Some(10),
            ..nodes(1)
        },
    );
    assert_eq!(s.next_deadline(), Some(50_000));
    let fx = d.advance(&mut s, 50_000);
    assert_eq!(
        warns(&fx),
        vec![(
            ("job-1".to_string(), 1),
            id.clone(),
            Some("r1".to_string()),
            10
        )]
    );
    assert_eq!(fx.len(), 1, "the warning changes nothing else");
    assert!(d.reservation(&id, &s, 50_000).is_some());
}

#[test]
fn s8_2_1_9_5_warning_follows_extend_requester_and_extend_lengthens() {
    let (mut d, mut s) = setup(1, 2);
    let t = Requester::tool("tool-1");
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            time_secs: Some(60),
            warn_timeout: Some(10),
            ..nodes(1)
        },
    );
    assert_eq!(warns(&d.advance(&mut s, 50_000)).len(), 1);
    // Another owner process answers by extending: +60 s, renewed 20 s warning.
    d.spawn(&t, "job-1", Some(&targets(&[&id])), &[1]).unwrap();
    let other = Requester::app("job-1", 0);
    d.allocate(
        &req(
            &other,
            Directive::Extend,
            AllocAttrs {
                time_secs: Some(60),
                warn_timeout: Some(20),
                ..by_id(&id)
            },
        ),
        &mut s,
        55_000,
    )
    .unwrap();
    assert_eq!(d.reservation(&id, &s, 55_000).unwrap().expires_in, Some(65));
    assert!(
        d.advance(&mut s, 60_000).is_empty(),
        "old expiry no longer applies"
    );
    let fx = d.advance(&mut s, 100_000);
    assert_eq!(
        warns(&fx),
        vec![(("job-1".to_string(), 0), id.clone(), None, 20)]
    );
    let fx = d.advance(&mut s, 120_000);
    assert_eq!(ended(&fx)[0], (id, EndHow::Released, EndWhy::Expired));
}

// ---- queueing (scheduler simulation) --------------------------------------

#[test]
fn queued_request_granted_when_nodes_free() {
    let (mut d, mut s) = setup(1, 2);
    let a = Requester::tool("tool-a");
    let b = Requester::tool("tool-b");
    let first = new_alloc(&mut d, &mut s, &a, nodes(2));
    let out = d
        .allocate(
            &req(
                &b,
                Directive::New,
                AllocAttrs {
                    req_id: Some("wait".into()),
                    ..nodes(1)
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(out.status, AllocStatus::Queued);
    assert_eq!(
        d.reservation(&out.alloc_id, &s, 0).unwrap().state,
        ReservationState::Queued
    );
    // A queued reservation cannot be targeted yet.
    assert_eq!(
        d.plan_spawn(&b, Some(&targets(&[&out.alloc_id])), &[1]),
        Err(DvmError::NotFound(Rule::SpawnTargetNotFound))
    );
    let rel = d
        .allocate(&req(&a, Directive::Release, by_id(&first)), &mut s, 0)
        .unwrap();
    let granted: Vec<_> = rel
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Granted {
                to,
                alloc_id,
                req_id,
                nodes,
            } => Some((to.clone(), alloc_id.clone(), req_id.clone(), nodes.len())),
            _ => None,
        })
        .collect();
    assert_eq!(
        granted,
        vec![(
            ("tool-b".to_string(), 0),
            out.alloc_id.clone(),
            Some("wait".to_string()),
            1
        )]
    );
    assert_eq!(
        d.reservation(&out.alloc_id, &s, 0).unwrap().state,
        ReservationState::Active
    );
}

#[test]
fn req_cancel_removes_queued_request() {
    let (mut d, mut s) = setup(1, 1);
    let a = Requester::tool("tool-a");
    new_alloc(&mut d, &mut s, &a, nodes(1));
    let out = d
        .allocate(
            &req(
                &a,
                Directive::New,
                AllocAttrs {
                    req_id: Some("q".into()),
                    ..nodes(1)
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(out.status, AllocStatus::Queued);
    let stranger = Requester::tool("tool-x");
    let r = req(&stranger, Directive::ReqCancel, by_id(&out.alloc_id));
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NoPermissions(Rule::CancelNotOwner),
        |d, s| d.allocate(&r, s, 0).map(|_| ()),
    );
    let c = d
        .allocate(
            &req(
                &a,
                Directive::ReqCancel,
                AllocAttrs {
                    req_id: Some("q".into()),
                    ..AllocAttrs::default()
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(c.status, AllocStatus::Cancelled { count: 1 });
    assert!(d.reservation(&out.alloc_id, &s, 0).is_none());
    assert_eq!(s.queue_len(), 0);
    let again = req(&a, Directive::ReqCancel, by_id(&out.alloc_id));
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NotFound(Rule::CancelNotFound),
        |d, s| d.allocate(&again, s, 0).map(|_| ()),
    );
}

// ---- §8.2.1.10 compat mode -----------------------------------------------

#[test]
fn s8_2_1_10_compat_target_and_share_ignored() {
    let (mut d, mut s) = setup_mode(2, 2, true);
    let app = Requester::app("job-1", 0);
    // An application TARGET is not rejected: the attribute is unknown.
    let id = new_alloc(
        &mut d,
        &mut s,
        &app,
        AllocAttrs {
            target: Some("elsewhere".into()),
            share: Some(true),
            ..nodes(1)
        },
    );
    let r = d.reservation(&id, &s, 0).unwrap();
    assert_eq!(r.owner_nspace, "job-1");
    assert!(!r.share);
    assert_eq!(session_of(&d, &r.nodes[0]), Some(Some(id)));
}

#[test]
fn s8_2_1_10_compat_default_inheritance_accepted() {
    let (mut d, mut s) = setup_mode(2, 2, true);
    let t = Requester::tool("tool-1");
    d.tool_connected("tool-1").unwrap();
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            inherit: Some(DEFAULT.into()),
            ..nodes(1)
        },
    );
    let fx = d.tool_disconnected("tool-1", &mut s, 0).unwrap();
    assert_eq!(ended(&fx)[0].0, id);
    assert_eq!(ended(&fx)[0].1, EndHow::Unreserved);
}

#[test]
fn s8_2_1_10_compat_warn_timeout_ignored_expiry_kept() {
    let (mut d, mut s) = setup_mode(1, 1, true);
    let t = Requester::tool("tool-1");
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            time_secs: Some(30),
            warn_timeout: Some(10),
            ..nodes(1)
        },
    );
    assert!(
        d.advance(&mut s, 25_000).is_empty(),
        "no warning in compat mode"
    );
    let fx = d.advance(&mut s, 30_000);
    assert_eq!(ended(&fx)[0], (id, EndHow::Released, EndWhy::Expired));
}

#[test]
fn s8_2_1_10_compat_spawn_target_ignored() {
    let (mut d, mut s) = setup_mode(2, 2, true);
    let t = Requester::tool("tool-1");
    let id = new_alloc(&mut d, &mut s, &t, nodes(1));
    // Even a target that would be NOT_FOUND is ignored: default session.
    let plan = d
        .plan_spawn(&t, Some(&targets(&[&id, "alloc.99"])), &[1])
        .unwrap();
    assert_eq!(plan.pool, vec!["n001", "n002"]);
    assert!(plan.sessions.is_empty());
}

#[test]
fn s8_2_1_5_1_tool_with_target_does_not_extend_for_the_target() {
    // TARGET names whose reservation it is, not who is asking: a tool that
    // created a reservation for "leader" is not in its owner set, so neither
    // with nor without TARGET may it extend it (issue 10; this used to be
    // granted with TARGET).
    let (mut d, mut s) = setup(1, 4);
    let t = Requester::tool("palloc-1");
    let acting = AllocAttrs {
        target: Some("leader".into()),
        ..AllocAttrs::default()
    };
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            num_nodes: Some(1),
            ..acting.clone()
        },
    );
    let ext = req(
        &t,
        Directive::Extend,
        AllocAttrs {
            num_nodes: Some(1),
            alloc_id: Some(id.clone()),
            ..acting
        },
    );
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NoPermissions(Rule::ExtendNotOwner),
        |d, s| d.allocate(&ext, s, 0).map(|_| ()),
    );
    assert_eq!(d.reservation(&id, &s, 0).unwrap().nodes.len(), 1);
    // Without TARGET the tool's own namespace is not an owner either.
    let bare = req(
        &t,
        Directive::Extend,
        AllocAttrs {
            num_nodes: Some(1),
            ..by_id(&id)
        },
    );
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NoPermissions(Rule::ExtendNotOwner),
        |d, s| d.allocate(&bare, s, 0).map(|_| ()),
    );
    // The owner itself may.
    let leader = Requester::app("leader", 0);
    let own = req(
        &leader,
        Directive::Extend,
        AllocAttrs {
            num_nodes: Some(1),
            ..by_id(&id)
        },
    );
    d.allocate(&own, &mut s, 0).unwrap();
    assert_eq!(d.reservation(&id, &s, 0).unwrap().nodes.len(), 2);
}

#[test]
fn spawn_process_count_is_bounded() {
    let (mut d, mut s) = setup(1, 0);
    let t = Requester::tool("tool-1");
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::BadParam(Rule::SpawnTooManyProcs),
        |d, _| {
            d.spawn(&t, "job-1", None, &[u32::MAX, u32::MAX])
                .map(|_| ())
        },
    );
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::BadParam(Rule::SpawnNoProcs),
        |d, _| d.spawn(&t, "job-1", None, &[]).map(|_| ()),
    );
}

#[test]
fn queued_extend_granted_later_to_the_extend_requester() {
    let (mut d, mut s) = setup(1, 2);
    let a = Requester::tool("tool-a");
    let b = Requester::tool("tool-b");
    let mine = new_alloc(&mut d, &mut s, &a, nodes(1));
    let other = new_alloc(&mut d, &mut s, &b, nodes(1));
    let ext = req(
        &a,
        Directive::Extend,
        AllocAttrs {
            num_nodes: Some(1),
            req_id: Some("more".into()),
            ..by_id(&mine)
        },
    );
    assert_eq!(
        d.allocate(&ext, &mut s, 0).unwrap().status,
        AllocStatus::Queued
    );
    let out = d
        .allocate(&req(&b, Directive::Release, by_id(&other)), &mut s, 0)
        .unwrap();
    assert!(out.effects.iter().any(|e| matches!(e,
        Effect::Granted { to, alloc_id, req_id, nodes }
            if to.0 == "tool-a" && *alloc_id == mine
                && req_id.as_deref() == Some("more") && nodes.len() == 1)));
    assert_eq!(d.reservation(&mine, &s, 0).unwrap().nodes.len(), 2);
}

#[test]
fn s8_2_1_9_2_owner_death_drops_its_queued_request() {
    let (mut d, mut s) = setup(1, 1);
    let t = Requester::tool("tool-1");
    new_alloc(&mut d, &mut s, &t, nodes(1));
    d.spawn(&t, "job-1", None, &[1]).unwrap();
    let app = Requester::app("job-1", 0);
    let q = d
        .allocate(&req(&app, Directive::New, nodes(1)), &mut s, 0)
        .unwrap();
    assert_eq!(q.status, AllocStatus::Queued);
    let fx = d.job_terminated("job-1", 0, &mut s, 0).unwrap();
    assert_eq!(
        ended(&fx),
        vec![(
            q.alloc_id.clone(),
            EndHow::Cancelled,
            EndWhy::Disposition(pmix_tools::proto::Inheritance::Default)
        )]
    );
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::RequestDropped { to, .. } if to.0 == "job-1")));
    assert_eq!(s.queue_len(), 0);
}

// ---- issue 10: hostile requesters and state corners -----------------------

/// A job "lead" owning a reservation of one of three scheduler nodes, with a
/// queued EXTEND ("ext-1") of it waiting for two more nodes held elsewhere.
fn lead_with_queued_extend() -> (Dvm, Scheduler, String) {
    let (mut d, mut s) = setup(1, 3);
    let t = Requester::tool("tool-1");
    d.tool_connected("tool-1").unwrap();
    d.spawn(&t, "lead", None, &[1]).unwrap();
    let lead = Requester::app("lead", 0);
    let id = new_alloc(&mut d, &mut s, &lead, nodes(1));
    let other = Requester::tool("tool-2");
    new_alloc(&mut d, &mut s, &other, nodes(1));
    let out = d
        .allocate(
            &req(
                &lead,
                Directive::Extend,
                AllocAttrs {
                    req_id: Some("ext-1".into()),
                    inherit: Some(NONE.into()),
                    num_nodes: Some(2),
                    ..by_id(&id)
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(out.status, AllocStatus::Queued);
    (d, s, id)
}

#[test]
fn s8_2_1_9_1_foreign_tool_with_target_changes_nothing() {
    let (mut d, mut s, id) = lead_with_queued_extend();
    let stranger = Requester::tool("stranger");
    let t = |extra: AllocAttrs| AllocAttrs {
        target: Some("lead".into()),
        ..extra
    };
    let cases = [
        (
            Directive::Extend,
            t(AllocAttrs {
                inherit: Some(CHILD.into()),
                num_nodes: Some(1),
                ..by_id(&id)
            }),
            Rule::ExtendNotOwner,
        ),
        (Directive::Release, t(by_id(&id)), Rule::ReleaseNotOwner),
        (
            Directive::Release,
            t(AllocAttrs {
                num_nodes: Some(1),
                ..by_id(&id)
            }),
            Rule::ReleaseNotOwner,
        ),
        (Directive::ReqCancel, t(by_id(&id)), Rule::CancelNotOwner),
        (
            Directive::ReqCancel,
            t(AllocAttrs {
                req_id: Some("ext-1".into()),
                ..AllocAttrs::default()
            }),
            Rule::CancelNotOwner,
        ),
    ];
    for (dir, attrs, rule) in cases {
        let r = req(&stranger, dir, attrs);
        rejected_without_effect(&mut d, &mut s, DvmError::NoPermissions(rule), |d, s| {
            d.allocate(&r, s, 0).map(|_| ())
        });
        assert_eq!(DvmError::NoPermissions(rule).status().0, -23);
    }
    assert_eq!(s.queue_len(), 1, "the owner's queued EXTEND survives");
}

#[test]
fn s8_2_1_9_2_draining_child_extend_to_none_or_default_ends() {
    for (inh, how) in [(NONE, EndHow::Released), (DEFAULT, EndHow::Unreserved)] {
        let (mut d, mut s, id) = owner_with(Some(CHILD), true);
        d.job_terminated("lead", 0, &mut s, 0).unwrap();
        assert_eq!(
            d.reservation(&id, &s, 0).unwrap().state,
            ReservationState::Draining
        );
        let kid = Requester::app("kid", 0);
        let out = d
            .allocate(
                &req(
                    &kid,
                    Directive::Extend,
                    AllocAttrs {
                        inherit: Some(inh.into()),
                        ..by_id(&id)
                    },
                ),
                &mut s,
                0,
            )
            .unwrap();
        assert!(matches!(out.status, AllocStatus::Granted { .. }));
        // The owner is gone: the new disposition applies now, not never.
        assert_eq!(ended(&out.effects).len(), 1, "{:?}", out.effects);
        assert_eq!(ended(&out.effects)[0].1, how);
        assert!(d.reservation(&id, &s, 0).is_none());
        let fx = d.job_terminated("kid", 0, &mut s, 0).unwrap();
        assert!(ended(&fx).is_empty());
        assert!(d.reservations(&s, 0).is_empty());
    }
}

#[test]
fn rfc002_req_cancel_without_id_cancels_all_of_the_requester() {
    let (mut d, mut s, id) = lead_with_queued_extend();
    let lead = Requester::app("lead", 0);
    let q = d
        .allocate(&req(&lead, Directive::New, nodes(1)), &mut s, 0)
        .unwrap();
    assert_eq!(q.status, AllocStatus::Queued);
    // Someone else's queued request is not touched.
    let other = Requester::tool("tool-2");
    let theirs = d
        .allocate(&req(&other, Directive::New, nodes(1)), &mut s, 0)
        .unwrap();
    assert_eq!(theirs.status, AllocStatus::Queued);
    assert_eq!(s.queue_len(), 3);
    let out = d
        .allocate(
            &req(&lead, Directive::ReqCancel, AllocAttrs::default()),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(out.status, AllocStatus::Cancelled { count: 2 });
    // The freed queue lets tool-2's request through; it was not cancelled.
    assert_eq!(s.queue_len(), 0);
    assert!(out.effects.iter().any(|e| matches!(e,
        Effect::Granted { alloc_id, .. } if *alloc_id == theirs.alloc_id)));
    assert!(d.reservation(&q.alloc_id, &s, 0).is_none());
    assert!(d.reservation(&theirs.alloc_id, &s, 0).is_some());
    assert_eq!(
        d.reservation(&id, &s, 0).unwrap().inherit,
        Some(Inheritance::Default)
    );
    // Nothing left: NOT_FOUND.
    let again = req(&lead, Directive::ReqCancel, AllocAttrs::default());
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NotFound(Rule::CancelNotFound),
        |d, s| d.allocate(&again, s, 0).map(|_| ()),
    );
}

#[test]
fn rfc002_queued_extend_cancelled_by_its_own_request_id_leaves_nothing() {
    let (mut d, mut s, id) = lead_with_queued_extend();
    let before = d.reservation(&id, &s, 0).unwrap();
    assert_eq!(
        before.inherit,
        Some(Inheritance::Default),
        "queued: nothing applied yet"
    );
    assert_eq!(before.warn_to.as_deref(), Some("lead:0"));
    let lead = Requester::app("lead", 0);
    let out = d
        .allocate(
            &req(
                &lead,
                Directive::ReqCancel,
                AllocAttrs {
                    req_id: Some("ext-1".into()),
                    ..AllocAttrs::default()
                },
            ),
            &mut s,
            0,
        )
        .unwrap();
    assert_eq!(out.status, AllocStatus::Cancelled { count: 1 });
    assert_eq!(out.alloc_id, id);
    assert!(out.effects.iter().any(|e| matches!(e,
        Effect::RequestDropped { req_id: Some(r), .. } if r == "ext-1")));
    assert_eq!(s.queue_len(), 0);
    let after = d.reservation(&id, &s, 0).unwrap();
    assert_eq!(after, before, "a cancelled EXTEND leaves no side effect");
}

#[test]
fn rfc002_granted_queued_extend_applies_its_inheritance_then() {
    let (mut d, mut s, id) = lead_with_queued_extend();
    let other = d
        .reservations(&s, 0)
        .into_iter()
        .find(|r| r.alloc_id != id)
        .unwrap()
        .alloc_id;
    let t2 = Requester::tool("tool-2");
    let out = d
        .allocate(&req(&t2, Directive::Release, by_id(&other)), &mut s, 0)
        .unwrap();
    assert!(out.effects.iter().any(|e| matches!(e,
        Effect::Granted { req_id: Some(r), .. } if r == "ext-1")));
    let r = d.reservation(&id, &s, 0).unwrap();
    assert_eq!(r.inherit, Some(Inheritance::None));
    assert_eq!(r.nodes.len(), 3);
}

#[test]
fn s8_2_1_9_5_extend_not_moving_deadline_does_not_rewarn() {
    let (mut d, mut s) = setup(1, 3);
    let t = Requester::tool("tool-1");
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            time_secs: Some(60),
            warn_timeout: Some(10),
            ..nodes(1)
        },
    );
    assert_eq!(warns(&d.advance(&mut s, 50_000)).len(), 1);
    // More nodes, same deadline: the delivered warning is not repeated.
    let out = d
        .allocate(
            &req(
                &t,
                Directive::Extend,
                AllocAttrs {
                    num_nodes: Some(1),
                    ..by_id(&id)
                },
            ),
            &mut s,
            51_000,
        )
        .unwrap();
    assert!(warns(&out.effects).is_empty());
    assert!(warns(&d.advance(&mut s, 52_000)).is_empty());
    assert_eq!(s.next_deadline(), Some(60_000), "only the expiry is left");
    // Moving the deadline arms a new warning.
    d.allocate(
        &req(
            &t,
            Directive::Extend,
            AllocAttrs {
                time_secs: Some(60),
                ..by_id(&id)
            },
        ),
        &mut s,
        53_000,
    )
    .unwrap();
    assert_eq!(s.next_deadline(), Some(110_000));
    assert_eq!(warns(&d.advance(&mut s, 110_000)).len(), 1);
}

#[test]
fn s8_2_1_10_out_of_range_inheritance_same_status_in_compat() {
    for compat in [false, true] {
        let (mut d, mut s) = setup_mode(2, 4, compat);
        let t = Requester::tool("tool-1");
        for v in [0u8, 5, 255] {
            let r = req(
                &t,
                Directive::New,
                AllocAttrs {
                    inherit: Some(Inheritance::received(v)),
                    ..nodes(1)
                },
            );
            rejected_without_effect(
                &mut d,
                &mut s,
                DvmError::BadParam(Rule::InheritInvalid),
                |d, s| d.allocate(&r, s, 0).map(|_| ()),
            );
        }
    }
}

/// Issue 14: an EXTEND naming a missing allocation is not found, even with
/// the request id of an existing one (the id named wins).
#[test]
fn s8_2_1_8_extend_missing_id_with_existing_req_id_not_found() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            req_id: Some("r1".into()),
            ..nodes(1)
        },
    );
    let r = req(
        &t,
        Directive::Extend,
        AllocAttrs {
            alloc_id: Some("alloc.999".into()),
            req_id: Some("r1".into()),
            num_nodes: Some(1),
            ..AllocAttrs::default()
        },
    );
    rejected_without_effect(
        &mut d,
        &mut s,
        DvmError::NotFound(Rule::ExtendNotFound),
        |d, s| d.allocate(&r, s, 0).map(|_| ()),
    );
}

/// Issue 14 (§8.2.1.9.5): an EXTEND without `PMIX_ALLOC_WARN_TIMEOUT`
/// leaves the warning with the requester who asked for it; one with a
/// threshold takes it.
#[test]
fn s8_2_1_9_5_extend_without_threshold_keeps_the_warning_where_it_was() {
    let (mut d, mut s) = setup(2, 4);
    let t = Requester::tool("tool-1");
    let id = new_alloc(
        &mut d,
        &mut s,
        &t,
        AllocAttrs {
            warn_timeout: Some(60),
            time_secs: Some(3600),
            ..nodes(1)
        },
    );
    let other_rank = Requester {
        rank: 1,
        ..t.clone()
    };
    let warn_to = |d: &Dvm, s: &Scheduler| d.reservation(&id, s, 0).and_then(|r| r.warn_to);
    let extend = |warn: Option<u32>| {
        req(
            &other_rank,
            Directive::Extend,
            AllocAttrs {
                time_secs: Some(600),
                warn_timeout: warn,
                ..by_id(&id)
            },
        )
    };
    d.allocate(&extend(None), &mut s, 0).expect("extended");
    assert_eq!(warn_to(&d, &s).as_deref(), Some("tool-1:0"));
    d.allocate(&extend(Some(30)), &mut s, 0).expect("extended");
    assert_eq!(warn_to(&d, &s).as_deref(), Some("tool-1:1"));
}

#[test]
fn no_granted_event_after_a_reservation_ended() {
    let (mut d, mut s) = setup(1, 2);
    let a = Requester::tool("tool-a");
    let b = Requester::tool("tool-b");
    let mine = new_alloc(&mut d, &mut s, &a, nodes(1));
    let other = new_alloc(&mut d, &mut s, &b, nodes(1));
    let ext = req(
        &a,
        Directive::Extend,
        AllocAttrs {
            num_nodes: Some(1),
            req_id: Some("more".into()),
            ..by_id(&mine)
        },
    );
    assert_eq!(
        d.allocate(&ext, &mut s, 0).unwrap().status,
        AllocStatus::Queued
    );
    let fx = d
        .allocate(&req(&a, Directive::Release, by_id(&mine)), &mut s, 1)
        .unwrap()
        .effects;
    assert_eq!(ended(&fx).len(), 1, "{fx:?}");
    let fx = d
        .allocate(&req(&b, Directive::Release, by_id(&other)), &mut s, 2)
        .unwrap()
        .effects;
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Granted { .. })),
        "a grant for an ended reservation: {fx:?}"
    );
    assert_eq!(
        s.queue_len(),
        0,
        "the ended reservation's EXTEND still waits"
    );
    assert!(d.reservation(&mine, &s, 2).is_none());
    assert_eq!(d.advance(&mut s, 100), Vec::new());
}
