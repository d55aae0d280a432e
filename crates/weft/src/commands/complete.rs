//! `weft complete N`: mark a task done by hand (its verdict says no verification ran).

use crate::cli::Globals;
use crate::commands::control::{TaskArg, with_task};
use crate::error::CliResult;

pub type Args = TaskArg;

pub fn run(args: Args, globals: &Globals) -> CliResult {
    with_task(globals, &args, |_, store, plan| {
        weft_engine::control::complete(store, plan, &args.task)
    })
}
