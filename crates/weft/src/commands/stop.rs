//! `weft stop`: stop the active run; running tasks are killed and marked interrupted.

use serde_json::json;

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, report_lines};
use crate::context::Ctx;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    let engine_pid = weft_engine::control::engine_running(&store, &plan_id)?;
    let report = weft_engine::control::stop(&mut store, &plan_id)?;
    report_lines(&report.lines, args.output.json)?;
    if args.output.json {
        return print_json(
            &json!({ "plan": plan_id, "engine_pid": engine_pid, "stop_requested": true }),
        );
    }
    Ok(())
}
