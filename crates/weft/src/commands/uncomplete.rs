//! `weft uncomplete N`: take back a completion; the task is pending again.

use crate::cli::Globals;
use crate::commands::control::{TaskArg, with_task};
use crate::error::CliResult;

pub type Args = TaskArg;

pub fn run(args: Args, globals: &Globals) -> CliResult {
    with_task(globals, &args, |_, store, plan| {
        weft_engine::control::uncomplete(store, plan, &args.task)
    })
}
