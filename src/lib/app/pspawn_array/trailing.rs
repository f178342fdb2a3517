//! The output a `v41` server (PRRTE 3.0) forwards after a task's barrier:
//! such a task is over once its output has been quiet for a while, as one
//! pspawn waits for one job's trailing output ([`crate::ops::job::drain_output`]).

use std::time::Instant;

use crate::ops::job::{TRAILING_MAX, TRAILING_QUIET_V41};

use super::Array;

/// A task whose output may still come after its barrier (a `v41` server):
/// over at `quiet_until`, which each chunk of its output moves on by
/// [`TRAILING_QUIET_V41`], never past `stop` ([`TRAILING_MAX`] after the
/// barrier), as one pspawn waits for one job's trailing output.
pub(super) struct Trailing {
    /// Over at this time unless more output comes.
    quiet_until: Instant,
    /// Over at this time whatever comes.
    stop: Instant,
}

impl Trailing {
    /// More of its output came: quiet again from now.
    pub(super) fn heard(&mut self) {
        self.quiet_until = (Instant::now() + TRAILING_QUIET_V41).min(self.stop);
    }
}

impl Array<'_> {
    /// Task `ns`'s barrier was answered: it is over, or on a `v41` server
    /// (which forwards output even after that) over once its output has
    /// been quiet for a while.
    pub(super) fn close_task(&mut self, ns: &str) {
        let v41 = self.s.wire() == crate::codec::WireVersion::V41;
        match self.tasks.get_mut(ns) {
            Some(t) if v41 => {
                let now = Instant::now();
                t.trailing = Some(Trailing {
                    quiet_until: now + TRAILING_QUIET_V41,
                    stop: now + TRAILING_MAX,
                });
            }
            _ => self.finish_task(ns),
        }
    }

    /// Finish the tasks whose trailing output has been quiet long enough.
    pub(super) fn finish_quiet(&mut self) {
        let now = Instant::now();
        let quiet: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.trailing.as_ref().is_some_and(|tr| tr.quiet_until <= now))
            .map(|(ns, _)| ns.clone())
            .collect();
        for ns in quiet {
            self.finish_task(&ns);
        }
    }

    /// When the next trailing task's output counts as complete.
    pub(super) fn next_quiet(&self) -> Option<Instant> {
        self.tasks
            .values()
            .filter_map(|t| t.trailing.as_ref().map(|tr| tr.quiet_until))
            .min()
    }
}
