//! A second, unprivileged local user for the hostile-user tests (issue 45),
//! created by the test when missing, and a private mount namespace with a
//! fresh `/dev/shm`, so what that user pre-creates there never touches the
//! machine's own holder registry.
//!
//! The tests run as root (the test command does); without root there is no
//! second user to be, so these tests fail, never skip.

use std::process::Command;
use std::sync::Mutex;

/// The test user's name.
pub const NAME: &str = "pmixtester";

/// The test user's uid and gid, creating the user (a system user with no
/// home and no login shell) when missing.
pub fn ensure() -> (u32, u32) {
    static MAKING: Mutex<()> = Mutex::new(());
    assert!(
        nix::unistd::geteuid().is_root(),
        "the hostile-user tests need a second user: run them as root"
    );
    let _one = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ids) = lookup() {
        return ids;
    }
    let o = Command::new("useradd")
        .args(["--system", "--no-create-home", "--home-dir", "/nonexistent"])
        .args(["--shell", "/usr/sbin/nologin", NAME])
        .output()
        .expect("useradd runs");
    // Another test process may have made it meanwhile.
    lookup().unwrap_or_else(|| {
        panic!(
            "cannot create the test user {NAME}: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn lookup() -> Option<(u32, u32)> {
    let u = nix::unistd::User::from_name(NAME).ok()??;
    Some((u.uid.as_raw(), u.gid.as_raw()))
}

/// The words that run a command as the test user (`setpriv`, util-linux).
pub fn as_user_prefix() -> Vec<String> {
    let (uid, gid) = ensure();
    vec![
        "setpriv".into(),
        format!("--reuid={uid}"),
        format!("--regid={gid}"),
        "--clear-groups".into(),
        "--".into(),
    ]
}

/// `bash -c SCRIPT` in a private mount namespace whose `/dev/shm` is a
/// fresh tmpfs (mode 1777, as the machine's), with `like`'s environment;
/// `$AS_TESTER` in the script runs a command as the test user.
pub fn in_private_shm(like: &Command, script: &str) -> Command {
    let prefix = as_user_prefix().join(" ");
    let mut c = super::command_like(like, "unshare");
    c.args(["--mount", "--propagation", "private", "--", "bash", "-c"])
        .arg(format!(
            "mount -t tmpfs -o mode=1777 pmix-tools-test /dev/shm || exit 90\n{script}"
        ))
        .env("AS_TESTER", prefix);
    c
}
