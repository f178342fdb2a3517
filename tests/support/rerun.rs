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
    if !count_rerun() {
        std::panic::resume_unwind(failure);
    }
    test();
}

/// Count one rerun of the current test; false past the budget (the test
/// then fails with its first failure).
fn count_rerun() -> bool {
    let n = RERUNS.fetch_add(1, Ordering::SeqCst) + 1;
    let name = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    eprintln!(
        "RERUN {n}/{BUDGET}: {name}: PRRTE master died during the test \
         (docs/conformance.md D9; its output is above)"
    );
    record(&name);
    if n > BUDGET {
        eprintln!("past the rerun budget ({BUDGET}): the test fails");
        return false;
    }
    true
}

/// One line for the test command's count of reruns.
fn record(name: &str) {
    let Some(path) = std::env::var_os("PMIX_TOOLS_RERUN_LOG") else {
        return;
    };
    let line = format!("{name}: PRRTE master died (D9), run once more\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("recording a rerun in {}: {e}", path.to_string_lossy());
    }
}
