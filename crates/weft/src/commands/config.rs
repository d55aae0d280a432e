//! `weft config`: every resolved setting and where it came from.

use serde_json::json;

use crate::cli::Globals;
use crate::commands::{print_json, stdout};
use crate::context::Ctx;
use crate::error::CliResult;
use crate::settings::KEYS;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let settings = ctx.settings.all().collect::<Vec<_>>();
    if args.json {
        let object: serde_json::Map<String, serde_json::Value> = settings
            .iter()
            .map(|(name, value, source)| {
                let kind = source.kind();
                (
                    (*name).to_owned(),
                    json!({ "value": value, "source": kind, "from": source.to_string() }),
                )
            })
            .collect();
        return print_json(&object);
    }
    let name_width = KEYS.iter().map(|k| k.name().len()).max().unwrap_or(8);
    let value_width = settings
        .iter()
        .map(|(_, v, _)| v.len())
        .filter(|&len| len <= 24)
        .max()
        .unwrap_or(5);
    let mut text = String::new();
    for (name, value, source) in settings {
        text.push_str(&format!(
            "{name:<name_width$}  {value:<value_width$}  {source}\n"
        ));
    }
    stdout(&text)
}
