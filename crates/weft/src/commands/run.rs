//! `weft run`: start or continue the current plan's run.

use std::io::Write;

use weft_engine::RunProgress;

use crate::cli::Globals;
use crate::context::{Ctx, RunOptions};
use crate::error::{CliError, CliResult};
use crate::progress::{Progress, RunShape};

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
    /// Print the run's events as JSON, one object per line, and nothing else on stdout
    /// (their schema: `weft events schema`).
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
    config.supervision.live_notice = Some(busy_notice());
    execute(&config, args.json)
}

/// Isolated unless asked otherwise (flag, then the `isolation` setting). Only a folder
/// that is no repository at all runs shared by default, with a notice; anything else that
/// keeps a run from isolating (git missing, no commits) is refused, never a silent shared
/// run. (The engine refuses to continue an isolated run shared.)
pub fn isolation_choice(ctx: &Ctx, isolated: bool, without: bool) -> CliResult<bool> {
    if without || (!isolated && !ctx.settings.isolation()) {
        return Ok(false);
    }
    match weft_engine::isolation_unavailable(&ctx.workspace.root, &ctx.settings.repos()) {
        None => Ok(true),
        Some(weft_engine::NoIsolation::NotARepository(why)) if !isolated => {
            crate::render::note(&format!(
                "note: running without isolation (tasks share this folder): {why}"
            ));
            Ok(false)
        }
        Some(weft_engine::NoIsolation::NotARepository(why)) => Err(CliError::new(format!(
            "cannot run isolated: {why}"
        ))
        .hint("run it in a git repository with at least one commit, or with --without-isolation")),
        Some(weft_engine::NoIsolation::Refused { detail, hint }) => {
            Err(CliError::new(format!("cannot run isolated: {detail}")).hint(hint))
        }
    }
}

/// A busy store's live notice, printed on stderr as it happens (the write that waits
/// holds the engine's thread; stdout, with `--json`, carries stored events only).
pub fn busy_notice() -> weft_engine::LiveNotice {
    weft_engine::LiveNotice(std::sync::Arc::new(|progress| {
        if let Some(line) = crate::progress::busy_line(progress) {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
    }))
}

/// Run the engine with a renderer; fails unless every task completed or was skipped.
///
/// One event contract: the engine reports every event stored for the plan during the run,
/// in sequence order (`RunProgress::Stored`, edits made from other terminals included).
/// With `json`, stdout carries exactly those events (the contract of
/// `schemas/events.schema.json`), one per line, and nothing else; without, the same events
/// are rendered for people (`progress.rs`).
pub fn execute(config: &weft_engine::EngineConfig, json: bool) -> CliResult {
    let summary = if json {
        let mut lines = JsonLines::default();
        let result = weft_engine::run(config, &mut |progress| lines.progress(&progress));
        let summary = result?;
        lines.failed.map_or(Ok(()), Err)?;
        summary
    } else {
        let mut progress = Progress::for_stdout(RunShape {
            tasks: plan_size(config)?,
            parallel: config.limits.parallel,
        });
        weft_engine::run(config, &mut |event| progress.progress(&event))?
    };
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

/// How many tasks the plan has (the header of a run's lines says so).
fn plan_size(config: &weft_engine::EngineConfig) -> CliResult<usize> {
    let options = weft_store::OpenOptions {
        busy_timeout: config.limits.busy_timeout,
    };
    let store = weft_store::Store::open_or_create(&config.state_dir, options)?;
    let plans = store.plans()?;
    Ok(plans
        .iter()
        .find(|p| p.id == config.plan_id)
        .map_or(0, |p| usize::try_from(p.task_count).unwrap_or(usize::MAX)))
}

/// Prints each stored event as one line of JSON.
#[derive(Default)]
struct JsonLines {
    /// The first failure to write; the run goes on, the command fails after it.
    failed: Option<CliError>,
    /// stdout was closed (`weft run --json | head`): nothing more is written.
    closed: bool,
}

impl JsonLines {
    fn progress(&mut self, progress: &RunProgress) {
        let RunProgress::Stored(event) = progress else {
            return;
        };
        if self.closed || self.failed.is_some() {
            return;
        }
        let mut line = match serde_json::to_string(event) {
            Ok(line) => line,
            Err(e) => {
                self.failed = Some(CliError::new(format!(
                    "cannot encode event {} as JSON: {e}",
                    event.seq
                )));
                return;
            }
        };
        line.push('\n');
        let mut out = std::io::stdout().lock();
        match out.write_all(line.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => self.closed = true,
            Err(e) => self.failed = Some(e.into()),
        }
    }
}
