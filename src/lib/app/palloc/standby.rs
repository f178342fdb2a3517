//! Detached pallocs started ahead by a `palloc --stdin-requests` agent
//! (issue 42): a few pallocs already running (program loaded, nothing
//! asked, not connected), each waiting on its stdin, a socket, for the job
//! it is to hold. A line's job is handed to a ready one in one message (its
//! command line, the variables a detached palloc is started with, and its
//! log and pipe as descriptors), instead of a process started for it; the
//! agent starts a replacement once it has answered the line. From then on
//! the standby palloc is the job's detached palloc, as one started for it
//! would be (its own session, stdin /dev/null, stdout and stderr its log,
//! the pipe open): it parses the job's command line and connects. One the
//! agent never used ends at once, silently, when the agent ends (its socket
//! closes): it asked nothing, so it leaves no record and no allocation.
//!
//! No `unsafe` here: the socket is the standby's stdin (std's
//! [`std::io::stdin`], nothing adopted by number), and the descriptors
//! come as [`OwnedFd`] from rustix's `recvmsg` (nix's yields raw numbers).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::IoSlice;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::mpsc::{Receiver, Sender};

use nix::sys::socket::{
    sendmsg, socketpair, AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType,
};

/// Environment variable marking a standby palloc: its stdin is the socket
/// its job comes on.
const STANDBY_ENV: &str = "PMIX_TOOLS_STANDBY";

/// The longest a line waits for a standby palloc being started.
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How many standby pallocs an agent keeps ready: a caller that submits
/// one line at a time uses one while the next starts.
pub(super) const READY: usize = 2;

/// A job for a detached palloc: its command line (without the program)
/// and the variables set for it.
pub(super) struct Launch {
    /// palloc's arguments.
    pub(super) argv: Vec<OsString>,
    /// Variables set besides the agent's own environment.
    pub(super) env: Vec<(OsString, OsString)>,
}

/// One standby palloc: the child, and the agent's end of its socket.
struct Ready {
    child: std::process::Child,
    socket: OwnedFd,
}

/// The standby pallocs of an agent.
pub(super) struct Standby {
    ready: VecDeque<Ready>,
    /// How many are being started (by threads of their own).
    starting: usize,
    /// Where those threads leave them.
    started: (
        Sender<std::io::Result<Ready>>,
        Receiver<std::io::Result<Ready>>,
    ),
}

impl Standby {
    /// None yet.
    pub(super) fn new() -> Standby {
        Standby {
            ready: VecDeque::new(),
            starting: 0,
            started: std::sync::mpsc::channel(),
        }
    }

    /// Start standby pallocs until [`READY`] are waiting or being started:
    /// each by a thread of its own, so that the agent reads its next line
    /// at once instead of waiting for the new program to be running (a
    /// failed start leaves fewer: a line then starts its detached palloc
    /// itself).
    pub(super) fn fill(&mut self) {
        self.collect();
        while self.ready.len() + self.starting < READY {
            let tx = self.started.0.clone();
            let spawned = std::thread::Builder::new()
                .name("standby palloc".into())
                .spawn(move || {
                    let _ = tx.send(start_one());
                });
            if spawned.is_err() {
                return;
            }
            self.starting += 1;
        }
    }

    /// Take in the standby pallocs started since.
    fn collect(&mut self) {
        while let Ok(got) = self.started.1.try_recv() {
            self.starting -= 1;
            if let Ok(r) = got {
                self.ready.push_back(r);
            }
        }
    }

    /// With none ready but one being started, wait for it (at most
    /// [`START_WAIT`]): its program is loading and about to be ready,
    /// sooner than a palloc started for the line would be.
    fn await_starting(&mut self) {
        if !self.ready.is_empty() || self.starting == 0 {
            return;
        }
        let until = std::time::Instant::now() + START_WAIT;
        if let Ok(got) = crate::ops::wait::recv_until(&self.started.1, until) {
            self.starting -= 1;
            if let Ok(r) = got {
                self.ready.push_back(r);
            }
        }
    }

    /// Hand `job` to a standby palloc, its output to `log` and `said` its
    /// pipe to the agent; the palloc now holding it, or `None` when none
    /// was ready (or none took it).
    pub(super) fn hand(
        &mut self,
        job: &Launch,
        log: &std::fs::File,
        said: &OwnedFd,
    ) -> Option<std::process::Child> {
        self.collect();
        self.await_starting();
        let message = encode(job);
        while let Some(mut r) = self.ready.pop_front() {
            if send(&r.socket, &message, &[log.as_raw_fd(), said.as_raw_fd()]).is_ok() {
                // Closing our end ends its read: the job is all there.
                drop(r.socket);
                return Some(r.child);
            }
            // It has gone (killed): reap it, try the next.
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
        None
    }
}

/// Start one standby palloc: this program without arguments (its job
/// brings them), in a session of its own, its stdin its socket, stdout and
/// stderr on /dev/null, nothing else open.
fn start_one() -> std::io::Result<Ready> {
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.env(STANDBY_ENV, "1")
        .stdin(std::process::Stdio::from(theirs))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // It makes its own session first thing (see `await_job`).
    let child = cmd.spawn()?;
    Ok(Ready {
        child,
        socket: ours,
    })
}

/// Send `message` with the descriptors `fds` (with its first bytes), all
/// of it.
fn send(socket: &OwnedFd, message: &[u8], fds: &[RawFd]) -> nix::Result<()> {
    let rights = [ControlMessage::ScmRights(fds)];
    let flags = MsgFlags::MSG_NOSIGNAL;
    let mut sent = sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(message)],
        &rights,
        flags,
        None,
    )?;
    while sent < message.len() {
        let rest = [IoSlice::new(&message[sent..])];
        match sendmsg::<()>(socket.as_raw_fd(), &rest, &[], flags, None) {
            Ok(n) => sent += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The tag of an argument in a message.
const ARG: u8 = b'a';
/// The tag of a variable (`NAME=VALUE`) in a message.
const VAR: u8 = b'e';

/// A job as its message: one field per argument and variable, each its
/// tag, its bytes and a NUL (none holds a NUL).
fn encode(job: &Launch) -> Vec<u8> {
    let mut m = Vec::new();
    for a in &job.argv {
        m.push(ARG);
        m.extend_from_slice(a.as_bytes());
        m.push(0);
    }
    for (k, v) in &job.env {
        m.push(VAR);
        m.extend_from_slice(k.as_bytes());
        m.push(b'=');
        m.extend_from_slice(v.as_bytes());
        m.push(0);
    }
    m
}

/// A message back into its job; `None` if it is not one.
fn decode(message: &[u8]) -> Option<Launch> {
    let mut job = Launch {
        argv: Vec::new(),
        env: Vec::new(),
    };
    let body = message.strip_suffix(&[0])?;
    for field in body.split(|b| *b == 0) {
        let (tag, rest) = field.split_first()?;
        match *tag {
            ARG => job.argv.push(OsString::from_vec(rest.to_vec())),
            VAR => {
                let at = rest.iter().position(|b| *b == b'=')?;
                job.env.push((
                    OsStr::from_bytes(&rest[..at]).to_os_string(),
                    OsStr::from_bytes(&rest[at + 1..]).to_os_string(),
                ));
            }
            _ => return None,
        }
    }
    Some(job)
}

/// What this process is to do, as a possible standby palloc.
pub enum Role {
    /// Not a standby palloc: palloc as the user ran it.
    Plain,
    /// A standby palloc given a job: its command line (the program first),
    /// stdout and stderr now its log, the job's variables set.
    Job(Vec<OsString>),
    /// A standby palloc whose agent ended without giving it a job: it is
    /// to end at once, having asked nothing.
    Unused,
}

/// For a standby palloc ([`STANDBY_ENV`] set, its stdin a socket), wait
/// for its job on its stdin, then take the stdio and pipe it came with
/// (stdin /dev/null, stdout and stderr its log, the pipe adopted as a
/// detached palloc's inherited one is) and set its variables. Reading the
/// job is all it does before the job comes.
/// palloc's `main` calls this first, while the process has one thread
/// only (it sets variables).
pub fn await_job() -> Role {
    if std::env::var_os(STANDBY_ENV).is_none() {
        return Role::Plain;
    }
    std::env::remove_var(STANDBY_ENV);
    let stdin = std::io::stdin();
    let socket = stdin.as_fd();
    let is_socket = nix::sys::stat::fstat(socket.as_raw_fd()).is_ok_and(|st| {
        nix::sys::stat::SFlag::from_bits_truncate(st.st_mode) & nix::sys::stat::SFlag::S_IFMT
            == nix::sys::stat::SFlag::S_IFSOCK
    });
    if !is_socket {
        return Role::Plain;
    }
    if !super::own_session::become_own_session() {
        return Role::Unused;
    }
    let got = receive(socket)
        .and_then(|(message, fds)| Some((decode(&message)?, <[OwnedFd; 2]>::try_from(fds).ok()?)));
    let Some((job, [log, said])) = got else {
        return Role::Unused;
    };
    let Ok(null) = std::fs::File::open("/dev/null") else {
        return Role::Unused;
    };
    // The socket (stdin) closes: the job is all there.
    for (from, to) in [
        (null.as_raw_fd(), 0),
        (log.as_raw_fd(), 1),
        (log.as_raw_fd(), 2),
    ] {
        if nix::unistd::dup2(from, to).is_err() {
            return Role::Unused;
        }
    }
    drop((null, log));
    for (k, v) in &job.env {
        std::env::set_var(k, v);
    }
    crate::app::submit_pipe::adopt_handed_pipe(said);
    let program = std::env::args_os()
        .next()
        .unwrap_or_else(|| "palloc".into());
    Role::Job(std::iter::once(program).chain(job.argv).collect())
}

/// Read the job on `socket` until the agent closes it: its message and
/// the descriptors that came with it; `None` at an end with no message.
fn receive(socket: BorrowedFd<'_>) -> Option<(Vec<u8>, Vec<OwnedFd>)> {
    use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut message = Vec::new();
    let mut fds = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        match recvmsg(socket, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC) {
            Ok(m) if m.bytes == 0 => break,
            Ok(m) => {
                for c in control.drain() {
                    if let RecvAncillaryMessage::ScmRights(got) = c {
                        fds.extend(got);
                    }
                }
                message.extend_from_slice(&buf[..m.bytes]);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    (!message.is_empty()).then_some((message, fds))
}
