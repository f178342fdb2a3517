//! The holder registry: the per-user directory where a palloc that holds an
//! allocation (or waits for one, detached) registers its socket under the
//! allocation's or request's id, so tools in the user's other shells find
//! it by name.
//!
//! # Who holds a name
//! A name `X.sock` belongs to whoever holds an exclusive `flock(2)` on its
//! companion `X.lock` ([`Claim`]). A holder takes the lock *before* it
//! binds the socket and lets go of it only after removing the socket, so:
//! - finding a holder is one path (`registered_path`), whatever the crowd;
//! - telling a live holder from a dead one is one `flock` attempt on a
//!   file, never a connection to the holder (which would wake it);
//! - a sweep cannot remove a socket between its bind and its listen (the
//!   lock is already held), and removes a dead holder's files only while
//!   holding their lock itself.
//!
//! The kernel drops a lock when its holder dies, however it dies, so a
//! `kill -9`'d holder's name is free at once; its files stay until the next
//! sweep, which runs at most every [`SWEEP_EVERY`] (a `.swept` marker in
//! the directory), so starting a holder costs the same with 1 or 1000
//! others alive.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use nix::fcntl::{Flock, FlockArg};

/// The in-memory file system most Linux systems mount for everyone.
const SHM: &str = "/dev/shm";

/// Whether `dir` is a directory on an in-memory file system (tmpfs).
fn in_memory(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
        && nix::sys::statfs::statfs(dir)
            .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
}

/// Least time between two sweeps of the registry.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// The marker whose modification time says when the registry was last swept.
pub(crate) const SWEEP_MARKER: &str = ".swept";

/// Most entries of the registry looked at by one sweep.
const SWEEP_MAX: usize = 8192;

/// Attempts at a name whose lock is held, before deciding a live holder
/// has it (a sweep holds a dead name's lock for a moment).
const CLAIM_TRIES: usize = 4;

/// The wait between two attempts at a name whose lock is held.
const CLAIM_PAUSE: Duration = Duration::from_millis(5);

/// Longest path a Unix socket can be bound at (`sun_path` less its NUL).
const SOCKET_PATH_MAX: usize = 107;

/// Longest file name most file systems take (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// The folder in the user's home that names the registry when its usual
/// place is taken (see [`registry`]); mode 0700.
pub(crate) const HOME_FOLDER: &str = ".pmix-tools";

/// The per-user directory where holders register their sockets by
/// allocation id, when it can be used (see [`registry`]).
pub(crate) fn registry_dir() -> Option<PathBuf> {
    registry().ok()
}

/// The holder registry, found once per process: the usual place,
/// `$XDG_RUNTIME_DIR/pmix-tools-holders` (when that runtime folder is ours
/// and only we can write it), else `/dev/shm/pmix-tools-holders.<uid>` (in
/// memory: a crowd of holders creating and removing names there costs no
/// disk inode searches), else `/tmp/pmix-tools-holders.<uid>`, created
/// with mode 0700 and used when it is a real directory of ours that nobody
/// else can enter.
///
/// Another user can pre-create the usual place (its name is known). Then
/// the registry is a folder with an unguessable name made beside it
/// (`pmix-tools-holders.<uid>.XXXXXX`), named in
/// `~/.pmix-tools/registry.<host>`, a file only the user can write: every
/// tool of the user reads the same name there, and nobody else can change
/// it, so a squatter cannot take the registry away nor predict its place.
/// `Err` says why none can be used, naming each path and its owner.
pub fn registry() -> std::result::Result<PathBuf, String> {
    static FOUND: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    FOUND.get_or_init(locate).clone()
}

/// See [`registry`]: looked up anew.
fn locate() -> std::result::Result<PathBuf, String> {
    let uid = nix::unistd::geteuid().as_raw();
    let (parent, name) = usual_place(uid);
    let dir = parent.join(name);
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let Some(taken) = not_private(&dir, uid) else {
        return Ok(dir);
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    named_in_home(home.as_deref(), &parent, uid)
        .map_err(|why| format!("the holder registry cannot be used: {taken}; {why}"))
}

/// The folder the registry is usually in, and its name there.
fn usual_place(uid: u32) -> (PathBuf, String) {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    // Nobody else can create a name in a runtime folder of ours that only
    // we can write.
    let ours = |d: &Path| {
        std::fs::symlink_metadata(d)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
    };
    match runtime {
        Some(d) if d.is_absolute() && ours(&d) => (d, "pmix-tools-holders".into()),
        _ if in_memory(Path::new(SHM)) => (SHM.into(), format!("pmix-tools-holders.{uid}")),
        _ => ("/tmp".into(), format!("pmix-tools-holders.{uid}")),
    }
}

/// Why `dir` is not a real directory of user `uid` that nobody else may
/// enter, or `None` when it is.
pub(crate) fn not_private(dir: &Path, uid: u32) -> Option<String> {
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) => return Some(format!("{}: {e}", dir.display())),
    };
    if m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0 {
        return None;
    }
    Some(format!(
        "{} is {} owned by uid {} (mode {:o})",
        dir.display(),
        kind_of(&m),
        m.uid(),
        m.mode() & 0o7777
    ))
}

/// "a directory", "a symlink", "a socket" or "a file", for messages.
pub(crate) fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_symlink() {
        "a symlink"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a file"
    }
}

/// The registry named in `HOME/.pmix-tools/registry.<host>`, a folder with
/// an unguessable name in `parent`, made (and named there) when the file
/// names none that is still a private folder of ours. The look and the
/// making happen under a lock, so tools starting at once agree on one.
fn named_in_home(
    home: Option<&Path>,
    parent: &Path,
    uid: u32,
) -> std::result::Result<PathBuf, String> {
    let home = home
        .filter(|h| h.is_absolute())
        .ok_or("HOME names no folder to keep its place in")?;
    let hm = std::fs::metadata(home).map_err(|e| format!("{}: {e}", home.display()))?;
    if !hm.is_dir() || hm.uid() != uid || hm.mode() & 0o022 != 0 {
        return Err(format!(
            "HOME ({}) is not a folder of yours that only you can write (owner uid {}, mode {:o}), \
so it cannot keep the registry's place",
            home.display(),
            hm.uid(),
            hm.mode() & 0o7777
        ));
    }
    let conf = home.join(HOME_FOLDER);
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&conf);
    if let Some(why) = not_private(&conf, uid) {
        return Err(why);
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| file_word(h.trim()))
        .unwrap_or_else(|_| "localhost".into());
    let pointer = conf.join(format!("registry.{host}"));
    let lock = open_private(&conf.join(format!("registry.{host}.lock")))
        .map_err(|e| format!("{}: {e}", conf.display()))?;
    let _held = Flock::lock(lock, FlockArg::LockExclusive).map_err(|(_, e)| e.to_string())?;
    let named = std::fs::read_to_string(&pointer)
        .ok()
        .map(|t| PathBuf::from(t.trim_end_matches('\n')))
        .filter(|p| p.is_absolute() && not_private(p, uid).is_none());
    if let Some(dir) = named {
        return Ok(dir);
    }
    let template = parent.join(format!("pmix-tools-holders.{uid}.XXXXXX"));
    let made = nix::unistd::mkdtemp(&template)
        .map_err(|e| format!("cannot make a private folder in {}: {e}", parent.display()))?;
    let tmp = conf.join(format!("registry.{host}.{}", std::process::id()));
    let wrote = std::fs::write(&tmp, format!("{}\n", made.display()))
        .and_then(|()| std::fs::rename(&tmp, &pointer));
    if let Err(e) = wrote {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_dir(&made);
        return Err(format!("cannot write {}: {e}", pointer.display()));
    }
    Ok(made)
}

/// Open (or create, mode 0600) the file `path`, never through a link.
fn open_private(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc_flags())
        .open(path)
}

/// What a holder is registered under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldBy {
    /// A granted allocation's id.
    Alloc,
    /// A queued request's id (a detached palloc waiting for the grant).
    Request,
}

impl HeldBy {
    /// The character between the server's and the id's part of a name.
    fn separator(self) -> char {
        match self {
            HeldBy::Alloc => '+',
            HeldBy::Request => '=',
        }
    }
}

/// Where the holder of `id` (an allocation id, or a queued request's id:
/// `held`) on the DVM whose namespace is `server` registers its socket (in
/// [`registry_dir`]): ids are unique only within one DVM, and a request id
/// may look like an allocation id, so the two never share a name
/// (`SERVER+ID.sock`, `SERVER=ID.sock`, see [`entry_stem`]). Every id the
/// tools accept has a name, and no two ids share one.
pub fn registered_path(server: &str, id: &str, held: HeldBy) -> Option<PathBuf> {
    if id.is_empty() {
        return None;
    }
    let dir = registry_dir()?;
    // The socket's whole path must fit `sun_path`.
    let room = SOCKET_PATH_MAX.checked_sub(dir.as_os_str().len() + 1 + ".sock".len())?;
    let stem = entry_stem(server, id, held.separator(), room)?;
    Some(dir.join(format!("{stem}.sock")))
}

/// The name (without extension) of the entry for `id` on `server`, of at
/// most `room` bytes: `SERVER<sep>ID` with each part [`escape`]d, which no
/// two pairs share; when that is longer than `room`, `~` and 40 hex digits
/// of the SHA-256 of the same, which no escaped name looks like (`~` is
/// always escaped). `None` when not even that fits.
pub(crate) fn entry_stem(server: &str, id: &str, sep: char, room: usize) -> Option<String> {
    let plain = format!("{}{sep}{}", escape(server), escape(id));
    let stem = fitted(plain, room.min(NAME_MAX - ".sock".len()));
    (stem.len() <= room).then_some(stem)
}

/// `plain` (escaped) when it has at most `room` bytes, else `~` and 40 hex
/// digits of its SHA-256.
fn fitted(plain: String, room: usize) -> String {
    if plain.len() <= room {
        plain
    } else {
        format!("~{}", digest_hex(&plain, 40))
    }
}

/// The first `n` hex digits of the SHA-256 of `s`.
fn digest_hex(s: &str, n: usize) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(s.as_bytes());
    let mut hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(n);
    hex
}

/// `s` as part of a file name, one to one: letters, digits and `@._-`
/// stay, every other byte becomes `%XX` (so `e/f` and `e_f` differ).
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"@._-".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `s` as a file name of at most `room` bytes, one to one (see
/// [`entry_stem`]): [`escape`]d, or `~` and a digest when that is longer.
pub fn file_name_part(s: &str, room: usize) -> String {
    fitted(escape(s), room)
}

/// `s` as part of a file name where only readability matters (a host
/// name): characters other than letters, digits and `@._-` become `_`.
fn file_word(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "@._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A name of the registry held by this process: the lock on `X.lock` for
/// the entry `X.sock`. Dropping it removes the entry (whatever was put
/// there: a socket, a link), then the lock file, and only then lets go of
/// the lock.
pub(crate) struct Claim {
    entry: PathBuf,
    lock_path: PathBuf,
    // Dropped last (fields drop after `Drop::drop`): the lock.
    _lock: Flock<File>,
}

impl Claim {
    /// The entry claimed (`X.sock`).
    pub(crate) fn entry(&self) -> &Path {
        &self.entry
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.entry);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// The lock file of entry `X.sock`: `X.lock`.
fn lock_path_of(entry: &Path) -> Option<PathBuf> {
    let name = entry.file_name()?.to_str()?;
    let stem = name.strip_suffix(".sock")?;
    Some(entry.with_file_name(format!("{stem}.lock")))
}

/// Take the name `entry` (`X.sock`) for this process: `None` when a live
/// holder has it (or the lock cannot be made). A dead holder's leftover
/// socket or link at `entry` is removed, so the caller can bind anew.
pub(crate) fn claim(entry: &Path) -> Option<Claim> {
    claim_tries(entry, CLAIM_TRIES)
}

/// [`claim`] with at most `tries` attempts while the lock is held.
fn claim_tries(entry: &Path, tries: usize) -> Option<Claim> {
    let lock_path = lock_path_of(entry)?;
    for attempt in 0..tries {
        if attempt > 0 {
            let next = std::time::Instant::now() + CLAIM_PAUSE;
            super::wait::until(next, super::wait::Retry::NameLock);
        }
        let file = open_private(&lock_path).ok()?;
        let Ok(lock) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
            continue;
        };
        // A sweep may have removed the file between our open and our lock:
        // then this lock guards nothing, try again with the file now there.
        if !still_named(&lock, &lock_path) {
            continue;
        }
        if std::fs::symlink_metadata(entry).is_ok() {
            let _ = std::fs::remove_file(entry);
        }
        return Some(Claim {
            entry: entry.to_path_buf(),
            lock_path,
            _lock: lock,
        });
    }
    None
}

/// Whether the palloc holding allocation `id` on the DVM whose namespace
/// is `server` lives, looked at without disturbing it (psched's watchdog):
/// `Some(true)` its name's lock is held, `Some(false)` its entry is there
/// but nobody holds the lock (it died, however: the kernel let go of its
/// lock), `None` no entry (no holder registered, or a sweep removed a dead
/// one's files).
pub fn holder_alive(server: &str, id: &str) -> Option<bool> {
    let entry = registered_path(server, id, HeldBy::Alloc)?;
    let lock_path = lock_path_of(&entry)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_flags())
        .open(&lock_path)
        .ok()?;
    // A shared lock taken and let go at once: no holder waits on it.
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Ok(_free) => Some(false),
        Err(_) => Some(true),
    }
}

/// Flags for opening a lock file: never through a link, not inherited.
fn libc_flags() -> i32 {
    (nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_CLOEXEC).bits()
}

/// Whether `path` still names the file `open` is.
fn still_named(open: &File, path: &Path) -> bool {
    match (open.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Sweep the registry `dir` unless it was swept in the last
/// [`SWEEP_EVERY`] (see [`sweep_now`]); the marker is renewed first, so of
/// a crowd of holders starting at once one sweeps.
pub fn sweep(dir: &Path) {
    let marker = dir.join(SWEEP_MARKER);
    let recent = std::fs::symlink_metadata(&marker)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|m| m.modified().ok())
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < SWEEP_EVERY);
    if recent {
        return;
    }
    let _ = std::fs::remove_file(&marker);
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&marker);
    // Another holder renewed it between our look and ours: it sweeps.
    if made.is_ok() {
        sweep_now(dir);
    }
}

/// Remove from the registry `dir` the entries of holders that have gone
/// (their name's lock is free: taken and let go at once, which removes
/// them) and the logs of detached pallocs that have ended
/// (`palloc.NAME.PID.log`). A live holder is never connected to.
pub(crate) fn sweep_now(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names = std::collections::BTreeSet::new();
    for e in entries.filter_map(std::result::Result::ok).take(SWEEP_MAX) {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name
            .strip_suffix(".sock")
            .or_else(|| name.strip_suffix(".lock"))
        {
            names.insert(stem.to_string());
        } else if log_pid(&name).is_some_and(|pid| !alive(pid)) {
            let _ = std::fs::remove_file(e.path());
        } else if marks_pid(&name).is_some_and(|pid| !alive(pid)) {
            // A launcher's folder of tool marks (`ops::tool_launches`)
            // whose pspawn was killed before removing it.
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    for stem in names {
        // Taken only when nobody holds it: dropping it removes the files.
        drop(claim_tries(&dir.join(format!("{stem}.sock")), 1));
    }
}

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: i32) -> bool {
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
        == Err(nix::errno::Errno::ESRCH)
    {
        return false;
    }
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let state = state
        .as_deref()
        .and_then(|s| s.rsplit(')').next())
        .and_then(|r| r.split_whitespace().next());
    !matches!(state, Some("Z") | Some("X"))
}

/// The pid in a launcher's folder of tool marks (`launches.PID`).
fn marks_pid(name: &str) -> Option<i32> {
    name.strip_prefix("launches.")?
        .parse()
        .ok()
        .filter(|p| *p > 1)
}

/// The pid in a detached palloc's log name (`palloc.NAME.PID.log`).
fn log_pid(name: &str) -> Option<i32> {
    let stem = name.strip_prefix("palloc.")?.strip_suffix(".log")?;
    stem.rsplit_once('.')?.1.parse().ok().filter(|p| *p > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_id_never_names_an_allocations_holder() {
        let a = registered_path("dvm@0", "alloc.4", HeldBy::Alloc);
        let r = registered_path("dvm@0", "alloc.4", HeldBy::Request);
        assert!(a.is_some() && r.is_some());
        assert_ne!(a, r);
        // Separators in ids cannot forge the other kind's name.
        assert_ne!(
            registered_path("dvm@0", "x=alloc.4", HeldBy::Alloc),
            registered_path("dvm@0+x", "alloc.4", HeldBy::Request)
        );
    }

    #[test]
    fn every_id_has_a_name_of_its_own_that_a_socket_can_be_bound_at() {
        let room = SOCKET_PATH_MAX - "/run/user/1000/pmix-tools-holders/".len() - ".sock".len();
        let name = |id: &str| entry_stem("pdvm-host-4242@0", id, '+', room).unwrap();
        // Ids that used to map to one file name.
        assert_ne!(name("e/f"), name("e_f"));
        assert_ne!(name("e%2Ff"), name("e/f"));
        assert_eq!(name("alloc.3"), "pdvm-host-4242@0+alloc.3");
        // The longest ids the validator takes, differing in the last byte.
        let a = format!("{}a", "x".repeat(254));
        let b = format!("{}b", "x".repeat(254));
        assert!(name(&a).len() <= room && name(&a).starts_with('~'));
        assert_ne!(name(&a), name(&b));
        // Of two kinds, never one name.
        assert_ne!(
            entry_stem("s", &a, '+', room),
            entry_stem("s", &a, '=', room)
        );
        let d = scratch("bind");
        let l = std::os::unix::net::UnixListener::bind(d.join(format!("{}.sock", name(&a))));
        assert!(l.is_ok(), "{l:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_squatted_registry_is_replaced_by_one_named_in_home_that_stays() {
        use std::os::unix::fs::PermissionsExt;
        let uid = nix::unistd::geteuid().as_raw();
        let d = scratch("home");
        let home = d.join("home");
        std::fs::create_dir(&home).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
        let first = named_in_home(Some(&home), &d, uid).expect("a registry");
        assert!(not_private(&first, uid).is_none());
        assert!(first.starts_with(&d), "{}", first.display());
        // Every later tool reads the same name.
        assert_eq!(named_in_home(Some(&home), &d, uid).unwrap(), first);
        // A folder named there that is no longer private is not used.
        std::fs::set_permissions(&first, std::fs::Permissions::from_mode(0o755)).unwrap();
        let second = named_in_home(Some(&home), &d, uid).unwrap();
        assert_ne!(second, first);
        // A home others can write cannot keep the place.
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
        let why = named_in_home(Some(&home), &d, uid).unwrap_err();
        assert!(why.contains("only you can write"), "{why}");
        assert!(named_in_home(None, &d, uid).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn log_names_carry_the_detached_pallocs_pid() {
        assert_eq!(log_pid("palloc.nightly.1234.log"), Some(1234));
        assert_eq!(log_pid("palloc.a.b.77.log"), Some(77));
        assert_eq!(log_pid("palloc.nightly.log"), None);
        assert_eq!(log_pid("other.1234.log"), None);
    }

    #[test]
    fn a_dead_launchers_folder_of_marks_is_swept() {
        assert_eq!(marks_pid("launches.4321"), Some(4321));
        assert_eq!(marks_pid("launches.x"), None);
        let d = scratch("marks");
        // A pid that cannot run: above the kernel's pid_max.
        let dead = d.join("launches.2147483646");
        let live = d.join(format!("launches.{}", std::process::id()));
        std::fs::create_dir_all(dead.join("sub")).unwrap();
        std::fs::create_dir_all(&live).unwrap();
        sweep_now(&d);
        assert!(!dead.exists());
        assert!(live.exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("registry-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_claimed_name_is_nobody_elses_until_dropped() {
        let d = scratch("claim");
        let entry = d.join("dvm+alloc.1.sock");
        let first = claim(&entry).expect("a free name");
        std::fs::write(first.entry(), b"socket").unwrap();
        assert!(claim(&entry).is_none(), "a held name");
        // A sweep leaves a live holder's entry alone.
        sweep_now(&d);
        assert!(entry.exists() && d.join("dvm+alloc.1.lock").exists());
        drop(first);
        assert!(!entry.exists() && !d.join("dvm+alloc.1.lock").exists());
        assert!(claim(&entry).is_some(), "a name let go");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_sweep_removes_what_nobody_holds_and_is_rate_limited() {
        let d = scratch("sweep");
        // A dead holder's leftovers: a socket with its unlocked lock file,
        // a lock file alone.
        std::fs::write(d.join("dvm+alloc.2.sock"), b"").unwrap();
        std::fs::write(d.join("dvm+alloc.2.lock"), b"").unwrap();
        std::fs::write(d.join("dvm=req.3.lock"), b"").unwrap();
        sweep(&d);
        let left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec![SWEEP_MARKER.to_string()], "{left:?}");
        // Within SWEEP_EVERY, the next sweep does not look.
        std::fs::write(d.join("dvm+alloc.4.sock"), b"").unwrap();
        sweep(&d);
        assert!(d.join("dvm+alloc.4.sock").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
