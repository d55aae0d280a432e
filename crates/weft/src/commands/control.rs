//! Shared plumbing of the recovery commands (`retry`, `complete`, `skip`, ...): open the
//! store, pick the plan, run one control function, print its report.

use weft_engine::EngineError;
use weft_engine::control::ControlReport;
use weft_store::Store;

use crate::cli::Globals;
use crate::commands::stdout;
use crate::context::Ctx;
use crate::error::CliResult;

/// Run `action` on the selected plan and print what it did.
pub fn with_plan(
    globals: &Globals,
    action: impl FnOnce(&Ctx, &mut Store, &str) -> Result<ControlReport, EngineError>,
) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    let report = action(&ctx, &mut store, &plan_id)?;
    let mut text = report.lines.join("\n");
    text.push('\n');
    stdout(&text)
}

/// The `N` argument every per-task control command takes.
#[derive(Debug, clap::Args)]
pub struct TaskArg {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
}
