//! `weft attach N`: follow the live attempt of task N as it prints, from any terminal.
//!
//! Through the store only (`Store::read_output`): what the attempt printed so far is
//! replayed from offset 0, then each new piece as it is appended, until the attempt ends.
//! Everything is passed through `weft_core::terminal`'s sanitizer (colour kept on a
//! terminal unless `NO_COLOR`), so an agent's escape sequences cannot reach this
//! terminal's parser. Ctrl-C (or SIGTERM) detaches: this process only reads, so the
//! attempt goes on. Without a running attempt it prints the latest one's output and says
//! it ended.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use weft_core::terminal::{Keep, Sanitizer};
use weft_core::{AttemptStatus, resolve_task_ref};

use crate::cli::Globals;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::render::note;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
}

/// Bytes asked for per read.
const READ_BYTES: usize = 64 * 1024;
/// How often new output is looked for.
const POLL: Duration = Duration::from_millis(100);

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan = store.plan(&ctx.plan_id(&store)?)?;
    let index = resolve_task_ref(&plan.tasks, &args.task).map_err(weft_core::EditError::from)?;
    let task = &plan.tasks[index];
    let attempts = store.attempts_of_task(&plan.id, &task.id)?;
    let Some(attempt) = attempts
        .iter()
        .rev()
        .find(|a| a.status == AttemptStatus::Running)
        .or(attempts.last())
    else {
        return Err(CliError::new(format!(
            "task #{} {:?} has not run yet, so there is nothing to attach to",
            task.order, task.id
        ))
        .hint("`weft run` (or R in `weft tui`) runs it; attach once it is running"));
    };
    let detached = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(signal, Arc::clone(&detached));
    }
    let live = attempt.status == AttemptStatus::Running;
    if live {
        note(&format!(
            "attached to attempt {} of task #{} {:?} (Ctrl-C detaches; the attempt goes on)",
            attempt.number, task.order, task.id
        ));
    }
    let out = std::io::stdout();
    let keep = Keep::for_output(out.is_terminal(), std::env::var("NO_COLOR").ok().as_deref());
    let mut sanitizer = Sanitizer::new(keep);
    let mut out = out.lock();
    let mut offset = 0u64;
    let mut clean = Vec::with_capacity(READ_BYTES);
    loop {
        if detached.load(Ordering::SeqCst) {
            let _ = out.flush();
            note("detached: the attempt goes on (`weft attach` again follows it)");
            return Ok(());
        }
        let Some(chunk) = store.read_output(&attempt.id, offset, READ_BYTES)? else {
            return Err(CliError::new(format!(
                "attempt {} of task {:?} is gone from the store",
                attempt.number, task.id
            )));
        };
        clean.clear();
        sanitizer.push(&chunk.bytes, &mut clean);
        if chunk.finished {
            sanitizer.finish(&mut clean);
        }
        match out.write_all(&clean).and_then(|()| out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            other => other?,
        }
        offset = chunk.next;
        if chunk.finished {
            let ended = store
                .attempt(&attempt.id)?
                .map_or("ended", |a| a.status.as_str());
            note(&format!(
                "attempt {} of task #{} {:?} {}",
                attempt.number,
                task.order,
                task.id,
                if live {
                    format!("ended: {ended}")
                } else {
                    format!("had already ended: {ended}")
                }
            ));
            return Ok(());
        }
        if chunk.bytes.len() < READ_BYTES {
            std::thread::sleep(POLL);
        }
    }
}
