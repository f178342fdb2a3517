//! `prelease`: see `man prelease` or `prelease --help`; the run logic is
//! [`pmix_tools::app::prelease`].

use pmix_tools::cli::{parse_validated, PreleaseArgs};

fn main() {
    let args: PreleaseArgs = parse_validated();
    std::process::exit(pmix_tools::app::prelease::run(&args));
}
