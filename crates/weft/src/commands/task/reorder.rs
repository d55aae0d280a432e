//! `weft task move N --to M`: move a task; refused if it would come before a dependency.

use weft_core::Edit;

use super::apply;
use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// New 1-based position.
    #[arg(long, value_name = "N")]
    pub to: u32,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    apply(
        globals,
        Edit::Move {
            task: args.task,
            to: args.to,
        },
        args.output,
    )
}
