//! A job process's environment, prepared for exec.
//!
//! pdvm's own environment (less its PMIx, PRRTE and Open MPI variables,
//! with pdvm's tools first on `PATH`) is turned into exec's form once;
//! each process adds its app's settings and what a PMIx client reads,
//! which win over pdvm's.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString, OsStr, OsString};
use std::path::PathBuf;

use super::spawn::c_pair;
use crate::codec::App;

/// What a launched process needs from the server.
#[derive(Debug)]
pub(crate) struct LaunchEnv {
    /// Server URI (`NSPACE.0;tcp4://…`).
    pub uri: String,
    /// Server tmpdir.
    pub tmpdir: PathBuf,
    /// Directory prepended to PATH (where the tools live).
    pub bin_dir: Option<PathBuf>,
    /// Programs found on PATH lately.
    pub programs: super::programs::ProgramCache,
    /// pdvm's environment as its jobs inherit it.
    pub base: BaseEnv,
}

/// One process to start.
#[derive(Debug)]
pub(crate) struct ProcSpec<'a> {
    /// The app it belongs to.
    pub app: &'a App,
    /// Job namespace.
    pub nspace: &'a str,
    /// Rank.
    pub rank: u32,
    /// Simulated node.
    pub node: &'a str,
    /// `PMIX_ALLOC_ID` when the job targets one reservation.
    pub alloc_id: Option<&'a str>,
    /// Job size.
    pub job_size: u32,
    /// Give it a stdin pipe (else /dev/null).
    pub stdin: bool,
    /// The session leader at a terminal: it gets pdvm's terminal as stdin
    /// and becomes its foreground process group (job control works).
    pub terminal: bool,
}

/// pdvm's environment as a job inherits it, and the PMIx variables that
/// are the same for every process, each built on first use.
#[derive(Debug, Default)]
pub(crate) struct BaseEnv {
    vars: OnceCell<Inherited>,
    pmix: OnceCell<Vec<(&'static str, CString)>>,
}

/// The inherited variables, `(name, "NAME=value")`, and where each name
/// is among them.
#[derive(Debug)]
struct Inherited {
    vars: Vec<(OsString, CString)>,
    index: HashMap<OsString, usize>,
}

impl Inherited {
    /// Whether the inherited `name` is set to `value`: `None` when it is not
    /// inherited, else its place and whether the value is the same.
    fn same(&self, name: &str, value: &str) -> Option<(usize, bool)> {
        let &i = self.index.get(OsStr::new(name))?;
        let pair = self.vars[i].1.to_bytes();
        Some((i, pair.get(name.len() + 1..) == Some(value.as_bytes())))
    }
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
    let vars: Vec<(OsString, CString)> = vars
        .into_iter()
        .filter_map(|(k, v)| c_pair(&k, &v).ok().map(|c| (k, c)))
        .collect();
    let index = vars
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.clone(), i))
        .collect();
    Inherited { vars, index }
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
        k.starts_with("PMIX_")
            && (pmix.iter().any(|(p, _)| *p == k) || procs.iter().any(|(p, _)| *p == k))
    });
    let base = (!env_only).then(|| env.base.get(env.bin_dir.as_ref()));
    let inherited = base.map_or(&[][..], |b| &b.vars[..]);
    // An app's setting equal to the inherited one keeps that (borrowed);
    // one that differs replaces it. (pspawn sends its caller's whole
    // environment, mostly pdvm's own: a big environment costs a lookup a
    // variable, not a comparison with every other.)
    let mut replaced = vec![false; inherited.len()];
    let mut own: Vec<Cow<'a, CStr>> = Vec::new();
    for (k, v) in &app {
        match base.and_then(|b| b.same(k, v)) {
            Some((_, true)) => {}
            found => {
                if let Some((i, _)) = found {
                    replaced[i] = true;
                }
                own.push(Cow::Owned(c_pair(k.as_ref(), v.as_ref())?));
            }
        }
    }
    let mut envp: Vec<Cow<'a, CStr>> =
        Vec::with_capacity(inherited.len() + own.len() + pmix.len() + procs.len());
    // pdvm's own PMIx variables are never inherited, so only the app's
    // settings can replace an inherited one.
    envp.extend(
        inherited
            .iter()
            .zip(&replaced)
            .filter(|(_, r)| !**r)
            .map(|((_, c), _)| Cow::Borrowed(c.as_c_str())),
    );
    envp.extend(own);
    envp.extend(pmix.iter().map(|(_, c)| Cow::Borrowed(c.as_c_str())));
    for (k, v) in &procs {
        envp.push(Cow::Owned(c_pair(k.as_ref(), v.as_ref())?));
    }
    Ok(envp)
}

/// The app's `NAME=value` settings in their order, the last of each name,
/// less those a PMIx variable replaces (`replaced`) and, unless
/// `env_only`, `PATH`.
fn app_vars<'s>(
    spec: &ProcSpec<'s>,
    env_only: bool,
    replaced: impl Fn(&str) -> bool,
) -> Vec<(&'s str, &'s str)> {
    let mut seen = HashSet::with_capacity(spec.app.env.len());
    let mut vars: Vec<(&str, &str)> = Vec::with_capacity(spec.app.env.len());
    for kv in spec.app.env.iter().rev() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        if k.is_empty() || (!env_only && k == "PATH") || replaced(k) || !seen.insert(k) {
            continue;
        }
        vars.push((k, v));
    }
    vars.reverse();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{App, Info};

    fn launch_env() -> LaunchEnv {
        LaunchEnv {
            uri: "pdvm-1@0.0;tcp4://127.0.0.1:1".into(),
            tmpdir: "/tmp/pdvm-test".into(),
            bin_dir: None,
            programs: Default::default(),
            base: BaseEnv::default(),
        }
    }

    fn app(env: &[&str], info: Vec<Info>) -> App {
        App {
            cmd: "true".into(),
            argv: vec!["true".into()],
            env: env.iter().map(|s| s.to_string()).collect(),
            cwd: None,
            maxprocs: 1,
            info,
        }
    }

    /// Process `app`'s environment as `NAME=value` strings.
    fn env_of(app: &App, launch: &LaunchEnv) -> Vec<String> {
        let spec = ProcSpec {
            app,
            nspace: "job@1",
            rank: 0,
            node: "node0",
            alloc_id: None,
            job_size: 1,
            stdin: false,
            terminal: false,
        };
        job_env(&spec, launch)
            .unwrap()
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect()
    }

    fn values<'e>(env: &'e [String], name: &str) -> Vec<&'e str> {
        let prefix = format!("{name}=");
        env.iter()
            .filter_map(|kv| kv.strip_prefix(&prefix))
            .collect()
    }

    /// A variable of this process that a job inherits (not PATH or PMIx's).
    fn inherited_name() -> (String, String) {
        std::env::vars()
            .find(|(k, _)| k != "PATH" && !is_pmix_own(k.as_ref()))
            .expect("a variable in the test's environment")
    }

    #[test]
    fn an_apps_settings_replace_or_keep_the_inherited_ones_once_each() {
        let launch = launch_env();
        let (name, value) = inherited_name();
        let same = format!("{name}={value}");
        let env = env_of(&app(&[&same, "A=1", "A=2", "B=x"], vec![]), &launch);
        assert_eq!(values(&env, &name), [value.as_str()], "kept once");
        assert_eq!(values(&env, "A"), ["2"], "the last setting wins");
        assert_eq!(values(&env, "B"), ["x"]);
        let changed = format!("{name}=changed");
        let env = env_of(&app(&[&changed], vec![]), &launch);
        assert_eq!(values(&env, &name), ["changed"], "replaced, once");
    }

    #[test]
    fn pmix_variables_and_pdvms_path_win_over_the_apps() {
        let launch = launch_env();
        let a = app(&["PMIX_RANK=7", "PMIX_VERSION=1", "PATH=/nowhere"], vec![]);
        let env = env_of(&a, &launch);
        assert_eq!(values(&env, "PMIX_RANK"), ["0"]);
        assert_eq!(values(&env, "PMIX_NAMESPACE"), ["job@1"]);
        assert_eq!(values(&env, "PMIX_VERSION").len(), 1);
        assert_ne!(values(&env, "PMIX_VERSION"), ["1"]);
        assert_eq!(values(&env, "PMIX_SERVER_URI41"), [launch.uri.as_str()]);
        assert_eq!(values(&env, "PATH").len(), 1);
        assert_ne!(values(&env, "PATH"), ["/nowhere"]);
    }

    #[test]
    fn export_none_gives_only_the_apps_settings_and_pmixs() {
        let launch = launch_env();
        let (name, _) = inherited_name();
        let none = vec![Info::new(crate::proto::keys::ENV_NONE, true)];
        let env = env_of(&app(&["PATH=/only", "C=3"], none), &launch);
        assert!(values(&env, &name).is_empty(), "{name} not inherited");
        assert_eq!(values(&env, "PATH"), ["/only"]);
        assert_eq!(values(&env, "C"), ["3"]);
        assert_eq!(values(&env, "PMIX_RANK"), ["0"]);
    }
}
