//! Jobs a tool launched from inside a followed job, told apart from the
//! jobs the application itself spawned (`MPI_Comm_spawn`).
//!
//! To the DVM both are children of the job: a `pspawn` run by a job's
//! script acts as the job's client, so its jobs join the job's spawn tree.
//! But such a job is the inner pspawn's business (it waits for it, or
//! `--detach` lets it outlive the script, and its status goes to the
//! script), not the outer launcher's. So the outer pspawn gives its job a
//! private folder ([`ENV`]) and every pspawn that launches from inside the
//! job leaves a mark there, named after the job it launched (the name has
//! no `PMIX_` prefix: DVMs pass their launcher's `PMIX_*` variables on to
//! the jobs it spawns, and each launcher must name its own folder); the outer
//! pspawn's spawn tree neither waits for marked jobs nor takes their
//! status. A mark is left only in a folder of the user's own that nobody
//! else can write.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

/// The variable naming the folder in a followed job's environment.
pub const ENV: &str = "PMIXTOOLS_LAUNCH_MARKS";

/// This process's folder for the marks of the jobs launched inside the job
/// it follows (created on first use, mode 0700, in the user's holder
/// registry); `None` when there is no private place for it.
pub fn own_dir() -> Option<PathBuf> {
    let dir = own_path()?;
    match std::fs::create_dir(&dir) {
        Ok(()) => {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).ok()?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    trusted(&dir).then_some(dir)
}

/// Whether `dir` is a folder of this user's that nobody else can write.
fn trusted(dir: &std::path::Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| {
        m.is_dir() && m.uid() == nix::unistd::geteuid().as_raw() && m.mode() & 0o022 == 0
    })
}

/// The folder of this process's marks, if it made one.
pub fn existing_own_dir() -> Option<PathBuf> {
    own_path().filter(|d| trusted(d))
}

/// Where this process's folder of marks is (`launches.PID` in the holder
/// registry, which the registry's sweep knows).
fn own_path() -> Option<PathBuf> {
    let registry = crate::conn::registry::registry().ok()?;
    Some(registry.join(format!("launches.{}", std::process::id())))
}

/// The value of [`ENV`] for a job this process follows with marks in
/// `own`: `own`, then the folders of the launchers following the job this
/// process runs in (a job launched here is in their spawn trees too).
pub fn env_value(own: &std::path::Path) -> String {
    match std::env::var(ENV) {
        Ok(outer) if !outer.is_empty() => format!("{}:{outer}", own.display()),
        _ => own.display().to_string(),
    }
}

/// Leave the mark of job `nspace`, launched by this tool, for the
/// launchers following the job this tool runs in (see the module
/// documentation).
pub fn mark(nspace: &str) {
    let Some(dirs) = std::env::var_os(ENV) else {
        return;
    };
    if nspace.contains('/') || nspace.is_empty() {
        return;
    }
    for dir in std::env::split_paths(&dirs).filter(|d| trusted(d)) {
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(nspace));
    }
}

/// The jobs marked in `dir` (see [`mark`]).
pub fn marked(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// This process's folder of marks, removed when dropped (also when the
/// launch fails before the job is followed).
pub struct OwnDir(pub PathBuf);

impl Drop for OwnDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
