//! pspawn's usage errors for the options before the program. Options are
//! parsed strictly: an unknown one is a usage error (exit 2) that names the
//! nearest known option, or, for a Slurm/PRRTE habit with no meaning here,
//! says why and what to type instead; every such error says that `--`
//! starts the program.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::CommandFactory;

use super::PspawnArgs;

/// How to start a program whose name begins with `-`, said in every error.
const PROGRAM_HINT: &str =
    "options end at the program's name; `--` starts the program explicitly: \
pspawn [OPTIONS] -- PROGRAM [ARGS…]";

/// Flags from srun/prun that pspawn does not take, with the reason and what
/// to type instead.
const HABITS: &[(&[&str], &str)] = &[
    (
        &["--pty"],
        "a terminal for the job is not a PMIx spawn attribute: pspawn forwards its stdin to \
rank 0 through PMIx IOF (--stdin); for an interactive shell on the nodes, run `palloc` \
alone at a terminal",
    ),
    (
        &["-t", "--time"],
        "pspawn spells a job's time limit --timeout (same forms: a plain number is minutes)",
    ),
    (
        &["-p", "--partition", "-q", "--qos", "-A", "--account"],
        "a partition, QOS or account belongs to the reservation, not the job: give it to \
palloc (`palloc -p QUEUE -- pspawn …`); the DVM has no accounting",
    ),
    (
        &["--mpi"],
        "PMIx is the only wire here: every process gets its PMIx connection from the DVM, \
so there is no MPI plugin to choose",
    ),
    (
        &["-i", "--input"],
        "pspawn forwards its own stdin to the job: redirect it (`pspawn PROGRAM < in.txt`), \
or choose the rank with --stdin RANK|all|none",
    ),
    (
        &["--mem", "--exclusive", "--gres", "-G", "--gpus"],
        "resources are reserved by palloc (`palloc --mem 4G -- pspawn …`), not per job",
    ),
    (
        &["--ntasks"],
        "pspawn spells the number of processes -n/--np (`pspawn -n 4 PROGRAM`)",
    ),
    (
        &["--jobid"],
        "pspawn runs a job in an existing allocation with --target ID (`pspawn --target ID \
PROGRAM`); inside `palloc … -- CMD` that allocation is the default",
    ),
];

/// The habit entry for `flag` (`--export=ALL` is looked up as `--export`).
fn habit(flag: &str) -> Option<&'static str> {
    habit_in(HABITS, flag)
}

/// The entry for `flag` in a tool's `habits` table (`--x=V` is looked up
/// as `--x`).
pub(crate) fn habit_in(habits: &[(&[&str], &'static str)], flag: &str) -> Option<&'static str> {
    let name = flag.split_once('=').map_or(flag, |(k, _)| k);
    habits
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, why)| *why)
}

/// Every option spelling `cmd` takes, `-x` and `--long` forms.
fn known_options(cmd: &clap::Command) -> Vec<String> {
    let mut names = vec!["--help".to_string(), "--version".to_string()];
    for arg in cmd.get_arguments() {
        if let Some(s) = arg.get_short() {
            names.push(format!("-{s}"));
        }
        for s in arg.get_short_and_visible_aliases().unwrap_or_default() {
            names.push(format!("-{s}"));
        }
        for l in arg.get_long_and_visible_aliases().unwrap_or_default() {
            names.push(format!("--{l}"));
        }
    }
    names.sort();
    names.dedup();
    names
}

/// Whether every character of `short` appears in `long`, in order (a
/// tie-break: `--tme` is nearer `--timeout` than `--target`).
fn is_subsequence(short: &str, long: &str) -> bool {
    let mut rest = long.chars();
    short.chars().all(|c| rest.any(|l| l == c))
}

/// The pspawn option nearest to `flag` (see [`nearest_option_of`]).
pub fn nearest_option(flag: &str) -> Option<String> {
    nearest_option_of(&PspawnArgs::command(), flag)
}

/// The option of `cmd` nearest to `flag`: a short one differing only in
/// case, else the long one at the smallest edit distance (at most two
/// thirds of its name's length).
pub fn nearest_option_of(cmd: &clap::Command, flag: &str) -> Option<String> {
    let name = flag.split_once('=').map_or(flag, |(k, _)| k);
    let known = known_options(cmd);
    if !name.starts_with("--") {
        return known
            .into_iter()
            .find(|k| k.len() == 2 && k.eq_ignore_ascii_case(name));
    }
    known
        .into_iter()
        .filter(|k| k.starts_with("--"))
        .map(|k| (strsim::levenshtein(name, &k), !is_subsequence(name, &k), k))
        .filter(|(d, _, k)| *d <= ((k.len() - 2) * 2 / 3).max(2))
        .min()
        .map(|(_, _, k)| k)
}

/// The sentence for an unknown option `flag` before the program.
pub fn unknown_option_message(flag: &str) -> String {
    let advice = match (habit(flag), nearest_option(flag)) {
        (Some(why), _) => why.to_string(),
        (None, Some(near)) => format!("did you mean `{near}`?"),
        (None, None) => "see `pspawn --help` for the options".to_string(),
    };
    format!("unknown option `{flag}` before the program: {advice}\n  {PROGRAM_HINT}")
}

/// Rewrite clap's unknown-argument error into pspawn's own sentence; any
/// other error is returned as is.
pub fn refine(err: clap::Error) -> clap::Error {
    if err.kind() != ErrorKind::UnknownArgument {
        return err;
    }
    let Some(ContextValue::String(flag)) = err.get(ContextKind::InvalidArg) else {
        return err;
    };
    PspawnArgs::command().error(ErrorKind::UnknownArgument, unknown_option_message(flag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest() {
        assert_eq!(nearest_option("--tme").as_deref(), Some("--timeout"));
        assert_eq!(nearest_option("--detatch").as_deref(), Some("--detach"));
        assert_eq!(nearest_option("-X").as_deref(), Some("-x"));
        assert_eq!(nearest_option("--zzzzzzzzzzzz"), None);
    }

    #[test]
    fn habits_are_said() {
        assert!(unknown_option_message("--pty").contains("PMIx"));
        assert!(unknown_option_message("-p").contains("palloc -p"));
        assert!(unknown_option_message("--bogus").contains("`--` starts the program"));
    }
}
