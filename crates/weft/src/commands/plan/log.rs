//! `weft plan log`: the planner's research log of the current plan — every message and
//! tool call, and how each call ended (success, failure, refused, denied, not executed).

use std::fmt::Write as _;

use crate::cli::Globals;
use crate::commands::{print_json, stdout};
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::planner_ui::step_text;
use crate::render::cut;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON array of entries.
    #[arg(long)]
    pub json: bool,
    /// Show each entry's whole stored detail (tool results, messages).
    #[arg(long)]
    pub full: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    let plan = store.plan(&plan_id)?;
    let entries = store.planner_log(&plan_id, 0)?;
    if args.json {
        return print_json(&entries);
    }
    let info = store.planning(&plan_id)?;
    let Some(info) = info else {
        return Err(CliError::new(format!(
            "plan {} was not written by the planner, so it has no research log",
            plan.short_id()
        ))
        .hint("plans from `weft plan \"goal\"` keep one; `weft sessions list` shows every plan"));
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "plan {} · planner {}{} · {} entr{}",
        plan.short_id(),
        info.planner,
        if info.one_shot { " (one shot)" } else { "" },
        entries.len(),
        if entries.len() == 1 { "y" } else { "ies" }
    );
    if let Some(prd) = &info.prd_path {
        let _ = writeln!(out, "PRD: {prd}");
    }
    for entry in &entries {
        let line = match (entry.kind.as_str(), &entry.tool, &entry.outcome) {
            ("tool", Some(tool), Some(outcome)) => {
                format!("[{outcome}] {}", step_text(tool, &cut(&entry.input, 120)))
            }
            (kind, _, _) => format!("{kind}: {}", cut(&entry.input, 120)),
        };
        let _ = write!(out, "{:>4} t{} {line}", entry.seq, entry.turn);
        if let Some(approval) = &entry.approval {
            let _ = write!(out, " — {approval}");
        }
        out.push('\n');
        if args.full && !entry.detail.is_empty() {
            for line in entry.detail.lines() {
                let _ = writeln!(out, "       {line}");
            }
        }
    }
    // The research log quotes the planner's tool calls and their output.
    stdout(&crate::render::safe(&out))
}
