//! `weft handoff cleanup`: remove the run's worktrees, keep its branches.

use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let (_, _, handoff) = super::open(globals)?;
    let run_id = handoff.run.id.clone();
    super::report(&run_id, "cleanup", &handoff.cleanup()?, args.output)
}
