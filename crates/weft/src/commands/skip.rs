//! `weft skip N`: skip a task; it counts as met for the tasks that depend on it.

use crate::cli::Globals;
use crate::commands::control::{TaskArg, with_task};
use crate::error::CliResult;

pub type Args = TaskArg;

pub fn run(args: Args, globals: &Globals) -> CliResult {
    with_task(globals, &args, |_, store, plan| {
        weft_engine::control::skip(store, plan, &args.task)
    })
}
