//! `weft approvals allow ID [--scope SCOPE]`: allow what an open question asks.

use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The question's id, as `weft approvals` shows it.
    pub id: String,
    /// Remember the answer for a wider scope that covers the asked one, e.g. `path:/etc/*`
    /// or `command:git`.
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    super::answer(globals, &args.id, true, args.scope.as_deref(), args.output)
}
