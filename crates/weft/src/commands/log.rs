//! `weft log N`: the raw output of a task's latest attempt (or `--attempt K`), optionally
//! following it while it runs.

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Duration;

use fs_err as fs;
use weft_core::{AttemptStatus, resolve_task_ref};

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
    let Some(path) = &attempt.log_path else {
        let reason = attempt
            .verdict
            .as_ref()
            .map(|v| v.reason.clone())
            .unwrap_or_default();
        return Err(CliError::new(format!(
            "attempt {} of task {:?} has no output log: it never started ({reason})",
            attempt.number, task.id
        )));
    };
    let mut out = std::io::stdout().lock();
    let mut offset = 0u64;
    loop {
        offset = copy_from(path, offset, &mut out)?;
        if !args.follow {
            break;
        }
        let current = store.attempt(&attempt.id)?;
        if current.is_none_or(|a| a.status != AttemptStatus::Running) {
            copy_from(path, offset, &mut out)?;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// Print the file from `offset` on; returns the new offset. A file not written yet is empty.
fn copy_from(path: &str, offset: u64, out: &mut impl Write) -> CliResult<u64> {
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(offset),
        Err(e) => return Err(e.into()),
    };
    file.seek(SeekFrom::Start(offset))?;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut position = offset;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        match out.write_all(&buffer[..read]) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(position),
            other => other?,
        }
        position += read as u64;
    }
    let _ = out.flush();
    Ok(position)
}
