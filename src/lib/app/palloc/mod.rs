//! `palloc`: request an allocation (NEW, or EXTEND), say what was granted
//! and what becomes of it when palloc ends; optionally hold it until a
//! signal, or run a command inside it.

mod agent;
mod agent_holders;
mod bad_param;
mod batch;
mod batch_log_copy;
mod command;
mod detach;
mod flow;
mod own_session;
mod standby;

use crate::cli::PallocArgs;

pub use self::standby::{await_job, Role};
pub use super::submit_pipe::adopt_inherited_pipe;
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
        return Ok(self::agent::run(args));
    }
    self::flow::run(args, ui)
}
