//! `palloc`: see `man palloc` or `palloc --help`; the run logic is
//! [`pmix_tools::app::palloc`].

use std::process::ExitCode;

use pmix_tools::app::palloc::Role;
use pmix_tools::cli::{parse_validated_from, PallocArgs};

mod tool_main;

fn main() -> ExitCode {
    // First, while one thread runs (see their docs): a palloc an agent
    // started ahead waits for its job; a detached palloc adopts its pipe
    // before any descriptor of ours is opened.
    let given = match pmix_tools::app::palloc::await_job() {
        Role::Plain => std::env::args_os().collect(),
        Role::Job(argv) => argv,
        Role::Unused => return ExitCode::SUCCESS,
    };
    pmix_tools::app::palloc::adopt_inherited_pipe();
    // A batch script's `#PALLOC`/`#SBATCH` lines, where the command line
    // sets no value (see its doc).
    let (argv, warnings) = pmix_tools::cli::script_directives::merged(
        given,
        &<PallocArgs as clap::CommandFactory>::command(),
    );
    let args: PallocArgs = parse_validated_from(argv);
    for w in warnings {
        pmix_tools::app::diag::line(format_args!("palloc: warning: {w}"));
    }
    tool_main::run("palloc", true, || pmix_tools::app::palloc::run(&args))
}
