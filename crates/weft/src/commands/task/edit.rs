//! `weft task edit N --field value ...`: change fields of a task that has not run.

use std::path::PathBuf;

use weft_core::{Edit, TaskChanges};

use super::{KindArg, apply, prompt_from};
use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

/// Optional text fields take "" to clear them.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    #[arg(long)]
    pub title: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
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
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
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
