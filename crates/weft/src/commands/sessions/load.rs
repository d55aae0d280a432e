//! `weft sessions load <id>`: make a plan the current one.

use crate::cli::Globals;
use crate::context::{Ctx, now};
use crate::error::CliResult;
use crate::render::{cut, note};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Plan id or unambiguous prefix (as `weft sessions list` shows it).
    pub id: String,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_with_plans()?;
    let id = store.resolve_plan(&args.id)?;
    store.set_current_plan(&id, now())?;
    let plan = store.plan(&id)?;
    note(&format!(
        "plan {} is now current: {} ({} tasks, {})",
        plan.short_id(),
        cut(&plan.goal, 60),
        plan.tasks.len(),
        plan.status
    ));
    Ok(())
}
