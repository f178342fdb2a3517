//! The counter-based genealogy must answer exactly as the spec's walk over the
//! transitive spawn subtree (§8.2.1.7 derived children, §6.5.1.5 item 2), and
//! reservations must end exactly when their disposition says so (§8.2.1.9.2).
//! Checked against a naive reference model over random histories.

use std::collections::{HashMap, HashSet};

use pmix_tools::dvm::{AllocAttrs, AllocRequest, Dvm, DvmConfig, Requester};
use pmix_tools::proto::{Directive, Inheritance};
use pmix_tools::sched::Scheduler;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Spawn a job whose parent is the k-th live namespace.
    Spawn(usize),
    /// End the k-th live job.
    End(usize),
    /// Reserve one node for the k-th namespace (live or not) with inheritance.
    Reserve(usize, u8),
    /// A tool connects and leaves (minted name or given): it is forgotten
    /// and its slot reused, which must not disturb any answer.
    Churn(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<usize>().prop_map(Op::Spawn),
        2 => any::<usize>().prop_map(Op::End),
        2 => (any::<usize>(), 1u8..=4).prop_map(|(k, i)| Op::Reserve(k, i)),
        2 => any::<bool>().prop_map(Op::Churn),
    ]
}

/// Reference: live descendants by walking children, no counters.
fn naive_live_desc(
    ns: &str,
    children: &HashMap<String, Vec<String>>,
    live: &HashSet<String>,
) -> bool {
    let mut stack: Vec<&String> = children
        .get(ns)
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    while let Some(c) = stack.pop() {
        if live.contains(c) {
            return true;
        }
        if let Some(v) = children.get(c) {
            stack.extend(v.iter());
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn counters_match_the_genealogy_walk(ops in proptest::collection::vec(op(), 1..120)) {
        let mut s = Scheduler::new(200, 1);
        let mut d = Dvm::new(DvmConfig { nodes: 2, slots: 4, compat: false }, &mut s);
        d.tool_connected("tool").unwrap();
        let tool = Requester::tool("tool");
        let mut all: Vec<String> = vec!["tool".into()];
        let mut live: HashSet<String> = HashSet::from(["tool".to_string()]);
        let mut children: HashMap<String, Vec<String>> = HashMap::new();
        // alloc id -> (owner, inheritance)
        let mut res: HashMap<String, (String, u8)> = HashMap::new();
        let mut next = 0usize;
        for o in ops {
            match o {
                Op::Spawn(k) => {
                    let mut lv: Vec<&String> = all.iter().filter(|n| live.contains(*n)).collect();
                    lv.sort();
                    let parent = lv[k % lv.len()].clone();
                    next += 1;
                    let ns = format!("job-{next}");
                    let r = if parent == "tool" { tool.clone() } else { Requester::app(&parent, 0) };
                    d.spawn(&r, &ns, None, &[1]).unwrap();
                    children.entry(parent).or_default().push(ns.clone());
                    all.push(ns.clone());
                    live.insert(ns);
                }
                Op::End(k) => {
                    let mut jobs: Vec<&String> =
                        all.iter().filter(|n| live.contains(*n) && *n != "tool").collect();
                    if jobs.is_empty() { continue; }
                    jobs.sort();
                    let ns = jobs[k % jobs.len()].clone();
                    d.job_terminated(&ns, 0, &mut s, 0).unwrap();
                    live.remove(&ns);
                }
                Op::Reserve(k, inh) => {
                    let owner = all[k % all.len()].clone();
                    let out = d.allocate(&AllocRequest {
                        requester: tool.clone(),
                        directive: Directive::New.into(),
                        attrs: AllocAttrs {
                            target: Some(owner.clone()),
                            inherit: Some(Inheritance::received(inh)),
                            num_nodes: Some(1),
                            ..AllocAttrs::default()
                        },
                    }, &mut s, 0).unwrap();
                    res.insert(out.alloc_id, (owner, inh));
                }
                Op::Churn(minted) => {
                    next += 1;
                    let ns = format!("churn-{next}");
                    if minted {
                        d.tool_connected_minted(&ns).unwrap();
                    } else {
                        d.tool_connected(&ns).unwrap();
                    }
                    d.tool_disconnected(&ns, &mut s, 0).unwrap();
                    prop_assert_eq!(d.namespace_known(&ns), !minted);
                }
            }
            // 1. Live-descendant answers equal the walk.
            for ns in &all {
                prop_assert_eq!(d.has_live_descendants(ns), naive_live_desc(ns, &children, &live), "ns {}", ns);
            }
            // 2. Exactly the reservations whose disposition has not fired exist.
            let present: HashSet<String> =
                d.reservations(&s, 0).into_iter().map(|r| r.alloc_id).collect();
            for (id, (owner, inh)) in &res {
                let ended = !live.contains(owner);
                let waits = *inh == 2 || *inh == 4;
                let should_exist = !ended || (waits && naive_live_desc(owner, &children, &live));
                prop_assert_eq!(present.contains(id), should_exist, "alloc {} owner {} inh {}", id, owner, inh);
            }
        }
    }
}

/// Ended tools that own nothing and parent nothing are forgotten: the model
/// holds the same number of namespaces after 20,000 tool connections as
/// before; a name a tool chose is still never reused.
#[test]
fn ended_tools_nothing_needs_are_forgotten() {
    let mut s = Scheduler::new(4, 1);
    let mut d = Dvm::new(
        DvmConfig {
            nodes: 1,
            slots: 1,
            compat: false,
        },
        &mut s,
    );
    let before = d.namespaces_held();
    for i in 0..10_000 {
        let ns = format!("pdvm-h-1@{i}");
        d.tool_connected_minted(&ns).unwrap();
        d.tool_disconnected(&ns, &mut s, 0).unwrap();
        let given = format!("given-{i}");
        d.tool_connected(&given).unwrap();
        d.tool_disconnected(&given, &mut s, 0).unwrap();
    }
    assert_eq!(d.namespaces_held(), before);
    assert!(d.namespace_known("given-77"), "a given name may be reused");
    assert!(d.tool_connected("given-77").is_err());
    // A tool that owns a reservation is kept until the reservation ends.
    d.tool_connected("owner").unwrap();
    let owner = Requester::tool("owner");
    let out = d
        .allocate(
            &AllocRequest {
                requester: owner.clone(),
                directive: Directive::New.into(),
                attrs: AllocAttrs {
                    num_nodes: Some(1),
                    inherit: Some(Inheritance::received(2)),
                    ..AllocAttrs::default()
                },
            },
            &mut s,
            0,
        )
        .unwrap();
    d.spawn(
        &owner,
        "job-a",
        Some(std::slice::from_ref(&out.alloc_id)),
        &[1],
    )
    .unwrap();
    d.tool_disconnected("owner", &mut s, 0).unwrap();
    assert_eq!(d.reservations(&s, 0).len(), 1, "CHILD: the job still runs");
    assert!(d.has_live_descendants("owner"));
    d.job_terminated("job-a", 0, &mut s, 0).unwrap();
    assert!(d.reservations(&s, 0).is_empty());
}

/// The CHILD rules need the whole chain of ended ancestors while any
/// descendant lives, however deep: a tool's reservation (CHILD) waits for
/// the last of 3,000 nested jobs, though every job above it has ended and
/// thousands of other tools came and went (their slots reused) meanwhile.
#[test]
fn child_rules_hold_across_a_deep_genealogy_with_tool_churn() {
    let mut s = Scheduler::new(4, 1);
    let mut d = Dvm::new(
        DvmConfig {
            nodes: 1,
            slots: 4000,
            compat: false,
        },
        &mut s,
    );
    d.tool_connected("root").unwrap();
    let root = Requester::tool("root");
    d.allocate(
        &AllocRequest {
            requester: root.clone(),
            directive: Directive::New.into(),
            attrs: AllocAttrs {
                num_nodes: Some(1),
                inherit: Some(Inheritance::received(2)),
                ..AllocAttrs::default()
            },
        },
        &mut s,
        0,
    )
    .unwrap();
    let depth = 3_000;
    let mut churn = 0;
    let mut tool_churn = |d: &mut Dvm, s: &mut Scheduler| {
        churn += 1;
        let ns = format!("passer-{churn}");
        d.tool_connected_minted(&ns).unwrap();
        d.tool_disconnected(&ns, s, 0).unwrap();
    };
    let mut parent = root.clone();
    for k in 1..=depth {
        let ns = format!("job-{k}");
        d.spawn(&parent, &ns, None, &[1]).unwrap();
        parent = Requester::app(&ns, 0);
        tool_churn(&mut d, &mut s);
    }
    d.tool_disconnected("root", &mut s, 0).unwrap();
    assert_eq!(
        d.namespaces_held(),
        depth + 1,
        "the passing tools are forgotten"
    );
    for k in 1..depth {
        d.job_terminated(&format!("job-{k}"), 0, &mut s, 0).unwrap();
        tool_churn(&mut d, &mut s);
        assert_eq!(d.reservations(&s, 0).len(), 1, "ended at job-{k}");
    }
    assert!(d.has_live_descendants("root"));
    let jobs = d.jobs();
    let last = jobs
        .iter()
        .find(|j| j.nspace == format!("job-{depth}"))
        .unwrap();
    assert_eq!(
        last.parent.as_deref(),
        Some(format!("job-{}", depth - 1).as_str())
    );
    let first = jobs.iter().find(|j| j.nspace == "job-1").unwrap();
    assert_eq!(first.parent.as_deref(), Some("root"));
    d.job_terminated(&format!("job-{depth}"), 0, &mut s, 0)
        .unwrap();
    assert!(
        d.reservations(&s, 0).is_empty(),
        "the last descendant ended"
    );
    assert!(!d.has_live_descendants("root"));
}

/// Issue 45: ended jobs are kept as a bounded history, not for ever. After
/// 20,000 jobs with a history of 100 the model holds what it held before
/// plus those 100, lists exactly the last 100 in launch order, and the owner
/// set of the reservation every job joined holds no more than they; names
/// stay unique: a name a tool chose is refused for ever, a job's name while
/// the model holds it.
#[test]
fn ended_jobs_are_kept_as_a_bounded_history() {
    const KEPT: usize = 100;
    let mut s = Scheduler::new(4, 1);
    let mut d = Dvm::new(
        DvmConfig {
            nodes: 1,
            slots: 8,
            compat: false,
        },
        &mut s,
    );
    d.set_job_history(KEPT);
    d.tool_connected("tool").unwrap();
    let tool = Requester::tool("tool");
    let alloc = d
        .allocate(
            &AllocRequest {
                requester: tool.clone(),
                directive: Directive::New.into(),
                attrs: AllocAttrs {
                    num_nodes: Some(1),
                    ..AllocAttrs::default()
                },
            },
            &mut s,
            0,
        )
        .unwrap()
        .alloc_id;
    let held = d.namespaces_held();
    let jobs = 20_000;
    for k in 1..=jobs {
        let ns = format!("pdvm-h-1@{k}");
        d.spawn(&tool, &ns, Some(std::slice::from_ref(&alloc)), &[1])
            .unwrap();
        d.job_terminated(&ns, 0, &mut s, 0).unwrap();
        if k % 100 == 0 {
            let given = format!("given-{k}");
            d.tool_connected(&given).unwrap();
            d.tool_disconnected(&given, &mut s, 0).unwrap();
        }
        assert!(d.namespaces_held() <= held + KEPT, "after {k} jobs");
    }
    let listed: Vec<String> = d.jobs().into_iter().map(|j| j.nspace).collect();
    let last: Vec<String> = (jobs - KEPT + 1..=jobs)
        .map(|k| format!("pdvm-h-1@{k}"))
        .collect();
    assert_eq!(listed, last, "the last {KEPT} ended jobs, in launch order");
    let owners = &d.reservation(&alloc, &s, 0).unwrap().owners;
    assert!(owners.len() <= KEPT + 1, "{} owners", owners.len());
    for k in (100..=jobs).step_by(100) {
        let given = format!("given-{k}");
        assert!(d.namespace_known(&given), "{given} may be taken again");
        assert!(d.tool_connected(&given).is_err());
    }
    let kept = format!("pdvm-h-1@{jobs}");
    assert!(
        d.spawn(&tool, &kept, None, &[1]).is_err(),
        "a held job name"
    );
}

/// An ended job past the history is still kept while a job it started is
/// (its parent's name is shown), and forgotten with it.
#[test]
fn a_job_past_the_history_waits_for_the_jobs_it_started() {
    let mut s = Scheduler::new(4, 1);
    let mut d = Dvm::new(
        DvmConfig {
            nodes: 1,
            slots: 8,
            compat: false,
        },
        &mut s,
    );
    d.set_job_history(2);
    d.tool_connected("tool").unwrap();
    let tool = Requester::tool("tool");
    let held = d.namespaces_held();
    d.spawn(&tool, "parent", None, &[1]).unwrap();
    d.spawn(&Requester::app("parent", 0), "child", None, &[1])
        .unwrap();
    d.job_terminated("parent", 0, &mut s, 0).unwrap();
    let churn = |d: &mut Dvm, s: &mut Scheduler, from: usize| {
        for k in from..from + 5 {
            let ns = format!("j{k}");
            d.spawn(&tool, &ns, None, &[1]).unwrap();
            d.job_terminated(&ns, 0, s, 0).unwrap();
        }
    };
    churn(&mut d, &mut s, 0);
    let jobs = d.jobs();
    let child = jobs.iter().find(|j| j.nspace == "child").unwrap();
    assert_eq!(child.parent.as_deref(), Some("parent"));
    assert!(jobs.iter().any(|j| j.nspace == "parent"));
    d.job_terminated("child", 0, &mut s, 0).unwrap();
    churn(&mut d, &mut s, 5);
    let names: Vec<String> = d.jobs().into_iter().map(|j| j.nspace).collect();
    assert_eq!(names, ["j8", "j9"]);
    assert_eq!(d.namespaces_held(), held + 2);
}
