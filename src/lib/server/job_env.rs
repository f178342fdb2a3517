//! A job process's environment, prepared for exec.
//!
//! pdvm's own environment (less its PMIx, PRRTE and Open MPI variables,
//! with pdvm's tools first on `PATH`) is turned into exec's form once;
//! each process adds its app's settings and what a PMIx client reads,
//! which win over pdvm's.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::path::PathBuf;

use super::jobs::{LaunchEnv, ProcSpec};
use super::spawn::c_pair;

/// pdvm's environment as a job inherits it, and the PMIx variables that
/// are the same for every process, each built on first use.
#[derive(Debug, Default)]
pub(crate) struct BaseEnv {
    vars: OnceCell<Inherited>,
    pmix: OnceCell<Vec<(&'static str, CString)>>,
}

/// The inherited variables, `(name, "NAME=value")`.
#[derive(Debug)]
struct Inherited {
    vars: Vec<(OsString, CString)>,
}

impl BaseEnv {
    fn get(&self, bin_dir: Option<&PathBuf>) -> &Inherited {
        self.vars.get_or_init(|| inherited(bin_dir))
    }

    /// What a PMIx client reads that is this server's, not the process's:
    /// `(name, "NAME=value")`.
    fn pmix(&self, env: &LaunchEnv) -> &[(&'static str, CString)] {
        self.pmix.get_or_init(|| {
            let tmpdir = env.tmpdir.as_os_str();
            let mut v: Vec<(&'static str, &OsStr)> = vec![
                ("PMIX_SERVER_TMPDIR", tmpdir),
                ("PMIX_VERSION", super::listener::ANNOUNCED_VERSION.as_ref()),
                ("PMIX_SECURITY_MODE", "native".as_ref()),
                (
                    "PMIX_BFROP_BUFFER_TYPE",
                    "PMIX_BFROP_BUFFER_NON_DESC".as_ref(),
                ),
                ("PMIX_GDS_MODULE", "hash".as_ref()),
                ("PMIX_PTL_MODULE", "tcp".as_ref()),
            ];
            for k in crate::proto::keys::SERVER_URI_VARS {
                v.push((k, env.uri.as_ref()));
            }
            v.into_iter()
                .filter_map(|(k, val)| c_pair(k.as_ref(), val).ok().map(|c| (k, c)))
                .collect()
        })
    }
}

/// pdvm's variables a job inherits, with `bin_dir` first on `PATH`; a
/// variable that cannot be passed (a NUL byte) is left out.
fn inherited(bin_dir: Option<&PathBuf>) -> Inherited {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !is_pmix_own(k))
        .filter(|(k, _)| k != "PATH")
        .collect();
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(d) = bin_dir {
        let mut all = vec![d.clone()];
        all.extend(std::env::split_paths(&path));
        path = std::env::join_paths(all).unwrap_or(path);
    }
    vars.push(("PATH".into(), path));
    let vars = vars
        .into_iter()
        .filter_map(|(k, v)| c_pair(&k, &v).ok().map(|c| (k, c)))
        .collect();
    Inherited { vars }
}

/// A PMIx, PRRTE or Open MPI variable: never inherited from pdvm (a job
/// gets its own).
fn is_pmix_own(k: &OsStr) -> bool {
    let k = k.as_encoded_bytes();
    k.starts_with(b"PMIX_") || k.starts_with(b"PRTE_") || k.starts_with(b"OMPI_")
}

/// The environment of process `spec`: pdvm's (none under `--export=NONE`),
/// then the app's settings, then what a PMIx client reads; a later
/// setting of a name replaces an earlier one. Unless `--export=NONE`,
/// pdvm's `PATH` (its tools first) wins over the app's. What is the same
/// for every process is built once and borrowed.
pub(crate) fn job_env<'a>(
    spec: &ProcSpec,
    env: &'a LaunchEnv,
) -> std::io::Result<Vec<Cow<'a, CStr>>> {
    let env_only = spec
        .app
        .info
        .iter()
        .any(|i| i.key == crate::proto::keys::ENV_NONE && crate::codec::helpers::info_true(i));
    let pmix = env.base.pmix(env);
    let procs = proc_vars(spec);
    let app = app_vars(spec, env_only, |k| {
        pmix.iter().any(|(p, _)| *p == k) || procs.iter().any(|(p, _)| *p == k)
    });
    let base = (!env_only).then(|| env.base.get(env.bin_dir.as_ref()));
    let inherited = base.map_or(&[][..], |b| &b.vars[..]);
    let mut envp: Vec<Cow<'a, CStr>> =
        Vec::with_capacity(inherited.len() + app.len() + pmix.len() + procs.len());
    // pdvm's own PMIx variables are never inherited, so only the app's
    // settings can replace an inherited one.
    envp.extend(
        inherited
            .iter()
            .filter(|(k, _)| !app.iter().any(|(a, _)| OsStr::new(a) == k))
            .map(|(_, c)| Cow::Borrowed(c.as_c_str())),
    );
    for (k, v) in &app {
        envp.push(Cow::Owned(c_pair(k.as_ref(), v.as_ref())?));
    }
    envp.extend(pmix.iter().map(|(_, c)| Cow::Borrowed(c.as_c_str())));
    for (k, v) in &procs {
        envp.push(Cow::Owned(c_pair(k.as_ref(), v.as_ref())?));
    }
    Ok(envp)
}

/// The app's `NAME=value` settings, the last of each name, less those a
/// PMIx variable replaces (`replaced`) and, unless `env_only`, `PATH`.
fn app_vars<'s>(
    spec: &ProcSpec<'s>,
    env_only: bool,
    replaced: impl Fn(&str) -> bool,
) -> Vec<(&'s str, &'s str)> {
    let mut vars: Vec<(&str, &str)> = Vec::with_capacity(spec.app.env.len());
    for kv in &spec.app.env {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        if k.is_empty() || (!env_only && k == "PATH") || replaced(k) {
            continue;
        }
        vars.retain(|(o, _)| *o != k);
        vars.push((k, v));
    }
    vars
}

/// What a PMIx client reads that is this process's own.
fn proc_vars(spec: &ProcSpec) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("PMIX_NAMESPACE", spec.nspace.to_string()),
        ("PMIX_RANK", spec.rank.to_string()),
        ("PMIX_HOSTNAME", spec.node.to_string()),
        ("PMIX_JOB_SIZE", spec.job_size.to_string()),
    ];
    if let Some(a) = spec.alloc_id {
        v.push(("PMIX_ALLOC_ID", a.to_string()));
    }
    v
}
