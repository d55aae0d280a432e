//! `weft handoff cleanup`: remove the run's worktrees, keep its branches.

use crate::cli::Globals;
use crate::commands::stdout;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, globals: &Globals) -> CliResult {
    let (_, _, handoff) = super::open(globals)?;
    stdout(&format!("{}\n", handoff.cleanup()?.join("\n")))
}
