//! `weft plan revise "…"`: the planner re-reads the goal, the PRD and the current plan and
//! proposes task edits, which go through the same validation as hand edits. Completed and
//! running tasks are never rewritten.

use weft_engine::planning::{self, PlanningError, PlanningOutcome, Style};

use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::commands::plan::goal::{PlannerArgs, conversational, planning_config, planning_error};
use crate::commands::plan::print_plan;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::planner_ui::TerminalPlanner;
use crate::render::note;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to change, in words.
    pub request: String,
    #[command(flatten)]
    pub planner: PlannerArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    if args.request.trim().is_empty() {
        return Err(CliError::new("the change request is empty")
            .hint("say what to change, e.g. `weft plan revise \"split task 3 into API and UI\"`"));
    }
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_for_write()?;
    let plan_id = ctx.plan_id(&store)?;
    // A revision is one request: the planner does not hold a conversation, but a person at
    // a terminal can still answer approval questions.
    let config = planning_config(&ctx, &args.planner, Style::Revision).map(|mut config| {
        config.approval_channel = conversational(&args.planner);
        // At a terminal the reviser may ask a question; without one it is nudged to emit.
        config.converse = config.approval_channel;
        config
    })?;
    let front = if config.approval_channel {
        TerminalPlanner::conversation(config.interrupt.clone())
    } else {
        TerminalPlanner::one_shot(config.interrupt.clone())
    };
    let mut front = front.text_on_stderr(args.output.json);
    let label = planning::backend(&config)
        .map_err(|e| planning_error(PlanningError::Planner(e), &config))?
        .label();
    note(&format!("revising with {label}; research is read-only"));
    let outcome = planning::revise_plan(
        &mut store,
        &plan_id,
        args.request.trim(),
        &config,
        &mut front,
    )
    .map_err(|e| planning_error(e, &config))?;
    match outcome {
        PlanningOutcome::Revised {
            plan,
            reports,
            prd_path,
        } => {
            for line in reports.iter().flat_map(|r| r.lines.iter()) {
                note(line);
            }
            for warning in reports.iter().flat_map(|r| r.warnings.iter()) {
                note(&format!("warning: {warning}"));
            }
            if let Some(path) = prd_path {
                note(&format!("the PRD is in {path}"));
            }
            note(&format!(
                "plan {} revised ({} edit{})",
                plan.short_id(),
                reports.len(),
                if reports.len() == 1 { "" } else { "s" }
            ));
            print_plan(&plan, ctx.settings.runner(), args.output)
        }
        PlanningOutcome::Abandoned { .. } => {
            note("the revision ended without edits; the plan is unchanged");
            if args.output.json {
                let plan = store.plan(&plan_id)?;
                return print_plan(&plan, ctx.settings.runner(), args.output);
            }
            Ok(())
        }
        PlanningOutcome::Committed { .. } => unreachable!("a revision never creates a plan"),
    }
}
