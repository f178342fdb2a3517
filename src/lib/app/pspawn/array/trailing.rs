//! The output a `v41` server (PRRTE 3.0) holds back: what it cached of a
//! task (written before its forwarding to us was set up) comes only when
//! pulled, and some comes after the task's barrier. As one pspawn does for
//! one job ([`crate::ops::job::drain_job_output`]), a task's cached output
//! is pulled at its end, and the task is over once its output has been
//! quiet for a while after its barrier.

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
    /// Task `ns` ended: on a `v41` server, pull the output it cached of
    /// the task (it comes right behind the pull's answer, so before the
    /// barrier sent next); the pull is withdrawn once the task is over.
    /// (Without it PRRTE 3.0.14 kept the line of an early task now and
    /// then: 5 arrays of 20 lost one, with exit 0.)
    pub(super) fn pull_cached(&mut self, ns: &str) {
        if self.s.wire() != crate::codec::WireVersion::V41 {
            return;
        }
        if self.tasks.get(ns).is_some_and(|t| t.pull.is_none()) {
            let pull = crate::ops::job::pull_cached_output(self.s, ns);
            if let Some(t) = self.tasks.get_mut(ns) {
                t.pull = pull;
            }
        }
    }

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
