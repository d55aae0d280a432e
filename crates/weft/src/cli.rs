//! The command line: global options and the list of commands.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::commands::{config, demo, init, plan, sessions, status, task};

/// weft turns a goal into a plan of coding-agent tasks, runs each task in a fresh agent
/// session, and judges it by evidence.
#[derive(Debug, Parser)]
#[command(name = "weft", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Globals {
    /// Workspace folder (default: the nearest folder up from here holding .weft/, weft.toml
    /// or .git).
    #[arg(long, global = true, env = "WEFT_WORKSPACE", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Plan to act on, by id or unambiguous prefix (default: the current plan).
    #[arg(long, global = true, env = "WEFT_PLAN", value_name = "ID")]
    pub plan: Option<String>,
    /// Override a setting for this command, e.g. `-c parallel=2` (see `weft config`).
    #[arg(short = 'c', long = "set", global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make this folder a weft workspace (optional: weft creates .weft/ on first write).
    Init(init::Args),
    /// Create a plan from a workflow file, export the current plan, or print the schema.
    Plan(plan::Args),
    /// Show the current plan: every task with its status, runner and dependencies.
    Status(status::Args),
    /// Add, remove, edit, reorder, re-wire, hold or release tasks.
    Task(task::Args),
    /// List, load or delete the plans stored in this workspace.
    Sessions(sessions::Args),
    /// Print every setting with its value and where it came from.
    Config(config::Args),
    /// Create a fresh repository in a temporary folder with a built-in demo plan.
    Demo(demo::Args),
}
