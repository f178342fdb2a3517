//! Scale benchmarks of the DVM model (run: `cargo bench --bench dvm_model`).
//!
//! 1. Allocation requests answered with 10,000 nodes in the DVM/scheduler and
//!    1,000 live reservations (target: p99 <= 1 ms).
//! 2. Job termination in a genealogy of 100,000 jobs, settling every
//!    reservation's disposition (target: <= 10 ms), including the worst
//!    single event: the last live leaf ending and draining every CHILD-flavoured
//!    reservation up a 1,000-deep spine at once.

#[path = "watchdog.rs"]
mod watchdog;

use std::time::{Duration, Instant};

use pmix_tools::dvm::{AllocAttrs, AllocRequest, Dvm, DvmConfig, Effect, Requester};
use pmix_tools::proto::{Directive, Inheritance};
use pmix_tools::sched::Scheduler;

/// Tiny deterministic generator (no extra crate).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

fn report(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let pick = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{name:<58} n={:>6}  median={:>9.1?}  p99={:>9.1?}  max={:>9.1?}",
        v.len(),
        pick(0.5),
        pick(0.99),
        v[v.len() - 1]
    );
}

fn alloc_bench() {
    let mut s = Scheduler::new(8_000, 1);
    let mut d = Dvm::new(
        DvmConfig {
            nodes: 2_000,
            slots: 8,
            compat: false,
        },
        &mut s,
    );
    let tools: Vec<Requester> = (0..100)
        .map(|i| Requester::tool(&format!("tool-{i}")))
        .collect();
    for t in &tools {
        d.tool_connected(&t.nspace).expect("tool");
    }
    let mut ids = Vec::new();
    for i in 0..1_000 {
        let t = &tools[i % tools.len()];
        let out = d
            .allocate(
                &AllocRequest {
                    requester: t.clone(),
                    directive: Directive::New.into(),
                    attrs: AllocAttrs {
                        num_nodes: Some(4),
                        req_id: Some(format!("live-{i}")),
                        time_secs: Some(3_600),
                        warn_timeout: Some(60),
                        inherit: Some(Inheritance::received((i % 4) as u8 + 1)),
                        ..AllocAttrs::default()
                    },
                },
                &mut s,
                0,
            )
            .expect("live reservation");
        if i % 10 == 0 {
            let tg = vec![out.alloc_id.clone()];
            d.spawn(t, &format!("job-{i}"), Some(&tg), &[8])
                .expect("spawn");
        }
        ids.push(out.alloc_id);
    }
    assert_eq!(d.reservations(&s, 0).len(), 1_000);
    let (mut t_new, mut t_ext, mut t_rel, mut t_rej) = (vec![], vec![], vec![], vec![]);
    for k in 0..20_000u64 {
        let t = &tools[(k % 100) as usize];
        let now = k;
        let new = AllocRequest {
            requester: t.clone(),
            directive: Directive::New.into(),
            attrs: AllocAttrs {
                num_nodes: Some(2),
                req_id: Some(format!("b-{k}")),
                time_secs: Some(600),
                warn_timeout: Some(30),
                ..AllocAttrs::default()
            },
        };
        let t0 = Instant::now();
        let out = d.allocate(&new, &mut s, now).expect("new");
        t_new.push(t0.elapsed());
        let ext = AllocRequest {
            requester: t.clone(),
            directive: Directive::Extend.into(),
            attrs: AllocAttrs {
                req_id: Some(format!("b-{k}")),
                num_nodes: Some(1),
                time_secs: Some(60),
                ..AllocAttrs::default()
            },
        };
        let t0 = Instant::now();
        d.allocate(&ext, &mut s, now).expect("extend");
        t_ext.push(t0.elapsed());
        // A rejected EXTEND of somebody else's reservation.
        let stranger = &tools[((k + 1) % 100) as usize];
        let rej = AllocRequest {
            requester: stranger.clone(),
            directive: Directive::Extend.into(),
            attrs: AllocAttrs {
                alloc_id: Some(out.alloc_id.clone()),
                num_nodes: Some(1),
                ..AllocAttrs::default()
            },
        };
        let t0 = Instant::now();
        let e = d.allocate(&rej, &mut s, now);
        t_rej.push(t0.elapsed());
        assert!(e.is_err());
        let rel = AllocRequest {
            requester: t.clone(),
            directive: Directive::Release.into(),
            attrs: AllocAttrs {
                alloc_id: Some(out.alloc_id),
                ..AllocAttrs::default()
            },
        };
        let t0 = Instant::now();
        d.allocate(&rel, &mut s, now).expect("release");
        t_rel.push(t0.elapsed());
    }
    assert_eq!(d.reservations(&s, 0).len(), 1_000);
    println!(
        "-- allocation: 10,000 nodes (2,000 startup + 8,000 scheduler), 1,000 live reservations"
    );
    report("NEW (2 nodes, time + warning), granted", t_new);
    report("EXTEND by request id (+1 node, +60 s)", t_ext);
    report("EXTEND refused (not owner, PMIX_ERR_NO_PERMISSIONS)", t_rej);
    report("RELEASE whole (3 scheduler nodes leave)", t_rel);
}

/// Builds a genealogy of `total` jobs: a spine of `spine` jobs (each the child
/// of the previous), every other job a leaf under a random spine job; one
/// reservation per spine job, dispositions cycling NONE..CHILD_DEFAULT.
fn world(total: usize, spine: usize, rng: &mut Lcg) -> (Dvm, Scheduler, Vec<String>) {
    let mut s = Scheduler::new(spine, 1);
    let mut d = Dvm::new(
        DvmConfig {
            nodes: 100,
            slots: 1_000,
            compat: false,
        },
        &mut s,
    );
    d.tool_connected("tool").expect("tool");
    let mut parent = Requester::tool("tool");
    for k in 0..spine {
        let ns = format!("spine-{k}");
        d.spawn(&parent, &ns, None, &[1]).expect("spine");
        let me = Requester::app(&ns, 0);
        d.allocate(
            &AllocRequest {
                requester: me.clone(),
                directive: Directive::New.into(),
                attrs: AllocAttrs {
                    num_nodes: Some(1),
                    inherit: Some(Inheritance::received((k % 4) as u8 + 1)),
                    ..AllocAttrs::default()
                },
            },
            &mut s,
            0,
        )
        .expect("reservation");
        parent = me;
    }
    let mut leaves = Vec::with_capacity(total - spine);
    for j in 0..(total - spine) {
        let p = (rng.next() as usize) % spine;
        let ns = format!("leaf-{j}");
        d.spawn(&Requester::app(&format!("spine-{p}"), 0), &ns, None, &[1])
            .expect("leaf");
        leaves.push(ns);
    }
    (d, s, leaves)
}

fn termination_bench() {
    const TOTAL: usize = 100_000;
    const SPINE: usize = 1_000;
    let mut rng = Lcg(7);
    let mut ordinary = Vec::new();
    let mut spine_ends = Vec::new();
    let mut drains = Vec::new();
    let mut settled = 0usize;
    for round in 0..5 {
        let t0 = Instant::now();
        let (mut d, mut s, leaves) = world(TOTAL, SPINE, &mut rng);
        if round == 0 {
            println!(
                "-- termination: genealogy of {} jobs ({} spine + leaves), {} reservations (built in {:.1?})",
                TOTAL,
                SPINE,
                d.reservations(&s, 0).len(),
                t0.elapsed()
            );
        }
        // The last leaf under the deepest spine job stays until the end.
        let keeper = "keeper".to_string();
        d.spawn(
            &Requester::app(&format!("spine-{}", SPINE - 1), 0),
            &keeper,
            None,
            &[1],
        )
        .expect("keeper");
        // End 10,000 ordinary leaves (timed one by one).
        for l in leaves.iter().take(10_000) {
            let t = Instant::now();
            d.job_terminated(l, 0, &mut s, 0).expect("leaf end");
            ordinary.push(t.elapsed());
        }
        // End every spine job, deepest first: NONE/DEFAULT fire now,
        // CHILD-flavoured ones start draining.
        for k in (0..SPINE).rev() {
            let t = Instant::now();
            let fx = d
                .job_terminated(&format!("spine-{k}"), 0, &mut s, 0)
                .expect("spine end");
            spine_ends.push(t.elapsed());
            settled += fx
                .iter()
                .filter(|e| matches!(e, Effect::ReservationEnded { .. }))
                .count();
        }
        for l in leaves.iter().skip(10_000) {
            d.job_terminated(l, 0, &mut s, 0).expect("leaf end");
        }
        let left = d.reservations(&s, 0).len();
        let t = Instant::now();
        let fx = d.job_terminated(&keeper, 0, &mut s, 0).expect("keeper end");
        drains.push(t.elapsed());
        let n = fx
            .iter()
            .filter(|e| matches!(e, Effect::ReservationEnded { .. }))
            .count();
        assert_eq!(n, left, "the last leaf settles every remaining reservation");
        assert!(d.reservations(&s, 0).is_empty());
        settled += n;
    }
    report("leaf termination (walks up to 1,000 ancestors)", ordinary);
    report("spine job termination (NONE/DEFAULT fire)", spine_ends);
    report(
        "last leaf: drains all 500 CHILD-flavoured reservations",
        drains,
    );
    println!("   reservations settled in total: {settled}");
}

fn main() {
    if !watchdog::start("dvm_model", Duration::from_secs(300)) {
        return;
    }
    alloc_bench();
    termination_bench();
}
