//! Shared plumbing of the recovery commands (`retry`, `complete`, `skip`, ...): open the
//! store, pick the plan, run one control function, print its report — or, with `--json`,
//! the task as it is afterwards.

use weft_core::{EditError, resolve_task_ref};
use weft_engine::EngineError;
use weft_engine::control::ControlReport;
use weft_store::Store;

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, report_lines};
use crate::context::Ctx;
use crate::error::CliResult;

/// Run `action` on the selected plan and print what it did to task `args.task`.
pub fn with_task(
    globals: &Globals,
    args: &TaskArg,
    action: impl FnOnce(&Ctx, &mut Store, &str) -> Result<ControlReport, EngineError>,
) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    let report = action(&ctx, &mut store, &plan_id)?;
    report_lines(&report.lines, args.output.json)?;
    if args.output.json {
        print_task(&store, &plan_id, &args.task)?;
    }
    Ok(())
}

/// The `--json` result of a command about one task: the task's stored record.
pub fn print_task(store: &Store, plan_id: &str, reference: &str) -> CliResult {
    let plan = store.plan(plan_id)?;
    let index = resolve_task_ref(&plan.tasks, reference).map_err(EditError::from)?;
    print_json(&plan.tasks[index])
}

// The `N` argument every per-task control command takes. (Not a doc comment: see
// `JsonArg`.)
#[derive(Debug, clap::Args)]
pub struct TaskArg {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    #[command(flatten)]
    pub output: JsonArg,
}
