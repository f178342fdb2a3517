//! `palloc --stdin-requests`: one palloc submitting many batch jobs. Each
//! line of stdin is a JSON array of `palloc --no-wait` arguments; each is
//! submitted as `palloc --no-wait` would (a detached palloc holds the job)
//! and answered with one JSON line on stdout: the request record, or the
//! error record with the exit code palloc --no-wait would have ended with.
//! A workflow system (PSI/J's `pmix` executor) then pays one round trip
//! over a pipe per job instead of a process start. When the detached palloc
//! of a job it submitted ends, the agent says how the job ended, unasked:
//! one line holding the job's batch record (as `pwatch --status --all`
//! lists it), so its caller need not poll for the end.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};

use crate::cli::exit::Exit;
use crate::cli::{try_parse_validated_with, PallocArgs};
use crate::render::RequestRecord;

use super::agent_holders::Holders;
use super::standby::Standby;
use crate::app::{signals, Failure, Ui};

/// Serve the requests of stdin until its end (or a signal); returns 0, or
/// the signal's exit status.
pub(super) fn run(agent: &PallocArgs) -> i32 {
    let common = common_args();
    // palloc's command, built once for every line.
    let mut cmd = <PallocArgs as clap::CommandFactory>::command();
    cmd.build();
    let mut input = LineReader::default();
    let mut holders = Holders::default();
    let mut standby = Standby::new();
    standby.fill();
    loop {
        let mut out = std::io::stdout().lock();
        let mut written = Ok(());
        for rec in holders.reap() {
            written = written.and(crate::render::json::write_line(&mut out, &rec));
        }
        if written.and(out.flush()).is_err() {
            // Nobody reads the answers any more.
            return 0;
        }
        drop(out);
        let line = match input.next(&holders.fds(), holders.deadline()) {
            Input::Line(l) => l,
            Input::Wake => continue,
            Input::End => return 0,
            Input::Signal(sig) => return 128 + sig,
        };
        if line.trim().is_empty() {
            continue;
        }
        let answer = submit_line((agent, &cmd), &common, &line, &mut standby);
        let mut out = std::io::stdout().lock();
        let written = match answer {
            Ok(sub) => {
                let rec = RequestRecord {
                    request_id: Some(sub.request_id.clone()),
                    state: "submitted".into(),
                };
                holders.add(sub.request_id, sub.holder_pid);
                crate::render::json::write_line(&mut out, &rec)
            }
            Err(f) => crate::render::json::write_line(&mut out, &f.record()),
        };
        if written.is_err() || out.flush().is_err() {
            return 0;
        }
        drop(out);
        // The next line's palloc, started once this one is answered.
        standby.fill();
    }
}

/// The agent's own arguments every line inherits (connection, verbosity):
/// palloc's command line without `--stdin-requests` and `--json`.
fn common_args() -> Vec<OsString> {
    std::env::args_os()
        .skip(1)
        .filter(|a| a != "--stdin-requests" && a != "--json")
        .collect()
}

/// What a line must hold, for the answer to a line that does not.
const LINE_FORM: &str = "a request line is a JSON array of the arguments of `palloc --no-wait`, \
ending with `--` and the script, e.g. [\"-J\",\"job1\",\"-N\",\"1\",\"--\",\"/bin/bash\",\"job1.sh\"]";

/// Submit one line's request (`cmd`: palloc's command, built); its
/// request id and holder, or why not.
fn submit_line(
    (agent, cmd): (&PallocArgs, &clap::Command),
    common: &[OsString],
    line: &str,
    standby: &mut Standby,
) -> std::result::Result<super::detach::Submitted, Failure> {
    let words: Vec<String> = serde_json::from_str(line)
        .map_err(|e| usage(format!("{LINE_FORM}; this line is not ({e})")))?;
    if !words.iter().any(|w| w == "--") {
        return Err(usage(format!(
            "{LINE_FORM}; this line names no script after `--`"
        )));
    }
    let mut given: Vec<OsString> = common.to_vec();
    given.push("--no-wait".into());
    given.extend(words.into_iter().map(OsString::from));
    let argv: Vec<OsString> = std::iter::once(OsString::from("palloc"))
        .chain(given.iter().cloned())
        .collect();
    let (argv, _warnings) = crate::cli::script_directives::merged(argv, cmd);
    let mut args: PallocArgs = try_parse_validated_with(cmd.clone(), argv.iter().cloned())
        .map_err(|e| usage(first_line(&e.to_string())))?;
    if args.stdin_requests {
        return Err(usage(format!(
            "{LINE_FORM}; --stdin-requests is the agent's own flag"
        )));
    }
    args.line_argv = Some(argv.into_iter().skip(1).collect());
    let mut out = args.output();
    out.json = true;
    out.quiet = out.quiet.max(agent.output.quiet);
    let ui = Ui::new("palloc", &out);
    super::flow::submit_batch(&args, &ui, standby)
}

/// A usage error (exit 2) for a line.
fn usage(message: String) -> Failure {
    Failure::with(Exit::Usage, None, message)
}

/// clap's error without its usage block: its first line, without `error: `.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or(text);
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

/// What stdin gave.
enum Input {
    Line(String),
    /// One of the other fds waited on became readable (or the deadline
    /// passed): no line yet.
    Wake,
    End,
    Signal(i32),
}

/// stdin read line by line, a caught signal ending the wait.
#[derive(Default)]
struct LineReader {
    got: Vec<u8>,
    ended: bool,
}

impl LineReader {
    /// The next line; [`Input::Wake`] first if one of `also` becomes
    /// readable or `deadline` passes.
    fn next(
        &mut self,
        also: &[std::os::fd::BorrowedFd<'_>],
        deadline: Option<std::time::Instant>,
    ) -> Input {
        loop {
            if let Some(end) = self.got.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.got.drain(..=end).collect();
                return Input::Line(String::from_utf8_lossy(&line).trim_end().to_string());
            }
            if self.ended {
                if self.got.is_empty() {
                    return Input::End;
                }
                let line = String::from_utf8_lossy(&self.got).to_string();
                self.got.clear();
                return Input::Line(line);
            }
            if let Some(sig) = signals::caught() {
                return Input::Signal(sig);
            }
            let stdin = std::io::stdin();
            let signal_fd = signals::fd();
            let fds: Vec<_> = std::iter::once(stdin.as_fd())
                .chain(signal_fd)
                .chain(also.iter().copied())
                .collect();
            let first_other = 1 + usize::from(signal_fd.is_some());
            match crate::conn::client::poll_readable(&fds, deadline) {
                Some(0) => {}
                Some(i) if i >= first_other => return Input::Wake,
                Some(_) => {
                    signals::drain();
                    continue;
                }
                None if deadline.is_some() => return Input::Wake,
                None => continue,
            }
            let mut buf = [0u8; 8192];
            match nix::unistd::read(stdin.as_raw_fd(), &mut buf) {
                Ok(0) => self.ended = true,
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(nix::errno::Errno::EINTR) | Err(nix::errno::Errno::EAGAIN) => {}
                Err(_) => self.ended = true,
            }
        }
    }
}
