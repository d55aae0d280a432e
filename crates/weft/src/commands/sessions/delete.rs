//! `weft sessions delete <id>`: delete a plan, and the worktrees and branches its
//! isolated runs left in git (each integration tip kept under `refs/weft/deleted/<run>`);
//! asks first, listing them, unless --yes.

use std::io::{BufRead, IsTerminal, Write};

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json};
use crate::context::{Ctx, now};
use crate::error::{CliError, CliResult};
use crate::render::{cut, note};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Plan id or unambiguous prefix.
    pub id: String,
    /// Delete without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_with_plans()?;
    let id = store.resolve_plan(&args.id)?;
    let plan = store.plan(&id)?;
    let what = format!(
        "plan {} ({} tasks): {}",
        plan.short_id(),
        plan.tasks.len(),
        cut(&plan.goal, 60)
    );
    let leftovers = weft_engine::handoff::plan_leftovers(
        &store,
        &id,
        &ctx.workspace.root,
        &ctx.workspace.state_dir(),
        &ctx.settings.repos(),
    )?;
    let what = if leftovers.is_empty() {
        what
    } else {
        let branches = leftovers.branches();
        let shown: Vec<&str> = branches.iter().take(20).map(String::as_str).collect();
        let more = branches.len().saturating_sub(shown.len());
        format!(
            "{what}, with its {} worktree(s) and {} branch(es) ({}{}; each run's integration tip stays under refs/weft/deleted/<run>)",
            leftovers.worktrees(),
            branches.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    if !args.yes && !confirm(&format!("delete {what}? [y/N] "))? {
        return Err(
            CliError::new(format!("kept {what}")).hint("pass --yes to delete without being asked")
        );
    }
    let current = store.current_plan_id()?.as_deref() == Some(id.as_str());
    // Git first: killed in between, the plan is still there to delete again.
    leftovers.remove()?;
    store.delete_plan(&id, now())?;
    note(&format!("deleted {what}"));
    if args.output.json {
        let mut deleted = super::plan_json(&plan, current);
        deleted["deleted"] = true.into();
        return print_json(&deleted);
    }
    Ok(())
}

/// Ask on the terminal; without one there is nobody to say yes.
fn confirm(question: &str) -> CliResult<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Ok(false);
    }
    let mut err = std::io::stderr().lock();
    write!(err, "{question}")?;
    err.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
