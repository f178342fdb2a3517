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

/// pdvm's environment as a job inherits it, built on first use.
#[derive(Debug, Default)]
pub(crate) struct BaseEnv {
    vars: OnceCell<Inherited>,
}

/// The inherited variables, `(name, "NAME=value")`, and `PATH`'s value.
#[derive(Debug)]
struct Inherited {
    vars: Vec<(OsString, CString)>,
    path: OsString,
}

impl BaseEnv {
    fn get(&self, bin_dir: Option<&PathBuf>) -> &Inherited {
        self.vars.get_or_init(|| inherited(bin_dir))
    }
}

/// pdvm's variables a job inherits, with `bin_dir` first on `PATH`; a
/// variable that cannot be passed (a NUL byte) is left out.
fn inherited(bin_dir: Option<&PathBuf>) -> Inherited {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.as_encoded_bytes();
            !(k.starts_with(b"PMIX_") || k.starts_with(b"PRTE_") || k.starts_with(b"OMPI_"))
        })
        .filter(|(k, _)| k != "PATH")
        .collect();
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(d) = bin_dir {
        let mut all = vec![d.clone()];
        all.extend(std::env::split_paths(&path));
        path = std::env::join_paths(all).unwrap_or(path);
    }
    vars.push(("PATH".into(), path.clone()));
    let vars = vars
        .into_iter()
        .filter_map(|(k, v)| c_pair(&k, &v).ok().map(|c| (k, c)))
        .collect();
    Inherited { vars, path }
}

/// One process's environment: exec's `NAME=value` strings, and the `PATH`
/// its program is looked up on when pdvm did not find it.
pub(crate) struct JobEnv<'a> {
    /// Every variable.
    pub envp: Vec<Cow<'a, CStr>>,
    /// Its `PATH`, if it has one.
    pub path: Option<OsString>,
}

/// The environment of process `spec`: pdvm's (none under `--export=NONE`),
/// then the app's settings, then what a PMIx client reads.
pub(crate) fn job_env<'a>(spec: &ProcSpec, env: &'a LaunchEnv) -> std::io::Result<JobEnv<'a>> {
    let env_only = spec
        .app
        .info
        .iter()
        .any(|i| i.key == crate::proto::keys::ENV_NONE && crate::codec::helpers::info_true(i));
    let own = own_vars(spec, env, env_only);
    let base = (!env_only).then(|| env.base.get(env.bin_dir.as_ref()));
    let overridden = |k: &OsStr| own.iter().any(|(o, _)| o == k);
    let path = match base {
        Some(b) => Some(b.path.clone()),
        None => own
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone()),
    };
    let mut envp: Vec<Cow<'a, CStr>> = base
        .map_or(&[][..], |b| &b.vars[..])
        .iter()
        .filter(|(k, _)| !overridden(k))
        .map(|(_, c)| Cow::Borrowed(c.as_c_str()))
        .collect();
    for (k, v) in &own {
        envp.push(Cow::Owned(c_pair(k, v)?));
    }
    Ok(JobEnv { envp, path })
}

/// The app's settings, then the PMIx client's variables; a later setting
/// of a name replaces an earlier one. Unless `env_only`, pdvm's `PATH`
/// (its tools first) wins over the app's.
fn own_vars(spec: &ProcSpec, env: &LaunchEnv, env_only: bool) -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> = Vec::with_capacity(spec.app.env.len() + 16);
    let mut set = |k: &str, v: OsString| {
        vars.retain(|(o, _)| o != k);
        vars.push((k.into(), v));
    };
    for kv in &spec.app.env {
        if let Some((k, v)) = kv.split_once('=') {
            if !k.is_empty() && (env_only || k != "PATH") {
                set(k, v.into());
            }
        }
    }
    set("PMIX_NAMESPACE", spec.nspace.into());
    set("PMIX_RANK", spec.rank.to_string().into());
    set("PMIX_SERVER_TMPDIR", env.tmpdir.clone().into());
    set("PMIX_VERSION", super::listener::ANNOUNCED_VERSION.into());
    set("PMIX_HOSTNAME", spec.node.into());
    set("PMIX_SECURITY_MODE", "native".into());
    set(
        "PMIX_BFROP_BUFFER_TYPE",
        "PMIX_BFROP_BUFFER_NON_DESC".into(),
    );
    set("PMIX_GDS_MODULE", "hash".into());
    set("PMIX_PTL_MODULE", "tcp".into());
    set("PMIX_JOB_SIZE", spec.job_size.to_string().into());
    for k in crate::proto::keys::SERVER_URI_VARS {
        set(k, env.uri.clone().into());
    }
    if let Some(a) = spec.alloc_id {
        set("PMIX_ALLOC_ID", a.into());
    }
    vars
}
