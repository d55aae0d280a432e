//! `weft task ...`: edit the current plan's tasks. Every edit is validated as a whole and
//! stored in one transaction with its event.

pub mod add;
pub mod deps;
pub mod edit;
pub mod hold;
pub mod remove;
pub mod reorder;

use std::path::PathBuf;

use fs_err as fs;
use weft_core::{Edit, EditError, Plan, Task, TaskKind, resolve_task_ref};

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, report_lines};
use crate::context::{Ctx, now};
use crate::error::{CliError, CliResult};
use crate::render::warnings;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Add a task (at the end, or at --at N).
    Add(add::Args),
    /// Remove a task; tasks that depended on it are detached and listed.
    Remove(remove::Args),
    /// Change fields of a task.
    Edit(edit::Args),
    /// Set a task's dependencies, e.g. `weft task deps 4 1,2` (an empty list clears them).
    Deps(deps::Args),
    /// Move a task to another position, e.g. `weft task move 5 --to 2`.
    Move(reorder::Args),
    /// Keep a task from starting until it is released.
    Hold(hold::Args),
    /// Let a held task start again.
    Release(hold::Args),
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    match args.action {
        Action::Add(a) => add::run(a, globals),
        Action::Remove(a) => remove::run(a, globals),
        Action::Edit(a) => edit::run(a, globals),
        Action::Deps(a) => deps::run(a, globals),
        Action::Move(a) => reorder::run(a, globals),
        Action::Hold(a) => hold::run(a, true, globals),
        Action::Release(a) => hold::run(a, false, globals),
    }
}

/// Task kinds as the command line spells them.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum KindArg {
    Ai,
    Manual,
    Ops,
}

impl From<KindArg> for TaskKind {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::Ai => TaskKind::Ai,
            KindArg::Manual => TaskKind::Manual,
            KindArg::Ops => TaskKind::Ops,
        }
    }
}

/// Split `1,2,#3,limiter` into references; blank means none.
pub fn reference_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The prompt from `--prompt` or `--prompt-file`.
pub fn prompt_from(text: Option<String>, file: Option<PathBuf>) -> CliResult<Option<String>> {
    match (text, file) {
        (Some(_), Some(_)) => Err(CliError::new("give --prompt or --prompt-file, not both")),
        (Some(text), None) => Ok(Some(text)),
        (None, Some(path)) => Ok(Some(fs::read_to_string(path)?)),
        (None, None) => Ok(None),
    }
}

// A task's own limits, as `weft task add`, `weft task edit` and `weft rearm` take them
// (`""` clears one; each read by weft-core's one parser, as the workflow file's keys).
// Not a doc comment: see `JsonArg`.
#[derive(Debug, Default, clap::Args)]
pub struct LimitArgs {
    /// Wall-clock limit of each attempt, e.g. 30m; replaces the `task_timeout` setting
    /// ("" clears it).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// No output, stream event or file change for this long ends an attempt, e.g. 5m (0:
    /// never); replaces the `idle_timeout` setting ("" clears it).
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<String>,
    /// Dollars the task may spend over all its attempts, e.g. 0.5 ("" clears it).
    #[arg(long, value_name = "USD", allow_hyphen_values = true)]
    pub budget_usd: Option<String>,
    /// Tokens the task may spend over all its attempts, e.g. 200000 ("" clears it).
    #[arg(long, value_name = "TOKENS", allow_hyphen_values = true)]
    pub budget_tokens: Option<String>,
}

impl LimitArgs {
    /// The changes the flags ask for; a bad value is refused naming its flag.
    pub fn changes(&self) -> CliResult<weft_core::limits::LimitChanges> {
        use weft_core::limits as l;
        let mut changes = l::LimitChanges::default();
        for (key, flag, text) in [
            (l::KEY_TIMEOUT, "--timeout", &self.timeout),
            (l::KEY_IDLE_TIMEOUT, "--idle-timeout", &self.idle_timeout),
            (l::KEY_BUDGET_USD, "--budget-usd", &self.budget_usd),
            (l::KEY_BUDGET_TOKENS, "--budget-tokens", &self.budget_tokens),
        ] {
            if let Some(text) = text {
                changes.set_text(key, text).map_err(|problem| {
                    CliError::new(format!("{flag}: {problem}")).hint(format!(
                        "give {flag} a value such as {}, or \"\" to clear it",
                        example(key)
                    ))
                })?;
            }
        }
        Ok(changes)
    }
}

fn example(key: &str) -> &'static str {
    match key {
        weft_core::limits::KEY_TIMEOUT => "30m",
        weft_core::limits::KEY_IDLE_TIMEOUT => "5m",
        weft_core::limits::KEY_BUDGET_USD => "0.5",
        _ => "200000",
    }
}

/// Apply one edit to the selected plan and report what happened; with `--json`, print the
/// task the edit made or changed (or, for a removal, the task as it was).
pub fn apply(globals: &Globals, edit: Edit, output: JsonArg) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    let names = ctx.runner_names();
    // The plan before the edit names what a removal took away and what an addition added.
    let before = if output.json {
        Some(store.plan(&plan_id)?)
    } else {
        None
    };
    let (after, report) = store
        .apply_edit(&plan_id, &edit, &|r| names.contains(r), now())
        .map_err(CliError::from)?;
    warnings(&report.warnings);
    report_lines(&report.lines, output.json)?;
    match before {
        Some(before) => print_json(&edited_task(&edit, &before, &after)?),
        None => Ok(()),
    }
}

/// The task an accepted edit is about, as the plan now holds it (a removed one as it was).
fn edited_task<'a>(edit: &Edit, before: &'a Plan, after: &'a Plan) -> CliResult<&'a Task> {
    let missing = || CliError::new("the edited task is not in the stored plan");
    let reference = match edit {
        Edit::Add { .. } => {
            return after
                .tasks
                .iter()
                .find(|task| before.tasks.iter().all(|old| old.id != task.id))
                .ok_or_else(missing);
        }
        Edit::Remove { task } => {
            let index = resolve_task_ref(&before.tasks, task).map_err(EditError::from)?;
            return Ok(&before.tasks[index]);
        }
        Edit::Move { task, .. }
        | Edit::SetDependencies { task, .. }
        | Edit::Update { task, .. }
        | Edit::SetHold { task, .. } => task,
    };
    let index = resolve_task_ref(&before.tasks, reference).map_err(EditError::from)?;
    let id = &before.tasks[index].id;
    after.tasks.iter().find(|t| &t.id == id).ok_or_else(missing)
}
