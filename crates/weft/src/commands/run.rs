//! `weft run`: start or continue the current plan's run.

use std::time::{Duration, Instant};

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

/// Run the engine with a renderer; fails unless every task completed or was skipped.
///
/// With `json`, stdout carries exactly the typed events the run stores (the contract of
/// `schemas/events.schema.json`), one per line, in sequence order: they are read back from
/// the store as the engine reports progress, so a line is the very event that `weft
/// events` and every other surface replay. Edits made from other terminals during the run
/// are among them.
pub fn execute(config: &weft_engine::EngineConfig, json: bool) -> CliResult {
    let summary = if json {
        let mut tail = EventTail::start(config)?;
        let result = weft_engine::run(config, &mut |event| tail.on_engine_event(&event));
        // Whatever the run stored last (its end), even when it failed.
        let drained = tail.drain();
        let summary = result?;
        drained?;
        summary
    } else {
        let mut progress = Progress::for_stdout();
        weft_engine::run(config, &mut |event| progress.event(&event))?
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

/// Prints the plan's stored events after a sequence number as JSON lines.
struct EventTail {
    store: weft_store::Store,
    plan_id: String,
    after: i64,
    last_read: Instant,
    failed: Option<CliError>,
}

/// How often a chatty attempt's output lines may trigger a read of the event log.
const TAIL_EVERY: Duration = Duration::from_millis(100);
/// Events read per query.
const TAIL_PAGE: u32 = 500;

impl EventTail {
    fn start(config: &weft_engine::EngineConfig) -> CliResult<EventTail> {
        let options = weft_store::OpenOptions {
            busy_timeout: config.limits.busy_timeout,
        };
        let store = weft_store::Store::open_or_create(&config.state_dir, options)?;
        // Only what this run stores from now on, not the plan's history.
        let after = store.last_event_seq()?;
        Ok(EventTail {
            store,
            plan_id: config.plan_id.clone(),
            after,
            last_read: Instant::now(),
            failed: None,
        })
    }

    /// The engine reported progress: print what it stored since (output lines only
    /// every [`TAIL_EVERY`], so a chatty agent does not turn into a query per line).
    fn on_engine_event(&mut self, event: &weft_engine::EngineEvent) {
        let chatter = matches!(
            event,
            weft_engine::EngineEvent::TaskActivity { .. }
                | weft_engine::EngineEvent::TaskIdle { .. }
        );
        if chatter && self.last_read.elapsed() < TAIL_EVERY {
            return;
        }
        if self.failed.is_none()
            && let Err(error) = self.drain()
        {
            self.failed = Some(error);
        }
    }

    /// Print every stored event after the last one printed.
    fn drain(&mut self) -> CliResult {
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        self.last_read = Instant::now();
        loop {
            let page = self
                .store
                .events(Some(&self.plan_id), self.after, TAIL_PAGE)?;
            let mut text = String::new();
            for event in &page {
                text.push_str(&serde_json::to_string(event).map_err(|e| {
                    CliError::new(format!("cannot encode event {} as JSON: {e}", event.seq))
                })?);
                text.push('\n');
                self.after = event.seq;
            }
            if !text.is_empty() {
                crate::commands::stdout(&text)?;
            }
            if page.len() < TAIL_PAGE as usize {
                return Ok(());
            }
        }
    }
}
