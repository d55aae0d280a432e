//! `weft handoff review [--stat]`: the run branch's diff against its base.

use serde_json::json;

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, stdout};
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files changed with line counts instead of the full diff.
    #[arg(long)]
    pub stat: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let (_, _, handoff) = super::open(globals)?;
    let review = handoff.review(args.stat)?;
    if args.output.json {
        return print_json(&json!({
            "run": handoff.run.id,
            "integration_branch": handoff.integration_branch,
            "stat": args.stat,
            "diff": review,
        }));
    }
    stdout(&review)
}
