//! `weft task edit N --field value ...`: change fields of a task that has not run.

use std::path::PathBuf;

use weft_core::{Edit, TaskChanges};

use super::{KindArg, LimitArgs, apply, prompt_from};
use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

/// Optional text fields take "" to clear them.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// A new title.
    #[arg(long)]
    pub title: Option<String>,
    /// A new description ("" clears it).
    #[arg(long)]
    pub description: Option<String>,
    /// A new prompt.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Read the new prompt from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// The runner that runs it ("" goes back to the plan's or the `runner` setting).
    #[arg(long)]
    pub runner: Option<String>,
    /// The model the runner is asked for ("" clears it).
    #[arg(long)]
    pub model: Option<String>,
    /// The thinking effort, for runners that take one ("" clears it).
    #[arg(long)]
    pub effort: Option<String>,
    /// The runner's permission mode, e.g. bypassPermissions, ask, acceptEdits ("" clears it).
    #[arg(long)]
    pub mode: Option<String>,
    /// Make it an ai, manual or ops task.
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// The command an ops task runs.
    #[arg(long)]
    pub command: Option<String>,
    /// Replace the checks with these commands (repeat for more).
    #[arg(long = "checks", value_name = "COMMAND", conflicts_with = "no_checks")]
    pub checks: Vec<String>,
    /// Remove every check.
    #[arg(long)]
    pub no_checks: bool,
    /// Replace a manual task's steps (repeat for more).
    #[arg(long = "steps", value_name = "TEXT", conflicts_with = "no_steps")]
    pub steps: Vec<String>,
    /// Remove every step.
    #[arg(long)]
    pub no_steps: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

fn list(values: Vec<String>, clear: bool) -> Option<Vec<String>> {
    if clear {
        Some(Vec::new())
    } else if values.is_empty() {
        None
    } else {
        Some(values)
    }
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
        kind: args.kind.map(Into::into),
        command: args.command,
        steps: list(args.steps, args.no_steps),
        checks: list(args.checks, args.no_checks),
        limits: args.limits.changes()?,
    };
    apply(
        globals,
        Edit::Update {
            task: args.task,
            changes,
        },
        args.output,
    )
}
