//! `weft stop`: stop the active run; running tasks are killed and marked interrupted.

use crate::cli::Globals;
use crate::commands::control::with_plan;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, globals: &Globals) -> CliResult {
    with_plan(globals, |_, store, plan| {
        weft_engine::control::stop(store, plan)
    })
}
