//! `weft manual N [--done [STEP]]`: a manual task's checklist and where to do it; tick
//! one step or all of them (the task completes when every step is ticked).

use std::fmt::Write as _;

use crate::cli::Globals;
use serde_json::json;

use crate::commands::control::print_task;
use crate::commands::{JsonArg, print_json, report_lines, stdout};
use crate::context::Ctx;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// Tick step STEP (1-based), or every step when no number is given.
    #[arg(long, value_name = "STEP", num_args = 0..=1)]
    pub done: Option<Option<usize>>,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    if let Some(step) = args.done {
        let report = weft_engine::control::manual_tick(&mut store, &plan_id, &args.task, step)?;
        report_lines(&report.lines, args.output.json)?;
        if args.output.json {
            return print_task(&store, &plan_id, &args.task);
        }
        return Ok(());
    }
    let view = weft_engine::control::manual_view(
        &store,
        &plan_id,
        &args.task,
        &ctx.workspace.root,
        &ctx.workspace.state_dir(),
        &ctx.settings.repos(),
    )?;
    if args.output.json {
        let steps: Vec<serde_json::Value> = view
            .steps
            .iter()
            .map(|(text, done)| json!({ "text": text, "done": done }))
            .collect();
        return print_json(&json!({
            "order": view.order,
            "id": view.id,
            "title": view.title,
            "status": view.status,
            "steps": steps,
            "checkout": view.checkout.as_deref().unwrap_or(&ctx.workspace.root),
            "integration_checkout": view.checkout.is_some(),
            "waiting_on": view.waiting_on,
        }));
    }
    let mut text = format!("#{} {} [{}]\n", view.order, view.title, view.status);
    for (number, (step, done)) in view.steps.iter().enumerate() {
        let mark = if *done { "x" } else { " " };
        let _ = writeln!(text, "  [{mark}] {}. {step}", number + 1);
    }
    if view.steps.is_empty() {
        text.push_str("  (no steps: tick the task itself with --done)\n");
    }
    match &view.checkout {
        Some(path) => {
            let _ = writeln!(
                text,
                "work to check: {} (the run's integration checkout)",
                path.display()
            );
        }
        None => {
            let _ = writeln!(text, "work to check: {}", ctx.workspace.root.display());
        }
    }
    if let Some(waiting) = &view.waiting_on {
        let _ = writeln!(text, "not ready yet: {waiting}");
    }
    // Steps and titles come from a plan a planner may have written: never raw.
    stdout(&crate::render::safe(&text))
}
