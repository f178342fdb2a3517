//! `pwatch`: see `man pwatch` or `pwatch --help`; the run logic is
//! [`pmix_tools::app::pwatch`].

use std::process::ExitCode;

use pmix_tools::cli::{parse_validated, PwatchArgs};

mod tool_main;

fn main() -> ExitCode {
    let args: PwatchArgs = parse_validated();
    tool_main::run("pwatch", true, || pmix_tools::app::pwatch::run(&args))
}
