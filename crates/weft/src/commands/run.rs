//! `weft run`: start or continue the current plan's run.

use crate::cli::Globals;
use crate::context::{Ctx, RunOptions};
use crate::error::{CliError, CliResult};
use crate::progress::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Most tasks running at once (1 to 64; default: the `parallel` setting).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: Option<u32>,
    /// Start no new task once one has failed (running ones finish).
    #[arg(long)]
    pub halt_on_failure: bool,
    /// Run failed and cancelled tasks again too (by default they stay as they are).
    #[arg(long)]
    pub retry_failed: bool,
    /// Run each AI task in its own git worktree and branch, land passed work onto the
    /// run's integration branch `weft/<run>/integration`, and run ops tasks against it
    /// (end the run with `weft handoff`).
    #[arg(long)]
    pub isolated: bool,
    /// Print one JSON object per event.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    drop(store);
    let config = ctx.engine_config(
        &plan_id,
        RunOptions {
            isolated: args.isolated,
            parallel: args.parallel,
            halt_on_failure: args.halt_on_failure,
            retry_failed: args.retry_failed,
        },
    )?;
    execute(&config, args.json)
}

/// Run the engine with a renderer; fails unless every task completed or was skipped.
pub fn execute(config: &weft_engine::EngineConfig, json: bool) -> CliResult {
    let mut progress = Progress::new(json);
    let summary = weft_engine::run(config, &mut |event| progress.event(&event))?;
    if summary.all_done {
        Ok(())
    } else {
        Err(CliError::new(format!(
            "run {} ended {}: not every task completed",
            summary.run_id,
            summary.status.as_str()
        ))
        .hint("`weft status` shows what is left; `weft retry N` then `weft run` continues"))
    }
}
