//! `pspawn --array`: what one task is (its environment, its output sink)
//! and what the array's tasks came to (the summary and the exit code).

use crate::cli::array_spec::ArraySpec;
use crate::cli::exit::Exit;
use crate::codec::App;
use crate::render::ArrayTaskRecord;

use super::stdin_tasks::StdinTasks;
use crate::app::launch::OutputSink;

/// Where the tasks come from: `--array`'s indices, or stdin's lines.
pub(crate) enum Source<'a> {
    /// `--array SPEC`: the next index's position.
    Indices(&'a ArraySpec, usize),
    /// `--stdin-tasks`.
    Stdin(StdinTasks),
}

/// The next task to launch: its index (the line number for stdin) and
/// apps, or why its line is no task; the caller's id for it.
#[derive(Clone)]
pub(crate) struct Next {
    pub(crate) index: u32,
    pub(crate) apps: Result<Vec<App>, String>,
    pub(crate) id: Option<serde_json::Value>,
    /// How often it was launched before (see `array`'s relaunch).
    pub(crate) tries: u32,
}

impl Source<'_> {
    /// The next task, if one is ready; `base` are the apps of pspawn's
    /// command line (for stdin, its flags' template).
    pub(crate) fn next(
        &self,
        base: &[App],
        template: &[crate::cli::request::AppSpec],
    ) -> Option<Next> {
        match self {
            Source::Indices(spec, i) => spec.ids.get(*i).map(|&index| Next {
                index,
                apps: Ok(task_apps(base, spec, index)),
                id: None,
                tries: 0,
            }),
            Source::Stdin(t) => t.peek().map(|(line, task)| Next {
                index: line,
                apps: task
                    .as_ref()
                    .map(|t| t.apps(template, base))
                    .map_err(Clone::clone),
                id: task.as_ref().ok().and_then(|t| t.id.clone()),
                tries: 0,
            }),
        }
    }

    /// The task [`Self::next`] gave is taken.
    pub(crate) fn advance(&mut self) {
        match self {
            Source::Indices(_, i) => *i += 1,
            Source::Stdin(t) => t.advance(),
        }
    }

    /// Whether no task is left to launch (stdin: read to its end).
    pub(crate) fn done(&self) -> bool {
        match self {
            Source::Indices(spec, i) => *i >= spec.ids.len(),
            Source::Stdin(t) => t.done(),
        }
    }

    /// How many tasks there are (stdin: read so far).
    pub(crate) fn total(&self) -> usize {
        match self {
            Source::Indices(spec, _) => spec.ids.len(),
            Source::Stdin(t) => t.count(),
        }
    }

    /// How many were never launched.
    pub(crate) fn unlaunched(&self) -> usize {
        match self {
            Source::Indices(spec, i) => spec.ids.len() - i,
            Source::Stdin(t) => t.pending(),
        }
    }
}

/// The environment of array task `index`: `PMIX_ARRAY_TASK_ID` and
/// Slurm's `SLURM_ARRAY_TASK_{ID,COUNT,MIN,MAX}`.
pub(crate) fn task_env(spec: &ArraySpec, index: u32) -> Vec<String> {
    let min = spec.ids.first().copied().unwrap_or(0);
    let max = spec.ids.last().copied().unwrap_or(0);
    vec![
        format!("PMIX_ARRAY_TASK_ID={index}"),
        format!("SLURM_ARRAY_TASK_ID={index}"),
        format!("SLURM_ARRAY_TASK_COUNT={}", spec.ids.len()),
        format!("SLURM_ARRAY_TASK_MIN={min}"),
        format!("SLURM_ARRAY_TASK_MAX={max}"),
    ]
}

/// The apps of task `index`: `base` with the task's environment added.
pub(crate) fn task_apps(base: &[App], spec: &ArraySpec, index: u32) -> Vec<App> {
    let env = task_env(spec, index);
    base.iter()
        .cloned()
        .map(|mut a| {
            a.env.extend(env.iter().cloned());
            a
        })
        .collect()
}

/// A task the DVM runs: its index and its output's sink.
pub(crate) struct Running {
    /// The task's index.
    pub(crate) index: u32,
    /// The caller's id for it (`--stdin-tasks`).
    pub(crate) id: Option<serde_json::Value>,
    /// Where its output goes.
    pub(crate) sink: OutputSink,
}

/// The tasks' ends, as they come.
#[derive(Default)]
pub(crate) struct Results {
    /// One record per task ended (or never started).
    pub(crate) tasks: Vec<ArrayTaskRecord>,
}

impl Results {
    /// Task `index` (job `nspace`, "" if it never started; `id`, the
    /// caller's name for it with `--stdin-tasks`) ended with `code`.
    pub(crate) fn ended_as(
        &mut self,
        index: u32,
        id: Option<serde_json::Value>,
        nspace: &str,
        code: i32,
    ) -> &ArrayTaskRecord {
        self.tasks.push(ArrayTaskRecord {
            index,
            id,
            nspace: nspace.to_string(),
            exit_code: code,
        });
        self.tasks.last().expect("just pushed")
    }

    /// The failed tasks' indices, ascending.
    pub(crate) fn failed(&self) -> Vec<u32> {
        let mut f: Vec<u32> = self
            .tasks
            .iter()
            .filter(|t| t.exit_code != 0)
            .map(|t| t.index)
            .collect();
        f.sort_unstable();
        f
    }

    /// The array's exit: success when every one of `total` tasks ran and
    /// succeeded; else the failed tasks' common status, or 1 when they differ.
    pub(crate) fn exit(&self, total: usize) -> Exit {
        let codes: Vec<i32> = self
            .tasks
            .iter()
            .filter(|t| t.exit_code != 0)
            .map(|t| t.exit_code)
            .collect();
        match codes.first() {
            None if self.tasks.len() == total => Exit::Success,
            None => Exit::Command(1),
            Some(&c) if (1..=255).contains(&c) && codes.iter().all(|x| *x == c) => Exit::Command(c),
            Some(_) => Exit::Command(1),
        }
    }

    /// "N of M tasks failed: exit C: ids …; exit D: ids …" (each status
    /// with its tasks, at most [`SHOWN_IDS`] ids named in all), or `None`
    /// when none did.
    pub(crate) fn summary(&self, total: usize) -> Option<String> {
        let failed = self.failed();
        if failed.is_empty() {
            return None;
        }
        let mut by_code: std::collections::BTreeMap<i32, Vec<u32>> = Default::default();
        for t in self.tasks.iter().filter(|t| t.exit_code != 0) {
            by_code.entry(t.exit_code).or_default().push(t.index);
        }
        let mut room = SHOWN_IDS;
        let groups: Vec<String> = by_code
            .into_iter()
            .map(|(code, mut ids)| {
                ids.sort_unstable();
                let shown: Vec<String> = ids.iter().take(room).map(u32::to_string).collect();
                room -= shown.len();
                let more = ids.len() - shown.len();
                let rest = if more > 0 {
                    format!("… ({more} more)")
                } else {
                    String::new()
                };
                let word = if ids.len() == 1 { "id" } else { "ids" };
                format!("exit {code}: {word} {}{rest}", shown.join(","))
            })
            .collect();
        Some(format!(
            "{} of {total} tasks failed: {}",
            failed.len(),
            groups.join("; ")
        ))
    }
}

/// Most failed ids the summary names.
pub(crate) const SHOWN_IDS: usize = 50;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_and_names_the_failed_tasks() {
        let mut r = Results::default();
        r.ended_as(1, None, "a@1", 0);
        r.ended_as(5, None, "a@3", 3);
        r.ended_as(2, None, "a@2", 3);
        assert_eq!(
            r.summary(3).as_deref(),
            Some("2 of 3 tasks failed: exit 3: ids 2,5")
        );
        assert_eq!(r.exit(3), Exit::Command(3));
        r.ended_as(7, None, "", 1);
        assert_eq!(r.exit(4), Exit::Command(1));
        assert_eq!(
            r.summary(4).as_deref(),
            Some("3 of 4 tasks failed: exit 1: id 7; exit 3: ids 2,5")
        );
        let mut ok = Results::default();
        ok.ended_as(1, None, "a@1", 0);
        assert_eq!((ok.summary(1), ok.exit(1)), (None, Exit::Success));
        assert_eq!(ok.exit(2), Exit::Command(1));
    }

    #[test]
    fn each_task_gets_its_index_and_slurms_companions() {
        let spec = ArraySpec::parse("3-7:2").expect("valid");
        assert_eq!(
            task_env(&spec, 5),
            [
                "PMIX_ARRAY_TASK_ID=5",
                "SLURM_ARRAY_TASK_ID=5",
                "SLURM_ARRAY_TASK_COUNT=3",
                "SLURM_ARRAY_TASK_MIN=3",
                "SLURM_ARRAY_TASK_MAX=7"
            ]
        );
    }
}
