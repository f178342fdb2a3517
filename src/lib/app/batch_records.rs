//! The records of this user's batch scripts (`palloc --no-wait -- SCRIPT`)
//! on one DVM: `batch/SERVER/REQ_ID.json` in the user's private holder
//! registry, written by the detached palloc that runs the script
//! (`palloc::batch`), listed by `pwatch --status` (`batch_jobs`) and
//! dropped by `prelease --cancel` of a queued one. Below the tools' rooms,
//! as all three read them.

use std::path::PathBuf;
use std::time::Duration;

use crate::render::{BatchRecord, BatchState};

/// Request `request_id` on DVM `server` was cancelled by this user's
/// `prelease`: its queued record goes now, so a listing right after the
/// cancel no longer shows it (the palloc that waited withdraws it too, but
/// only once it has heard of the cancel). A record that is not queued
/// (the script started) stays.
pub(crate) fn cancelled(server: &str, request_id: &str) {
    let Some(file) = record_path(server, request_id) else {
        return;
    };
    let queued = std::fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice::<BatchRecord>(&b).ok())
        .is_some_and(|r| r.state == BatchState::Queued);
    if queued {
        let _ = std::fs::remove_file(&file);
    }
}

/// Write `rec` to `path` (a new file renamed over the old: readers never
/// see half of it). Best effort: the log has the outcome either way.
pub(crate) fn save(path: Option<&std::path::Path>, rec: &BatchRecord) {
    let Some(path) = path else { return };
    let Ok(json) = serde_json::to_vec(rec) else {
        return;
    };
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    let mut written = std::fs::write(&tmp, &json);
    if written.is_err() {
        // Its DVM's folder, empty, was pruned just now (see [`prune`]).
        if let Some(dir) = path.parent() {
            make_private_dir(dir);
        }
        written = std::fs::write(&tmp, &json);
    }
    if written.is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Create `dir` (and its parents) with mode 0700, if missing.
fn make_private_dir(dir: &std::path::Path) {
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
}

/// The directory of batch records of DVM `server`: `batch/SERVER` in the
/// user's private holder registry (see [`crate::conn::holder::registry`]).
fn records_dir(server: &str) -> Option<PathBuf> {
    use crate::conn::registry::file_name_part;
    let dir = crate::conn::holder::registry().ok()?.join("batch");
    let dir = dir.join(file_name_part(server, RECORD_NAME_ROOM));
    make_private_dir(&dir);
    dir.is_dir().then_some(dir)
}

/// Longest name of a record's file or folder before its digest is used.
const RECORD_NAME_ROOM: usize = 200;

/// Records are kept this long (as sacct keeps a job for a while).
const KEEP: Duration = Duration::from_secs(7 * 24 * 3600);

/// How often a starting script looks for records older than [`KEEP`]: a
/// look reads every record's time, so doing it for each job would make a
/// busy user's thousandth job pay for the 999 before it.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// The file (in `batch/`) whose time says when records were last pruned.
const PRUNED_STAMP: &str = ".pruned";

/// Remove the records not written for [`KEEP`], of every DVM (a DVM's name
/// changes with each start, so the folders of DVMs long gone are emptied
/// and removed too, not kept for ever), at most once every
/// [`PRUNE_EVERY`]: otherwise one look at a stamp file.
pub(crate) fn prune() {
    let Some(root) = crate::conn::holder::registry()
        .ok()
        .map(|r| r.join("batch"))
    else {
        return;
    };
    let stamp = root.join(PRUNED_STAMP);
    if age(std::fs::metadata(&stamp)).is_some_and(|a| a < PRUNE_EVERY)
        || std::fs::write(&stamp, b"").is_err()
    {
        return;
    }
    let Ok(servers) = std::fs::read_dir(&root) else {
        return;
    };
    for dir in servers
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
    {
        let Ok(records) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for e in records.flatten() {
            if age(e.metadata()).is_some_and(|a| a > KEEP) {
                let _ = std::fs::remove_file(e.path());
            }
        }
        // An empty folder nobody wrote in for a while goes (remove_dir
        // keeps one a record was written to meanwhile).
        if age(dir.metadata()).is_some_and(|a| a > PRUNE_EVERY) {
            let _ = std::fs::remove_dir(dir.path());
        }
    }
}

/// How long ago a file was last written.
fn age(meta: std::io::Result<std::fs::Metadata>) -> Option<Duration> {
    meta.and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
}

/// The record file of request `rid` on DVM `server`: one name per
/// request id (see [`crate::conn::registry::file_name_part`]).
pub(crate) fn record_path(server: &str, rid: &str) -> Option<PathBuf> {
    use crate::conn::registry::file_name_part;
    let name = file_name_part(rid, RECORD_NAME_ROOM);
    Some(records_dir(server)?.join(format!("{name}.json")))
}

/// This user's batch records for DVM `server`, oldest first; ended ones
/// only when `all`.
pub(crate) fn records(server: &str, all: bool) -> Vec<BatchRecord> {
    let Some(dir) = records_dir(server) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<BatchRecord> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice::<BatchRecord>(&b).ok())
        .map(|mut r| {
            let live = matches!(r.state, BatchState::Running | BatchState::Queued);
            if live && !r.palloc_pid.is_some_and(alive) {
                r.state = BatchState::Lost;
            }
            r
        })
        .filter(|r| all || matches!(r.state, BatchState::Running | BatchState::Queued))
        .collect();
    v.sort_by_key(|r| r.started_at);
    v
}

/// The record of request `rid` held by the detached palloc `pid`, which
/// has ended, on whichever DVM it ran (a `palloc --stdin-requests` agent
/// knows its holders, not their DVM's name): the request's file in the
/// DVM folders `known` first (where earlier ones were found), then in
/// every DVM's folder; the one that palloc wrote, its folder added to
/// `known`. A script still `running` or `queued` there was left so by its
/// palloc's end: `lost`, as [`records`] lists it.
pub(crate) fn ended_holder(rid: &str, pid: u32, known: &mut Vec<PathBuf>) -> Option<BatchRecord> {
    use crate::conn::registry::file_name_part;
    let name = format!("{}.json", file_name_part(rid, RECORD_NAME_ROOM));
    let written_by = |dir: &std::path::Path| {
        std::fs::read(dir.join(&name))
            .ok()
            .and_then(|b| serde_json::from_slice::<BatchRecord>(&b).ok())
            .filter(|r| r.request_id == rid && r.palloc_pid == Some(pid))
    };
    let mut rec = match known.iter().find_map(|d| written_by(d)) {
        Some(r) => r,
        None => {
            let root = crate::conn::holder::registry().ok()?.join("batch");
            let (dir, r) = std::fs::read_dir(root)
                .ok()?
                .flatten()
                .map(|d| d.path())
                .filter(|d| !known.contains(d))
                .find_map(|d| written_by(&d).map(|r| (d, r)))?;
            known.push(dir);
            r
        }
    };
    if matches!(rec.state, BatchState::Running | BatchState::Queued) {
        rec.state = BatchState::Lost;
    }
    Some(rec)
}

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}
