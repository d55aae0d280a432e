//! `weft transcript N`: the agent's own transcript of a task's latest attempt — where it
//! is, how it was chosen, and the final answer extracted from it.

use std::fmt::Write as _;

use weft_core::resolve_task_ref;
use weft_engine::transcripts::{self, TranscriptLookup};

use crate::cli::Globals;
use crate::commands::{print_json, stdout};
use crate::context::{Ctx, transcript_locator};
use crate::error::{CliError, CliResult};
use crate::render::safe;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// Print a JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan = store.plan(&ctx.plan_id(&store)?)?;
    let index = resolve_task_ref(&plan.tasks, &args.task).map_err(weft_core::EditError::from)?;
    let task = &plan.tasks[index];
    let attempt = store
        .attempts_of_task(&plan.id, &task.id)?
        .into_iter()
        .last()
        .ok_or_else(|| {
            CliError::new(format!(
                "task #{} {:?} has not run yet",
                task.order, task.id
            ))
        })?;
    let (registry, _) = ctx.registry();
    let lookup = transcripts::of_attempt(
        &registry,
        &transcript_locator(),
        &attempt,
        ctx.settings.answer_chars(),
    );
    let found = match lookup {
        TranscriptLookup::Found(found) => found,
        TranscriptLookup::NotKept { runner } => {
            return Err(CliError::new(format!(
                "the runner {runner:?} keeps no transcript weft can read"
            ))
            .hint("transcripts are read for claude-code, codex and opencode (manifest key `transcript`)"));
        }
        // With --json, "nothing found" is `null`.
        TranscriptLookup::Missing { .. } if args.json => return print_json(&None::<()>),
        TranscriptLookup::Missing { store, in_memory } => {
            let mut err = CliError::new(format!(
                "no {store} transcript found for task #{} {:?} (attempt {}, in {})",
                task.order, task.id, attempt.number, attempt.cwd
            ));
            if in_memory {
                err = err.hint(
                    "OPENCODE_DB is \":memory:\": OpenCode keeps its sessions in memory only, \
                     so there is no transcript on disk",
                );
            }
            return Err(err.hint("weft judged it by its captured output instead: `weft log N`"));
        }
    };
    if args.json {
        return print_json(&found);
    }
    // The path, the session id and the answer come from the agent's files: shown with
    // their control sequences escaped (`render::safe`); the JSON form escapes them anyway.
    let mut text = String::new();
    let _ = writeln!(
        text,
        "transcript: {}",
        safe(&found.path.display().to_string())
    );
    if let Some(id) = &found.session_id {
        let _ = writeln!(text, "session:    {}", safe(id));
    }
    let evidence = if found.weak {
        "weak match (no marker in it): not evidence"
    } else if found.marker_found {
        "the attempt's marker is in it: evidence"
    } else {
        "matched by session id"
    };
    let _ = writeln!(text, "match:      {evidence}");
    for step in &found.how {
        let _ = writeln!(text, "  - {}", safe(step));
    }
    let _ = writeln!(text, "--- final answer");
    text.push_str(&safe(found.final_answer.as_deref().unwrap_or("(none)")));
    text.push('\n');
    stdout(&text)
}
