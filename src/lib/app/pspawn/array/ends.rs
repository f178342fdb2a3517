//! The ends of `pspawn --array`'s tasks that the DVM did not announce, or
//! announced for a job the array did not know: a task whose spawn was
//! answered `PMIX_ERROR` is matched with its job's end (see
//! [`super::orphans`]); a task missing from the DVM's list, or
//! whose processes are all gone, has ended; a task whose command never ran
//! is launched again.

use super::{launch, Array, Next, Running, Task, MAX_RELAUNCH};

impl Array<'_> {
    /// The DVM's live namespaces, as a barrier's answer lists them: a task
    /// launched before that barrier, whose end never came, and missing from
    /// two answers in a row has ended unannounced (PRRTE 3.0.14 loses an
    /// end event now and then). It counts as failed, outcome unknown.
    pub(super) fn judge_unlisted(&mut self, listed: &[String], launched: u64) {
        let mut lost = Vec::new();
        for (ns, t) in self.tasks.iter_mut() {
            if t.ended.is_some() || t.seq > launched {
                continue;
            }
            let gone = !listed.contains(ns);
            if gone && t.unlisted {
                lost.push(ns.clone());
            }
            t.unlisted = gone;
        }
        // As one pspawn reports an end never announced: outcome unknown.
        let code = crate::cli::exit::Exit::OutcomeUnknown.code();
        for ns in lost {
            match self.tasks.get(&ns) {
                Some(t) if self.ui.level > -2 => say!(
                    "pspawn: array task {}: the DVM never announced the end of job {ns}; it is no \
longer running; its exit status is unknown: counted as outcome unknown (exit {code})",
                    t.run.index
                ),
                _ => {}
            }
            self.task_ended(&ns, code);
        }
    }

    /// Tasks answered `PMIX_ERROR` whose job's end did not come in time
    /// (counted once nothing else came, `idle`, or long past it): failed,
    /// status 1.
    pub(super) fn expire_orphans(&mut self, idle: bool) {
        for o in self.orphans.expired(idle) {
            self.ui.detail(&format!(
                "array task {}: the DVM answered its spawn with PMIX_ERROR (the job failed at \
once, or could not start) and no end of its job came; counted as failed",
                o.index
            ));
            let rec = self.results.ended_as(o.index, o.id, "", 1);
            self.ui.record(rec);
        }
    }

    /// Job `ns`, which no task is known for, ended with `code`: when it is
    /// the job of a task answered `PMIX_ERROR`, that task ran and ended so;
    /// its output is what was kept of `ns`, and what the DVM cached of it.
    pub(super) fn adopt(&mut self, ns: &str, code: i32) {
        // Most such ends are old jobs' (replayed at registration), or other
        // tools': nothing to match while no task waits.
        if self.orphans.is_empty() {
            return;
        }
        let (me, _) = self.s.me();
        let Some((base, _)) = crate::ops::job::numbered(&me) else {
            return;
        };
        let Some((orphan, output)) = self.orphans.adopt(ns, base, code) else {
            return;
        };
        let mut sink = self.sink(orphan.index).for_job(ns, self.nprocs);
        for c in &output {
            sink.chunk(c);
        }
        let pull = crate::ops::job::pull_cached_output(self.s, ns);
        let run = Running {
            index: orphan.index,
            id: orphan.id,
            sink,
        };
        let task = Task::started(run, self.launched, pull, None);
        self.tasks.insert(ns.to_string(), task);
        self.alive += 1;
        self.task_ended(ns, code);
    }

    /// At a sweep, the tasks the DVM still lists, launched before it, whose
    /// end never came: one whose processes have all finished at two sweeps
    /// in a row (PRRTE misses a process's exit now and then, and keeps its
    /// job, and its slots, for ever) has ended unannounced, and the DVM is
    /// asked to drop its job. It counts as failed (1) when a process was
    /// seen failing, else as outcome unknown.
    pub(super) fn judge_listed(&mut self, listed: &[String], launched: u64) {
        let mut lost = Vec::new();
        for (ns, t) in self.tasks.iter_mut() {
            if t.ended.is_some() || t.seq > launched || !listed.contains(ns) {
                continue;
            }
            let seen = crate::ops::job::processes_of(self.s, ns).unwrap_or_default();
            if seen.finished && t.finished {
                lost.push((ns.clone(), seen));
            }
            t.finished = seen.finished;
        }
        for (ns, seen) in lost {
            if seen.unstarted {
                // Should PRRTE start it after all, it must not run twice.
                launch::kill_job(self.s, &ns);
                let why = "the DVM shows its process running but never started it (its launch \
was lost)";
                if self.relaunch(&ns, why) {
                    continue;
                }
            }
            if seen.release {
                crate::ops::job::drop_finished_job(self.s, &ns);
            }
            let code = if seen.failed {
                1
            } else {
                crate::cli::exit::Exit::OutcomeUnknown.code()
            };
            if let Some(t) = self.tasks.get(&ns) {
                if self.ui.level > -2 {
                    say!(
                        "pspawn: array task {}: the DVM still shows job {ns} running, but its \
processes have all ended and its end was never announced: counted as {} (exit {code})",
                        t.run.index,
                        if seen.failed {
                            "failed"
                        } else {
                            "outcome unknown"
                        }
                    );
                }
            }
            self.task_ended(&ns, code);
        }
    }

    /// Task `ns`'s command never ran, for the reason `why`: PRRTE master
    /// ends with the bare `PMIX_ERROR` and no process exit code a job it
    /// launched just as another job failed (blaming that other job's
    /// process), or loses a job's launch (its process shown running with no
    /// pid). Such a task is launched again (at most [`MAX_RELAUNCH`] times,
    /// and not once the array is stopping); false when it is not.
    pub(super) fn relaunch(&mut self, ns: &str, why: &str) -> bool {
        if self.stop.is_some() {
            return false;
        }
        let Some(next) = self.tasks.get(ns).and_then(|t| t.next.clone()) else {
            return false;
        };
        if next.tries >= MAX_RELAUNCH {
            return false;
        }
        let Some(mut t) = self.tasks.remove(ns) else {
            return false;
        };
        t.run.sink.flush();
        self.alive -= 1;
        self.busy = false;
        self.ui.warn(&format!(
            "array task {} (job {ns}): {why}; launching it again",
            next.index
        ));
        self.again.push_back(Next {
            tries: next.tries + 1,
            ..next
        });
        // A new launch: its end is looked for from the start.
        self.sweep.reset();
        true
    }
}
