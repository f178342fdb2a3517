//! `pspawn --export=ALL|NONE|VAR[,VAR…]` (srun's spelling) and the `-x VAR`
//! check: which of the caller's environment variables a job gets.
//!
//! ALL (the default, as srun's) gives the job the caller's environment,
//! except the variables whose prefix is in [`LEFT_OUT`]: those describe
//! the caller's own PMIx connection and identity (`PMIX_SERVER_URI*`,
//! `PMIX_NAMESPACE`, `PMIX_RANK`, `PMIX_ALLOC_ID`, our holder's
//! `PMIX_TOOLS_HOLDER`) or a PRRTE/Open MPI launch (`PRTE_*`, `OMPI_*`).
//! The DVM gives each process its own; the caller's copy would make the
//! job's processes talk as the caller.
//!
//! When pspawn's own stdout is not a terminal (a log, a pipe), ALL gives
//! the job `TERM=dumb` instead of the caller's `TERM`: PRRTE built with pty
//! support (its default, and no run-time switch turns it off) gives a
//! job's stdout a pseudo-terminal, and programs that see one colour their
//! output unless `TERM` is `dumb`, filling the log with escape codes. A
//! `TERM` named with `-x` or `--export=TERM` is sent as given.

use super::parse::{parse_env, EnvSpec};
use super::request::AppSpec;

/// Prefixes of the variables `--export=ALL` leaves out (see the module doc).
pub const LEFT_OUT: [&str; 3] = ["PMIX_", "PRTE_", "OMPI_"];

/// The `TERM` `--export=ALL` sends when pspawn's stdout is not a terminal.
pub const TERM_FOR_A_LOG: &str = "dumb";

/// Which of the caller's variables the job gets, besides `-x`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Export {
    /// The caller's whole environment, but for [`LEFT_OUT`].
    #[default]
    All,
    /// Only what `-x` names.
    None,
    /// These variables (forwarded as `-x VAR` would), and what `-x` names.
    Vars(Vec<EnvSpec>),
}

/// Parse `ALL`, `NONE` (any case) or a comma list of `VAR` / `VAR=VAL`.
pub fn parse_export(s: &str) -> Result<Export, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("all") {
        return Ok(Export::All);
    }
    if t.eq_ignore_ascii_case("none") {
        return Ok(Export::None);
    }
    let vars = t
        .split(',')
        .map(|v| parse_env(v.trim()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--export {s}: expected ALL, NONE or VAR[=VAL][,…]: {e}"))?;
    Ok(Export::Vars(vars))
}

/// Whether `name` is one `--export=ALL` leaves out.
pub fn left_out(name: &str) -> bool {
    LEFT_OUT.iter().any(|p| name.starts_with(p))
}

/// A `-x VAR` (or `--export=VAR`) with no value forwards the caller's
/// variable: refuse one that is not set here, where it would silently be
/// dropped.
pub fn check_forwarded(specs: &[EnvSpec]) -> Result<(), String> {
    for e in specs.iter().filter(|e| e.value.is_none()) {
        if std::env::var_os(&e.name).is_none() {
            return Err(format!(
                "-x {0}: {0} is not set in this environment, so there is nothing to forward; \
give it a value (-x {0}=VALUE) or set it first",
                e.name
            ));
        }
    }
    Ok(())
}

/// Put the exported variables first in each app's environment (its own
/// `-x` entries, which come after, win: a name given with `-x` is not
/// exported again).
pub fn apply(export: &Export, apps: &mut [AppSpec]) -> Result<(), String> {
    let exported: Vec<EnvSpec> = match export {
        Export::None => {
            for app in apps {
                app.env_only = true;
            }
            return Ok(());
        }
        Export::Vars(v) => {
            check_forwarded(v)?;
            v.clone()
        }
        Export::All => {
            let to_a_log = !std::io::IsTerminal::is_terminal(&std::io::stdout());
            std::env::vars()
                .filter(|(k, _)| !left_out(k))
                .map(|(name, value)| {
                    let value = match name.as_str() {
                        "TERM" if to_a_log => TERM_FOR_A_LOG.to_string(),
                        _ => value,
                    };
                    EnvSpec {
                        name,
                        value: Some(value),
                    }
                })
                .collect()
        }
    };
    for app in apps {
        let own: Vec<EnvSpec> = std::mem::take(&mut app.env);
        let mut env: Vec<EnvSpec> = exported
            .iter()
            .filter(|e| !own.iter().any(|o| o.name == e.name))
            .cloned()
            .collect();
        env.extend(own);
        app.env = env;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse_export("ALL"), Ok(Export::All));
        assert_eq!(parse_export("none"), Ok(Export::None));
        match parse_export("A,B=1") {
            Ok(Export::Vars(v)) => {
                assert_eq!(v.len(), 2);
                assert_eq!(v[1].value.as_deref(), Some("1"));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_export("A,,B").is_err());
        assert!(left_out("PMIX_SERVER_URI41") && !left_out("PATH"));
    }
}
