//! `weft plan schema`: the JSON Schema of workflow files, generated from the Rust types.

use weft_core::WorkflowFile;

use crate::commands::stdout;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> CliResult {
    stdout(&WorkflowFile::json_schema())
}
