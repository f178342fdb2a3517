//! The files psched writes (its ledger, the status URI) and reads (release
//! requests), made safe for directories other users may reach: nothing is
//! followed through a symbolic link, a file is created anew (never an
//! existing one truncated) and renamed into place, the ledger is 0600, and
//! a world-writable directory is refused.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::proto::status::Status;

/// `O_NOFOLLOW`: never open through a symbolic link.
const NOFOLLOW: i32 = nix::fcntl::OFlag::O_NOFOLLOW.bits();

/// The directory `path` lives in.
pub fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Refuse a ledger whose directory anyone may write in (another user could
/// put files there for psched to read, or links for it to write through),
/// or that belongs to a user other than psched's and root.
pub fn check_dir(ledger: &Path) -> Result<()> {
    let dir = dir_of(ledger);
    let md = fs::metadata(&dir).map_err(|e| {
        Error::new(
            Status::ERR_NOT_AVAILABLE,
            format!("the ledger's directory {}: {e}", dir.display()),
        )
    })?;
    let me = nix::unistd::geteuid().as_raw();
    if md.permissions().mode() & 0o002 != 0 {
        return Err(Error::new(
            Status::ERR_NO_PERMISSIONS,
            format!(
                "the ledger's directory {} is world-writable: other users could plant files \
there; give psched a directory of its own (e.g. mkdir -m 700 ~/.psched)",
                dir.display()
            ),
        ));
    }
    if md.uid() != me && md.uid() != 0 {
        return Err(Error::new(
            Status::ERR_NO_PERMISSIONS,
            format!(
                "the ledger's directory {} belongs to uid {}, not to psched's user ({me}) or root",
                dir.display(),
                md.uid()
            ),
        ));
    }
    Ok(())
}

/// Write `body` to `path` atomically with permissions `mode`: a new file
/// beside it (an old one of that name is removed, never written through),
/// synced, renamed over `path` (which replaces a link rather than following
/// it), and the directory synced.
pub fn replace(path: &Path, body: &[u8], mode: u32) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(NOFOLLOW)
        .open(&tmp)?;
    f.write_all(body)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, path)?;
    if let Ok(d) = fs::File::open(dir_of(path)) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Read at most `limit` bytes of `path`, never through a link; with the
/// file's owner.
pub fn read(path: &Path, limit: u64) -> std::io::Result<(Vec<u8>, u32)> {
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(NOFOLLOW)
        .open(path)?;
    let owner = f.metadata()?.uid();
    let mut body = Vec::new();
    f.take(limit).read_to_end(&mut body)?;
    Ok((body, owner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_replaced_never_written_through() {
        let d = std::env::temp_dir().join(format!("psched-files-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        fs::write(&victim, "keep").unwrap();
        let p = d.join("ledger.json");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        replace(&p, b"new", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        assert!(read(&p, 100).is_err(), "read does not follow a link");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_world_writable_directory_is_refused() {
        let d = std::env::temp_dir().join(format!("psched-ww-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_dir(&d.join("l.json")).unwrap_err();
        assert_eq!(e.status, Status::ERR_NO_PERMISSIONS);
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        check_dir(&d.join("l.json")).unwrap();
        fs::remove_dir_all(&d).unwrap();
    }
}
