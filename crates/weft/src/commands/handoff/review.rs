//! `weft handoff review [--stat]`: the run branch's diff against its base.

use crate::cli::Globals;
use crate::commands::stdout;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files changed with line counts instead of the full diff.
    #[arg(long)]
    pub stat: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let (_, _, handoff) = super::open(globals)?;
    stdout(&handoff.review(args.stat)?)
}
