//! `weft events schema`: the JSON Schema of one event, generated from the Rust types
//! (committed as `schemas/events.schema.json`).

use weft_core::Event;

use crate::commands::stdout;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> CliResult {
    stdout(&Event::json_schema())
}
