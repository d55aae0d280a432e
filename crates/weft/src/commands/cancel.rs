//! `weft cancel N`: cancel a task; a running one is killed (its whole process group).

use crate::cli::Globals;
use crate::commands::control::{TaskArg, with_task};
use crate::error::CliResult;

pub type Args = TaskArg;

pub fn run(args: Args, globals: &Globals) -> CliResult {
    with_task(globals, &args, |_, store, plan| {
        weft_engine::control::cancel(store, plan, &args.task)
    })
}
