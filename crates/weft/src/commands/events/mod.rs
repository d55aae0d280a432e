//! `weft events`: the plan's event log, oldest first (`--json`: the typed events, one per
//! line, exactly as `weft run --json` prints them); `weft events schema`: their JSON Schema.

pub mod schema;

use crate::cli::Globals;
use crate::commands::stdout;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::render::event_line;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Only events after this sequence number (resume where you left off).
    #[arg(long, value_name = "SEQ", default_value_t = 0)]
    pub after: i64,
    /// At most this many events.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    /// Every plan's events (and those about no plan), not only the current plan's.
    #[arg(long)]
    pub all: bool,
    /// One JSON object per event and line (see `weft events schema`).
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub action: Option<Action>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Print the JSON Schema of one event (what `--json` and `weft run --json` print).
    Schema(schema::Args),
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    if let Some(Action::Schema(schema)) = args.action {
        return schema::run(schema);
    }
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan_id = if args.all {
        None
    } else {
        Some(ctx.plan_id(&store)?)
    };
    let events = store.events(plan_id.as_deref(), args.after, args.limit)?;
    let mut text = String::new();
    for event in &events {
        if args.json {
            let line = serde_json::to_string(event).map_err(|e| {
                CliError::new(format!("cannot encode event {} as JSON: {e}", event.seq))
            })?;
            text.push_str(&line);
        } else {
            text.push_str(&event_line(event));
        }
        text.push('\n');
    }
    stdout(&text)
}
