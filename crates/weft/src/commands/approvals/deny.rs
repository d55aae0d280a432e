//! `weft approvals deny ID`: deny what an open question asks.

use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The question's id, as `weft approvals` shows it.
    pub id: String,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    super::answer(globals, &args.id, false, None, args.output)
}
