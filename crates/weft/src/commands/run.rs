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
    /// Run each AI task in its own git worktree and branch and land passed work onto the
    /// run's integration branch `weft/<run>/integration` (the default in a git repository;
    /// end the run with `weft handoff`).
    #[arg(long, conflicts_with = "without_isolation")]
    pub isolated: bool,
    /// Run every task in your own checkout instead (no worktrees, no handoff).
    #[arg(long)]
    pub without_isolation: bool,
    /// Stash uncommitted changes to tracked files for the run and restore them after it
    /// (they would otherwise hold an isolated run).
    #[arg(long, conflicts_with = "without_isolation")]
    pub stash: bool,
    /// Print one JSON object per event.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    drop(store);
    let isolated = isolation_choice(&ctx, args.isolated, args.without_isolation)?;
    let mut config = ctx.engine_config(
        &plan_id,
        RunOptions {
            isolated,
            stash: args.stash,
            parallel: args.parallel,
            halt_on_failure: args.halt_on_failure,
            retry_failed: args.retry_failed,
        },
    )?;
    // Ctrl-C stops the running agents and keeps the run resumable.
    config.supervision.interrupt = Some(crate::interrupt::install());
    execute(&config, args.json)
}

/// Isolated unless asked otherwise (flag, then the `isolation` setting); a workspace that
/// cannot isolate runs shared with a notice, unless isolation was asked for explicitly.
pub fn isolation_choice(ctx: &Ctx, isolated: bool, without: bool) -> CliResult<bool> {
    if without || (!isolated && !ctx.settings.isolation()) {
        return Ok(false);
    }
    match weft_engine::isolation_unavailable(&ctx.workspace.root, &ctx.settings.repos()) {
        None => Ok(true),
        Some(why) if isolated => Err(CliError::new(format!("cannot run isolated: {why}"))
            .hint("commit something first, or run with --without-isolation")),
        Some(why) => {
            crate::render::note(&format!(
                "note: running without isolation (tasks share this folder): {why}"
            ));
            Ok(false)
        }
    }
}

/// Run the engine with a renderer; fails unless every task completed or was skipped.
pub fn execute(config: &weft_engine::EngineConfig, json: bool) -> CliResult {
    let mut progress = Progress::new(json);
    let summary = weft_engine::run(config, &mut |event| progress.event(&event))?;
    if weft_engine::interrupted(config.supervision.interrupt.as_ref()) {
        let mut error = CliError::new(format!(
            "run {} interrupted: the running tasks were stopped",
            summary.run_id
        ))
        .hint("`weft run` continues where it left off; `weft status` shows what is left");
        error.code = crate::error::EXIT_INTERRUPTED;
        return Err(error);
    }
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
