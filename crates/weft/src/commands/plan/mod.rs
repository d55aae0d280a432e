//! `weft plan --file F`: store a plan from a workflow file and make it current;
//! `weft plan "goal"`: the planner writes one. Subcommands: `export`, `schema`, `log`,
//! `revise`.

pub mod export;
pub mod goal;
pub mod log;
pub mod revise;
pub mod schema;

use std::path::PathBuf;

use fs_err as fs;
use weft_core::{Plan, PlanStatus, WorkflowFile, WorkflowFormat};
use weft_store::{PlanDraft, PlanOwn};

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, print_plan_map};
use crate::context::{Ctx, now};
use crate::error::{CliError, CliResult};
use crate::render::{PlanView, note, plan_json, warnings};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Workflow file (TOML or JSON) to create the plan from.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Format of the file when its extension does not say.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// A goal for the planner to turn into a plan.
    pub goal: Option<String>,
    #[command(flatten)]
    pub planner: goal::PlannerArgs,
    #[command(flatten)]
    pub output: JsonArg,
    #[command(subcommand)]
    pub action: Option<Action>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Write the current plan as a workflow file.
    Export(export::Args),
    /// Print the JSON Schema of workflow files.
    Schema(schema::Args),
    /// Print the planner's research log of the current plan.
    Log(log::Args),
    /// Ask the planner to revise the current plan; its edits are validated like hand edits.
    Revise(revise::Args),
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FormatArg {
    Toml,
    Json,
}

impl From<FormatArg> for WorkflowFormat {
    fn from(format: FormatArg) -> Self {
        match format {
            FormatArg::Toml => WorkflowFormat::Toml,
            FormatArg::Json => WorkflowFormat::Json,
        }
    }
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    match args.action {
        Some(Action::Export(export)) => return export::run(export, globals),
        Some(Action::Schema(schema)) => return schema::run(schema),
        Some(Action::Log(log)) => return log::run(log, globals),
        Some(Action::Revise(revise)) => return revise::run(revise, globals),
        None => {}
    }
    let Some(file) = args.file else {
        return match args.goal {
            Some(goal) => goal::run(goal, args.planner, args.output, Ctx::load(globals)?),
            None => Err(CliError::new("nothing to plan: give a goal, or a workflow file with --file")
                .hint("`weft plan \"Add rate limiting to the public API\"` plans with the planner; `weft plan schema` prints the file format")),
        };
    };
    if args.goal.is_some() {
        return Err(CliError::new("give either a goal or --file, not both"));
    }
    let ctx = Ctx::load(globals)?;
    let text = fs::read_to_string(&file)
        .map_err(|e| CliError::from(e).hint("check the path of the workflow file"))?;
    let source_name = file.display().to_string();
    let format = args
        .format
        .map(WorkflowFormat::from)
        .or_else(|| WorkflowFormat::from_extension(&source_name))
        .unwrap_or_else(|| WorkflowFormat::sniff(&text));
    let names = ctx.runner_names();
    let imported =
        WorkflowFile::parse_in_two(&text, format, &source_name, weft_store::apart::join)?
            .into_plan_in_two(
                &source_name,
                &|r| names.contains(r),
                weft_store::apart::join,
            )?;
    warnings(&imported.warnings);
    let own = PlanOwn {
        verify: imported.verify,
        budget: imported.budget,
    };
    let mut store = ctx.store_for_write()?;
    // Not freed: the process ends right after this command (dropping the tasks of a
    // 100,000-task plan took ~30 ms).
    let plan = std::mem::ManuallyDrop::new(store.create_plan_with(
        PlanDraft {
            goal: imported.goal,
            runner: imported.runner,
            status: PlanStatus::Approved,
            tasks: imported.tasks,
            source: source_name.clone(),
        },
        &own,
        now(),
    )?);
    note(&format!(
        "created plan {} from {source_name} with {} task{}; it is now the current plan",
        plan.short_id(),
        plan.tasks.len(),
        if plan.tasks.len() == 1 { "" } else { "s" }
    ));
    // The store is closed while the map is printed: closing deletes the WAL that the
    // commit's checkpoint emptied, and for a 100,000-task plan that file had grown to
    // ~100 MB, whose deletion took ~60 ms (as long as printing the map).
    std::thread::scope(|scope| {
        scope.spawn(move || drop(store));
        print_plan(&plan, ctx.settings.runner(), args.output)
    })
}

/// The plan a planning command made or changed: its map, or with `--json` the object
/// `weft status --json` prints.
pub fn print_plan(plan: &Plan, default_runner: &str, output: JsonArg) -> CliResult {
    if output.json {
        return print_json(&plan_json(
            PlanView::of(plan),
            default_runner,
            &Default::default(),
        ));
    }
    print_plan_map(PlanView::of(plan), default_runner, &Default::default())
}
