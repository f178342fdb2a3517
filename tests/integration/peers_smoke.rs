//! The real peers are installed and usable: the wheel's PRRTE 3.0.14 DVM
//! starts and publishes its rendezvous files, Debian's OpenPMIx 4.2.2 tools
//! talk to it, and Debian's python3 has the `pmix` binding.
//!
//! Observed on Debian 12 (libpmix-bin 4.2.2-1+deb12u1): `/usr/bin/pquery`
//! dies with SIGFPE inside `pmix_init_registered_attrs()` (a division in
//! `pmix_pointer_array_set_item`) before it calls `PMIx_tool_init`, with or
//! without any server around: it is a crash of that tool, not a protocol
//! mismatch with PRRTE 3.0.14. `/usr/bin/pps` from the same package
//! connects to the DVM and runs the namespace query, so the 4.2.2 tool side
//! is exercised through `pps` and through the 4.2.2 Python binding run as a
//! tool (connect, namespace query, allocation request refused with
//! `PMIX_ERR_NOT_SUPPORTED`). [`pquery_crashes_before_connecting`] pins
//! that down and turns into a real connection check once pquery is fixed.

use crate::support;

use std::fs;
use std::net::TcpStream;
use std::os::unix::process::ExitStatusExt;
use std::process::Output;
use std::time::Duration;

use crate::support::py::libpmix_tool_args;
use crate::support::{debian_pmix_python, debian_pmix_tool, run_with_timeout, Prte, ToolHost};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Namespaces listed by `pps` ("Active nspaces: a,b,c").
fn pps_namespaces(out: &Output) -> Vec<String> {
    text(out)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Active nspaces:"))
        .map(|list| {
            list.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

crate::prrte_3_test! {
    fn prte_reports_uri_and_writes_rendezvous_files() {
        let dvm = Prte::start();
        eprintln!(
            "DVM pid {} nspace {} rank {} uri {} version {}",
            dvm.pid, dvm.server_nspace, dvm.rank, dvm.uri, dvm.version
        );

        // uri file: "prte-<host>-<pid>@0.0;tcp4://127.0.0.1:PORT" then "v5.0.11…".
        let host = support::short_hostname();
        assert_eq!(dvm.server_nspace, format!("prte-{host}-{}@0", dvm.pid));
        assert_eq!(dvm.rank, 0);
        assert!(
            dvm.uri.starts_with("tcp4://127.0.0.1:"),
            "uri {:?}",
            dvm.uri
        );
        assert_ne!(dvm.port(), 0);
        assert!(
            dvm.version.starts_with("v5.0.11"),
            "version {:?}",
            dvm.version
        );
        let uri_text = fs::read_to_string(dvm.uri_file()).expect("uri file");
        assert_eq!(uri_text, format!("{}\n{}\n", dvm.full_uri(), dvm.version));

        // The server really listens there.
        TcpStream::connect_timeout(&([127, 0, 0, 1], dvm.port()).into(), Duration::from_secs(2))
            .expect("DVM accepts TCP connections on its uri port");

        // Rendezvous files: pmix.<host>.tool, .tool.<pid>, .tool.<nspace>.
        let dir = dvm.rendezvous_dir();
        let names: Vec<String> = dvm
            .rendezvous_files()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let mut expected = vec![
            format!("pmix.{host}.tool"),
            format!("pmix.{host}.tool.{}", dvm.pid),
            format!("pmix.{host}.tool.{}", dvm.server_nspace),
        ];
        expected.sort();
        assert_eq!(names, expected, "in {}", dir.display());

        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        for file in dvm.rendezvous_files() {
            let body = fs::read_to_string(&file).expect("rendezvous file readable");
            let lines: Vec<&str> = body.lines().collect();
            assert!(lines.len() >= 5, "{}: {body:?}", file.display());
            assert_eq!(lines[0], dvm.full_uri(), "{}", file.display());
            assert_eq!(lines[1], dvm.version.trim_start_matches('v'));
            assert_eq!(lines[2], dvm.pid.to_string());
            assert_eq!(lines[3], format!("{uid}:{gid}"));
            assert!(
                !lines[4].is_empty(),
                "start time line in {}",
                file.display()
            );
        }
    }
}

crate::prrte_3_test! {
    fn prte_stops_and_cleans_up_on_drop() {
        let dvm = Prte::start();
        let (pid, tmpdir) = (dvm.pid, dvm.tmpdir.clone());
        assert!(dvm.rendezvous_dir().is_dir());
        drop(dvm);
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok();
        assert!(!alive, "prte {pid} still running after drop");
        assert!(!tmpdir.exists(), "{} left behind", tmpdir.display());
    }
}

crate::prrte_3_test! {
    fn parallel_dvms_are_isolated() {
        let a = Prte::start();
        let b = Prte::start();
        assert_ne!(a.tmpdir, b.tmpdir);
        assert_ne!(a.port(), b.port());
        let only_own = |dvm: &Prte| {
            let entries: Vec<String> = fs::read_dir(&dvm.tmpdir)
                .expect("tmpdir")
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("prte."))
                .filter(|n| n != "prte.out" && n != "prte.err")
                .collect();
            assert_eq!(entries, vec![format!("prte.{}", dvm.pid)]);
        };
        only_own(&a);
        only_own(&b);
    }
}

crate::prrte_3_test! {
    /// Debian's OpenPMIx 4.2.2 `pps` connects to PRRTE 3.0.14 by each route a
    /// 4.2.2 tool offers and runs the namespace query.
    fn debian_pps_connects_and_queries_namespaces() {
        let dvm = Prte::start();
        let pps = debian_pmix_tool("pps");
        let routes: [(&str, Vec<String>); 4] = [
            ("--uri", vec!["--uri".into(), dvm.full_uri()]),
            (
                "--uri file:",
                vec!["--uri".into(), format!("file:{}", dvm.uri_file().display())],
            ),
            ("--pid", vec!["--pid".into(), dvm.pid.to_string()]),
            ("TMPDIR search", vec![]),
        ];
        let prefix = format!("{}@", dvm.server_nspace.trim_end_matches("@0"));
        let mut seen_before: Vec<String> = Vec::new();
        for (route, args) in routes {
            let out = run_with_timeout(dvm.tool_command(&pps).args(&args), 30);
            eprintln!("pps {route}: {}", text(&out).trim());
            assert!(
                out.status.success(),
                "pps via {route} failed: {}\n{}\n{}",
                out.status,
                text(&out),
                dvm.logs()
            );
            let nspaces = pps_namespaces(&out);
            assert!(
                !nspaces.is_empty(),
                "pps via {route} listed no namespace: {}",
                text(&out)
            );
            assert!(
                nspaces.iter().all(|n| n.starts_with(&prefix)),
                "pps via {route}: namespaces {nspaces:?} not from DVM {}",
                dvm.server_nspace
            );
            // Each tool gets a fresh namespace that stays listed afterwards.
            assert!(nspaces.len() > seen_before.len(), "{route}: {nspaces:?}");
            assert!(
                seen_before.iter().all(|n| nspaces.contains(n)),
                "{route}: {nspaces:?}"
            );
            seen_before = nspaces;
        }
    }
}

crate::prrte_3_test! {
    /// See the module doc: Debian's pquery 4.2.2 crashes (SIGFPE) in its own
    /// start-up. The test proves the crash does not depend on the server; if a
    /// fixed pquery exits normally, it must have connected and listed the DVM's
    /// namespaces.
    fn pquery_crashes_before_connecting() {
        let dvm = Prte::start();
        let pquery = debian_pmix_tool("pquery");
        let with_dvm = run_with_timeout(
            dvm.tool_command(&pquery)
                .args(["--uri", &dvm.full_uri(), "pmix.qry.ns"]),
            30,
        );
        eprintln!(
            "pquery --uri {} pmix.qry.ns: {} {:?}",
            dvm.full_uri(),
            with_dvm.status,
            text(&with_dvm)
        );
        match with_dvm.status.signal() {
            Some(sig) => {
                assert_eq!(
                    sig,
                    libc_sigfpe(),
                    "pquery killed by signal {sig}, expected SIGFPE"
                );
                // Same crash with nothing to connect to: a client-side bug.
                let empty = support::unique_tmpdir("noserver");
                let mut cmd = std::process::Command::new(&pquery);
                support::scrub_pmix_env(&mut cmd).env("TMPDIR", empty.path());
                let alone = run_with_timeout(cmd.arg("pmix.qry.ns"), 30);
                assert_eq!(
                    alone.status.signal(),
                    Some(libc_sigfpe()),
                    "pquery without a server: {} {}",
                    alone.status,
                    text(&alone)
                );
            }
            None => {
                assert!(with_dvm.status.success(), "pquery: {}", text(&with_dvm));
                assert!(
                    text(&with_dvm).contains(&dvm.server_nspace.replace("@0", "@")),
                    "pquery output lacks the DVM's namespaces: {}",
                    text(&with_dvm)
                );
            }
        }
    }
}

fn libc_sigfpe() -> i32 {
    nix::sys::signal::Signal::SIGFPE as i32
}

#[test]
fn debian_python_has_pmix_4_2_2() {
    let python = debian_pmix_python();
    let out = run_with_timeout(
        std::process::Command::new(&python).args([
            "-W",
            "ignore",
            "-c",
            "import pmix; print(pmix.PMIxTool().get_version().decode())",
        ]),
        30,
    );
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    eprintln!("{} pmix: {version}", python.display());
    assert!(out.status.success(), "{}", text(&out));
    assert!(version.starts_with("OpenPMIx 4.2.2"), "version {version:?}");
}

crate::prrte_3_test! {
    /// Debian's OpenPMIx 4.2.2 Python binding, as a tool, connects to PRRTE
    /// 3.0.14 by URI, queries namespaces, and gets `PMIX_ERR_NOT_SUPPORTED`
    /// (-47) for an allocation request: 3.0 has no reservation support.
    fn debian_python_tool_queries_and_is_refused_allocation() {
        let dvm = Prte::start();
        let out = run_with_timeout(
            dvm.tool_command(debian_pmix_python())
                .args(libpmix_tool_args(&dvm.full_uri(), None)),
            30,
        );
        eprintln!("python3-pmix tool: {}", text(&out).trim());
        assert!(out.status.success(), "{}\n{}", text(&out), dvm.logs());
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().last().unwrap_or_default();
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out)));
        assert_eq!(v["init"], 0, "{v}");
        let me = v["me"]["nspace"].as_str().unwrap_or_default();
        let prefix = format!("{}@", dvm.server_nspace.trim_end_matches("@0"));
        assert!(
            me.starts_with(&prefix),
            "tool nspace {me:?}, DVM {}",
            dvm.server_nspace
        );
        assert_ne!(me, dvm.server_nspace);
        assert_eq!(v["query"], 0, "{v}");
        let listed = v["namespaces"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        assert!(listed.split(',').any(|n| n == me), "{me} not in {listed:?}");
        assert_eq!(v["alloc"], -47, "{v}");
        assert_eq!(v["alloc_name"], "NOT-SUPPORTED", "{v}");
        assert_eq!(v["finalize"], 0, "{v}");
    }
}

/// The harness's time-out kills the whole process group (a grandchild
/// holding the output pipes included) and reports what was printed.
#[test]
fn harness_timeout_kills_process_group() {
    let start = std::time::Instant::now();
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", "echo started; sleep 30 & sleep 30"]);
    let out = support::try_run_with_timeout(&mut cmd, Duration::from_millis(500))
        .expect_err("must time out");
    // Only killing the group (both sleeps hold the pipes) ends it before
    // the sleeps' own 30 s.
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
    assert_eq!(
        out.status.signal(),
        Some(nix::sys::signal::Signal::SIGKILL as i32)
    );
}

/// `cargo_bin` finds this package's binaries as cargo built them for the run.
#[test]
fn harness_finds_package_binaries() {
    for name in ["palloc", "pspawn", "prelease", "pwatch", "pdvm"] {
        let bin = support::cargo_bin(name);
        assert_eq!(bin.file_name().and_then(|n| n.to_str()), Some(name));
        let meta = fs::metadata(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        assert!(meta.is_file() && meta.len() > 0, "{}", bin.display());
    }
}
