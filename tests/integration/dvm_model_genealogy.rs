//! The counter-based genealogy must answer exactly as the spec's walk over the
//! transitive spawn subtree (§8.2.1.7 derived children, §6.5.1.5 item 2), and
//! reservations must end exactly when their disposition says so (§8.2.1.9.2).
//! Checked against a naive reference model over random histories.

use std::collections::{HashMap, HashSet};

use pmix_tools::dvm::{AllocAttrs, AllocRequest, Dvm, DvmConfig, Requester};
use pmix_tools::proto::directive;
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
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<usize>().prop_map(Op::Spawn),
        2 => any::<usize>().prop_map(Op::End),
        2 => (any::<usize>(), 1u8..=4).prop_map(|(k, i)| Op::Reserve(k, i)),
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
                        directive: directive::NEW,
                        attrs: AllocAttrs {
                            target: Some(owner.clone()),
                            inherit: Some(inh),
                            num_nodes: Some(1),
                            ..AllocAttrs::default()
                        },
                    }, &mut s, 0).unwrap();
                    res.insert(out.alloc_id, (owner, inh));
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
