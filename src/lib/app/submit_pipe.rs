//! The pipe between a palloc and the detached palloc it started
//! (`--no-wait`, `--parsable`; see `palloc::detach`): its number and the
//! request id passed in the environment, adopted at start-up, and the
//! lines said on it. Below palloc's room, as the wait for an allocation
//! that `pspawn -N` shares (`alloc_wait`) watches it too.

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Environment variable naming the descriptor of that pipe in the detached
/// palloc.
pub(crate) const SUBMIT_FD_ENV: &str = "PMIX_TOOLS_SUBMIT_FD";
/// Environment variable giving the detached palloc the request id it uses
/// instead of its `-J NAME` (taken in its folder by the palloc that started it).
pub(crate) const RENAMED_ENV: &str = "PMIX_TOOLS_SUBMIT_REQ_ID";

/// The request id this detached palloc was given instead of its `-J NAME`
/// (taken from [`RENAMED_ENV`] with the pipe, by [`adopt_inherited_pipe`]).
static RENAMED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The request id a detached palloc was given instead of its `-J NAME`.
pub(crate) fn renamed_request_id() -> Option<String> {
    RENAMED.get().cloned()
}

/// The value of [`SUBMIT_FD_ENV`]: the pipe's number, and `:waited` when
/// the palloc that starts the detached one waits for the grant on it
/// (`palloc --parsable` and the like): should that palloc go before the grant, the
/// request is withdrawn (or the grant given back) instead of held by a
/// palloc nobody knows of.
pub(crate) fn submit_fd_value(fd: RawFd, waited: bool) -> String {
    if waited {
        format!("{fd}:{WAITED}")
    } else {
        fd.to_string()
    }
}

/// The mark of a pipe whose reader waits for the grant.
const WAITED: &str = "waited";

/// Close `fd` when this process runs another program.
pub(crate) fn set_cloexec(fd: RawFd) {
    let _ = nix::fcntl::fcntl(
        fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    );
}

/// The write end of the pipe in a detached palloc, and whether the palloc
/// at the other end waits for the grant (see [`submit_fd_value`]).
pub(crate) struct Submitter(OwnedFd, bool);

/// The pipe adopted at start-up by [`adopt_inherited_pipe`], until palloc
/// takes it.
static INHERITED: std::sync::Mutex<Option<Submitter>> = std::sync::Mutex::new(None);

/// Adopt the pipe a starting palloc passed to its detached copy (its number
/// in `PMIX_TOOLS_SUBMIT_FD`). palloc's `main` calls this first, before the
/// process opens any descriptor of its own: a descriptor open at that
/// number then can only have been inherited, so nothing in this process
/// owns it yet. Only a pipe is adopted; the variable is removed so nothing
/// this palloc starts inherits it.
pub fn adopt_inherited_pipe() {
    let Some(value) = std::env::var(SUBMIT_FD_ENV).ok() else {
        return;
    };
    let (number, waited) = match value.split_once(':') {
        Some((n, mark)) => (n, mark == WAITED),
        None => (value.as_str(), false),
    };
    let Ok(fd) = number.parse::<RawFd>() else {
        return;
    };
    std::env::remove_var(SUBMIT_FD_ENV);
    take_renamed();
    let is_pipe = nix::sys::stat::fstat(fd).is_ok_and(|st| {
        nix::sys::stat::SFlag::from_bits_truncate(st.st_mode) & nix::sys::stat::SFlag::S_IFMT
            == nix::sys::stat::SFlag::S_IFIFO
    });
    if fd < 3 || !is_pipe {
        return;
    }
    set_cloexec(fd);
    // SAFETY: called before this process opened any descriptor (see above),
    // so the open descriptor `fd` was inherited and has no other owner here.
    let pipe = Submitter(unsafe { OwnedFd::from_raw_fd(fd) }, waited);
    *INHERITED.lock().unwrap_or_else(|e| e.into_inner()) = Some(pipe);
}

/// Adopt `pipe`, the pipe to the palloc that started this detached one,
/// handed over a socket rather than inherited (a palloc an agent started
/// ahead, see `palloc::standby`; the agent does not wait for the grant),
/// with the request id in [`RENAMED_ENV`] if it was renamed.
pub(crate) fn adopt_handed_pipe(pipe: OwnedFd) {
    take_renamed();
    *INHERITED.lock().unwrap_or_else(|e| e.into_inner()) = Some(Submitter(pipe, false));
}

/// Take the request id in [`RENAMED_ENV`] (see [`renamed_request_id`]) and
/// remove the variable.
fn take_renamed() {
    if let Some(id) = std::env::var(RENAMED_ENV)
        .ok()
        .and_then(|id| crate::cli::parse::parse_id(&id).ok())
    {
        let _ = RENAMED.set(id);
    }
    std::env::remove_var(RENAMED_ENV);
}

impl Submitter {
    /// The pipe adopted at start-up, if any (taken once).
    pub(crate) fn from_env() -> Option<Submitter> {
        INHERITED.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Say `line` and close the pipe; whether it could be said (false:
    /// the palloc at the other end has gone).
    pub(crate) fn say(self, line: &str) -> bool {
        nix::unistd::write(&self.0, format!("{line}\n").as_bytes()).is_ok()
    }

    /// The pipe, to watch while the request is queued, when the palloc at
    /// the other end waits for the grant: it becomes ready (an error) once
    /// that palloc has gone.
    pub(crate) fn waiter(&self) -> Option<BorrowedFd<'_>> {
        self.1.then(|| self.0.as_fd())
    }

    /// Whether the palloc at the other end waits for the grant.
    pub(crate) fn waited(&self) -> bool {
        self.1
    }

    /// Say `line` and keep the pipe open for another.
    pub(crate) fn tell(&self, line: &str) {
        let _ = nix::unistd::write(&self.0, format!("{line}\n").as_bytes());
    }
}
