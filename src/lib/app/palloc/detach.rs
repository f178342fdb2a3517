//! palloc's detached holder: a request that must outlive the palloc the
//! user typed (`--no-wait`, as sbatch; a grant printed for a script, as
//! `salloc --no-shell`) is made by a second palloc started in a session of
//! its own, which waits for the grant and then holds the allocation (or runs
//! the submitted script in it) until it is released, expires or the DVM
//! ends. The two talk over a pipe: one line `queued`, then
//! `granted JSON` (the allocation record); end of file without it means the
//! detached palloc ended (refused).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Instant;

use crate::cli::exit::Exit;
use crate::cli::request::AllocAsk;
use crate::cli::PallocArgs;
use crate::render::human::allocation_line;
use crate::render::{AllocationRecord, RequestRecord};

use crate::app::requester::generated_request_id;
use crate::app::{signals, submit_pipe, Failure, Ui};

use super::standby::{Launch, Standby};

/// What the palloc the user typed waits for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Detach {
    /// `--no-wait`: only until the DVM has handled the request (an
    /// immediate refusal is reported), then print the request id.
    Submit,
    /// A plain grant: until granted (as long as the request stays queued),
    /// then print the grant.
    UntilGranted,
}

/// Start the detached palloc for `req` and wait as `how` says.
pub(crate) fn submit_detached(
    args: &PallocArgs,
    req: &AllocAsk,
    ui: &Ui,
    how: Detach,
) -> std::result::Result<i32, Failure> {
    detach(args, req, ui, how, None).map(|(_, code, _)| code)
}

/// A batch job submitted for a `palloc --stdin-requests` line.
pub(crate) struct Submitted {
    /// Its request id.
    pub(crate) request_id: String,
    /// The detached palloc that holds it (a child of the agent).
    pub(crate) holder_pid: u32,
}

/// A batch job of a `palloc --stdin-requests` line: submitted as with
/// `--no-wait`, nothing printed, held by one of the agent's `standby`
/// pallocs when one is ready; its request id and holder.
pub(crate) fn submit_line(
    args: &PallocArgs,
    req: &AllocAsk,
    ui: &Ui,
    standby: &mut Standby,
) -> std::result::Result<Submitted, Failure> {
    detach(args, req, ui, Detach::Submit, Some(standby)).map(|(request_id, _, holder_pid)| {
        Submitted {
            request_id,
            holder_pid,
        }
    })
}

/// [`submit_detached`], saying what it did unless for an agent's line
/// (`standby` its standby pallocs); the request id, the exit code and the
/// detached palloc's pid.
fn detach(
    args: &PallocArgs,
    req: &AllocAsk,
    ui: &Ui,
    how: Detach,
    standby: Option<&mut Standby>,
) -> std::result::Result<(String, i32, u32), Failure> {
    let announce = standby.is_none();
    let asked = req
        .attrs
        .req_id
        .clone()
        .unwrap_or_else(generated_request_id);
    let rid = free_batch_id(args, &asked);
    if rid != asked {
        ui.note(&format!(
            "-J {asked} is taken in this folder (palloc-{asked}.out): this job is {rid}"
        ));
    }
    let (log_path, log) = open_log(args, &rid)?;
    let (said_r, said_w) =
        nix::unistd::pipe().map_err(|e| Failure::other(format!("cannot make a pipe: {e}")))?;
    submit_pipe::set_cloexec(said_r.as_raw_fd());
    let job = launch(args, &rid, &log_path);
    let mut child = match standby.and_then(|s| s.hand(&job, &log, &said_w)) {
        Some(child) => child,
        None => start(job, &log, (&said_w, how))?,
    };
    drop(said_w);
    let log_path = Some(name_log_for(log_path, args, child.id()));
    if how == Detach::Submit && announce {
        ui.record(&RequestRecord {
            request_id: Some(rid.clone()),
            state: "submitted".into(),
        });
        ui.result(&rid);
    }
    let patience = crate::conn::client::handshake_timeout()
        + crate::conn::client::env_timeout().unwrap_or(crate::ops::session::DEFAULT_TIMEOUT);
    let mut lines = Lines::default();
    loop {
        let deadline = (how == Detach::Submit).then(|| Instant::now() + patience);
        match lines.next(&said_r, deadline) {
            Said::Line(line) if how == Detach::UntilGranted && line == "queued" => {
                ui.note(&format!("request {rid} is queued; waiting for the grant"));
            }
            Said::Line(line) => {
                if let Some(json) = line.strip_prefix(REFUSED) {
                    let _ = child.wait();
                    return Err(refusal_of(json, &rid));
                }
                if let Some(json) = line.strip_prefix("granted ") {
                    if how == Detach::UntilGranted {
                        let code = print_grant(args, json, child.id(), log_path.as_deref(), ui);
                        return Ok((rid, code, child.id()));
                    }
                }
                ui.detail(&format!("the detached palloc says: {line}"));
                break;
            }
            Said::Nothing if how == Detach::UntilGranted => {
                // A signal: the detached palloc withdraws the request.
                if let Some(sig) = signals::caught() {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(child.id() as i32),
                        nix::sys::signal::Signal::SIGINT,
                    );
                    let _ = child.wait();
                    return Err(Failure::interrupted(&format!(
                        "interrupted by {}: the queued request {rid} was withdrawn",
                        signals::name(sig)
                    )));
                }
            }
            Said::Nothing => {
                ui.detail("no answer from the DVM yet; the detached palloc keeps waiting");
                break;
            }
            Said::Ended => return Err(refused(&mut child, &rid, log_path.as_deref())),
        }
    }
    if announce {
        ui.note(&format!(
            "request {rid} is held by a detached palloc (pid {}{}): `pwatch --event alloc \
--request-id {rid}` shows its grant, `prelease --cancel {rid}` withdraws it, and once granted \
`prelease ID` gives it back",
            child.id(),
            log_path
                .map(|p| format!(", log {}", p.display()))
                .unwrap_or_default()
        ));
    }
    Ok((rid, 0, child.id()))
}

/// The request id of a batch script named `asked` (`-J NAME`): NAME, or
/// when this folder has its log already as a file of ours (an earlier job
/// of that name), NAME.2, NAME.3, … (sbatch's job names may repeat; each
/// job has its own id and log). A log name someone else holds (their
/// file, a link) is kept, so that [`open_log`] refuses it and says why.
/// Other requests keep the id asked.
fn free_batch_id(args: &PallocArgs, asked: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    if args.command.is_empty() || args.request_id.is_none() || args.log.is_some() {
        return asked.to_string();
    }
    let me = nix::unistd::geteuid().as_raw();
    let ours = |id: &str| {
        std::env::current_dir()
            .map(|d| d.join(log_file_name(id)))
            .ok()
            .and_then(|p| std::fs::symlink_metadata(p).ok())
            .map(|m| m.file_type().is_file() && m.uid() == me)
    };
    if ours(asked) != Some(true) {
        return asked.to_string();
    }
    let taken = |id: &str| ours(id).is_some();
    (1..10_000)
        .map(|n| {
            if n == 1 {
                asked.to_string()
            } else {
                format!("{asked}.{n}")
            }
        })
        .find(|id| !taken(id) && crate::cli::parse::parse_id(id).is_ok())
        .unwrap_or_else(|| asked.to_string())
}

/// `palloc -o PATTERN`'s log for request `rid`: `%j` and `%x` (sbatch's
/// job id and name) are the request id, `%%` a `%`; another `%` stays.
fn expand_log(pattern: &str, rid: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('%', Some('j' | 'x')) => {
                chars.next();
                out.push_str(&rid.replace('/', "_"));
            }
            ('%', Some('%')) => {
                chars.next();
                out.push('%');
            }
            _ => out.push(c),
        }
    }
    out
}

/// A batch script's log file name for request `rid`: `palloc-NAME.out`.
fn log_file_name(rid: &str) -> String {
    let name = rid.replace('/', "_");
    if name.starts_with("palloc-") {
        format!("{name}.out")
    } else {
        format!("palloc-{name}.out")
    }
}

/// The detached palloc's log: for a submitted script, `palloc-NAME.out`
/// in the current directory, named after the request (`-J NAME`; a
/// generated id `palloc-PID-MS` gives `palloc-PID-MS.out`), as sbatch's
/// `slurm-ID.out`, opened without following a link and never truncated
/// (see [`crate::app::shared_dir_file`]: a new file, or our own regular file
/// appended to); otherwise a new private file in the user's holder
/// registry, never one someone else prepared: a registry another user took
/// (see [`crate::conn::holder::registry`]) or a file that cannot be
/// created anew is refused with a message naming the path (never a log to
/// /dev/null).
fn open_log(
    args: &PallocArgs,
    rid: &str,
) -> std::result::Result<(std::path::PathBuf, std::fs::File), Failure> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = rid.replace('/', "_");
    if !args.command.is_empty() {
        let file_name = match &args.log {
            Some(pattern) => expand_log(pattern, rid),
            None => log_file_name(rid),
        };
        let path = std::env::current_dir()
            .map_err(|e| Failure::other(format!("cannot find the current directory: {e}")))?
            .join(file_name);
        let file = crate::app::shared_dir_file::open_for_output(&path).map_err(|why| {
            Failure::other(format!(
                "cannot write the log {}: {why}; nothing was submitted (remove it, or name the \
request differently with -J NAME)",
                path.display()
            ))
        })?;
        return Ok((path, file));
    }
    let dir = crate::conn::holder::registry().map_err(Failure::other)?;
    let path = dir.join(format!("palloc.{name}.log"));
    let _ = std::fs::remove_file(&path);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .mode(0o600)
        .create_new(true)
        .open(&path)
        .map_err(|e| Failure::other(format!("cannot create the log {}: {e}", path.display())))?;
    Ok((path, file))
}

/// A log in the private directory is renamed `palloc.NAME.PID.log` once
/// the detached palloc runs, so the log of one that has ended is swept
/// (see [`crate::conn::holder::sweep`]); a script's log stays as named.
fn name_log_for(path: std::path::PathBuf, args: &PallocArgs, pid: u32) -> std::path::PathBuf {
    if !args.command.is_empty() {
        return path;
    }
    let named = path
        .to_str()
        .and_then(|p| p.strip_suffix(".log"))
        .map(|stem| std::path::PathBuf::from(format!("{stem}.{pid}.log")));
    match named {
        Some(n) if std::fs::rename(&path, &n).is_ok() => n,
        _ => path,
    }
}

/// The detached palloc's job for request `rid`: `palloc … --hold` (or
/// `palloc … -- SCRIPT`), and the variables it is started with besides
/// its pipe's.
fn launch(args: &PallocArgs, rid: &str, log_path: &std::path::Path) -> Launch {
    let mut argv: Vec<std::ffi::OsString> = Vec::new();
    let mut after_dashes = false;
    let given: Vec<std::ffi::OsString> = match &args.line_argv {
        Some(line) => line.clone(),
        None => std::env::args_os().skip(1).collect(),
    };
    for a in given {
        after_dashes |= a == "--";
        if after_dashes || (a != "--no-wait" && a != "--parsable") {
            argv.push(a);
        }
    }
    let mut head: Vec<std::ffi::OsString> = Vec::new();
    if args.command.is_empty() {
        head.push("--hold".into());
    } else if !crate::app::requester::acts_as_tool(args) {
        // Inside a job: the script is a job of its own (see
        // `Plan::hand_off_before_connecting`), not one of the job's.
        head.push("--as-tool".into());
    }
    if args.request_id.is_none() {
        head.push("--request-id".into());
        head.push(rid.into());
    }
    let renamed = args.request_id.as_deref().is_some_and(|asked| asked != rid);
    let at = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    argv.splice(at..at, head);
    let mut env = Vec::new();
    if !args.command.is_empty() {
        env.push((super::batch::LOG_ENV.into(), log_path.into()));
    }
    if renamed {
        env.push((submit_pipe::RENAMED_ENV.into(), rid.into()));
    }
    Launch { argv, env }
}

/// Start the detached palloc for `job` in a session of its own, its output
/// to `log`, with only stdio and the pipe `said` open.
fn start(
    job: Launch,
    log: &std::fs::File,
    (said, how): (&OwnedFd, Detach),
) -> std::result::Result<std::process::Child, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::other(format!("cannot find palloc's own program: {e}")))?;
    let out = |f: &std::fs::File| {
        f.try_clone()
            .map(Into::into)
            .unwrap_or(std::process::Stdio::null())
    };
    let said_fd = said.as_raw_fd();
    let mut cmd = std::process::Command::new(exe);
    cmd.args(&job.argv)
        .envs(job.env)
        .env(
            submit_pipe::SUBMIT_FD_ENV,
            submit_pipe::submit_fd_value(said_fd, how == Detach::UntilGranted),
        )
        .stdin(std::process::Stdio::null())
        .stdout(out(log))
        .stderr(out(log));
    super::own_session::in_own_session(&mut cmd, Some(said_fd));
    cmd.spawn()
        .map_err(|e| Failure::other(format!("cannot start the detached palloc: {e}")))
}

/// Print the grant the detached palloc reported (`json`, its allocation
/// record) as palloc prints its own; returns 0.
fn print_grant(
    args: &PallocArgs,
    json: &str,
    pid: u32,
    log: Option<&std::path::Path>,
    ui: &Ui,
) -> i32 {
    let rec: Option<AllocationRecord> = serde_json::from_str(json).ok();
    let Some(rec) = rec else {
        ui.result(json);
        return 0;
    };
    ui.record(&rec);
    if args.parsable {
        ui.result(&rec.alloc_id);
    } else if !ui.json {
        ui.note(&allocation_line(&rec));
    }
    ui.note(&format!(
        "allocation {id} is held by a detached palloc (pid {pid}{}) until `prelease {id}`, its time \
limit or the end of the DVM; every command finds it by its id",
        log.map(|p| format!(", log {}", p.display()))
            .unwrap_or_default(),
        id = rec.alloc_id
    ));
    0
}

/// The detached palloc ended before saying anything: its request was
/// refused; the reason is the last `palloc:` line of its log.
fn refused(child: &mut std::process::Child, rid: &str, log: Option<&std::path::Path>) -> Failure {
    let code = child.wait().ok().and_then(|st| st.code()).unwrap_or(1);
    let said = log
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    let why = said
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("palloc: "))
        .unwrap_or("the detached palloc ended at once")
        .to_string();
    // It ended without saying why on the pipe (killed, or failed before
    // reading it): its log's last word, without a status.
    Failure::with(
        Exit::Command(code),
        None,
        format!("request {rid} was refused: {why}"),
    )
}

/// The line a detached palloc says on its pipe when its request fails
/// before the grant: this, then a [`Refusal`] as JSON.
pub(crate) const REFUSED: &str = "refused ";

/// A detached palloc's failure, as it travels on the pipe: the status by
/// its code, not read back from a sentence.
#[derive(serde::Serialize, serde::Deserialize)]
struct Refusal {
    status: Option<i32>,
    rule: Option<String>,
    message: String,
    exit_code: i32,
}

/// The pipe line that tells the palloc that started this one why the
/// request failed.
pub(crate) fn refusal_line(f: &Failure) -> String {
    let r = Refusal {
        status: f.status.map(|s| s.0),
        rule: f.rule.clone(),
        message: f.message.clone(),
        exit_code: f.exit.code(),
    };
    format!("{REFUSED}{}", serde_json::to_string(&r).unwrap_or_default())
}

/// The failure a detached palloc said on its pipe for request `rid`.
fn refusal_of(json: &str, rid: &str) -> Failure {
    match serde_json::from_str::<Refusal>(json) {
        Ok(r) => Failure {
            exit: Exit::Command(r.exit_code),
            status: r.status.map(crate::proto::Status),
            rule: r.rule,
            message: format!("request {rid} was refused: {}", r.message),
        },
        Err(e) => Failure::other(format!(
            "request {rid} was refused, but the detached palloc's reason could not be read: {e}"
        )),
    }
}

/// What a detached palloc said on its pipe.
enum Said {
    /// One line (`queued`, `granted JSON`).
    Line(String),
    /// It closed the pipe: it has ended.
    Ended,
    /// Nothing before the deadline (or a signal).
    Nothing,
}

/// The lines read from the pipe so far.
#[derive(Default)]
struct Lines {
    got: Vec<u8>,
    ended: bool,
}

impl Lines {
    /// The next line on `r`, waiting until `deadline` (`None`: as long as
    /// it takes, but a signal ends the wait).
    fn next(&mut self, r: &OwnedFd, deadline: Option<Instant>) -> Said {
        loop {
            if let Some(end) = self.got.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.got.drain(..=end).collect();
                return Said::Line(String::from_utf8_lossy(&line).trim().to_string());
            }
            if self.ended {
                return Said::Ended;
            }
            if signals::caught().is_some() || deadline.is_some_and(|d| Instant::now() >= d) {
                return Said::Nothing;
            }
            if !readable(r.as_fd(), deadline) {
                signals::drain();
                continue;
            }
            let mut buf = [0u8; 4096];
            match nix::unistd::read(r.as_raw_fd(), &mut buf) {
                Ok(0) => {
                    self.ended = true;
                    if !self.got.is_empty() {
                        self.got.push(b'\n');
                    }
                }
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(nix::errno::Errno::EINTR) | Err(nix::errno::Errno::EAGAIN) => {}
                Err(_) => self.ended = true,
            }
        }
    }
}

/// Wait until `r` is readable, a signal comes, or `deadline`.
fn readable(r: BorrowedFd<'_>, deadline: Option<Instant>) -> bool {
    let fds: Vec<BorrowedFd<'_>> = std::iter::once(r).chain(signals::fd()).collect();
    crate::conn::client::poll_readable(&fds, deadline) == Some(0)
}
