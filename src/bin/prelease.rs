//! `prelease`: see `man prelease` or `prelease --help`; the run logic is
//! [`pmix_tools::app::prelease`].

use std::process::ExitCode;

use pmix_tools::cli::{parse_validated, PreleaseArgs};

mod tool_main;

fn main() -> ExitCode {
    let args: PreleaseArgs = parse_validated();
    tool_main::run("prelease", false, || pmix_tools::app::prelease::run(&args))
}
