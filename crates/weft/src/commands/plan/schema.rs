//! `weft plan schema`: the JSON Schema of workflow files, generated from the Rust types.

use weft_core::WorkflowFile;

use crate::commands::stdout;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Accepted for symmetry with every other command: the schema is JSON already.
    #[arg(long)]
    pub json: bool,
}

pub fn run(_args: Args) -> CliResult {
    stdout(&WorkflowFile::json_schema())
}
