//! Rendering engine events for people: a live display on a terminal, plain lines
//! otherwise. (`weft run --json` prints the stored typed events instead; see
//! `commands/run.rs`.) Every match is exhaustive: a new event is a compile error here until
//! it is rendered or deliberately left out.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use weft_engine::EngineEvent;

use crate::render::safe;

/// How events reach the person.
pub enum Progress {
    Plain,
    Live(LiveDisplay),
}

impl Progress {
    pub fn for_stdout() -> Progress {
        if std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
            Progress::Live(LiveDisplay::default())
        } else {
            Progress::Plain
        }
    }

    pub fn event(&mut self, event: &EngineEvent) {
        match self {
            Progress::Plain => {
                if let Some(line) = plain_line(event).map(|l| safe(&l).into_owned()) {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                }
            }
            Progress::Live(live) => live.event(event),
        }
    }
}

/// One line per event worth a line; activity and ticks only feed the live display.
pub fn plain_line(event: &EngineEvent) -> Option<String> {
    Some(match event {
        EngineEvent::RunStarted {
            run,
            continued,
            tasks,
            parallel,
            ..
        } => format!(
            "{} run {run}: {tasks} tasks, at most {parallel} at a time",
            if *continued { "continuing" } else { "starting" }
        ),
        EngineEvent::Reconciled {
            task,
            killed_leftover,
            ..
        } => format!(
            "task {task:?} was left running by an engine that is gone: interrupted{}",
            if *killed_leftover {
                " (its leftover processes were killed)"
            } else {
                ""
            }
        ),
        EngineEvent::TaskStarted {
            order,
            title,
            runner,
            number,
            ..
        } => {
            let attempt = if *number > 1 {
                format!(" (attempt {number})")
            } else {
                String::new()
            };
            format!("▶ #{order} {title} [{runner}]{attempt}")
        }
        EngineEvent::TaskFinished {
            order,
            title,
            passed,
            status,
            reason,
            duration_ms,
            cost_usd,
            denials,
            ..
        } => {
            let mark = if *passed { "✔" } else { "✘" };
            let mut line = format!(
                "{mark} #{order} {title}: {status} in {} — {reason}",
                seconds(*duration_ms)
            );
            if let Some(cost) = cost_usd {
                line.push_str(&format!(" (${cost:.4})"));
            }
            if *denials > 0 {
                line.push_str(&format!(" [{denials} refused tool call(s)]"));
            }
            line
        }
        EngineEvent::TasksBlocked { by, tasks } => {
            format!("  blocked by {by:?}: {}", tasks.join(", "))
        }
        EngineEvent::Halted { by } => {
            format!("halting: {by:?} failed and halt_on_failure is set; running tasks finish")
        }
        EngineEvent::WaitingForPerson { order, title, .. } => {
            format!(
                "… #{order} {title} is a manual task: see its steps with `weft manual {order}` and tick them with `weft manual {order} --done`"
            )
        }
        EngineEvent::ControlHandled { request, task } => match task {
            Some(task) => format!("control: {request} {task:?}"),
            None => format!("control: {request}"),
        },
        EngineEvent::RunEnded {
            run,
            status,
            completed,
            skipped,
            failed,
            blocked,
            waiting,
            input_tokens,
            output_tokens,
            cost_usd,
        } => {
            let mut line = format!(
                "run {run} {status}: {completed} completed, {skipped} skipped, {failed} failed, {blocked} blocked, {waiting} waiting"
            );
            if *input_tokens + *output_tokens > 0 || *cost_usd > 0.0 {
                line.push_str(&format!(
                    "; tokens {input_tokens} in / {output_tokens} out, ${cost_usd:.4}"
                ));
            }
            line
        }
        EngineEvent::Notice { text } => format!("note: {text}"),
        EngineEvent::TaskActivity { .. } | EngineEvent::TaskIdle { .. } | EngineEvent::Tick => {
            return None;
        }
    })
}

fn seconds(millis: u64) -> String {
    if millis < 10_000 {
        format!("{:.1}s", millis as f64 / 1000.0)
    } else {
        let secs = millis / 1000;
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}

/// Permanent lines scroll above a block of one line per running task, redrawn in place.
#[derive(Default)]
pub struct LiveDisplay {
    running: BTreeMap<String, Running>,
    drawn_lines: usize,
}

struct Running {
    order: u32,
    title: String,
    started: Option<Instant>,
    activity: String,
    idle: bool,
}

impl LiveDisplay {
    fn event(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::TaskStarted {
                task, order, title, ..
            } => {
                self.running.insert(
                    task.clone(),
                    Running {
                        order: *order,
                        title: title.clone(),
                        started: Some(Instant::now()),
                        activity: String::new(),
                        idle: false,
                    },
                );
            }
            EngineEvent::TaskActivity { task, text } => {
                if let Some(r) = self.running.get_mut(task) {
                    r.activity = text.clone();
                    r.idle = false;
                }
            }
            EngineEvent::TaskIdle { task, .. } => {
                if let Some(r) = self.running.get_mut(task) {
                    r.idle = true;
                }
            }
            EngineEvent::TaskFinished { task, .. } => {
                self.running.remove(task);
            }
            // Permanent lines only (below), or nothing but a redraw of the clocks.
            EngineEvent::RunStarted { .. }
            | EngineEvent::Reconciled { .. }
            | EngineEvent::TasksBlocked { .. }
            | EngineEvent::Halted { .. }
            | EngineEvent::WaitingForPerson { .. }
            | EngineEvent::ControlHandled { .. }
            | EngineEvent::Tick
            | EngineEvent::Notice { .. }
            | EngineEvent::RunEnded { .. } => {}
        }
        let mut out = std::io::stdout().lock();
        // Erase the block, print the permanent line (if any), redraw the block.
        for _ in 0..self.drawn_lines {
            let _ = write!(out, "\x1b[1A\x1b[2K");
        }
        if let Some(line) = plain_line(event) {
            let _ = writeln!(out, "{}", safe(&line));
        }
        let width = terminal_width();
        let mut rows: Vec<&Running> = self.running.values().collect();
        rows.sort_by_key(|r| r.order);
        for r in &rows {
            let elapsed = r.started.map(|s| s.elapsed().as_secs()).unwrap_or(0);
            let idle = if r.idle { " (idle)" } else { "" };
            let line = format!(
                "  ⋯ #{} {} {}m{:02}s{idle}  {}",
                r.order,
                r.title,
                elapsed / 60,
                elapsed % 60,
                r.activity
            );
            // An agent's line could move the cursor or clear the screen: escaped first,
            // then cut, so a cut never splits a sequence.
            let line = safe(&line);
            let cut: String = line.chars().take(width.saturating_sub(1)).collect();
            let _ = writeln!(out, "{cut}");
        }
        self.drawn_lines = rows.len();
        let _ = out.flush();
    }
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100)
}
