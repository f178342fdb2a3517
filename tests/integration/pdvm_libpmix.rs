//! Real libpmix against pdvm: Debian's OpenPMIx 4.2.2 Python binding as a
//! tool (connect by URI, query namespaces, allocation request granted with
//! an allocation id and the request id echoed), as a client launched by
//! pdvm (`PMIx_Init`, an application's allocation request), and Debian's
//! 4.2.2 `pps` tool listing pdvm's namespaces. These FAIL when the peers are
//! missing (`support::debian_pmix_python` / `debian_pmix_tool` panic).

use crate::support;

use crate::support::pdvm::Pdvm;
use crate::support::py::{last_json, libpmix_client_argv, libpmix_tool};
use crate::support::{debian_pmix_tool, run_with_timeout};

#[test]
fn libpmix_tool_queries_and_is_granted_an_allocation() {
    let dvm = Pdvm::start(&["--nodes", "1", "--scheduler-nodes", "2"]);
    let uri =
        pmix_tools::conn::discover::discover(&dvm.opts(), &pmix_tools::conn::discover::ProcessEnv)
            .unwrap()
            .uri
            .to_string();
    let out = run_with_timeout(&mut libpmix_tool(&uri, Some("py-req")), 30);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = last_json(&out.stdout);
    assert_eq!(v["init"], 0, "{v}");
    let me = v["me"]["nspace"].as_str().unwrap_or_default().to_string();
    assert!(
        me.starts_with(&format!("pdvm-{}-{}@", support::short_hostname(), dvm.pid)),
        "{v}"
    );
    assert_eq!(v["query"], 0, "{v}");
    let listed: Vec<String> = v["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| {
            n.as_str()
                .unwrap_or_default()
                .split(',')
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(listed.contains(&me), "{me} not in {listed:?}");
    assert_eq!(v["alloc"], 0, "{v}");
    assert!(
        v["alloc_info"]["pmix.alloc.id"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{v}"
    );
    assert_eq!(v["alloc_info"]["pmix.alloc.reqid"], "py-req", "{v}");
    assert_eq!(v["alloc_info"]["pmix.alloc.nlist"], "s001", "{v}");
    assert_eq!(v["finalize"], 0, "{v}");
}

#[test]
fn libpmix_client_launched_by_pdvm_inits_and_allocates() {
    let tmp = support::unique_tmpdir("pdvm-pyclient");
    let mut cmd = std::process::Command::new(support::cargo_bin("pdvm"));
    support::scrub_pmix_env(&mut cmd);
    cmd.args(["--nodes", "1", "--scheduler-nodes", "1", "--tmpdir"])
        .arg(tmp.path())
        .arg("--")
        .args(libpmix_client_argv());
    let out = run_with_timeout(&mut cmd, 60);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = last_json(&out.stdout);
    assert_eq!(v["init"], 0, "{v}");
    assert_eq!(v["me"]["nspace"], v["env_ns"], "{v}");
    assert_eq!(v["me"]["rank"], 0, "{v}");
    assert_eq!(v["alloc"], 0, "{v}");
    assert!(
        v["alloc_info"]["pmix.alloc.id"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{v}"
    );
    assert_eq!(v["finalize"], 0, "{v}");
}

#[test]
fn libpmix_pps_lists_pdvm_namespaces() {
    let dvm = Pdvm::start(&["--nodes", "1"]);
    let _held = dvm.session();
    let mut cmd = std::process::Command::new(debian_pmix_tool("pps"));
    support::scrub_pmix_env(&mut cmd);
    cmd.arg("--pid")
        .arg(dvm.pid.to_string())
        .env("TMPDIR", dvm.tmpdir.path());
    let out = run_with_timeout(&mut cmd, 30);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("pdvm-{}-{}@1", support::short_hostname(), dvm.pid)),
        "{text}"
    );
}
