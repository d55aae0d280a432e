//! `weft log N`: the raw output of a task's latest attempt (or `--attempt K`), optionally
//! following it while it runs.

use std::io::Write;
use std::time::Duration;

use weft_core::resolve_task_ref;

use crate::cli::Globals;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// Which attempt (1 = the first ever; default: the latest).
    #[arg(long, value_name = "K")]
    pub attempt: Option<usize>,
    /// Keep printing new output until the attempt ends.
    #[arg(long, short = 'f')]
    pub follow: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan = store.plan(&ctx.plan_id(&store)?)?;
    let index = resolve_task_ref(&plan.tasks, &args.task).map_err(weft_core::EditError::from)?;
    let task = &plan.tasks[index];
    let attempts = store.attempts_of_task(&plan.id, &task.id)?;
    if attempts.is_empty() {
        return Err(CliError::new(format!(
            "task #{} {:?} has not run yet",
            task.order, task.id
        ))
        .hint("`weft run` runs the plan"));
    }
    let attempt = match args.attempt {
        None => attempts.last().expect("not empty"),
        Some(k) => attempts.get(k.wrapping_sub(1)).ok_or_else(|| {
            CliError::new(format!(
                "task #{} {:?} has {} attempt(s); there is no attempt {k}",
                task.order,
                task.id,
                attempts.len()
            ))
        })?,
    };
    if attempt.log_path.is_none() {
        let reason = attempt
            .verdict
            .as_ref()
            .map(|v| v.reason.clone())
            .unwrap_or_default();
        return Err(CliError::new(format!(
            "attempt {} of task {:?} has no output log: it never started ({reason})",
            attempt.number, task.id
        )));
    }
    let mut out = std::io::stdout().lock();
    let mut offset = 0u64;
    // The store's live output contract (`Store::read_output`): history from offset 0, then
    // whatever the attempt appends, until it ends.
    loop {
        let Some(chunk) = store.read_output(&attempt.id, offset, READ_BYTES)? else {
            return Err(CliError::new(format!(
                "attempt {} of task {:?} is gone from the store",
                attempt.number, task.id
            )));
        };
        match out.write_all(&chunk.bytes).and_then(|()| out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            other => other?,
        }
        offset = chunk.next;
        let short = chunk.bytes.len() < READ_BYTES;
        if chunk.finished || (short && !args.follow) {
            return Ok(());
        }
        if short {
            std::thread::sleep(FOLLOW_POLL);
        }
    }
}

/// Bytes asked for per read.
const READ_BYTES: usize = 64 * 1024;
/// How often `--follow` looks for new output.
const FOLLOW_POLL: Duration = Duration::from_millis(200);
