//! `weft task hold N` and `weft task release N`.

use weft_core::Edit;

use super::apply;
use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, hold: bool, globals: &Globals) -> CliResult {
    apply(
        globals,
        Edit::SetHold {
            task: args.task,
            hold,
        },
        args.output,
    )
}
