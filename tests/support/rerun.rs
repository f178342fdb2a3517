//! The one retry the tests allow, counted: a test on PRRTE master that
//! failed because `prte` itself died (docs/conformance.md D9: `prte` aborts
//! now and then, most often as a job across nodes ends) runs once more on
//! a fresh DVM. Every rerun is printed on the test's stderr and, when
//! `PMIX_TOOLS_RERUN_LOG` names a file (the test command sets it), written
//! there as one line; the test command prints that file at its end and
//! fails past its budget (`RUN_BUDGET` in scripts/test.sh). Within one test
//! binary a rerun past [`BUDGET`] is refused: the test fails with the
//! first failure. A peer says it died from its drop ([`peer_died`]: a
//! `Cluster` dropped by a failing test whose `prte` had exited).
//!
//! PRRTE 3.0.14 has two lapses of its own under load that the tools report
//! honestly (docs/tools.md): it loses a job's end now and then (about 3 in
//! 1000 `pspawn -n 1 /bin/true` under load: the process was reaped, the job
//! stays listed running; pspawn exits 9, "never announced the end"), and it
//! stops answering for a while after jobs fail (pspawn exits 8, "the DVM
//! stopped answering"). A test on that peer whose failure output shows one
//! of them runs once more too ([`once_more_if_prrte_3_lapsed`], or the
//! [`prrte_3_test!`] wrapper), counted against the same budget. So does a
//! test on PRRTE master whose failure shows a launch that peer lost in a
//! burst, whose slots it keeps taken ([`once_more_if_prrte_master_lapsed`]).

use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Reruns one test binary may make.
pub const BUDGET: usize = 2;

static RERUNS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set when a peer this test's thread started died on its own while
    /// the test was failing ([`peer_died`]).
    static PEER_DIED: Cell<bool> = const { Cell::new(false) };
}

/// Say that a peer this thread started (a cluster's `prte`) had died on its
/// own when the failing test let it go: [`once_more_if_a_peer_died`] then
/// runs the test once more.
pub fn peer_died() {
    PEER_DIED.with(|d| d.set(true));
}

/// Run `test`, which starts its own peers; when it fails and one of them
/// died on its own meanwhile (its drop called [`peer_died`], after printing
/// its output), run it once more, if the budget allows. A second failure, a
/// failure with every peer alive, or a rerun past the budget fails the
/// test.
pub fn once_more_if_a_peer_died(test: impl Fn()) {
    PEER_DIED.with(|d| d.set(false));
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&test));
    let Err(failure) = first else { return };
    if !PEER_DIED.with(|d| d.replace(false)) {
        std::panic::resume_unwind(failure);
    }
    if !count_rerun("PRRTE master died during the test (docs/conformance.md D9)") {
        std::panic::resume_unwind(failure);
    }
    test();
}

/// What a failing test's output shows when PRRTE 3.0.14 lost a job's end
/// or stopped answering (the tools' own words for it, docs/tools.md).
const PRRTE_3_LAPSES: [&str; 2] = [
    "never announced the end of job",
    "the DVM stopped answering",
];

/// What a failing test's output shows when PRRTE master lost a launch in a
/// burst and kept its slots taken (pspawn's words, `app::pspawn::lost_slots`).
const PRRTE_MASTER_LAPSES: [&str; 1] = ["the DVM lost the launch of"];

/// Run `test`, which starts its own PRRTE 3.0.14; when it fails and its
/// failure shows one of that peer's lapses ([`PRRTE_3_LAPSES`]), or the
/// peer died, run it once more, if the budget allows.
pub fn once_more_if_prrte_3_lapsed(test: impl Fn()) {
    once_more_if_lapsed("PRRTE 3.0.14", &PRRTE_3_LAPSES, test)
}

/// Run `test`, which starts its own PRRTE master; when it fails and its
/// failure shows that peer's lost launch ([`PRRTE_MASTER_LAPSES`]), or the
/// peer died, run it once more, if the budget allows.
pub fn once_more_if_prrte_master_lapsed(test: impl Fn()) {
    once_more_if_lapsed("PRRTE master", &PRRTE_MASTER_LAPSES, test)
}

/// Run `test` on `peer`; once more when it fails and it died or its
/// failure shows one of `lapses`, if the budget allows.
fn once_more_if_lapsed(peer: &str, lapses: &[&str], test: impl Fn()) {
    PEER_DIED.with(|d| d.set(false));
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&test));
    let Err(failure) = first else { return };
    let said = failure
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| failure.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    let died = PEER_DIED.with(|d| d.replace(false));
    let lapse = lapses.iter().find(|m| said.contains(*m));
    let why = match (died, lapse) {
        (true, _) => format!("{peer} died during the test"),
        (false, Some(m)) => format!("{peer} lapsed during the test (the tool said: {m})"),
        (false, None) => std::panic::resume_unwind(failure),
    };
    if !count_rerun(&why) {
        std::panic::resume_unwind(failure);
    }
    test();
}

/// A `#[test]` on PRRTE 3.0.14 that runs once more when that peer lapsed
/// ([`once_more_if_prrte_3_lapsed`]).
#[macro_export]
macro_rules! prrte_3_test {
    ($(#[$meta:meta])* fn $name:ident() $body:block) => {
        $(#[$meta])*
        #[test]
        fn $name() {
            $crate::support::rerun::once_more_if_prrte_3_lapsed(|| $body)
        }
    };
}

/// Count one rerun of the current test; false past the budget (the test
/// then fails with its first failure).
fn count_rerun(why: &str) -> bool {
    let n = RERUNS.fetch_add(1, Ordering::SeqCst) + 1;
    let name = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    eprintln!("RERUN {n}/{BUDGET}: {name}: {why}; its output is above");
    record(&name, why);
    if n > BUDGET {
        eprintln!("past the rerun budget ({BUDGET}): the test fails");
        return false;
    }
    true
}

/// One line for the test command's count of reruns.
fn record(name: &str, why: &str) {
    let Some(path) = std::env::var_os("PMIX_TOOLS_RERUN_LOG") else {
        return;
    };
    let line = format!("{name}: {why}, run once more\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("recording a rerun in {}: {e}", path.to_string_lossy());
    }
}
