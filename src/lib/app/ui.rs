//! Where output goes: results on stdout (human lines or JSON lines),
//! progress and warnings on stderr only when it is a terminal, errors on
//! stderr always (unless `-qq`), and with `--json` also as an `error` object.

use std::io::{IsTerminal, Write};

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
            eprintln!("{}: {line}", self.tool);
        }
    }

    /// Detail shown with `-v` only.
    pub fn detail(&self, line: &str) {
        if self.level > 0 {
            eprintln!("{}: {line}", self.tool);
        }
    }

    /// A warning: on stderr when it is a terminal or with `-v`.
    pub fn warn(&self, line: &str) {
        if self.level >= 0 && (self.stderr_tty || self.level > 0) {
            eprintln!("{}: warning: {line}", self.tool);
        }
    }

    /// Report a failure (stderr sentence, JSON error object) and return its exit code.
    pub fn fail(&self, f: &Failure) -> i32 {
        if self.level > -2 {
            eprintln!("{}: {}", self.tool, f.message);
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
}
