//! `weft events`: the plan's event log, oldest first (`--json`: the typed events, one per
//! line, exactly as `weft run --json` prints them; `--follow`: then every new one as it is
//! stored); `weft events schema`: their JSON Schema.

pub mod schema;

use std::io::Write;

use crate::cli::Globals;
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
    /// Keep printing events as they are stored, until interrupted.
    #[arg(long, short = 'f')]
    pub follow: bool,
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
    let mut after = args.after;
    loop {
        let events = store.events(plan_id.as_deref(), after, args.limit)?;
        if let Some(last) = events.last() {
            after = last.seq;
        }
        let full = events.len() == args.limit as usize;
        let open = print(&events, args.json)?;
        if !args.follow || !open {
            return Ok(());
        }
        if !full {
            std::thread::sleep(FOLLOW_POLL);
        }
    }
}

/// How often `--follow` looks for new events.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Print the events; false when stdout was closed (`weft events -f | head`).
fn print(events: &[weft_core::Event], json: bool) -> CliResult<bool> {
    let mut text = String::new();
    for event in events {
        if json {
            let line = serde_json::to_string(event).map_err(|e| {
                CliError::new(format!("cannot encode event {} as JSON: {e}", event.seq))
            })?;
            text.push_str(&line);
        } else {
            text.push_str(&event_line(event));
        }
        text.push('\n');
    }
    if text.is_empty() {
        return Ok(true);
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        other => other.map(|()| true).map_err(Into::into),
    }
}
