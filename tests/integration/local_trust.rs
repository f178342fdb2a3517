//! Trust boundaries of local peers (issue 45), tried as a hostile local
//! user would, with a second user the test creates (`support::other_user`):
//! - a holder socket another user listens on receives nothing: its folder
//!   is theirs, or its listener runs as them (`SO_PEERCRED`); the same fake
//!   holder run as ourselves does receive the request, so the fake is one
//!   the tools would have spoken to;
//! - the eight registry folders of the old scheme, pre-created by the other
//!   user, take nothing away (`palloc --hold`, `pspawn --target`,
//!   `prelease`, `palloc --parsable`), in a private mount namespace;
//! - a loopback port another user listens on (a DVM's port taken after it
//!   ended) receives nothing from `pspawn --uri`;
//! - request ids that used to share a registry name (`e/f`, `e_f`) and the
//!   longest ids the validator takes are each cancelled by their own id.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::holder_cancel::{busy_pdvm, queued_palloc};
use crate::support;
use crate::support::other_user;
use crate::support::pdvm::Pdvm;
use crate::support::tool::Tmpdir;
use crate::support::wait;
use crate::support::{run_with_timeout, show, text, tool, TempDir};

/// A fake holder: binds `SOCK`, then (given `UID:GID`) drops to that user
/// before listening; answers each client with a holder's welcome and
/// appends everything the client sends to `GOT`, closing the connection
/// once it saw `secret-arg` or after 3 s of silence.
const FAKE_HOLDER: &str = r#"
import json, os, socket, struct, sys
sock, got = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sock)
if len(sys.argv) > 3:
    uid, gid = map(int, sys.argv[3].split(":"))
    os.setgroups([]); os.setgid(gid); os.setuid(uid)
s.listen(8)
open(got + ".ready", "w").close()
w = json.dumps({"nspace": "fake@0", "rank": 0, "client": False,
                "server_nspace": "fake@0", "server_rank": 0,
                "server_uri": "fake@0.0;tcp4://127.0.0.1:9", "version": None,
                "wire": "v41", "alloc_id": "alloc.1", "pid": os.getpid()}).encode()
while True:
    c, _ = s.accept()
    with open(got + ".conns", "a") as f:
        f.write("connected\n")
    c.sendall(struct.pack(">iII", 0, 3, len(w)) + b"\0" * 4 + w)
    c.settimeout(3)
    seen = b""
    try:
        while b"secret-arg" not in seen:
            b = c.recv(65536)
            if not b:
                break
            seen += b
    except socket.timeout:
        pass
    with open(got, "ab") as f:
        f.write(seen)
    c.close()
"#;

/// A scratch folder everyone may write (the fake's records), with the
/// fake's script in it.
fn scratch(tag: &str) -> TempDir {
    let d = support::unique_tmpdir(tag);
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(d.path().join("fake_holder.py"), FAKE_HOLDER).unwrap();
    d
}

/// Start the fake holder on `sock` (as `prefix` runs it; listening as
/// `drop_to` when given) and wait until it listens.
fn fake_holder(dir: &Path, sock: &Path, prefix: &[String], drop_to: Option<String>) -> Child {
    let got = dir.join("got");
    let mut words: Vec<String> = prefix.to_vec();
    // The system's Python: the other user cannot enter root's own (pyenv).
    words.push("/usr/bin/python3".into());
    words.push(dir.join("fake_holder.py").display().to_string());
    words.push(sock.display().to_string());
    words.push(got.display().to_string());
    words.extend(drop_to);
    let child = Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("/usr/bin/python3 runs");
    wait::eventually_within("the fake holder listens", Duration::from_secs(20), || {
        dir.join("got.ready").exists()
    });
    child
}

/// Root's `pspawn -x SECRET -- echo secret-arg`, told to act through the
/// holder at `sock`.
fn pspawn_through(dir: &Path, sock: &Path) -> Output {
    let mut c = tool(&Tmpdir(dir), "pspawn");
    c.env(pmix_tools::conn::HOLDER_ENV, sock)
        .env("SECRET", "s3cr3t-value")
        .args(["-x", "SECRET", "--", "echo", "secret-arg"]);
    run_with_timeout(c.stdin(Stdio::null()), 60)
}

/// What the fake received, once it is stopped.
fn received(dir: &Path, mut fake: Child) -> (Vec<u8>, usize) {
    let _ = fake.kill();
    let _ = fake.wait();
    let got = std::fs::read(dir.join("got")).unwrap_or_default();
    let conns = std::fs::read_to_string(dir.join("got.conns"))
        .unwrap_or_default()
        .lines()
        .count();
    (got, conns)
}

/// A folder of the other user's, with their socket in it (as after
/// `palloc -- CMD` ended and they re-created its private folder): nothing
/// is sent, pspawn exits 3 naming the path and its owner.
#[test]
fn a_holder_socket_in_another_users_folder_receives_nothing() {
    let (uid, gid) = other_user::ensure();
    let d = scratch("fake-holder-folder");
    let theirs = d.path().join("palloc.4242.AbCdEf");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(uid), Some(gid)).unwrap();
    let sock = theirs.join("holder.sock");
    let fake = fake_holder(d.path(), &sock, &other_user::as_user_prefix(), None);
    let o = pspawn_through(d.path(), &sock);
    let (got, conns) = received(d.path(), fake);
    assert!(got.is_empty(), "the other user's socket received {got:?}");
    assert_eq!(conns, 0, "connected to the other user's socket");
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("refusing the holder socket"), "{err}");
    assert!(err.contains(&sock.display().to_string()), "{err}");
    assert!(err.contains(other_user::NAME), "{err}");
    assert!(err.contains("nothing was sent"), "{err}");
}

/// A socket in a private folder of ours whose listener runs as the other
/// user (`SO_PEERCRED`): nothing is sent past the connection.
#[test]
fn a_holder_socket_whose_listener_is_another_user_receives_nothing() {
    let (uid, gid) = other_user::ensure();
    let d = scratch("fake-holder-peer");
    let ours = d.path().join("private");
    std::fs::create_dir(&ours).unwrap();
    std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o700)).unwrap();
    let sock = ours.join("holder.sock");
    let fake = fake_holder(d.path(), &sock, &[], Some(format!("{uid}:{gid}")));
    let o = pspawn_through(d.path(), &sock);
    let (got, _) = received(d.path(), fake);
    assert!(got.is_empty(), "the other user's listener received {got:?}");
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("the process listening on it runs as"), "{err}");
    assert!(err.contains(other_user::NAME), "{err}");
}

/// The same fake, ours in a folder of ours: the tools do speak to it (the
/// request and its environment arrive), so the two refusals above are the
/// checks' doing, not the fake's.
#[test]
fn the_same_fake_holder_of_our_own_receives_the_request() {
    let d = scratch("fake-holder-own");
    let ours = d.path().join("private");
    std::fs::create_dir(&ours).unwrap();
    std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o700)).unwrap();
    let sock = ours.join("holder.sock");
    let fake = fake_holder(d.path(), &sock, &[], None);
    let o = pspawn_through(d.path(), &sock);
    let (got, conns) = received(d.path(), fake);
    assert_eq!(conns, 1, "{}", show(&o));
    let got = String::from_utf8_lossy(&got);
    assert!(got.contains("secret-arg"), "{got:?}\n{}", show(&o));
    assert!(got.contains("s3cr3t-value"), "{got:?}");
}

/// The other user pre-creates every folder the registry used to try for
/// root (`/dev/shm/pmix-tools-holders.0`, `.1` … `.7`, in a private
/// /dev/shm): `palloc --hold` registers anyway and says so, `pspawn
/// --target ID` and `prelease ID` act through it from another shell, and
/// `palloc --parsable` (detached) works; the registry is a private folder
/// named in `~/.pmix-tools`.
#[test]
fn eight_precreated_registry_folders_take_nothing_away() {
    let pdvm = Pdvm::start(&["--scheduler-nodes", "2"]);
    let d = support::unique_tmpdir("squat8");
    let home = d.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let script = r#"
set -u
for n in "" .1 .2 .3 .4 .5 .6 .7; do
    $AS_TESTER mkdir -m 755 /dev/shm/pmix-tools-holders.0$n || exit 91
done
ls -ln /dev/shm > shm.before
palloc -N 1 --hold --parsable > hold.out 2> hold.err & HP=$!
for i in $(seq 300); do [ -s hold.out ] && break; sleep 0.1; done
ID=$(head -n 1 hold.out)
pspawn --target "$ID" -- echo through-the-holder > spawn.out 2> spawn.err; echo $? > spawn.rc
prelease "$ID" > rel.out 2> rel.err; echo $? > rel.rc
wait $HP; echo $? > hold.rc
ID2=$(palloc -N 1 --parsable 2> parsable.err); echo $? > parsable.rc
echo "$ID2" > parsable.out
prelease "$ID2" > rel2.out 2> rel2.err; echo $? > rel2.rc
cat "$HOME"/.pmix-tools/registry.* > pointer
ls -ln /dev/shm > shm.after
"#;
    let mut c = other_user::in_private_shm(&tool(&pdvm, "palloc"), script);
    c.current_dir(d.path())
        .env("HOME", &home)
        .env_remove("XDG_RUNTIME_DIR");
    let o = run_with_timeout(c.stdin(Stdio::null()), 120);
    let read = |n: &str| std::fs::read_to_string(d.path().join(n)).unwrap_or_default();
    let all = || {
        [
            "shm.before",
            "hold.out",
            "hold.err",
            "spawn.out",
            "spawn.err",
            "rel.err",
            "parsable.err",
            "rel2.err",
            "pointer",
            "shm.after",
        ]
        .iter()
        .map(|n| format!("--- {n}\n{}", read(n)))
        .collect::<Vec<_>>()
        .join("\n")
    };
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), all());
    let squatted = read("shm.before");
    assert_eq!(
        squatted.matches("pmix-tools-holders.0").count(),
        8,
        "{}",
        all()
    );
    assert!(read("hold.out").starts_with("alloc."), "{}", all());
    assert!(
        read("hold.err").contains("from other shells"),
        "the holder must say others can use it: {}",
        all()
    );
    assert!(!read("hold.err").contains("cannot be used"), "{}", all());
    assert_eq!(read("spawn.rc").trim(), "0", "{}", all());
    assert_eq!(read("spawn.out").trim(), "through-the-holder", "{}", all());
    assert_eq!(read("rel.rc").trim(), "0", "{}", all());
    assert_eq!(read("parsable.rc").trim(), "0", "{}", all());
    assert!(read("parsable.out").starts_with("alloc."), "{}", all());
    assert_eq!(read("rel2.rc").trim(), "0", "{}", all());
    // The registry is a private folder of ours with an unguessable name.
    let pointer = read("pointer");
    let named = pointer.trim();
    assert!(
        named.starts_with("/dev/shm/pmix-tools-holders.0.") && named.len() > 30,
        "{}",
        all()
    );
    assert!(read("shm.after").contains(named.trim_start_matches("/dev/shm/")));
}

/// `prelease --cancel NAME` from another shell, then the waiting palloc's
/// exit (10, cancelled).
fn cancel(pdvm: &Pdvm, name: &str, waiting: Child) {
    let mut c = pdvm.tool("prelease");
    c.args(["--cancel", name]);
    let o = run_with_timeout(c.stdin(Stdio::null()), 60);
    assert_eq!(o.status.code(), Some(0), "cancel {name}: {}", show(&o));
    let w = support::wait_output(waiting, Duration::from_secs(30));
    assert_eq!(w.status.code(), Some(10), "palloc -J {name}: {}", show(&w));
}

/// `e/f` and `e_f` used to share one registry name: cancelling one left
/// the other out of reach. Ids of 186–255 bytes were not registered at all.
#[test]
fn requests_named_alike_or_at_the_longest_are_each_cancelled_by_their_id() {
    let pdvm = busy_pdvm();
    let slash = queued_palloc(&pdvm, "e/f");
    let under = queued_palloc(&pdvm, "e_f");
    cancel(&pdvm, "e/f", slash);
    cancel(&pdvm, "e_f", under);
    let long = format!("{}z", "q".repeat(254));
    let waiting = queued_palloc(&pdvm, &long);
    cancel(&pdvm, &long, waiting);
}

/// A loopback listener of the other user's, recording what arrives.
const FAKE_SERVER: &str = r#"
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
got = sys.argv[1]
with open(got + ".port", "w") as f:
    f.write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    c.settimeout(3)
    seen = b""
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            seen += b
    except socket.timeout:
        pass
    with open(got, "ab") as f:
        f.write(b"[conn]" + seen)
    c.close()
"#;

/// A DVM's address on this machine where another user now listens (its
/// port reused after the DVM ended): `pspawn --uri` sends nothing, exits 3
/// and says who listens there.
#[test]
fn a_local_port_of_another_user_receives_nothing() {
    other_user::ensure();
    let d = scratch("fake-server");
    std::fs::write(d.path().join("fake_server.py"), FAKE_SERVER).unwrap();
    let got = d.path().join("got");
    let mut fake = Command::new("setpriv")
        .args(&other_user::as_user_prefix()[1..])
        .arg("/usr/bin/python3")
        .arg(d.path().join("fake_server.py"))
        .arg(&got)
        .stdin(Stdio::null())
        .spawn()
        .expect("setpriv runs");
    let port_file = d.path().join("got.port");
    wait::eventually_within("the fake server listens", Duration::from_secs(20), || {
        std::fs::read_to_string(&port_file).is_ok_and(|p| !p.is_empty())
    });
    let port = std::fs::read_to_string(&port_file).unwrap();
    let uri = format!("gone-dvm@0.0;tcp4://127.0.0.1:{port}");
    let mut c = tool(&Tmpdir(d.path()), "pspawn");
    c.args(["--uri", &uri, "--", "echo", "secret-arg"]);
    let o = run_with_timeout(c.stdin(Stdio::null()), 60);
    // pspawn has closed its end: the fake writes down what it got.
    wait::eventually_within("the fake server's record", Duration::from_secs(20), || {
        std::fs::metadata(&got).is_ok_and(|m| m.len() > 0)
    });
    let _ = fake.kill();
    let _ = fake.wait();
    let seen = String::from_utf8_lossy(&std::fs::read(&got).unwrap_or_default()).into_owned();
    assert!(!seen.contains("secret-arg"), "{seen:?}");
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("refusing the server at"), "{err}");
    assert!(err.contains(other_user::NAME), "{err}");
    // The connection was made and closed at once: not one byte was sent.
    assert_eq!(seen, "[conn]", "{err}");
}

/// A DVM of another user (here root's, as a site's) that does not let the
/// user's tool in: palloc exits 3 saying whose DVM it is and to ask for
/// access or start one's own, not "Start one" as if none ran (issue 46).
#[test]
fn a_dvm_of_another_user_that_refuses_us_says_whose_it_is() {
    other_user::ensure();
    let pdvm = crate::support::pdvm::Pdvm::start(&["--scheduler-nodes", "1"]);
    let d = scratch("foreign-dvm");
    let file = std::fs::read_dir(pdvm.rendezvous_dir())
        .expect("rendezvous folder")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".tool"))
        })
        .expect("a rendezvous file");
    let text_of = std::fs::read_to_string(&file).unwrap();
    let uri = text_of.lines().next().expect("the URI line").to_string();
    let mut c = Command::new("setpriv");
    c.args(&other_user::as_user_prefix()[1..])
        .arg(crate::support::cargo_bin("palloc"))
        .args(["--uri", &uri, "-N", "1", "--", "true"])
        .env("HOME", d.path())
        .env("TMPDIR", d.path())
        .env_remove("XDG_RUNTIME_DIR");
    let o = run_with_timeout(c.stdin(Stdio::null()), 60);
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("runs as uid 0 (root), not as you"), "{err}");
    assert!(err.contains("Ask them for access"), "{err}");
    assert!(!err.contains("Start one"), "{err}");
}
