//! Where output goes: results on stdout (human lines or JSON lines),
//! progress and warnings on stderr only when it is a terminal, errors on
//! stderr always (unless `-qq`), and with `--json` also as an `error` object.

use std::io::{IsTerminal, Write};
use std::sync::{mpsc, Mutex};

use serde::Serialize;

use crate::cli::OutputArgs;
use crate::render::json::write_line;

use super::Failure;

/// The output settings of one tool run.
#[derive(Debug, Clone)]
pub struct Ui {
    /// Tool name, prefixed to stderr sentences.
    pub tool: &'static str,
    /// `--json`.
    pub json: bool,
    /// Net verbosity (`-v` minus `-q`).
    pub level: i8,
    /// stdout is a terminal.
    pub stdout_tty: bool,
    /// stderr is a terminal.
    pub stderr_tty: bool,
    /// Colour/styling may be used on stdout.
    pub color: bool,
    /// Spinners may be drawn on stderr.
    pub progress: bool,
}

impl Ui {
    /// Settings for `tool` from its output flags and the real streams.
    pub fn new(tool: &'static str, out: &OutputArgs) -> Ui {
        let stdout_tty = std::io::stdout().is_terminal();
        let stderr_tty = std::io::stderr().is_terminal();
        Ui::with_ttys(tool, out, stdout_tty, stderr_tty)
    }

    /// Settings with the terminal-ness of the streams given (for tests).
    pub fn with_ttys(
        tool: &'static str,
        out: &OutputArgs,
        stdout_tty: bool,
        stderr_tty: bool,
    ) -> Ui {
        Ui {
            tool,
            json: out.json,
            level: out.level(),
            stdout_tty,
            stderr_tty,
            color: out.color(stdout_tty),
            progress: out.progress(stderr_tty),
        }
    }

    /// A human result line on stdout (not with `--json`, not with `-qq`).
    pub fn result(&self, line: &str) {
        if !self.json && self.level > -2 {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{line}");
            let _ = o.flush();
        }
    }

    /// A JSON record on stdout (only with `--json`).
    pub fn record<T: Serialize + ?Sized>(&self, rec: &T) {
        if self.json {
            let mut o = std::io::stdout().lock();
            let _ = write_line(&mut o, rec);
            let _ = o.flush();
        }
    }

    /// A note on stderr: shown at the default level unless `--json`, hidden by `-q`.
    pub fn note(&self, line: &str) {
        if self.level >= 0 && (!self.json || self.level > 0) {
            say!("{}: {line}", self.tool);
        }
    }

    /// A note on the tool's own progress, on the stream that also carries
    /// a job's stderr: shown when stderr is a terminal (someone watches) or
    /// with `-v`, never mixed into a job's captured stderr by default, so
    /// a script reads the job's bytes alone.
    pub fn aside(&self, line: &str) {
        if self.level >= 0 && (self.stderr_tty || self.level > 0) {
            say!("{}: {line}", self.tool);
        }
    }

    /// Detail shown with `-v` only.
    pub fn detail(&self, line: &str) {
        if self.level > 0 {
            say!("{}: {line}", self.tool);
        }
    }

    /// A warning: on stderr when it is a terminal or with `-v`.
    pub fn warn(&self, line: &str) {
        if self.level >= 0 && (self.stderr_tty || self.level > 0) {
            say!("{}: warning: {line}", self.tool);
        }
    }

    /// Report a failure (stderr sentence, JSON error object) and return its exit code.
    pub fn fail(&self, f: &Failure) -> i32 {
        if self.level > -2 {
            say!("{}: {}", self.tool, f.message);
        }
        self.record(&f.record());
        f.exit.code()
    }

    /// A spinner on stderr with `msg`, when progress may be drawn.
    pub fn spinner(&self, msg: &str) -> Option<indicatif::ProgressBar> {
        if !self.progress {
            return None;
        }
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        pb.set_message(msg.to_string());
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        Some(pb)
    }

    /// While a request waits for the scheduler: if no answer has come after
    /// [`QUEUED_AFTER`], a spinner naming the request id with the time
    /// waited (stderr a terminal), or one line `queued: request ID waiting
    /// for the scheduler` (stderr not a terminal; hidden by `-q`, and with
    /// `--json` shown only with `-v`). The spinner is erased by
    /// [`Waiting::finish_and_clear`] or when the value is dropped (every
    /// exit path, Ctrl-C included).
    pub fn queued(&self, request_id: Option<&str>) -> Option<Waiting> {
        let what = match request_id {
            Some(id) => format!("request {id}"),
            None => "the request".to_string(),
        };
        let show = if self.json {
            // A script reading the records learns the request waits.
            Show::Record(crate::render::RequestRecord {
                request_id: request_id.map(String::from),
                state: "queued".into(),
            })
        } else if self.progress {
            Show::Spinner
        } else if self.level >= 0 && (!self.json || self.level > 0) {
            Show::Line
        } else {
            return None;
        };
        Some(Waiting::start(self.tool, what, show))
    }
}

/// How long a request may wait before [`Ui::queued`] says so.
pub(crate) const QUEUED_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

#[derive(Clone, PartialEq, Eq)]
enum Show {
    Spinner,
    Line,
    /// `--json`: a request record (state `queued`) on stdout.
    Record(crate::render::RequestRecord),
}

/// The "queued" indication of [`Ui::queued`]; a thread draws it once the
/// wait passes [`QUEUED_AFTER`].
pub struct Waiting {
    stop: Mutex<Option<mpsc::Sender<()>>>,
    drawer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Waiting {
    fn start(tool: &'static str, what: String, show: Show) -> Waiting {
        let (tx, rx) = mpsc::channel::<()>();
        let drawer = std::thread::spawn(move || {
            let after = std::time::Instant::now() + QUEUED_AFTER;
            if crate::ops::wait::recv_until(&rx, after) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            match show {
                Show::Line => {
                    say!("{tool}: queued: {what} waiting for the scheduler");
                    return;
                }
                Show::Record(rec) => {
                    let mut o = std::io::stdout().lock();
                    let _ = write_line(&mut o, &rec);
                    let _ = o.flush();
                    return;
                }
                Show::Spinner => {}
            }
            let pb = indicatif::ProgressBar::new_spinner();
            pb.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} queued: {msg} waiting for the scheduler ({elapsed})",
            ) {
                pb.set_style(style);
            }
            pb.set_message(what);
            pb.enable_steady_tick(std::time::Duration::from_millis(120));
            // Until finished (a message) or dropped (disconnected).
            let _ = rx.recv();
            pb.finish_and_clear();
        });
        Waiting {
            stop: Mutex::new(Some(tx)),
            drawer: Mutex::new(Some(drawer)),
        }
    }

    /// Stop waiting: erase the spinner (if drawn) before anything else is
    /// printed.
    pub fn finish_and_clear(&self) {
        drop(lock(&self.stop).take());
        if let Some(t) = lock(&self.drawer).take() {
            let _ = t.join();
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.finish_and_clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
