//! `pspawn --array` tasks whose spawn the DVM answered `PMIX_ERROR`.
//! PRRTE master answers so when the job failed before the answer was sent:
//! the answer names no namespace, but the job's end and output still come
//! to the launcher. Such a task waits a moment for a failed end it can be
//! matched with: of a namespace of this DVM numbered after every job the
//! array had launched before it, and before any it launched after (PRRTE
//! numbers jobs in launch order). Matched, the task reports that job's
//! exit status and output; unmatched, it counts as failed with status 1.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::ops::iof::IofChunk;
use crate::ops::job::{numbered, ENDED_BEFORE_REPLY_WAIT};

/// The most output kept of namespaces no task is known for, while tasks
/// wait to be matched.
const STRAY_MAX: usize = 1 << 20;

/// How much longer a task waits while messages keep coming (the end may be
/// queued behind them).
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// A task whose spawn was answered `PMIX_ERROR`.
pub(crate) struct Orphan {
    /// Its index (or stdin line).
    pub(crate) index: u32,
    /// The caller's id for it.
    pub(crate) id: Option<serde_json::Value>,
    /// Its job is numbered after this.
    after: u64,
    /// ... and before this, once a later task was launched.
    before: Option<u64>,
    /// When it stops waiting for its end.
    until: Instant,
}

/// The tasks waiting to be matched, and the output of namespaces no task
/// is known for, kept meanwhile.
#[derive(Default)]
pub(crate) struct Orphans {
    waiting: VecDeque<Orphan>,
    strays: HashMap<String, Vec<IofChunk>>,
    stray_bytes: usize,
}

impl Orphans {
    /// Task `index` was answered `PMIX_ERROR`; its job, if it ran, is
    /// numbered after `after`.
    pub(crate) fn add(&mut self, index: u32, id: Option<serde_json::Value>, after: u64) {
        self.add_waiting(index, id, after, ENDED_BEFORE_REPLY_WAIT);
    }

    fn add_waiting(
        &mut self,
        index: u32,
        id: Option<serde_json::Value>,
        after: u64,
        wait: Duration,
    ) {
        self.waiting.push_back(Orphan {
            index,
            id,
            after,
            before: None,
            until: Instant::now() + wait,
        });
    }

    /// A later task was launched as `nspace`: the jobs of the tasks waiting
    /// are numbered before it.
    pub(crate) fn launched(&mut self, nspace: &str) {
        let Some((_, n)) = numbered(nspace) else {
            return;
        };
        for o in self.waiting.iter_mut().filter(|o| o.before.is_none()) {
            o.before = Some(n);
        }
    }

    /// No task waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// When the first waiting task stops waiting.
    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.waiting.iter().map(|o| o.until).min()
    }

    /// The tasks whose wait is over, unmatched: past their time once the
    /// connection is `idle` (what came meanwhile was looked at), or
    /// [`BUSY_WAIT`] past it in any case.
    pub(crate) fn expired(&mut self, idle: bool) -> Vec<Orphan> {
        let now = Instant::now();
        let over = |o: &Orphan| o.until <= now && (idle || o.until + BUSY_WAIT <= now);
        let (gone, kept): (VecDeque<Orphan>, VecDeque<Orphan>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(over);
        self.waiting = kept;
        if self.waiting.is_empty() {
            self.strays.clear();
            self.stray_bytes = 0;
        }
        gone.into()
    }

    /// Output of a namespace no task is known for: kept while a task waits
    /// (up to [`STRAY_MAX`] bytes), as it may be that task's.
    pub(crate) fn keep_output(&mut self, c: &IofChunk) {
        if self.waiting.is_empty() || self.stray_bytes + c.data.len() > STRAY_MAX {
            return;
        }
        self.stray_bytes += c.data.len();
        self.strays
            .entry(c.source.nspace.clone())
            .or_default()
            .push(c.clone());
    }

    /// Job `nspace`, which no task is known for, ended with `code`: the
    /// waiting task it belongs to, with the output kept of it. Only a
    /// failed job can be one (PRRTE answers a job that succeeded), and
    /// only one of `base`, this DVM's namespaces.
    pub(crate) fn adopt(
        &mut self,
        nspace: &str,
        base: &str,
        code: i32,
    ) -> Option<(Orphan, Vec<IofChunk>)> {
        let (b, n) = numbered(nspace)?;
        if code == 0 || b != base {
            return None;
        }
        let at = self
            .waiting
            .iter()
            .position(|o| n > o.after && o.before.is_none_or(|before| n < before))?;
        let orphan = self.waiting.remove(at)?;
        let output = self.strays.remove(nspace).unwrap_or_default();
        self.stray_bytes -= output.iter().map(|c| c.data.len()).sum::<usize>();
        Some((orphan, output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Proc;

    fn chunk(ns: &str, data: &str) -> IofChunk {
        IofChunk {
            source: Proc {
                nspace: ns.into(),
                rank: 0,
            },
            channel: 1,
            data: data.as_bytes().to_vec(),
            complete: false,
        }
    }

    #[test]
    fn a_failed_end_numbered_between_its_neighbours_is_adopted_with_its_output() {
        let mut o = Orphans::default();
        o.add(2, None, 5);
        o.launched("dvm@7");
        o.keep_output(&chunk("dvm@6", "hello"));
        assert!(
            o.adopt("dvm@6", "dvm", 0).is_none(),
            "a success is no orphan"
        );
        assert!(o.adopt("dvm@8", "dvm", 3).is_none(), "after a later task");
        assert!(
            o.adopt("dvm@4", "dvm", 3).is_none(),
            "before an earlier one"
        );
        assert!(o.adopt("other@6", "dvm", 3).is_none(), "another DVM's");
        let (orphan, out) = o.adopt("dvm@6", "dvm", 3).expect("adopted");
        assert_eq!(orphan.index, 2);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data, b"hello");
        assert!(o.is_empty());
        assert_eq!(o.stray_bytes, 0);
    }

    #[test]
    fn output_is_kept_only_while_a_task_waits_and_only_so_much() {
        let mut o = Orphans::default();
        o.keep_output(&chunk("dvm@6", "lost"));
        assert!(o.strays.is_empty());
        o.add(1, None, 5);
        o.keep_output(&chunk("dvm@6", &"x".repeat(STRAY_MAX)));
        o.keep_output(&chunk("dvm@6", "one more"));
        assert_eq!(o.stray_bytes, STRAY_MAX);
    }

    #[test]
    fn an_unmatched_task_expires_and_its_kept_output_goes() {
        let mut o = Orphans::default();
        o.add_waiting(1, None, 5, Duration::ZERO);
        o.keep_output(&chunk("dvm@6", "x"));
        assert!(o.expired(false).is_empty(), "not while messages come");
        assert_eq!(o.expired(true).len(), 1);
        assert!(o.is_empty() && o.strays.is_empty());
        assert!(o.next_expiry().is_none());
    }
}
