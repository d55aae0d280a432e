//! `weft task remove N`: remove a task; its dependents are detached and named.

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

pub fn run(args: Args, globals: &Globals) -> CliResult {
    apply(globals, Edit::Remove { task: args.task }, args.output)
}
