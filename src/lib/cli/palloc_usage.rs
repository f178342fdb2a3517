//! palloc's usage errors for a flag it does not take: a Slurm habit
//! (salloc/sbatch/srun) says what the palloc (or pspawn) equivalent is,
//! another unknown flag names the nearest known one. Refused at parsing,
//! before any connection (exit 2).

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::CommandFactory;

use super::pspawn_usage::{habit_in, nearest_option_of};
use super::PallocArgs;

/// Flags from salloc/sbatch/srun that palloc does not take, with what to
/// type instead.
const HABITS: &[(&[&str], &str)] = &[
    (
        &["-x", "--export"],
        "palloc runs CMD with your own environment; a job's environment is pspawn's: \
`palloc -N 1 -- pspawn -x VAR=VALUE PROGRAM` (or --export=…)",
    ),
    (
        &["--signal"],
        "palloc --warn-timeout DURATION asks the DVM for a warning that long before the time \
limit (salloc's --signal=SIG@TIME): `palloc -t 1h --warn-timeout 60s -- CMD` prints it; `pwatch \
--alloc ID --event timeout-warning --exec CMD` runs a command then",
    ),
    (
        &["-n", "--ntasks", "--ntasks-per-node"],
        "palloc reserves nodes (-N) and CPUs (-c); the number of processes is the job's: \
`palloc -N 1 -- pspawn -n 4 PROGRAM`",
    ),
    (
        &["--wait", "-W"],
        "palloc -- SCRIPT already waits for SCRIPT and returns its exit code (as sbatch --wait); \
--no-wait submits and returns at once",
    ),
    (
        &["-e", "--error"],
        "palloc -- CMD writes to your terminal or redirections (`palloc -- CMD > out.txt`), \
`palloc --no-wait -- SCRIPT` to its own log; for a job's files per rank: `pspawn -o PATTERN`",
    ),
    (
        &["-D", "--chdir"],
        "palloc runs CMD in your current directory: `cd DIR && palloc … -- CMD`; a job's \
directory is pspawn's: `pspawn -D DIR PROGRAM`",
    ),
    (
        &["--jobid"],
        "an existing allocation is reached by its id: `pspawn --target ID PROGRAM` runs in it, \
`palloc --extend ID -t MORE` extends it, `prelease ID` releases it",
    ),
];

/// The sentence for an unknown option `flag`.
pub fn unknown_option_message(flag: &str) -> String {
    match (
        habit_in(HABITS, flag),
        nearest_option_of(&PallocArgs::command(), flag),
    ) {
        (Some(why), _) => format!("palloc does not take `{flag}`: {why}"),
        (None, Some(near)) => format!("unknown option `{flag}`: did you mean `{near}`?"),
        (None, None) => format!("unknown option `{flag}`: see `palloc --help` for the options"),
    }
}

/// Rewrite clap's unknown-argument error into palloc's own sentence; any
/// other error is returned as is.
pub fn refine(err: clap::Error) -> clap::Error {
    if err.kind() != ErrorKind::UnknownArgument {
        return err;
    }
    let Some(ContextValue::String(flag)) = err.get(ContextKind::InvalidArg) else {
        return err;
    };
    PallocArgs::command().error(ErrorKind::UnknownArgument, unknown_option_message(flag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_habits_name_the_equivalent() {
        assert!(unknown_option_message("--signal=USR1@60").contains("--warn-timeout"));
        assert!(unknown_option_message("-n").contains("pspawn -n"));
        assert!(unknown_option_message("--wiat").contains("did you mean"));
    }
}
