//! The listening socket and the rendezvous files tools use to find pdvm.
//!
//! Like a PRRTE DVM, pdvm writes into `$TMPDIR/pdvm.<pid>/` (mode 0700) three
//! files of mode 0600 — `pmix.<host>.tool`, `pmix.<host>.tool.<pid>` and
//! `pmix.<host>.tool.<server nspace>` — each holding
//! `NSPACE.0;tcp4://127.0.0.1:PORT`, the PMIx version, the pid, `uid:gid`
//! and the start time, one per line. They are removed when the
//! [`RendezvousFiles`] value is dropped.

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::proto::status::Status;

/// The PMIx version pdvm announces in its rendezvous files and to the jobs it
/// launches. pdvm implements the reservation attributes, which first exist in
/// OpenPMIx 7 (wire `v61`, where `PMIX_ALLOC_INHERIT` is defined), so tools
/// that pick their wire from this version speak `v61` to it; peers that
/// announce an older wire themselves (libpmix 4.x/5.x: `v41`) are answered
/// in theirs.
pub const ANNOUNCED_VERSION: &str = "7.0.0";

/// Who and where the server is.
#[derive(Clone, Debug)]
pub struct ServerIdent {
    /// Short host name.
    pub host: String,
    /// Our pid.
    pub pid: u32,
    /// Namespace prefix `pdvm-<host>-<pid>`.
    pub prefix: String,
    /// Server namespace `pdvm-<host>-<pid>@0`.
    pub nspace: String,
    /// `tcp4://127.0.0.1:PORT`.
    pub address: String,
}

impl ServerIdent {
    /// The full URI `NSPACE.0;tcp4://127.0.0.1:PORT`.
    pub fn uri(&self) -> String {
        format!("{}.0;{}", self.nspace, self.address)
    }

    /// The namespace numbered `n` (`pdvm-<host>-<pid>@n`).
    pub fn nspace_n(&self, n: u64) -> String {
        format!("{}@{n}", self.prefix)
    }
}

/// The short host name (up to the first dot).
pub fn short_hostname() -> String {
    // What gethostname(2) returns on Linux.
    fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| {
            h.trim()
                .split('.')
                .next()
                .unwrap_or("localhost")
                .to_string()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Pending connections the kernel may queue before pdvm accepts them.
pub const LISTEN_BACKLOG: i32 = 4096;

/// Bind `127.0.0.1:0` (non-blocking) and describe the server.
pub fn bind() -> Result<(TcpListener, ServerIdent)> {
    let l = TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| Error::new(Status::ERR_UNREACH, format!("cannot listen: {e}")))?;
    l.set_nonblocking(true)
        .map_err(|e| Error::new(Status::ERROR, format!("cannot configure listener: {e}")))?;
    // A backlog sized for a crowd (the kernel caps it at net.core.somaxconn):
    // listen(2) again on a listening socket only changes its backlog.
    // Raw: nix's `listen` takes a `Backlog`, whose `Backlog::new` refuses
    // SOMAXCONN (4096 in glibc) and above, so it cannot say this backlog.
    // SAFETY: listen(2) on a descriptor we own.
    unsafe {
        nix::libc::listen(std::os::fd::AsRawFd::as_raw_fd(&l), LISTEN_BACKLOG);
    }
    let port = l
        .local_addr()
        .map_err(|e| Error::new(Status::ERROR, format!("listener address: {e}")))?
        .port();
    let host = short_hostname();
    let pid = std::process::id();
    let prefix = format!("pdvm-{host}-{pid}");
    Ok((
        l,
        ServerIdent {
            nspace: format!("{prefix}@0"),
            prefix,
            host,
            pid,
            address: format!("tcp4://127.0.0.1:{port}"),
        },
    ))
}

/// The rendezvous directory and files; removed on drop.
#[derive(Debug)]
pub struct RendezvousFiles {
    dir: PathBuf,
    files: Vec<PathBuf>,
    report: Option<PathBuf>,
    notes: Vec<String>,
}

impl RendezvousFiles {
    /// Write the three rendezvous files under `tmpdir/pdvm.<pid>/`, and the
    /// `--report-uri` file when asked.
    pub fn write(ident: &ServerIdent, tmpdir: &Path, report_uri: Option<&Path>) -> Result<Self> {
        sweep_stale(tmpdir);
        let (dir, notes) = private_dir(tmpdir, ident.pid)?;
        let mut me = RendezvousFiles {
            dir: dir.clone(),
            files: Vec::new(),
            report: None,
            notes,
        };
        let io = |what: &str, p: &Path, e: std::io::Error| {
            Error::new(Status::ERROR, format!("{what} {}: {e}", p.display()))
        };
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let body = format!(
            "{}\n{}\n{}\n{uid}:{gid}\n{stamp}\n",
            ident.uri(),
            ANNOUNCED_VERSION,
            ident.pid
        );
        for name in [
            format!("pmix.{}.tool", ident.host),
            format!("pmix.{}.tool.{}", ident.host, ident.pid),
            format!("pmix.{}.tool.{}", ident.host, ident.nspace),
        ] {
            let p = dir.join(name);
            write_private(&p, &body).map_err(|e| io("cannot write", &p, e))?;
            me.files.push(p);
        }
        if let Some(r) = report_uri {
            let text = format!("{}\n{}\n", ident.uri(), ANNOUNCED_VERSION);
            write_private(r, &text).map_err(|e| io("cannot write", r, e))?;
            me.report = Some(r.to_path_buf());
        }
        Ok(me)
    }

    /// The rendezvous directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The files written.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// What pdvm must say about the directory it picked: each name it
    /// passed over because another user (or a symlink) holds it.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// Names tried for the rendezvous directory after `pdvm.<pid>`.
const DIR_ALTERNATIVES: u32 = 16;

/// Who holds `path`, for messages: "a symlink owned by uid N" and so on.
fn describe_entry(m: &fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    let kind = if m.file_type().is_symlink() {
        "a symlink"
    } else if m.is_dir() {
        "a directory"
    } else {
        "a file"
    };
    format!("{kind} owned by uid {}", m.uid())
}

/// A fresh private (0700) rendezvous directory under `tmpdir`:
/// `pdvm.<pid>`, or, when another user (or a symlink, or a file) holds that
/// name, `pdvm.<pid>.1`, `pdvm.<pid>.2` … — never following or adopting
/// what someone else made. A leftover directory of ours (a dead process
/// that had our pid) is emptied and replaced. Returns the directory and a
/// note for each name passed over; when every name is taken, the error
/// names the paths and their owners.
fn private_dir(tmpdir: &Path, pid: u32) -> Result<(PathBuf, Vec<String>)> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::getuid().as_raw();
    let mut notes = Vec::new();
    for n in 0..=DIR_ALTERNATIVES {
        let dir = match n {
            0 => tmpdir.join(format!("pdvm.{pid}")),
            _ => tmpdir.join(format!("pdvm.{pid}.{n}")),
        };
        if let Ok(m) = fs::symlink_metadata(&dir) {
            if !m.file_type().is_dir() || m.uid() != me {
                notes.push(format!(
                    "{} is {}, not a directory of ours: not used",
                    dir.display(),
                    describe_entry(&m)
                ));
                continue;
            }
            remove_stale(&dir).map_err(|e| {
                Error::new(
                    Status::ERROR,
                    format!("cannot remove stale {}: {e}", dir.display()),
                )
            })?;
        }
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok((dir, notes)),
            // Someone made it between our look and our mkdir: next name.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                notes.push(format!("{} appeared meanwhile: not used", dir.display()));
            }
            Err(e) => {
                return Err(Error::new(
                    Status::ERROR,
                    format!("cannot create {}: {e}", dir.display()),
                ))
            }
        }
    }
    Err(Error::new(
        Status::ERROR,
        format!(
            "no private rendezvous directory could be made in {}: {}",
            tmpdir.display(),
            notes.join("; ")
        ),
    ))
}

/// True when `pid` is a running (not zombie) process named `pdvm` of our uid.
fn live_pdvm_of_ours(pid: u32) -> bool {
    let me = nix::unistd::getuid().as_raw();
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(str::trim)
            .unwrap_or("")
            .to_string()
    };
    let uid_ok = field("Uid:")
        .split_whitespace()
        .next()
        .and_then(|u| u.parse::<u32>().ok())
        == Some(me);
    let zombie = field("State:").starts_with(['Z', 'X']);
    uid_ok && !zombie && field("Name:") == "pdvm"
}

/// Remove the rendezvous directories a killed pdvm left in `tmpdir`
/// (`kill -9` gives it no chance to): `pdvm.<pid>` directories of ours
/// whose pid is gone, a zombie, or not a pdvm of ours. Symlinks and other
/// users' entries are left alone. Returns the directories removed.
pub fn sweep_stale(tmpdir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::getuid().as_raw();
    let mut removed = Vec::new();
    for (pid, path) in pdvm_entries(tmpdir) {
        let ours_dir =
            fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_dir() && m.uid() == me);
        let stale = ours_dir && pid != std::process::id() && !live_pdvm_of_ours(pid);
        if stale && remove_stale(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// Remove a stale rendezvous directory of ours: its entries (symlinks are
/// removed, never followed), then the directory.
fn remove_stale(dir: &Path) -> std::io::Result<()> {
    for e in fs::read_dir(dir)?.flatten().take(1000) {
        let _ = fs::remove_file(e.path());
    }
    fs::remove_dir(dir)
}

/// Write `body` to `p` complete before it is visible: a private temporary
/// file in the same directory, renamed into place.
fn write_private(p: &Path, body: &str) -> std::io::Result<()> {
    let tmp = p.with_extension(format!("tmp.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(body.as_bytes())?;
    f.sync_all()?;
    fs::rename(&tmp, p)
}

/// True when `pid` is a live pdvm process of our uid whose rendezvous
/// directory `dir` is a real directory of ours holding a rendezvous file
/// that names that pid — identified by more than a directory name.
fn is_our_pdvm(pid: u32, dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::getuid().as_raw();
    let Ok(m) = fs::symlink_metadata(dir) else {
        return false;
    };
    if !m.file_type().is_dir() || m.uid() != me {
        return false;
    }
    if !live_pdvm_of_ours(pid) {
        return false;
    }
    let Ok(rd) = fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().take(100).any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.starts_with("pmix.")
            && fs::symlink_metadata(e.path())
                .is_ok_and(|f| f.file_type().is_file() && f.uid() == me)
            && fs::read_to_string(e.path())
                .is_ok_and(|t| t.lines().nth(2).map(str::trim) == Some(pid.to_string().as_str()))
    })
}

impl Drop for RendezvousFiles {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = fs::remove_file(f);
        }
        let _ = fs::remove_dir(&self.dir);
        if let Some(r) = &self.report {
            let _ = fs::remove_file(r);
        }
    }
}

/// Find running pdvm servers under the usual search directories: `pdvm.<pid>`
/// directories of ours whose rendezvous file names that pid, when the pid is
/// a live `pdvm` process of our uid.
pub fn find_running(tmpdir: Option<&Path>) -> Vec<u32> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(t) = tmpdir {
        dirs.push(t.to_path_buf());
    } else {
        for k in ["PMIX_SERVER_TMPDIR", "TMPDIR"] {
            if let Some(v) = std::env::var_os(k).filter(|v| !v.is_empty()) {
                dirs.push(PathBuf::from(v));
            }
        }
        dirs.push(PathBuf::from("/tmp"));
    }
    let mut pids = Vec::new();
    for d in dirs {
        for (pid, path) in pdvm_entries(&d) {
            if is_our_pdvm(pid, &path) && !pids.contains(&pid) {
                pids.push(pid);
            }
        }
    }
    pids
}

/// The `pdvm.<pid>` and `pdvm.<pid>.<n>` entries of `dir`, with their pid.
/// Every entry is looked at by name, however many the directory holds.
fn pdvm_entries(dir: &Path) -> impl Iterator<Item = (u32, PathBuf)> {
    fs::read_dir(dir)
        .into_iter()
        .flat_map(|rd| rd.flatten())
        .filter_map(|e| {
            let name = e.file_name();
            let rest = name.to_str()?.strip_prefix("pdvm.")?;
            let (pid, alt) = rest.split_once('.').unwrap_or((rest, "0"));
            alt.parse::<u32>().ok()?;
            Some((pid.parse().ok()?, e.path()))
        })
}
