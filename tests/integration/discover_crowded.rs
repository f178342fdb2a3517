//! Discovery that cannot be crowded, paths that cannot be squatted (issue
//! 15), bounded and on loopback only: a search directory holding tens of
//! thousands of another user's entries still shows pdvm to `pwatch
//! --status` and `pdvm --terminate`; a `pdvm.<pid>` or holder registry
//! another user pre-created is passed over, and said so, never followed.

use crate::support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::pdvm::Pdvm;
use crate::support::wait;
use crate::support::{show, text, tool, ToolCommand};

/// A uid that is not ours (the tests run as root or as a user; neither is
/// `nobody`).
const OTHER_UID: u32 = 65534;

/// `n` directories owned by [`OTHER_UID`] in `dir`, created after pdvm's
/// own (a directory lists its newest entries first on tmpfs, in hash
/// order elsewhere: either way the crowd is not all behind pdvm's).
fn crowd(dir: &Path, n: usize) {
    for i in 0..n {
        let d = dir.join(format!("crowd.{i:06}"));
        std::fs::create_dir(&d).expect("mkdir");
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::chown(&d, Some(OTHER_UID), Some(OTHER_UID)).expect("chown");
        }
    }
}

/// 30,000 foreign entries beside pdvm's folder (discovery used to read only
/// the first 10,000): `pwatch --status` finds it (its time is a figure),
/// the stale-directory sweep finds a dead pdvm's folder, and
/// `pdvm --terminate` finds and stops it.
#[test]
fn crowded_search_directory_does_not_hide_pdvm() {
    let pdvm = Pdvm::start(&["--nodes", "1"]);
    crowd(pdvm.tmpdir.path(), 30_000);
    let t = Instant::now();
    let mut st = tool(&pdvm, "pwatch").no_color();
    st.stdin(Stdio::null()).args(["--status", "--json"]);
    let o = support::run_with_timeout(&mut st, 60);
    let took = t.elapsed();
    assert!(o.status.success(), "pwatch --status: {}", show(&o));
    eprintln!(
        "FIGURE discovery among 30,000 foreign entries: pwatch --status {:.3}s",
        took.as_secs_f64()
    );
    // The stale-directory sweep sees past the crowd too: a directory of
    // ours named after a dead pdvm is removed.
    let stale = pdvm.tmpdir.path().join("pdvm.4000002");
    std::fs::create_dir(&stale).expect("mkdir");
    let removed = pmix_tools::server::listener::sweep_stale(pdvm.tmpdir.path());
    assert_eq!(removed, vec![stale.clone()], "sweep among the crowd");
    let mut term = tool(&pdvm, "pdvm").no_color();
    term.stdin(Stdio::null())
        .arg("--terminate")
        .arg("--tmpdir")
        .arg(pdvm.tmpdir.path());
    let o = support::run_with_timeout(&mut term, 60);
    assert!(o.status.success(), "pdvm --terminate: {}", show(&o));
    assert!(
        text(&o.stdout).contains(&format!("pdvm {} terminated", pdvm.pid)),
        "{}",
        show(&o)
    );
}

/// Another user's `pdvm.<pid>`: pdvm takes `pdvm.<pid>.1` (private), says
/// which path it passed over and who owns it, and tools find it there.
#[test]
fn precreated_rendezvous_directory_is_passed_over() {
    use pmix_tools::conn::discover::{discover, ConnectOptions, ProcessEnv};
    use pmix_tools::server::listener::{RendezvousFiles, ServerIdent};
    let tmp = support::unique_tmpdir("squat");
    let pid = std::process::id();
    let taken = tmp.path().join(format!("pdvm.{pid}"));
    std::fs::create_dir(&taken).unwrap();
    std::fs::set_permissions(&taken, std::fs::Permissions::from_mode(0o755)).unwrap();
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::chown(&taken, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    }
    let ident = ServerIdent {
        host: "h".into(),
        pid,
        prefix: format!("pdvm-h-{pid}"),
        nspace: format!("pdvm-h-{pid}@0"),
        address: "tcp4://127.0.0.1:1".into(),
    };
    let r = RendezvousFiles::write(&ident, tmp.path(), None).expect("another private name");
    let dir = r.dir().to_path_buf();
    assert_eq!(dir, tmp.path().join(format!("pdvm.{pid}.1")));
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    let note = r.notes().join("; ");
    assert!(note.contains(&taken.display().to_string()), "{note}");
    if nix::unistd::geteuid().is_root() {
        assert!(note.contains(&format!("uid {OTHER_UID}")), "{note}");
    }
    assert_eq!(
        std::fs::read_dir(&taken).unwrap().count(),
        0,
        "wrote into it"
    );
    let opts = ConnectOptions {
        tmpdir: Some(tmp.path().to_path_buf()),
        force_tool: true,
        ..Default::default()
    };
    let t = discover(&opts, &ProcessEnv).expect("found in the other folder");
    assert_eq!(t.uri.nspace, ident.nspace);
    drop(r);
}

/// A holder registry another user pre-created: palloc uses a private
/// folder with an unguessable name beside it, named in
/// `~/.pmix-tools/registry.<host>`, for its `--no-wait` log (it used to
/// write it to /dev/null) and tools agree on it.
#[test]
fn precreated_holder_registry_is_passed_over() {
    let pdvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "1"]);
    let run = support::unique_tmpdir("xdg");
    std::fs::set_permissions(run.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let home = support::unique_tmpdir("xdg-home");
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let taken = run.path().join("pmix-tools-holders");
    std::fs::create_dir(&taken).unwrap();
    std::fs::set_permissions(&taken, std::fs::Permissions::from_mode(0o755)).unwrap();
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::chown(&taken, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    }
    let mut c = tool(&pdvm, "palloc").no_color();
    c.stdin(Stdio::null())
        .env("XDG_RUNTIME_DIR", run.path())
        .env("HOME", home.path())
        .args(["-N", "1", "--no-wait", "--request-id", "squat1"]);
    let o = support::run_with_timeout(&mut c, 60);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = text(&o.stderr);
    let pointer = std::fs::read_dir(home.path().join(".pmix-tools"))
        .unwrap()
        .flatten()
        .find(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("registry.") && !n.ends_with(".lock")
        })
        .expect("the registry's name is kept in HOME");
    let dir = std::path::PathBuf::from(
        std::fs::read_to_string(pointer.path())
            .unwrap()
            .trim_end()
            .to_string(),
    );
    assert!(
        dir.starts_with(run.path()) && dir != taken,
        "{}",
        dir.display()
    );
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    // The log is in that folder, `palloc.squat1.PID.log` once the
    // detached palloc runs (so a dead one's log can be swept).
    let prefix = format!("{}/palloc.squat1.", dir.display());
    let at = err.find(&prefix).unwrap_or_else(|| panic!("{}", show(&o)));
    let named: String = err[at..]
        .chars()
        .take_while(|c| !matches!(c, ')' | ' ' | '\n'))
        .collect();
    assert!(named.ends_with(".log"), "{named}");
    let log = std::path::PathBuf::from(named);
    wait::eventually_within(
        &format!("the log is at {}", log.display()),
        Duration::from_secs(20),
        || std::fs::metadata(&log).is_ok_and(|m| m.is_file()),
    );
    let mut rel = tool(&pdvm, "prelease").no_color();
    rel.stdin(Stdio::null())
        .env("XDG_RUNTIME_DIR", run.path())
        .env("HOME", home.path())
        .args(["--cancel", "squat1"]);
    let o = support::run_with_timeout(&mut rel, 30);
    assert_eq!(o.status.code(), Some(0), "the tools agree: {}", show(&o));
}
