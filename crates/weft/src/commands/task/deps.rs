//! `weft task deps N 1,2`: replace a task's dependencies.

use weft_core::Edit;

use super::{apply, reference_list};
use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// Earlier tasks, comma-separated; "" for none.
    pub dependencies: String,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    apply(
        globals,
        Edit::SetDependencies {
            task: args.task,
            dependencies: reference_list(&args.dependencies),
        },
        args.output,
    )
}
