//! `weft rearm N --prompt ... --runner ... --model ...`: edit a task and run it again.

use std::path::PathBuf;

use weft_core::TaskChanges;

use crate::cli::Globals;
use crate::commands::control::with_plan;
use crate::commands::task::prompt_from;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    #[arg(long)]
    pub prompt: Option<String>,
    /// Read the new prompt from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    #[arg(long)]
    pub runner: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub effort: Option<String>,
    #[arg(long)]
    pub mode: Option<String>,
    #[arg(long)]
    pub title: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
    /// Replace the checks with these commands (repeat for more).
    #[arg(long = "checks", value_name = "COMMAND")]
    pub checks: Vec<String>,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let changes = TaskChanges {
        title: args.title,
        description: args.description,
        prompt: prompt_from(args.prompt, args.prompt_file)?,
        runner: args.runner,
        model: args.model,
        effort: args.effort,
        mode: args.mode,
        checks: (!args.checks.is_empty()).then_some(args.checks),
        ..TaskChanges::default()
    };
    with_plan(globals, |ctx, store, plan| {
        let names = ctx.runner_names();
        weft_engine::control::rearm(store, plan, &args.task, &changes, &|r| names.contains(r))
    })
}
