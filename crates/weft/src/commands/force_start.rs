//! `weft force-start N`: start a task now, ignoring its dependencies, hold and the cap.

use crate::cli::Globals;
use crate::commands::control::{TaskArg, with_task};
use crate::error::CliResult;

pub type Args = TaskArg;

pub fn run(args: Args, globals: &Globals) -> CliResult {
    with_task(globals, &args, |_, store, plan| {
        weft_engine::control::force_start(store, plan, &args.task)
    })
}
