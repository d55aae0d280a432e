//! `weft log N`: the output of a task's latest attempt (or `--attempt K`), optionally
//! following it while it runs.
//!
//! Terminal safety: an agent's output is untrusted, so by default it is written through
//! weft-core's streaming `weft_core::terminal::Sanitizer`: OSC (OSC 52
//! clipboard writes included), cursor movement, erase, mode changes and every other
//! control byte are shown escaped (`\x1b]52;…`), a lone `\r` becomes a line break, and a
//! sequence split across two reads is judged whole. Colour (SGR) is kept only when stdout
//! is a terminal and `NO_COLOR` is unset; piped, it is removed too, since the bytes may
//! reach a terminal later (`weft log 3 | less -R`). `--raw` writes the stored bytes
//! unchanged, for tools that want exactly what the agent wrote.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use weft_core::resolve_task_ref;
use weft_core::terminal::{Keep, Sanitizer};

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
    /// Write the stored bytes unchanged: the agent's control sequences (colour, cursor
    /// movement, OSC) included. By default they are shown escaped.
    #[arg(long)]
    pub raw: bool,
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
    let stdout = std::io::stdout();
    let mut sanitizer = (!args.raw).then(|| {
        let no_color = std::env::var("NO_COLOR").ok();
        Sanitizer::new(Keep::for_output(stdout.is_terminal(), no_color.as_deref()))
    });
    let mut out = Output {
        out: stdout.lock(),
        sanitizer: sanitizer.as_mut(),
        buffer: Vec::new(),
    };
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
        if out.write(&chunk.bytes)? == Written::Closed {
            return Ok(());
        }
        offset = chunk.next;
        let short = chunk.bytes.len() < READ_BYTES;
        if chunk.finished || (short && !args.follow) {
            out.finish()?;
            return Ok(());
        }
        if short {
            std::thread::sleep(FOLLOW_POLL);
        }
    }
}

/// Whether the reader is still there.
#[derive(Debug, PartialEq, Eq)]
enum Written {
    Open,
    /// A closed pipe (`weft log 3 | head`): not an error, the command ends.
    Closed,
}

/// Stdout, through the sanitizer unless `--raw`.
struct Output<'a, W: Write> {
    out: W,
    sanitizer: Option<&'a mut Sanitizer>,
    /// The sanitized bytes of the chunk being written (reused).
    buffer: Vec<u8>,
}

impl<W: Write> Output<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> CliResult<Written> {
        let bytes = match &mut self.sanitizer {
            None => bytes,
            Some(sanitizer) => {
                self.buffer.clear();
                sanitizer.push(bytes, &mut self.buffer);
                &self.buffer
            }
        };
        match self.out.write_all(bytes).and_then(|()| self.out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Written::Closed),
            Err(e) => Err(e.into()),
            Ok(()) => Ok(Written::Open),
        }
    }

    /// The end of the output: what the sanitizer held back (an unfinished sequence).
    fn finish(&mut self) -> CliResult {
        if let Some(sanitizer) = &mut self.sanitizer {
            self.buffer.clear();
            sanitizer.finish(&mut self.buffer);
            let held = std::mem::take(&mut self.buffer);
            self.sanitizer = None;
            self.write(&held)?;
        }
        Ok(())
    }
}

/// Bytes asked for per read.
const READ_BYTES: usize = 64 * 1024;
/// How often `--follow` looks for new output.
const FOLLOW_POLL: Duration = Duration::from_millis(200);
