//! Starting a job's process without copying pdvm.
//!
//! `fork` copies pdvm's page tables, and the exec that follows tears the
//! copy down again: for arrays of short tasks that was most of pdvm's CPU.
//! Here the child is a `vfork`-style clone (`CLONE_VM | CLONE_VFORK`, as
//! `posix_spawn` does): it shares pdvm's memory, pdvm waits until it has
//! exec'd or failed, and nothing is copied. Unlike `posix_spawn` it can
//! still ask to die with pdvm (`PR_SET_PDEATHSIG`) and take a terminal.
//!
//! Everything the child needs is prepared beforehand ([`Plan`]); between
//! clone and exec it makes only async-signal-safe system calls on memory
//! prepared by the parent, and reports a failure through a word the parent
//! reads once it resumes.
//!
//! The child's side (`in_child`, `exec_first`) calls `libc` directly, not
//! nix, on purpose: between clone and exec only bare async-signal-safe
//! system calls may run, with no allocation and no lock, and raw calls keep
//! that visible. (`leader_tty::take_foreground`, which it calls, uses nix's
//! signal-mask and terminal wrappers: thin calls that allocate nothing.)

use std::borrow::Cow;
use std::ffi::{c_char, CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::libc;

/// What the child's stdin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stdin {
    /// `/dev/null`.
    Null,
    /// pdvm's own stdin (the session leader at a terminal).
    Inherit,
    /// A pipe pdvm writes.
    Pipe,
}

/// Everything needed to start one process.
#[derive(Debug)]
pub(crate) struct Plan<'a> {
    /// Paths to try in turn, as `execvp` does (one when already resolved).
    pub programs: Vec<CString>,
    /// The argument vector, `argv[0]` first.
    pub argv: Vec<CString>,
    /// The whole environment, `KEY=VALUE`.
    pub envp: Vec<Cow<'a, CStr>>,
    /// Directory to run in; `None` keeps pdvm's.
    pub cwd: Option<CString>,
    /// Its stdin.
    pub stdin: Stdin,
    /// Capture stdout through a pipe (else pdvm's own).
    pub capture_out: bool,
    /// Capture stderr through a pipe (else pdvm's own).
    pub capture_err: bool,
    /// Make its process group the terminal's foreground group.
    pub terminal: bool,
}

impl Plan<'_> {
    /// The same plan owning its environment (to start on another thread).
    pub(crate) fn into_owned(self) -> Plan<'static> {
        Plan {
            programs: self.programs,
            argv: self.argv,
            envp: self
                .envp
                .into_iter()
                .map(|c| Cow::Owned(c.into_owned()))
                .collect(),
            cwd: self.cwd,
            stdin: self.stdin,
            capture_out: self.capture_out,
            capture_err: self.capture_err,
            terminal: self.terminal,
        }
    }
}

/// Turn `s` into a C string; an interior NUL is `InvalidInput`.
pub(crate) fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a NUL byte in an argument or the environment",
        )
    })
}

/// `KEY=VALUE` as a C string.
pub(crate) fn c_pair(k: &OsStr, v: &OsStr) -> io::Result<CString> {
    let mut kv = OsString::with_capacity(k.len() + v.len() + 1);
    kv.push(k);
    kv.push("=");
    kv.push(v);
    c_string(&kv)
}

/// A pipe whose two ends close on exec.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
}

/// `/dev/null` for reading, closed on exec; opened once for every child.
fn dev_null() -> io::Result<RawFd> {
    static NULL: std::sync::OnceLock<OwnedFd> = std::sync::OnceLock::new();
    if let Some(fd) = NULL.get() {
        return Ok(fd.as_raw_fd());
    }
    let fd = nix::fcntl::open(
        "/dev/null",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )?;
    // SAFETY: `open` just returned this descriptor; nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(NULL.get_or_init(|| fd).as_raw_fd())
}

/// The descriptors the child puts on 0, 1 and 2 (`None` keeps pdvm's).
struct Wiring {
    fds: [Option<RawFd>; 3],
}

/// Start `plan`'s process in a process group of its own, with no signal
/// blocked, SIGPIPE at its default, and dying with pdvm (even a pdvm
/// killed with SIGKILL). Errors are the child's: a missing program, a
/// directory it cannot enter, and so on. Its pid (reaped by the server's
/// waitpid loop) and pdvm's ends of its pipes.
pub(crate) fn spawn(plan: &Plan) -> io::Result<(i32, Ends)> {
    let (wiring, ends, child_side) = open_wiring(plan)?;
    let pid = clone_exec(plan, &wiring)?;
    drop(child_side);
    Ok((pid, ends))
}

/// pdvm's ends of a process's pipes.
#[derive(Debug)]
pub(crate) struct Ends {
    /// Write end of its stdin, for [`Stdin::Pipe`].
    pub stdin: Option<OwnedFd>,
    /// Read end of its stdout, when captured.
    pub stdout: Option<OwnedFd>,
    /// Read end of its stderr, when captured.
    pub stderr: Option<OwnedFd>,
}

/// A process ready to be started away from pdvm's serving thread
/// ([`super::spawner`]): its plan, owned, and the child's ends of its
/// pipes, which stay open until it has been cloned.
pub(crate) struct Detached {
    plan: Plan<'static>,
    wiring: Wiring,
    child_side: Vec<OwnedFd>,
}

impl Detached {
    /// Clone, wire and exec (this thread waits until the child has exec'd);
    /// its pid, or the child's error.
    pub(crate) fn start(self) -> io::Result<i32> {
        let r = clone_exec(&self.plan, &self.wiring);
        drop(self.child_side);
        r
    }
}

/// Open `plan`'s pipes: the process, ready to start elsewhere, and pdvm's
/// ends (registered at once, so no output is missed however soon it runs).
pub(crate) fn detach(plan: Plan<'static>) -> io::Result<(Detached, Ends)> {
    let (wiring, ends, child_side) = open_wiring(&plan)?;
    Ok((
        Detached {
            plan,
            wiring,
            child_side,
        },
        ends,
    ))
}

/// The pipes `plan` asks for: what the child puts on 0, 1 and 2, pdvm's
/// ends, and the child's ends (to close once it is cloned).
fn open_wiring(plan: &Plan) -> io::Result<(Wiring, Ends, Vec<OwnedFd>)> {
    let null = (plan.stdin == Stdin::Null).then(dev_null).transpose()?;
    let input = (plan.stdin == Stdin::Pipe).then(pipe).transpose()?;
    let out = plan.capture_out.then(pipe).transpose()?;
    let err = plan.capture_err.then(pipe).transpose()?;
    let wiring = Wiring {
        fds: [
            null.or(input.as_ref().map(|(r, _)| r.as_raw_fd())),
            out.as_ref().map(|(_, w)| w.as_raw_fd()),
            err.as_ref().map(|(_, w)| w.as_raw_fd()),
        ],
    };
    let mut child_side = Vec::new();
    let mut ends = Ends {
        stdin: None,
        stdout: None,
        stderr: None,
    };
    if let Some((r, w)) = input {
        child_side.push(r);
        ends.stdin = Some(w);
    }
    if let Some((r, w)) = out {
        child_side.push(w);
        ends.stdout = Some(r);
    }
    if let Some((r, w)) = err {
        child_side.push(w);
        ends.stderr = Some(r);
    }
    Ok((wiring, ends, child_side))
}

/// Null-terminated pointer array over `v` (borrowed: `v` must outlive it).
fn pointers<S: AsRef<CStr>>(v: &[S]) -> Vec<*const c_char> {
    v.iter()
        .map(|c| c.as_ref().as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Size of the child's stack until it execs.
const CHILD_STACK: usize = 64 * 1024;

thread_local! {
    /// The child stack of this thread's last clone, kept for the next: a
    /// clone stops this thread until its child has exec'd, so one stack
    /// a thread serves every child it starts, and none is allocated (and
    /// zeroed) per process.
    static STACK: std::cell::Cell<Option<Box<[u8]>>> = const { std::cell::Cell::new(None) };
}

/// A stack for the next child: the kept one, or a new one.
fn child_stack() -> Box<[u8]> {
    STACK
        .take()
        .unwrap_or_else(|| vec![0u8; CHILD_STACK].into_boxed_slice())
}

/// pdvm's pid (the parent every child checks it still has), asked once.
fn pdvm_pid() -> libc::pid_t {
    static PID: std::sync::OnceLock<libc::pid_t> = std::sync::OnceLock::new();
    *PID.get_or_init(|| nix::unistd::getpid().as_raw())
}

/// Clone, wire and exec; the child's error, if it failed before exec.
fn clone_exec(plan: &Plan, wiring: &Wiring) -> io::Result<i32> {
    let argv = pointers(&plan.argv);
    let envp = pointers(&plan.envp);
    let programs = pointers(&plan.programs);
    let parent = pdvm_pid();
    let failed = AtomicI32::new(0);
    let mut stack = child_stack();
    let child = || -> isize {
        // SAFETY: runs in the clone between clone and exec; see `in_child`.
        let e = unsafe { in_child(plan, wiring, &argv, &envp, &programs, parent) };
        failed.store(e, Ordering::SeqCst);
        127
    };
    use nix::sched::CloneFlags;
    // SAFETY: the child shares our memory but runs only `in_child` (no
    // allocation, no lock, async-signal-safe calls) on its own stack, and
    // CLONE_VFORK keeps this thread stopped until it has exec'd or exited.
    // It inherits this thread's TLS (errno), unused while it is stopped;
    // pdvm's other thread has its own, and takes no signal (all blocked,
    // read from a signalfd), so nothing else runs on the child's behalf.
    let pid = unsafe {
        nix::sched::clone(
            Box::new(child),
            &mut stack,
            CloneFlags::CLONE_VM | CloneFlags::CLONE_VFORK,
            Some(nix::sys::signal::Signal::SIGCHLD as i32),
        )
    }?;
    // The child has exec'd or exited: its stack is free for the next one.
    STACK.set(Some(stack));
    match failed.load(Ordering::SeqCst) {
        0 => Ok(pid.as_raw()),
        e => {
            // It has exited already: reap it here, not as a job's process.
            let _ = nix::sys::wait::waitpid(pid, None);
            Err(io::Error::from_raw_os_error(e))
        }
    }
}

/// The child's side: wire stdio, enter the directory, take its own group
/// (and the terminal), clear the signal mask, reset SIGPIPE, die with
/// pdvm, exec. Returns the errno that stopped it.
///
/// # Safety
/// Only in the clone made by [`clone_exec`], with pointer arrays that
/// borrow `plan`'s strings.
unsafe fn in_child(
    plan: &Plan,
    wiring: &Wiring,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    programs: &[*const libc::c_char],
    parent: libc::pid_t,
) -> i32 {
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    for (target, fd) in wiring.fds.iter().enumerate() {
        let Some(fd) = *fd else { continue };
        let wired = if fd == target as RawFd {
            // Already in place: only let it survive the exec.
            libc::fcntl(fd, libc::F_SETFD, 0)
        } else {
            libc::dup2(fd, target as RawFd)
        };
        if wired < 0 {
            return errno();
        }
    }
    if let Some(dir) = &plan.cwd {
        if libc::chdir(dir.as_ptr()) != 0 {
            return errno();
        }
    }
    if libc::setpgid(0, 0) != 0 {
        return errno();
    }
    if plan.terminal {
        if let Err(e) = super::leader_tty::take_foreground() {
            return e.raw_os_error().unwrap_or(libc::EIO);
        }
    }
    let mut empty: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut empty);
    if libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
        return libc::EINVAL;
    }
    // The clone has its own signal dispositions (no CLONE_SIGHAND).
    if libc::signal(libc::SIGPIPE, libc::SIG_DFL) == libc::SIG_ERR {
        return errno();
    }
    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
        return errno();
    }
    if libc::getppid() != parent {
        return libc::ESRCH;
    }
    exec_first(argv, envp, programs)
}

/// `execve` each program in turn until one runs; as `execvp`, a program
/// found but not executable (EACCES) wins over one not found.
///
/// # Safety
/// Null-terminated arrays of valid C strings.
unsafe fn exec_first(
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    programs: &[*const libc::c_char],
) -> i32 {
    let mut seen_access = false;
    let mut last = libc::ENOENT;
    for p in programs.iter().take_while(|p| !p.is_null()) {
        libc::execve(*p, argv.as_ptr(), envp.as_ptr());
        last = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        seen_access |= last == libc::EACCES;
        if !matches!(last, libc::ENOENT | libc::ENOTDIR | libc::EACCES) {
            return last;
        }
    }
    if seen_access {
        libc::EACCES
    } else {
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::errno::Errno;
    use std::io::Read;

    fn plan(argv: &[&str], cwd: Option<&str>) -> Plan<'static> {
        Plan {
            programs: vec![c_string(argv[0].as_ref()).unwrap()],
            argv: argv.iter().map(|a| c_string(a.as_ref()).unwrap()).collect(),
            envp: vec![Cow::Owned(
                c_pair("WHO".as_ref(), "spawned".as_ref()).unwrap(),
            )],
            cwd: cwd.map(|d| c_string(d.as_ref()).unwrap()),
            stdin: Stdin::Null,
            capture_out: true,
            capture_err: false,
            terminal: false,
        }
    }

    fn finish((pid, ends): (i32, Ends)) -> (String, i32) {
        let mut out = String::new();
        std::fs::File::from(ends.stdout.unwrap())
            .read_to_string(&mut out)
            .unwrap();
        let st = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None).unwrap();
        let code = match st {
            nix::sys::wait::WaitStatus::Exited(_, code) => code,
            other => panic!("{other:?}"),
        };
        (out, code)
    }

    #[test]
    fn the_child_gets_its_argv_environment_directory_group_and_no_stdin() {
        let script =
            "echo $WHO $(pwd) $(ps -o pgid= $$ | tr -d ' ') $$; read x; echo read=$?; exit 3";
        let c = spawn(&plan(&["/bin/sh", "-c", script], Some("/tmp"))).unwrap();
        let pid = c.0;
        let (out, code) = finish(c);
        assert_eq!(out, format!("spawned /tmp {pid} {pid}\nread=1\n"));
        assert_eq!(code, 3);
    }

    #[test]
    fn a_missing_program_or_directory_is_the_exec_error_and_leaves_no_child() {
        let e = spawn(&plan(&["/nonexistent/prog"], None)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::ENOENT as i32));
        let e = spawn(&plan(&["/bin/true"], Some("/nonexistent-dir"))).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::ENOENT as i32));
        let mut p = plan(&["true"], None);
        p.programs = ["/etc/passwd", "/nonexistent/true"]
            .iter()
            .map(|a| c_string(a.as_ref()).unwrap())
            .collect();
        let e = spawn(&p).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::EACCES as i32), "as execvp");
    }

    #[test]
    fn later_candidates_are_tried_until_one_runs() {
        let mut p = plan(&["sh", "-c", "echo ran"], None);
        p.programs = ["/nonexistent/sh", "/bin/sh"]
            .iter()
            .map(|a| c_string(a.as_ref()).unwrap())
            .collect();
        assert_eq!(finish(spawn(&p).unwrap()), ("ran\n".into(), 0));
    }
}
