//! `weft init`: create `.weft/` here. Optional, since weft creates it on first write.

use std::path::PathBuf;

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json};
use crate::context::Ctx;
use crate::error::CliResult;
use crate::render::note;
use crate::workspace::Workspace;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Folder to make a workspace (default: the current folder).
    pub path: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let root = match (args.path, &globals.workspace) {
        (Some(path), _) => path,
        (None, Some(workspace)) => workspace.clone(),
        (None, None) => std::env::current_dir()?,
    };
    let ctx = Ctx::with_workspace(Workspace::at(&root)?, globals)?;
    let existed = ctx
        .workspace
        .state_dir()
        .join(weft_store::DATABASE_FILE)
        .exists();
    let store = ctx.store_for_write()?;
    let verb = if existed {
        "already a weft workspace"
    } else {
        "initialised weft workspace"
    };
    note(&format!("{verb}: {}", ctx.workspace.root.display()));
    note(&format!("state: {}", store.path().display()));
    if args.output.json {
        return print_json(&serde_json::json!({
            "workspace": ctx.workspace.root,
            "state": store.path(),
            "created": !existed,
        }));
    }
    Ok(())
}
