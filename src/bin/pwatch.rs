//! `pwatch`: see `man pwatch` or `pwatch --help`; the run logic is
//! [`pmix_tools::app::pwatch`].

use pmix_tools::cli::{parse_validated, PwatchArgs};

fn main() {
    let args: PwatchArgs = parse_validated();
    std::process::exit(pmix_tools::app::pwatch::run(&args));
}
