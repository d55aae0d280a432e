//! `weft rearm N --prompt ... --runner ... --model ...`: edit a task and run it again.

use std::path::PathBuf;

use weft_core::TaskChanges;

use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::commands::control::{TaskArg, with_task};
use crate::commands::task::prompt_from;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// The new prompt.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Read the new prompt from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// The runner to run it with (see `weft runners`).
    #[arg(long)]
    pub runner: Option<String>,
    /// The model the runner is asked for.
    #[arg(long)]
    pub model: Option<String>,
    /// The thinking effort, for runners that take one.
    #[arg(long)]
    pub effort: Option<String>,
    /// The runner's permission mode (e.g. bypassPermissions, ask, acceptEdits).
    #[arg(long)]
    pub mode: Option<String>,
    /// A new title.
    #[arg(long)]
    pub title: Option<String>,
    /// A new description.
    #[arg(long)]
    pub description: Option<String>,
    /// Replace the checks with these commands (repeat for more).
    #[arg(long = "checks", value_name = "COMMAND")]
    pub checks: Vec<String>,
    #[command(flatten)]
    pub limits: crate::commands::task::LimitArgs,
    #[command(flatten)]
    pub output: JsonArg,
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
        limits: args.limits.changes()?,
        ..TaskChanges::default()
    };
    let target = TaskArg {
        task: args.task,
        output: args.output,
    };
    with_task(globals, &target, |ctx, store, plan| {
        let names = ctx.runner_names();
        weft_engine::control::rearm(store, plan, &target.task, &changes, &|r| names.contains(r))
    })
}
