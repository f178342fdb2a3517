//! `palloc`: see `man palloc` or `palloc --help`; the run logic is
//! [`pmix_tools::app::palloc`].

use std::process::ExitCode;

use pmix_tools::cli::{parse_validated, PallocArgs};

mod tool_main;

fn main() -> ExitCode {
    // First, before any descriptor of ours is opened (see its doc).
    pmix_tools::app::palloc::adopt_inherited_pipe();
    let args: PallocArgs = parse_validated();
    tool_main::run("palloc", true, || pmix_tools::app::palloc::run(&args))
}
