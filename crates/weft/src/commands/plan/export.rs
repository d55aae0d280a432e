//! `weft plan export`: the current plan as a workflow file, on stdout or into a file.

use std::io::Write;
use std::path::PathBuf;

use weft_core::WorkflowFormat;

use crate::cli::Globals;
use crate::commands::plan::FormatArg;
use crate::commands::{print_json, stdout};
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::render::note;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format (default: from the -o extension, else TOML).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Write to this file instead of stdout (replaced atomically).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Without -o: the workflow file as JSON (same as --format json). With -o: a JSON object
    /// saying what was written where.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan = store.plan(&ctx.plan_id(&store)?)?;
    let asked = match (args.json, args.output.is_some()) {
        (true, false) => Some(WorkflowFormat::Json),
        _ => args.format.map(WorkflowFormat::from),
    };
    let format = asked
        .or_else(|| {
            args.output
                .as_ref()
                .and_then(|p| WorkflowFormat::from_extension(&p.to_string_lossy()))
        })
        .unwrap_or(WorkflowFormat::Toml);
    let text = store.plan_file(&plan)?.to_text(format);
    let Some(path) = args.output else {
        return stdout(&text);
    };
    write_atomically(&path, text.as_bytes())?;
    note(&format!(
        "wrote plan {} ({} tasks) to {}",
        plan.short_id(),
        plan.tasks.len(),
        path.display()
    ));
    if args.json {
        return print_json(&serde_json::json!({
            "plan": plan.id,
            "task_count": plan.tasks.len(),
            "path": path,
            "format": format.to_string().to_ascii_lowercase(),
        }));
    }
    Ok(())
}

/// Write beside the target, then rename over it: a reader never sees half a file.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> CliResult {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    let fail = |e: std::io::Error| CliError::new(format!("cannot write {}: {e}", path.display()));
    let mut temp = tempfile::Builder::new()
        .prefix(".weft-export-")
        .tempfile_in(&dir)
        .map_err(fail)?;
    temp.write_all(bytes).map_err(fail)?;
    temp.as_file().sync_all().map_err(fail)?;
    temp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
