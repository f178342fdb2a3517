//! `pspawn`: see `man pspawn` or `pspawn --help`; the run logic is
//! [`pmix_tools::app::pspawn`].

use pmix_tools::cli::{parse_validated, PspawnArgs};

fn main() {
    let args: PspawnArgs = parse_validated();
    std::process::exit(pmix_tools::app::pspawn::run(&args));
}
