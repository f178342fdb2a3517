//! `pspawn`: see `man pspawn` or `pspawn --help`; the run logic is
//! [`pmix_tools::app::pspawn`].

use std::process::ExitCode;

use pmix_tools::cli::{parse_validated, PspawnArgs};

mod tool_main;

fn main() -> ExitCode {
    let args: PspawnArgs = parse_validated();
    tool_main::run("pspawn", true, || pmix_tools::app::pspawn::run(&args))
}
