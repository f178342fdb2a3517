//! Parsing plus cross-flag validation in one step, with clap's error format
//! and exit code 2 for both kinds of mistake.

use clap::error::ErrorKind;
use clap::Parser;
use std::ffi::OsString;

/// Checks that need more than one flag, run after clap parsing and before
/// any connection.
pub trait Validate {
    /// `Err(sentence)` names the problem and what to do instead.
    fn validate(&self) -> Result<(), String>;

    /// Turn clap's own parse error into the tool's sentence (default: as is).
    fn refine_error(err: clap::Error) -> clap::Error
    where
        Self: Sized,
    {
        err
    }
}

macro_rules! validate_impl {
    ($($t:ty),*) => {$(
        impl Validate for $t {
            fn validate(&self) -> Result<(), String> {
                <$t>::validate(self)
            }
        }
    )*};
}

validate_impl!(super::PreleaseArgs, super::PwatchArgs, super::PdvmArgs);

impl Validate for super::PallocArgs {
    fn validate(&self) -> Result<(), String> {
        super::PallocArgs::validate(self)
    }

    fn refine_error(err: clap::Error) -> clap::Error {
        super::palloc_usage::refine(err)
    }
}

impl Validate for super::PspawnArgs {
    fn validate(&self) -> Result<(), String> {
        super::PspawnArgs::validate(self)
    }

    fn refine_error(err: clap::Error) -> clap::Error {
        super::pspawn_usage::refine(err)
    }
}

/// Parse `args` (the first is the program name) and validate. A failure of
/// either kind is a `clap::Error` whose `exit_code()` is 2 (or 0 for
/// `--help`/`--version`); `err.exit()` prints it the usual way.
pub fn try_parse_validated<T, I, A>(args: I) -> Result<T, clap::Error>
where
    T: Parser + Validate,
    I: IntoIterator<Item = A>,
    A: Into<OsString> + Clone,
{
    try_parse_validated_with(T::command(), args)
}

/// [`try_parse_validated`] with `cmd`, `T`'s command: a caller that parses
/// many command lines (palloc's agent, a line each) builds it once and
/// passes a clone, since building clap's command costs more than parsing.
pub fn try_parse_validated_with<T, I, A>(mut cmd: clap::Command, args: I) -> Result<T, clap::Error>
where
    T: Parser + Validate,
    I: IntoIterator<Item = A>,
    A: Into<OsString> + Clone,
{
    let mut matches = cmd
        .try_get_matches_from_mut(args)
        .map_err(T::refine_error)?;
    let parsed =
        T::from_arg_matches_mut(&mut matches).map_err(|e| T::refine_error(e.format(&mut cmd)))?;
    parsed
        .validate()
        .map_err(|msg| cmd.error(ErrorKind::ArgumentConflict, msg))?;
    Ok(parsed)
}

/// [`try_parse_validated`] over the process arguments; prints the error and
/// exits (2 for usage errors) on failure.
pub fn parse_validated<T: Parser + Validate>() -> T {
    parse_validated_from(std::env::args_os())
}

/// [`parse_validated`] over `args` (the first is the program name).
pub fn parse_validated_from<T, I, A>(args: I) -> T
where
    T: Parser + Validate,
    I: IntoIterator<Item = A>,
    A: Into<OsString> + Clone,
{
    match try_parse_validated::<T, _, _>(args) {
        Ok(t) => t,
        Err(e) => e.exit(),
    }
}
