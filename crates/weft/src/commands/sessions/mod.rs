//! `weft sessions ...`: the plans stored in this workspace.

pub mod delete;
pub mod list;
pub mod load;

use crate::cli::Globals;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Every plan, most recently changed first; `*` marks the current one.
    List(list::Args),
    /// Make a plan the current one.
    Load(load::Args),
    /// Delete a plan and its tasks.
    Delete(delete::Args),
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    match args.action {
        Action::List(a) => list::run(a, globals),
        Action::Load(a) => load::run(a, globals),
        Action::Delete(a) => delete::run(a, globals),
    }
}
