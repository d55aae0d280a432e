//! `weft repair N`: one repair attempt for a conflicted task — its branch merged onto the
//! current integration tip, conflicts left for the agent to resolve.

use crate::cli::Globals;
use crate::commands::control::{TaskArg, with_task};
use crate::error::CliResult;

pub type Args = TaskArg;

pub fn run(args: Args, globals: &Globals) -> CliResult {
    with_task(globals, &args, |_, store, plan| {
        weft_engine::control::repair(store, plan, &args.task)
    })
}
