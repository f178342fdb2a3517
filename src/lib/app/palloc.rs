//! `palloc`: request an allocation (NEW, or EXTEND), say what was granted
//! and what becomes of it when palloc ends; optionally hold it until a
//! signal, or run a command inside it.

use crate::cli::PallocArgs;

pub use super::palloc_detach::adopt_inherited_pipe;
use super::{Failure, Ui};

/// Run palloc; returns the exit code.
pub fn run(args: &PallocArgs) -> i32 {
    let ui = Ui::new("palloc", &args.output());
    match run_inner(args, &ui) {
        Ok(code) => code,
        Err(f) => ui.fail(&f),
    }
}

fn run_inner(args: &PallocArgs, ui: &Ui) -> std::result::Result<i32, Failure> {
    if args.stdin_requests {
        return Ok(super::palloc_agent::run(args));
    }
    super::palloc_flow::run(args, ui)
}
