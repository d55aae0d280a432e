//! `weft demo`: a fresh git repository in a temporary folder with the built-in demo plan,
//! which uses the `exec` runner so no agent CLI is needed.

use std::path::{Path, PathBuf};

use fs_err as fs;
use weft_core::{PlanStatus, WorkflowFile, WorkflowFormat};
use weft_store::PlanDraft;

use crate::cli::Globals;
use crate::commands::run::execute;
use crate::commands::{stdout, styled};
use crate::context::{Ctx, RunOptions, now};
use crate::error::{CliError, CliResult};
use crate::render::{PlanView, note, plan_map, usage_by_task};
use crate::workspace::Workspace;

/// The demo plan, built into the binary.
pub const DEMO_PLAN: &str = include_str!("../demo/plan.toml");

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Create the demo repository here instead of a new temporary folder (must not exist
    /// or be empty).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print engine events as JSON lines.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let root = match args.dir {
        Some(dir) => {
            let empty = fs::read_dir(&dir)
                .map(|mut d| d.next().is_none())
                .unwrap_or(true);
            if !empty {
                return Err(CliError::new(format!("{} is not empty", dir.display()))
                    .hint("give a new or empty folder, or leave out --dir"));
            }
            fs::create_dir_all(&dir)?;
            dir
        }
        None => tempfile::Builder::new()
            .prefix("weft-demo-")
            .tempdir()
            .map_err(|e| CliError::new(format!("cannot create a temporary folder: {e}")))?
            .keep(),
    };
    create_repository(&root)?;

    let ctx = Ctx::with_workspace(Workspace::at(&root)?, globals)?;
    let names = ctx.runner_names();
    let imported = WorkflowFile::parse(DEMO_PLAN, WorkflowFormat::Toml, "demo plan")?
        .into_plan("demo plan", &|r| names.contains(r))?;
    let mut store = ctx.store_for_write()?;
    let plan = store.create_plan(
        PlanDraft {
            goal: imported.goal,
            runner: imported.runner,
            status: PlanStatus::Approved,
            tasks: imported.tasks,
            source: "demo".into(),
        },
        now(),
    )?;
    drop(store);
    note(&format!(
        "demo repository: {}\nrunning the demo plan {} ({} tasks, exec runner):",
        root.display(),
        plan.short_id(),
        plan.tasks.len()
    ));
    let mut config = ctx.engine_config(
        &plan.id,
        RunOptions {
            isolated: true,
            ..RunOptions::default()
        },
    )?;
    // Ctrl-C stops the running agents and keeps the run resumable.
    config.supervision.interrupt = Some(crate::interrupt::install());
    config.supervision.live_notice = Some(super::run::busy_notice());
    let result = execute(&config, args.json);
    let mut store = ctx.store_with_plans()?;
    if result.is_ok() {
        // The demo repository is a throwaway: hand the run off into its branch at once.
        let handoff = weft_engine::handoff::Handoff::open(
            &store,
            &plan.id,
            &ctx.workspace.root,
            &ctx.workspace.state_dir(),
            &ctx.settings.repos(),
        )?;
        let report = handoff.merge(&mut store, &plan.id, None)?;
        let lines = crate::commands::handoff::merge::merge_lines(&report);
        note(&format!(
            "handoff: {}",
            lines.first().map(String::as_str).unwrap_or("merged")
        ));
    }
    let plan = store.plan(&plan.id)?;
    let usage = usage_by_task(&store.attempts_of_plan(&plan.id)?);
    stdout(&styled(|out| {
        plan_map(out, PlanView::of(&plan), ctx.settings.runner(), &usage)
    }))?;
    note(&format!(
        "\neach task ran in its own git worktree; its work landed on weft/<run>/integration and was merged into the demo's branch.\nlook around with:\n  cd {}\n  git log --graph --oneline\n  weft status\n  weft log 3\n  weft prompt 3",
        root.display()
    ));
    result
}

/// A git repository with one commit holding a README, using the configured identity or
/// weft's own.
fn create_repository(root: &Path) -> CliResult {
    fs::write(
        root.join("README.md"),
        "# weft demo\n\nA repository made by `weft demo`.\n",
    )?;
    weft_engine::repository::create(root, "weft demo: initial commit")
        .map_err(|e| CliError::from(e).hint("weft demo needs git (2.38 or newer) on PATH"))
}
