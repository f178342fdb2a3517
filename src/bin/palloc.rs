//! `palloc`: see `man palloc` or `palloc --help`; the run logic is
//! [`pmix_tools::app::palloc`].

use pmix_tools::cli::{parse_validated, PallocArgs};

fn main() {
    let args: PallocArgs = parse_validated();
    std::process::exit(pmix_tools::app::palloc::run(&args));
}
