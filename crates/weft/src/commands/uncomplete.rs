//! `weft uncomplete N [--revert [--yes]]`: take back a completion; the task is pending
//! again. A task whose work landed on the run's integration branch is refused without
//! `--revert`, which rebuilds the branch without its landing and puts it and its
//! dependents that landed after it back to pending (listed and confirmed first).

use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::commands::control::{TaskArg, print_task, with_task};
use crate::commands::report_lines;
use crate::context::Ctx;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// Take its landed work back out of the integration branch (rebuilt without it, no
    /// revert commit), with the work of the dependents that landed after it.
    #[arg(long)]
    pub revert: bool,
    /// With --revert: go ahead without being asked.
    #[arg(long, short = 'y', requires = "revert")]
    pub yes: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    if !args.revert {
        let task = TaskArg {
            task: args.task.clone(),
            output: args.output,
        };
        return with_task(globals, &task, |_, store, plan| {
            weft_engine::control::uncomplete(store, plan, &args.task)
        });
    }
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    let revert = weft_engine::control::revert::plan_revert(
        &store,
        &plan_id,
        &args.task,
        &ctx.workspace.root,
        &ctx.workspace.state_dir(),
        &ctx.settings.repos(),
    )?;
    let tasks = revert.tasks();
    super::handoff::confirm(
        &format!(
            "rebuild {} without the work of {} task(s) and put them back to pending ({})",
            revert.integration_branch,
            tasks.len(),
            weft_engine::control::list_tasks(&tasks)
        ),
        args.yes,
    )?;
    let report = revert.apply(&mut store, &plan_id)?;
    report_lines(&report.lines, args.output.json)?;
    if args.output.json {
        print_task(&store, &plan_id, &args.task)?;
    }
    Ok(())
}
