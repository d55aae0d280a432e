//! `weft approvals`: the open approval questions of planning sessions in this workspace,
//! answerable from any terminal. Subcommands `allow` and `deny` answer one.

pub mod allow;
pub mod deny;

use std::fmt::Write as _;

use weft_core::approval::Scope;
use weft_store::{AnswerRefused, AskRecord, Store};

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, stdout};
use crate::context::{Ctx, now};
use crate::error::{CliError, CliResult};
use crate::render::note;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Print a JSON array of the open questions.
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub action: Option<Action>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Allow what approval question ID asks (remembered for its scope this session).
    Allow(allow::Args),
    /// Deny what approval question ID asks (remembered too).
    Deny(deny::Args),
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    match args.action {
        Some(Action::Allow(allow)) => return allow::run(allow, globals),
        Some(Action::Deny(deny)) => return deny::run(deny, globals),
        None => {}
    }
    let ctx = Ctx::load(globals)?;
    let open = match ctx.store_if_any()? {
        Some(mut store) => live_asks(&mut store)?,
        None => Vec::new(),
    };
    if args.json {
        return print_json(&open);
    }
    if open.is_empty() {
        note("no approval question is open");
        return Ok(());
    }
    let now = now();
    let mut out = String::new();
    for ask in &open {
        let _ = write!(out, "{:>4}  {}  scope {}", ask.id, ask.subject, ask.scope);
        if let Some(at) = ask.expires_at {
            let _ = write!(out, "  (denied by itself in {}s)", (at - now).max(0) / 1000);
        }
        out.push('\n');
    }
    // A question quotes what an agent or planner asked (a command line, a path).
    stdout(&crate::render::safe(&out))?;
    note("answer with `weft approvals allow ID [--scope SCOPE]` or `weft approvals deny ID`");
    Ok(())
}

/// The unsettled questions whose asking process is still alive; the others are closed as
/// withdrawn, since nobody waits for their answer any more.
pub fn live_asks(store: &mut Store) -> CliResult<Vec<AskRecord>> {
    let mut live = Vec::new();
    for ask in store.pending_asks()? {
        if process_alive(ask.owner_pid) {
            live.push(ask);
        } else {
            store.settle_ask(
                ask.id,
                "denied (withdrawn: the asking process ended)",
                now(),
            )?;
        }
    }
    Ok(live)
}

fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Record an answer to question `id` for the waiting planner to apply.
pub fn answer(
    globals: &Globals,
    id: &str,
    allowed: bool,
    scope: Option<&str>,
    output: JsonArg,
) -> CliResult {
    let id: i64 = id.trim().trim_start_matches('#').parse().map_err(|_| {
        CliError::new(format!("{id:?} is not an approval question id"))
            .hint("`weft approvals` lists the open questions with their ids")
    })?;
    if let Some(scope) = scope {
        Scope::parse(scope).map_err(|e| CliError::new(format!("--scope: {e}")))?;
    }
    let ctx = Ctx::load(globals)?;
    let mut store = ctx.store_for_write()?;
    // Close the questions of processes that ended, so this answer is not lost on one.
    live_asks(&mut store)?;
    match store.answer_ask(id, allowed, scope, now())? {
        Ok(ask) => {
            note(&format!(
                "approval {id} {}: {} (scope {}); the planner applies it within a second",
                if allowed { "allowed" } else { "denied" },
                ask.subject,
                scope.unwrap_or(&ask.scope)
            ));
            if output.json {
                return print_json(&serde_json::json!({
                    "id": id,
                    "allowed": allowed,
                    "subject": ask.subject,
                    "asked_scope": ask.scope,
                    "scope": scope.unwrap_or(&ask.scope),
                }));
            }
            Ok(())
        }
        Err(refused @ AnswerRefused::Unknown { .. }) => Err(CliError::new(refused.to_string())
            .hint("`weft approvals` lists the open questions with their ids")),
        Err(refused @ AnswerRefused::Closed { .. }) => Err(CliError::new(refused.to_string())
            .hint("nothing was changed; `weft approvals` lists the open questions")),
    }
}
