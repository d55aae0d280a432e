//! `weft retry N`: run a finished task again (verdict cleared, blocked descendants released).

use crate::cli::Globals;
use crate::commands::control::{TaskArg, with_task};
use crate::error::CliResult;

pub type Args = TaskArg;

pub fn run(args: Args, globals: &Globals) -> CliResult {
    with_task(globals, &args, |_, store, plan| {
        weft_engine::control::retry(store, plan, &args.task)
    })
}
