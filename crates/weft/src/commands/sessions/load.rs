//! `weft sessions load <id>`: make a plan the current one.

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json};
use crate::context::{Ctx, now};
use crate::error::CliResult;
use crate::render::{cut, note};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Plan id or unambiguous prefix (as `weft sessions list` shows it).
    pub id: String,
    #[command(flatten)]
    pub output: JsonArg,
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
    if args.output.json {
        return print_json(&super::plan_json(&plan, true));
    }
    Ok(())
}
