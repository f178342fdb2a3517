//! Finding the server to connect to, the way OpenPMIx tools do.
//!
//! Order of precedence:
//! 1. `--uri URI` or `--uri file:PATH` (a rendezvous or `--report-uri` file);
//! 2. `--pid PID` (or `file:PATH` holding it): the rendezvous file
//!    `pmix.<host>.tool.<PID>` that server wrote;
//! 3. `--namespace NS`: the rendezvous file `pmix.<host>.tool.<NS>`;
//! 4. `--system-server-only`: the system server's `pmix.sys.<host>`;
//!    `--system-server-first`: that, and the search below if there is none;
//! 5. inside a job (`PMIX_NAMESPACE`, `PMIX_RANK` and a `PMIX_SERVER_URI*`
//!    variable set by the launching server), unless a tool identity is
//!    forced: that server, as a client of the job;
//! 6. otherwise the one live server whose `pmix.<host>.tool` file is found in
//!    the search directories (`--tmpdir`, else `PMIX_SERVER_TMPDIR` and
//!    `TMPDIR`, else `/tmp`; each with its immediate subdirectories, which is where
//!    a PRRTE DVM puts its `prte.<pid>/` folder). Two or more live servers is
//!    an error that lists them. Every entry of a search directory is looked
//!    at by name, however many there are; only `pmix.*` files and server
//!    folders (`prte.*`, `pdvm.*`) of the user or root are examined further.
//!
//! # Which rendezvous files are trusted
//! A rendezvous file names the server we send our command line, `-x`
//! values and working directory to, so only files that the running user or
//! root owns, that are regular files and not group- or other-writable, in
//! a directory owned by the user or root that is not group- or
//! other-writable either (a sticky directory such as `/tmp` is accepted: no
//! one else can replace our files there), are read. Others are skipped;
//! [`skipped_files`] says which and why (shown with `-v` and in the
//! "not found" error).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::proto::status::Status;

use super::handshake::Identity;
use super::uri::{read_bounded, Rendezvous, ServerUri};

pub use crate::proto::keys::SERVER_URI_VARS;

/// Most entries read in one server folder (a folder of ours or root's).
const MAX_FOLDER_SCAN: usize = 10_000;

/// Rendezvous files the last search skipped, with the reason.
static SKIPPED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The rendezvous files the latest search of this process skipped as
/// untrusted, each as "PATH (reason)".
pub fn skipped_files() -> Vec<String> {
    SKIPPED.lock().map(|v| v.clone()).unwrap_or_default()
}

fn note_skipped(path: &Path, why: &str) {
    if let Ok(mut v) = SKIPPED.lock() {
        let line = format!("{} ({why})", path.display());
        if v.len() < 32 && !v.contains(&line) {
            v.push(line);
        }
    }
}

/// Why `path` (a rendezvous file) is not to be trusted, or `None` when it
/// is: see the module documentation.
pub fn untrusted_reason(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let owner_ok = |uid: u32| uid == me || uid == 0;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot inspect it: {e}")),
    };
    if !meta.file_type().is_file() {
        return Some("not a regular file".into());
    }
    if !owner_ok(meta.uid()) {
        return Some(format!(
            "owned by uid {}, not by you (uid {me}) or root",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Some(format!(
            "writable by group or others (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty())?;
    let dmeta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot inspect its directory: {e}")),
    };
    if !owner_ok(dmeta.uid()) {
        return Some(format!(
            "its directory {} is owned by uid {}, not by you (uid {me}) or root",
            dir.display(),
            dmeta.uid()
        ));
    }
    let sticky = dmeta.mode() & 0o1000 != 0;
    if dmeta.mode() & 0o022 != 0 && !sticky {
        return Some(format!(
            "its directory {} is writable by group or others (mode {:o})",
            dir.display(),
            dmeta.mode() & 0o7777
        ));
    }
    None
}

/// Read a rendezvous file found by searching, if it is trusted.
fn read_trusted(path: &Path) -> Option<Rendezvous> {
    if let Some(why) = untrusted_reason(path) {
        note_skipped(path, &why);
        return None;
    }
    Rendezvous::read(path).ok()
}

/// How the caller asked us to find the server and who to be.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    /// `--uri`: a URI, or `file:PATH`.
    pub uri: Option<String>,
    /// `--pid`: a pid, or `file:PATH` holding one.
    pub pid: Option<String>,
    /// `--namespace`: the server's namespace.
    pub nspace: Option<String>,
    /// `--system-server-first`.
    pub system_first: bool,
    /// `--system-server-only`.
    pub system_only: bool,
    /// `--tmpdir`: where to search instead of the default directories.
    pub tmpdir: Option<PathBuf>,
    /// `--wait-to-connect SECS`: delay between connection attempts.
    pub wait_to_connect: Option<Duration>,
    /// `--num-connect-retries N`: further attempts after the first.
    pub retries: u32,
    /// Connect as a tool even inside a job (`--as-tool`).
    pub force_tool: bool,
    /// Connect as a tool with this namespace and rank.
    pub tool_id: Option<(String, u32)>,
    /// The allocation the command acts on: when a palloc of the same user
    /// holds it (`palloc --hold`, `palloc -- CMD`), connect through that
    /// palloc, so the DVM sees the allocation's owner ask.
    pub alloc: Option<String>,
}

impl ConnectOptions {
    /// True when the caller named a server explicitly.
    pub fn names_a_server(&self) -> bool {
        self.uri.is_some()
            || self.pid.is_some()
            || self.nspace.is_some()
            || self.system_first
            || self.system_only
    }
}

/// A server we found, and how to present ourselves to it.
#[derive(Clone, Debug)]
pub struct Target {
    /// The server's contact point.
    pub uri: ServerUri,
    /// The server's PMIx version string, when known.
    pub version: Option<String>,
    /// Who we will say we are.
    pub identity: Identity,
    /// How it was found (for messages).
    pub found_by: String,
    /// The allocation whose palloc holder relays this connection; `None`
    /// when connected to the server itself.
    pub holder_of: Option<String>,
}

/// An environment lookup, so discovery is testable without touching the
/// process environment.
pub trait Env {
    /// The value of a variable, if set.
    fn var(&self, key: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, key: &str) -> Option<String> {
        std::env::var(key).ok().filter(|v| !v.is_empty())
    }
}

/// Decide which server to connect to and as whom.
pub fn discover(opts: &ConnectOptions, env: &dyn Env) -> Result<Target> {
    if let Ok(mut v) = SKIPPED.lock() {
        v.clear();
    }
    let tool_identity = match &opts.tool_id {
        Some((ns, rank)) => Identity::ToolWithId {
            nspace: ns.clone(),
            rank: *rank,
        },
        None => Identity::Tool,
    };
    let tool = |r: Rendezvous, how: String| Target {
        uri: r.uri,
        version: r.version,
        identity: tool_identity.clone(),
        found_by: how,
        holder_of: None,
    };

    if let Some(spec) = &opts.uri {
        return Ok(match spec.strip_prefix("file:") {
            Some(path) => {
                let r = Rendezvous::read(Path::new(path))?;
                tool(r, format!("--uri file:{path}"))
            }
            None => Target {
                uri: ServerUri::parse(spec)?,
                version: None,
                identity: tool_identity,
                found_by: "--uri".into(),
                holder_of: None,
            },
        });
    }
    let dirs = search_dirs(opts, env);
    if let Some(spec) = &opts.pid {
        let pid = parse_pid(spec)?;
        let r = find_named(&dirs, &format!(".tool.{pid}"))
            .ok_or_else(|| not_found(format!("no rendezvous file for server pid {pid}"), &dirs))?;
        return Ok(tool(r, format!("--pid {pid}")));
    }
    if let Some(ns) = &opts.nspace {
        let r = find_named(&dirs, &format!(".tool.{ns}")).ok_or_else(|| {
            not_found(
                format!("no rendezvous file for server namespace {ns}"),
                &dirs,
            )
        })?;
        return Ok(tool(r, format!("--namespace {ns}")));
    }
    if opts.system_first || opts.system_only {
        let sysdir = env
            .var("PMIX_SYSTEM_TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/tmp".into());
        if let Some(r) = find_system(&sysdir) {
            return Ok(tool(r, "system server".into()));
        }
        if opts.system_only {
            return Err(not_found("no system server is running".into(), &[sysdir]));
        }
    }
    if !opts.force_tool && opts.tool_id.is_none() {
        if let Some(t) = job_client_target(env)? {
            return Ok(t);
        }
    }
    the_one_live_server(&dirs).map(|(r, how)| tool(r, how))
}

/// The single server found in `dirs`, with how it was found; an error
/// naming each when there are several, and where we looked when none.
fn the_one_live_server(dirs: &[PathBuf]) -> Result<(Rendezvous, String)> {
    let live = live_servers(dirs);
    if live.len() > 1 {
        let list: Vec<String> = live
            .values()
            .map(|r| {
                format!(
                    "  pid {} namespace {} at {} ({})",
                    r.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
                    r.uri.nspace,
                    r.uri.address,
                    r.path.display()
                )
            })
            .collect();
        return Err(Error::of_kind(
            ErrorKind::NoServer,
            Status::ERR_BAD_PARAM,
            format!(
                "{} PMIx servers are running; choose one with --pid, --namespace or --uri:\n{}",
                live.len(),
                list.join("\n")
            ),
        ));
    }
    let r = live
        .into_values()
        .next()
        .ok_or_else(|| not_found("no PMIx server (DVM) found".into(), dirs))?;
    let how = format!("rendezvous file {}", r.path.display());
    Ok((r, how))
}

/// The server a launched process should call back, if we are inside a job.
pub fn job_client_target(env: &dyn Env) -> Result<Option<Target>> {
    let (Some(ns), Some(rank)) = (env.var("PMIX_NAMESPACE"), env.var("PMIX_RANK")) else {
        return Ok(None);
    };
    let Some(uri) = SERVER_URI_VARS.iter().find_map(|k| env.var(k)) else {
        return Ok(None);
    };
    let rank: u32 = rank.parse().map_err(|_| {
        Error::new(
            Status::ERR_BAD_PARAM,
            format!("PMIX_RANK={rank:?} is not a rank"),
        )
    })?;
    Ok(Some(Target {
        uri: ServerUri::parse(&uri)?,
        version: env.var("PMIX_VERSION"),
        identity: Identity::Client { nspace: ns, rank },
        found_by: "job environment (PMIX_NAMESPACE, PMIX_SERVER_URI*)".into(),
        holder_of: None,
    }))
}

/// Directories searched for rendezvous files, in order, without duplicates.
pub fn search_dirs(opts: &ConnectOptions, env: &dyn Env) -> Vec<PathBuf> {
    if let Some(d) = &opts.tmpdir {
        return vec![d.clone()];
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for key in ["PMIX_SERVER_TMPDIR", "TMPDIR"] {
        if let Some(v) = env.var(key).map(PathBuf::from) {
            if !dirs.contains(&v) {
                dirs.push(v);
            }
        }
    }
    // /tmp only when no session tmpdir is set: a user who points TMPDIR
    // somewhere means the servers there, not every server on the machine.
    if dirs.is_empty() {
        dirs.push(PathBuf::from("/tmp"));
    }
    dirs
}

fn parse_pid(spec: &str) -> Result<u32> {
    let text = match spec.strip_prefix("file:") {
        Some(path) => read_bounded(Path::new(path))?,
        None => spec.to_string(),
    };
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| {
            Error::new(
                Status::ERR_BAD_PARAM,
                format!("--pid {spec:?}: expected a process id or file:PATH"),
            )
        })
}

/// True when `name` is that of a folder a server puts its rendezvous files
/// in: PRRTE's `prte.<pid>` or `prte.<node>.<pid>`, pdvm's `pdvm.<pid>`
/// (or `pdvm.<pid>.<n>` when another user took that name).
fn server_folder_name(name: &str) -> bool {
    name.starts_with("prte.") || name.starts_with("pdvm.")
}

/// True when `path` is a real directory owned by us or root: only those
/// are opened (another user's folders are never listed).
fn trusted_folder(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir() && (m.uid() == me || m.uid() == 0))
}

/// Every candidate rendezvous file: `pmix.*` entries of each directory and
/// of its server folders (see [`server_folder_name`]) that we or root own.
/// Every entry of the directory is looked at, however many there are (a
/// crowded shared /tmp cannot hide a server), but only by name: other
/// entries cost no system call, and other users' folders are not opened.
fn candidate_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            if name.starts_with("pmix.") {
                out.push(entry.path());
            } else if server_folder_name(name) && trusted_folder(&entry.path()) {
                let Ok(sub) = std::fs::read_dir(entry.path()) else {
                    continue;
                };
                let files = sub.flatten().take(MAX_FOLDER_SCAN);
                out.extend(
                    files
                        .filter(|e| e.file_name().to_string_lossy().starts_with("pmix."))
                        .map(|e| e.path()),
                );
            }
        }
    }
    out
}

fn find_named(dirs: &[PathBuf], suffix: &str) -> Option<Rendezvous> {
    candidate_files(dirs)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().ends_with(suffix))
                .unwrap_or(false)
        })
        .find_map(|p| read_trusted(&p))
}

fn find_system(dir: &Path) -> Option<Rendezvous> {
    let rd = std::fs::read_dir(dir).ok()?;
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pmix.sys."))
        .find_map(|e| read_trusted(&e.path()))
        .filter(|r| r.pid.map(pid_alive).unwrap_or(true))
}

/// Live servers found through their generic `pmix.<host>.tool` files, keyed
/// by URI so the several files one server writes count once.
pub fn live_servers(dirs: &[PathBuf]) -> BTreeMap<String, Rendezvous> {
    let files = candidate_files(dirs);
    let name_of = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    // A server writes the same contents to `pmix.<host>.tool`, `….tool.<pid>`
    // and `….tool.<nspace>`: read the generic file, and the variants only in
    // a folder that lacks one.
    let generic_dirs: Vec<&Path> = files
        .iter()
        .filter(|p| name_of(p).ends_with(".tool"))
        .filter_map(|p| p.parent())
        .collect();
    let mut found = BTreeMap::new();
    for p in &files {
        let name = name_of(p);
        let wanted = name.ends_with(".tool")
            || (name.contains(".tool.") && !p.parent().is_some_and(|d| generic_dirs.contains(&d)));
        if !wanted {
            continue;
        }
        let Some(r) = read_trusted(p) else {
            continue;
        };
        if !r.pid.map(pid_alive).unwrap_or(true) {
            continue;
        }
        found.entry(r.uri.to_string()).or_insert(r);
    }
    found
}

/// True when a process with this pid exists.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(nix::errno::Errno::EPERM) => true,
        Err(_) => false,
    }
}

fn not_found(what: String, dirs: &[PathBuf]) -> Error {
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let skipped = skipped_files();
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!(
            "; skipped {} untrusted rendezvous file(s): {}",
            skipped.len(),
            skipped.join("; ")
        )
    };
    Error::of_kind(
        ErrorKind::NoServer,
        Status::ERR_UNREACH,
        format!(
            "{what} (looked in {}{skipped}); start one (e.g. `pdvm --nodes 4 &` or `prte`), or point at it with --uri, --pid or --tmpdir",
            looked.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct MapEnv(HashMap<&'static str, String>);
    impl Env for MapEnv {
        fn var(&self, key: &str) -> Option<String> {
            self.0.get(key).cloned()
        }
    }

    fn write_server(dir: &Path, host: &str, pid: u32, ns: &str, port: u16) {
        let sub = dir.join(format!("prte.{pid}"));
        std::fs::create_dir_all(&sub).unwrap();
        let text = format!("{ns}.0;tcp4://127.0.0.1:{port}\n5.0.11\n{pid}\n0:0\nnow\n");
        for name in [
            format!("pmix.{host}.tool"),
            format!("pmix.{host}.tool.{pid}"),
            format!("pmix.{host}.tool.{ns}"),
        ] {
            std::fs::write(sub.join(name), &text).unwrap();
        }
    }

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pmix-tools-disc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn one_live_server_is_found_without_flags() {
        let d = tmp("one");
        let me = std::process::id();
        write_server(&d, "h", me, "srv@0", 1234);
        let env = MapEnv(HashMap::from([("TMPDIR", d.display().to_string())]));
        let t = discover(&ConnectOptions::default(), &env).unwrap();
        assert_eq!(t.uri.nspace, "srv@0");
        assert_eq!(t.identity, Identity::Tool);
        let by_pid = ConnectOptions {
            pid: Some(me.to_string()),
            ..Default::default()
        };
        assert_eq!(
            discover(&by_pid, &env).unwrap().uri.address,
            "tcp4://127.0.0.1:1234"
        );
        let by_ns = ConnectOptions {
            nspace: Some("srv@0".into()),
            ..Default::default()
        };
        assert_eq!(discover(&by_ns, &env).unwrap().uri.nspace, "srv@0");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn two_live_servers_are_an_error_listing_both() {
        let d = tmp("two");
        let me = std::process::id();
        write_server(&d, "h", me, "a@0", 1);
        write_server(&d, "h", 1, "b@0", 2); // pid 1 is always alive
        let env = MapEnv(HashMap::from([("TMPDIR", d.display().to_string())]));
        let e = discover(&ConnectOptions::default(), &env).unwrap_err();
        assert!(
            e.context.contains("a@0") && e.context.contains("b@0"),
            "{}",
            e.context
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn stale_files_are_ignored_and_none_found_says_where() {
        let d = tmp("stale");
        write_server(&d, "h", 0x7fff_fff0, "gone@0", 1);
        let env = MapEnv(HashMap::from([("TMPDIR", d.display().to_string())]));
        let e = discover(&ConnectOptions::default(), &env).unwrap_err();
        assert_eq!(e.status, Status::ERR_UNREACH);
        assert!(e.context.contains(&d.display().to_string()));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn inside_a_job_we_are_a_client_unless_forced() {
        let env = MapEnv(HashMap::from([
            ("PMIX_NAMESPACE", "job@1".to_string()),
            ("PMIX_RANK", "3".to_string()),
            (
                "PMIX_SERVER_URI41",
                "srv@0.0;tcp4://127.0.0.1:9".to_string(),
            ),
        ]));
        let t = discover(&ConnectOptions::default(), &env).unwrap();
        assert_eq!(
            t.identity,
            Identity::Client {
                nspace: "job@1".into(),
                rank: 3
            }
        );
        let forced = ConnectOptions {
            force_tool: true,
            tmpdir: Some("/nonexistent".into()),
            ..Default::default()
        };
        assert!(discover(&forced, &env).is_err());
        let uri = ConnectOptions {
            uri: Some("x@0.0;tcp4://127.0.0.1:5".into()),
            ..Default::default()
        };
        assert_eq!(discover(&uri, &env).unwrap().identity, Identity::Tool);
    }

    #[test]
    fn bad_pid_spec_is_refused() {
        let env = MapEnv(HashMap::new());
        for spec in ["abc", "0", "-5", "file:/nonexistent/x"] {
            let o = ConnectOptions {
                pid: Some(spec.into()),
                ..Default::default()
            };
            assert!(discover(&o, &env).is_err(), "{spec}");
        }
    }
}
