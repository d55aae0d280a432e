//! `weft task add`: add a task to the current plan.

use std::path::PathBuf;

use weft_core::edit::NewTask;
use weft_core::{Edit, TaskKind};

use super::{KindArg, LimitArgs, apply, prompt_from, reference_list};
use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task's title: one line saying what it delivers.
    #[arg(long)]
    pub title: String,
    /// What the agent is asked to do (AI tasks).
    #[arg(long)]
    pub prompt: Option<String>,
    /// Read the prompt from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// Why the task exists and what it must not break (for people; agents see it too).
    #[arg(long)]
    pub description: Option<String>,
    /// Earlier tasks it depends on: order numbers or ids, comma-separated.
    #[arg(long, value_name = "REFS")]
    pub deps: Option<String>,
    /// Position to insert at (1-based; default: the end).
    #[arg(long, value_name = "N")]
    pub at: Option<u32>,
    /// Id (default: a slug of the title).
    #[arg(long)]
    pub id: Option<String>,
    /// The runner that runs it (default: the plan's, else the `runner` setting).
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
    /// ai: an agent session runs it; manual: a checklist a person ticks; ops: a command run
    /// in the run's checkout.
    #[arg(long, value_enum, default_value = "ai")]
    pub kind: KindArg,
    /// Command an ops task runs.
    #[arg(long)]
    pub command: Option<String>,
    /// A checklist step of a manual task (repeat for more).
    #[arg(long = "step", value_name = "TEXT")]
    pub steps: Vec<String>,
    /// A command that must exit 0 for the task to pass (repeat for more).
    #[arg(long = "check", value_name = "COMMAND")]
    pub checks: Vec<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let prompt = prompt_from(args.prompt, args.prompt_file)?.unwrap_or_default();
    let task = NewTask {
        id: args.id,
        title: args.title,
        description: args.description,
        prompt,
        dependencies: args.deps.as_deref().map(reference_list).unwrap_or_default(),
        runner: args.runner,
        model: args.model,
        effort: args.effort,
        mode: args.mode,
        kind: TaskKind::from(args.kind),
        command: args.command,
        steps: args.steps,
        checks: args.checks,
        limits: args.limits.changes()?.applied_to(Default::default()),
    };
    apply(globals, Edit::Add { task, at: args.at }, args.output)
}
