//! `weft sessions ...`: the plans stored in this workspace.

pub mod delete;
pub mod list;
pub mod load;

use weft_core::Plan;

use crate::cli::Globals;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Every plan, most recently changed first; `*` marks the current one.
    List(list::Args),
    /// Make a plan the current one.
    Load(load::Args),
    /// Delete a plan and its tasks.
    Delete(delete::Args),
}

/// The `--json` result of `load` and `delete`: the plan they acted on.
pub fn plan_json(plan: &Plan, current: bool) -> serde_json::Value {
    serde_json::json!({
        "id": plan.id,
        "short_id": plan.short_id(),
        "goal": plan.goal,
        "status": plan.status,
        "task_count": plan.tasks.len(),
        "current": current,
    })
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    match args.action {
        Action::List(a) => list::run(a, globals),
        Action::Load(a) => load::run(a, globals),
        Action::Delete(a) => delete::run(a, globals),
    }
}
