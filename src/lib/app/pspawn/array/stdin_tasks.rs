//! `pspawn --stdin-tasks`: tasks read from stdin, one JSON object a line
//! (`{"id": …, "argv": ["prog", "arg"], "env": {"K": "V"}, "np": 1,
//! "cwd": "dir"}`; only `argv` is required), read from the array's own
//! wait as they come, so an orchestrator feeds one pspawn for all its
//! tasks and reads one JSON result per task as each ends.

use std::collections::{BTreeMap, VecDeque};
use std::os::fd::BorrowedFd;

use crate::cli::parse::EnvSpec;
use crate::cli::request::AppSpec;
use crate::codec::App;

/// One input line's task.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskLine {
    /// The caller's name for the task, echoed in its result.
    #[serde(default)]
    pub id: Option<serde_json::Value>,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Environment added to the template's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Processes (default: pspawn's -n, else 1).
    #[serde(default)]
    pub np: Option<u32>,
    /// Working directory (default: pspawn's -D, else its own).
    #[serde(default)]
    pub cwd: Option<String>,
}

impl TaskLine {
    /// The app of this task: `template` (pspawn's flags) with its program,
    /// arguments, environment, process count and directory.
    pub(crate) fn app(&self, template: &AppSpec) -> AppSpec {
        let mut a = template.clone();
        a.program = self.argv[0].clone();
        a.args = self.argv[1..].to_vec();
        a.np = self.np.unwrap_or(a.np);
        if self.cwd.is_some() {
            a.wdir = self.cwd.clone();
        }
        a.env.extend(self.env.iter().map(|(k, v)| EnvSpec {
            name: k.clone(),
            value: Some(v.clone()),
        }));
        a
    }

    /// The apps of this task, one for each of `template` (pspawn's flags),
    /// whose apps as sent are `base` (made once, [`crate::app::launch::to_app`]).
    /// A task that names no directory gets its template's app with its own
    /// program, arguments, process count and environment added: the
    /// template's environment (pspawn's caller's, whole) is not converted
    /// again for every task. One that names a directory is built whole.
    pub(crate) fn apps(&self, template: &[AppSpec], base: &[App]) -> Vec<App> {
        template
            .iter()
            .zip(base)
            .map(|(a, b)| {
                if self.cwd.is_some() {
                    return crate::app::launch::to_app(&self.app(a));
                }
                let mut env = Vec::with_capacity(b.env.len() + self.env.len());
                env.extend(b.env.iter().cloned());
                env.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
                App {
                    cmd: crate::app::launch::program_in(
                        &self.argv[0],
                        a.wdir.is_some(),
                        b.cwd.as_deref(),
                    ),
                    argv: self.argv.clone(),
                    env,
                    cwd: b.cwd.clone(),
                    maxprocs: i32::try_from(self.np.unwrap_or(a.np)).unwrap_or(i32::MAX),
                    info: b.info.clone(),
                }
            })
            .collect()
    }
}

/// Parse one input line; the error says what is wrong.
pub(crate) fn parse_line(line: &str) -> Result<TaskLine, String> {
    let t: TaskLine = serde_json::from_str(line).map_err(|e| {
        format!("not a task: {e}; expected {{\"id\": …, \"argv\": [\"prog\", …], \"env\": {{…}}, \"np\": N, \"cwd\": DIR}}")
    })?;
    if t.argv.first().is_none_or(|p| p.is_empty()) {
        return Err("a task's argv names at least its program".into());
    }
    if t.np == Some(0) {
        return Err("np 0 would start no process".into());
    }
    Ok(t)
}

/// Longest task line read (64 MiB): a longer one is that task's error, and
/// the stream goes on at the next line (its bytes are not kept).
pub(crate) const MAX_LINE: usize = 64 * 1024 * 1024;

/// The tasks read so far and not yet launched, with stdin's state.
#[derive(Default)]
pub(crate) struct StdinTasks {
    /// The line being read (the bytes after the last newline).
    partial: Vec<u8>,
    /// The line being read is over [`MAX_LINE`]: skipped to its newline.
    skipping: bool,
    /// Bytes of the lines queued (see [`READ_AHEAD_BYTES`]).
    queued_bytes: usize,
    /// Line number (from 1), the parsed task or why it is not one, and the
    /// line's size in bytes (0 for an over-long one, whose bytes were not
    /// kept).
    queue: VecDeque<(u32, Result<TaskLine, String>, usize)>,
    lines: u32,
    eof: bool,
}

/// Most tasks read ahead of those launched: stdin is not read further
/// until some are (the writer feels the pipe fill).
const READ_AHEAD: usize = 4096;

/// Most bytes of lines read ahead of those launched (64 MiB): with
/// [`READ_AHEAD`] lines of up to [`MAX_LINE`] each, the lines alone could
/// otherwise hold 256 GiB.
const READ_AHEAD_BYTES: usize = 64 * 1024 * 1024;

impl StdinTasks {
    /// Stdin, while more is wanted.
    pub(crate) fn fd(&self) -> Option<BorrowedFd<'static>> {
        if self.eof || self.queue.len() >= READ_AHEAD || self.queued_bytes >= READ_AHEAD_BYTES {
            return None;
        }
        Some(crate::app::launch::stdin_fd())
    }

    /// Stdin is readable: read once, queue the whole lines.
    pub(crate) fn on_readable(&mut self) {
        let mut buf = vec![0u8; 64 * 1024];
        let Some(n) = crate::app::launch::read_stdin(&mut buf) else {
            return;
        };
        if n == 0 {
            self.eof = true;
            let rest = std::mem::take(&mut self.partial);
            if !std::mem::take(&mut self.skipping) {
                self.take_line(&rest);
            }
            return;
        }
        self.take_bytes(&buf[..n]);
    }

    /// Bytes read: whole lines are queued. Each byte is looked at once
    /// (only the new ones are searched for a newline), so reading a line
    /// costs time linear in its length.
    fn take_bytes(&mut self, mut chunk: &[u8]) {
        while let Some(p) = chunk.iter().position(|b| *b == b'\n') {
            if !std::mem::take(&mut self.skipping) {
                self.partial.extend_from_slice(&chunk[..p]);
                let line = std::mem::take(&mut self.partial);
                self.take_line(&line);
            }
            chunk = &chunk[p + 1..];
        }
        if self.skipping {
            return;
        }
        self.partial.extend_from_slice(chunk);
        if self.partial.len() > MAX_LINE {
            self.partial = Vec::new();
            self.skipping = true;
            self.lines += 1;
            self.queue.push_back((
                self.lines,
                Err(format!(
                    "the line is longer than {MAX_LINE} bytes, the limit of a task line; skipped"
                )),
                0,
            ));
        }
    }

    fn take_line(&mut self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        if text.trim().is_empty() {
            return;
        }
        self.lines += 1;
        self.queued_bytes += bytes.len();
        self.queue
            .push_back((self.lines, parse_line(text.trim()), bytes.len()));
    }

    /// The next task read, not yet launched: its line number, and the task
    /// or why the line is not one.
    pub(crate) fn peek(&self) -> Option<(u32, &Result<TaskLine, String>)> {
        self.queue.front().map(|(line, task, _)| (*line, task))
    }

    /// The task [`Self::peek`] gave is launched (or refused).
    pub(crate) fn advance(&mut self) {
        if let Some((_, _, bytes)) = self.queue.pop_front() {
            self.queued_bytes -= bytes;
        }
    }

    /// Whether every task was read and taken.
    pub(crate) fn done(&self) -> bool {
        self.eof && self.queue.is_empty()
    }

    /// How many tasks were read and not launched.
    pub(crate) fn pending(&self) -> usize {
        self.queue.len()
    }

    /// How many tasks were read so far.
    pub(crate) fn count(&self) -> usize {
        self.lines as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_reads_and_an_overlong_one_fails_alone() {
        let mut t = StdinTasks::default();
        let task = |p: &str| format!("{{\"argv\": [\"{p}\"]}}");
        let all = format!("{}\n{}\n", task("a"), task("b"));
        // Byte by byte: every line still comes whole.
        for b in all.as_bytes() {
            t.take_bytes(std::slice::from_ref(b));
        }
        // A line over the limit, sent in pieces, then a good one.
        let piece = vec![b'x'; MAX_LINE / 4 + 1];
        for _ in 0..5 {
            t.take_bytes(&piece);
        }
        assert!(t.partial.is_empty() && t.skipping, "its bytes are not kept");
        t.take_bytes(format!("yyy\n{}\n", task("c")).as_bytes());
        let got: Vec<Result<String, String>> = t
            .queue
            .iter()
            .map(|(_, r, _)| r.as_ref().map(|l| l.argv[0].clone()).map_err(Clone::clone))
            .collect();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], Ok("a".into()));
        assert_eq!(got[1], Ok("b".into()));
        assert!(got[2].as_ref().is_err_and(|e| e.contains("longer than")));
        assert_eq!(got[3], Ok("c".into()));
        assert_eq!(t.count(), 4);
        // Lines held count against the read-ahead; taking them frees it.
        assert!(t.queued_bytes > 0 && t.queue.len() == 4);
        for _ in 0..4 {
            t.advance();
        }
        assert_eq!((t.queued_bytes, t.queue.len()), (0, 0));
    }

    #[test]
    fn reading_pauses_once_the_lines_held_are_too_many_bytes() {
        let mut t = StdinTasks::default();
        let line = format!("{{\"argv\": [\"{}\"]}}\n", "y".repeat(1 << 20));
        while t.queued_bytes < READ_AHEAD_BYTES {
            t.take_bytes(line.as_bytes());
        }
        assert!(t.fd().is_none(), "stdin is not read further");
        t.advance();
        assert!(t.fd().is_some(), "one taken: reading goes on");
    }

    #[test]
    fn task_lines_parse_or_say_why_not() {
        let t = parse_line(r#"{"id": "a", "argv": ["echo", "hi"], "env": {"K": "1"}, "np": 2}"#)
            .expect("valid");
        assert_eq!((t.argv.len(), t.np), (2, Some(2)));
        assert!(parse_line(r#"{"argv": []}"#).is_err());
        assert!(parse_line(r#"{"argv": ["x"], "np": 0}"#).is_err());
        assert!(parse_line(r#"{"argv": ["x"], "bogus": 1}"#).is_err());
        assert!(parse_line("echo hi")
            .expect_err("not json")
            .contains("expected"));
    }

    #[test]
    fn a_tasks_apps_from_its_templates_are_those_built_whole() {
        let mut template = AppSpec {
            program: "unused".into(),
            np: 3,
            ..AppSpec::default()
        };
        template.env = vec![
            EnvSpec {
                name: "FROM_CALLER".into(),
                value: Some("1".into()),
            },
            EnvSpec {
                name: "PATH".into(),
                value: None,
            },
        ];
        let mut with_wdir = template.clone();
        with_wdir.wdir = Some("/tmp".into());
        for t in [&template, &with_wdir] {
            let base = vec![crate::app::launch::to_app(t)];
            for line in [
                r#"{"argv": ["echo", "hi"], "env": {"K": "1", "A": "2"}}"#,
                r#"{"argv": ["./run.sh"], "np": 2}"#,
                r#"{"argv": ["./run.sh"], "cwd": "/"}"#,
            ] {
                let task = parse_line(line).expect("valid");
                let whole = vec![crate::app::launch::to_app(&task.app(t))];
                assert_eq!(task.apps(std::slice::from_ref(t), &base), whole, "{line}");
            }
        }
    }
}
