//! `weft sessions list`: short id, status, task count, updated time, goal.

use crate::cli::Globals;
use crate::commands::{print_json, stdout};
use crate::context::Ctx;
use crate::error::CliResult;
use crate::render::{LIST_GOAL_CHARS, cut, minute, note};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let plans = match ctx.store_if_any()? {
        Some(store) => store.plans()?,
        None => Vec::new(),
    };
    if args.json {
        return print_json(&plans);
    }
    if plans.is_empty() {
        note("no plans in this workspace yet; create one with `weft plan --file plan.toml`");
        return Ok(());
    }
    let status_width = plans
        .iter()
        .map(|p| p.status.as_str().len())
        .max()
        .unwrap_or(8);
    let count_width = plans
        .iter()
        .map(|p| p.task_count.to_string().len())
        .max()
        .unwrap_or(1);
    let mut text = String::new();
    for plan in &plans {
        let mark = if plan.current { '*' } else { ' ' };
        let tasks = if plan.task_count == 1 {
            "task "
        } else {
            "tasks"
        };
        text.push_str(&format!(
            "{mark} {}  {:<status_width$}  {:>count_width$} {tasks}  {}  {}\n",
            plan.short_id,
            plan.status.as_str(),
            plan.task_count,
            minute(plan.updated_at),
            cut(&plan.goal, LIST_GOAL_CHARS),
        ));
    }
    stdout(&text)
}
