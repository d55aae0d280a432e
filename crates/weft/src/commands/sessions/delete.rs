//! `weft sessions delete <id>`: delete a plan; asks first unless --yes.

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
    if !args.yes && !confirm(&format!("delete {what}? [y/N] "))? {
        return Err(
            CliError::new(format!("kept {what}")).hint("pass --yes to delete without being asked")
        );
    }
    let current = store.current_plan_id()?.as_deref() == Some(id.as_str());
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
