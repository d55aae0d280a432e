//! `weft handoff review|merge|discard|cleanup`: the end of an isolated run.

pub mod cleanup;
pub mod discard;
pub mod merge;
pub mod review;

use std::io::{BufRead, IsTerminal, Write};

use weft_engine::handoff::Handoff;
use weft_store::Store;

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, report_lines};
use crate::context::Ctx;
use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Show what the run changed against the base it started from.
    Review(review::Args),
    /// Merge the run branch into the branch you have checked out (all or nothing).
    Merge(merge::Args),
    /// Throw the run away; its tip is kept under `refs/weft/discarded/<run>`.
    Discard(discard::Args),
    /// Remove the run's worktrees; keep its branches.
    Cleanup(cleanup::Args),
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    match args.action {
        Action::Review(a) => review::run(a, globals),
        Action::Merge(a) => merge::run(a, globals),
        Action::Discard(a) => discard::run(a, globals),
        Action::Cleanup(a) => cleanup::run(a, globals),
    }
}

/// The workspace, its store, the plan and the handoff of its open run.
pub fn open(globals: &Globals) -> CliResult<(Store, String, Handoff)> {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    let handoff = Handoff::open(
        &store,
        &plan_id,
        &ctx.workspace.root,
        &ctx.workspace.state_dir(),
        &ctx.settings.repos(),
    )?;
    Ok((store, plan_id, handoff))
}

/// What a handoff step did: its lines, or with `--json` one object naming the run and the
/// step, with the lines (the lines also go to stderr, for the person).
pub fn report(run: &str, step: &str, lines: &[String], output: JsonArg) -> CliResult {
    report_lines(lines, output.json)?;
    if output.json {
        return print_json(&serde_json::json!({ "run": run, "step": step, "report": lines }));
    }
    Ok(())
}

/// Ask on a terminal; without one, only `--yes` goes ahead.
pub fn confirm(question: &str, yes: bool) -> CliResult {
    if yes {
        return Ok(());
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(
            CliError::new(format!("{question}: not confirmed (no terminal to ask)"))
                .hint("pass --yes to go ahead without being asked"),
        );
    }
    let mut err = std::io::stderr().lock();
    write!(err, "{question}? [y/N] ")?;
    err.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(CliError::new(format!("{question}: not confirmed")))
    }
}
