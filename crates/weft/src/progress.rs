//! Rendering a run for people, from the typed events it stores: a live display on a
//! terminal, plain lines otherwise.
//!
//! One event contract: the engine reports every event stored for the plan
//! ([`RunProgress::Stored`], the very `weft_core::Event`s `weft events` replays and `weft
//! run --json` prints), and this module turns some of them into lines. What is not an
//! event (an attempt's latest output line, its silence, the poll tick) only feeds the live
//! display. The match over event kinds is exhaustive: a new kind is a compile error here
//! until it is rendered or deliberately left out.
//!
//! Every agent- or planner-derived text (titles, reasons, notices, output lines) is shown
//! through [`safe`]: its control sequences escaped, its colour removed.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::time::Instant;

use weft_core::{Event, EventKind, TaskStatus};
use weft_engine::RunProgress;

use crate::render::safe;

/// What a run's lines need besides the events: the plan's size and the slot cap, which
/// the header shows and no event carries.
#[derive(Debug, Clone, Copy)]
pub struct RunShape {
    pub tasks: usize,
    pub parallel: usize,
}

/// How a run reaches the person.
pub enum Progress {
    Plain(Lines),
    Live(LiveDisplay),
}

impl Progress {
    pub fn for_stdout(shape: RunShape) -> Progress {
        let lines = Lines::new(shape);
        if std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
            Progress::Live(LiveDisplay {
                lines,
                running: BTreeMap::new(),
                drawn_lines: 0,
            })
        } else {
            Progress::Plain(lines)
        }
    }

    pub fn progress(&mut self, progress: &RunProgress) {
        match self {
            Progress::Plain(lines) => {
                if let Some(line) = lines.line(progress) {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                }
            }
            Progress::Live(live) => live.progress(progress),
        }
    }
}

/// What an attempt's `attempt_finished` event said, kept until its `task_finished`.
#[derive(Debug, Clone, Copy)]
struct AttemptEnd {
    duration_ms: u64,
    cost_usd: Option<f64>,
    denials: usize,
}

/// At most this many ended attempts wait for their `task_finished` (one per running
/// attempt in practice); beyond it the oldest are forgotten.
const ENDS_KEPT: usize = 1024;

/// Turns events into the lines of a run.
pub struct Lines {
    shape: RunShape,
    /// By attempt id.
    ends: HashMap<String, AttemptEnd>,
}

impl Lines {
    pub fn new(shape: RunShape) -> Lines {
        Lines {
            shape,
            ends: HashMap::new(),
        }
    }

    /// The permanent line for `progress`, already safe for a terminal; `None` for what
    /// only feeds the live display or is not shown.
    pub fn line(&mut self, progress: &RunProgress) -> Option<String> {
        let line = match progress {
            RunProgress::Stored(event) => self.event_line(event)?,
            RunProgress::Unstored { text } => format!("note: {text}"),
            RunProgress::StoreBusy { .. } => busy_line(progress)?,
            RunProgress::Activity { .. } | RunProgress::Idle { .. } | RunProgress::Tick => {
                return None;
            }
        };
        Some(safe(&line).into_owned())
    }

    fn event_line(&mut self, event: &Event) -> Option<String> {
        let run = event.run.as_deref().unwrap_or("?");
        Some(match &event.event {
            EventKind::RunStarted { .. } | EventKind::RunContinued { .. } => format!(
                "{} run {run}: {} tasks, at most {} at a time",
                if matches!(event.event, EventKind::RunContinued { .. }) {
                    "continuing"
                } else {
                    "starting"
                },
                self.shape.tasks,
                self.shape.parallel
            ),
            EventKind::AttemptInterrupted { killed_leftover } => format!(
                "task {:?} was left running by an engine that is gone: interrupted{}",
                event.task.as_deref().unwrap_or("?"),
                if *killed_leftover {
                    " (its leftover processes were killed)"
                } else {
                    ""
                }
            ),
            EventKind::TaskStarted {
                order,
                title,
                runner,
                number,
            } => {
                let attempt = if *number > 1 {
                    format!(" (attempt {number})")
                } else {
                    String::new()
                };
                format!("▶ #{order} {title} [{runner}]{attempt}")
            }
            EventKind::AttemptFinished {
                usage,
                denials,
                duration_ms,
                ..
            } => {
                if let Some(attempt) = &event.attempt {
                    if self.ends.len() >= ENDS_KEPT {
                        self.ends.clear();
                    }
                    self.ends.insert(
                        attempt.clone(),
                        AttemptEnd {
                            duration_ms: *duration_ms,
                            cost_usd: usage.cost_usd,
                            denials: denials.len(),
                        },
                    );
                }
                return None;
            }
            EventKind::TaskFinished {
                order,
                title,
                status,
                reason,
                ..
            } => {
                // A start that failed, or a landing finished after a restart, has no
                // `attempt_finished` in this run: no time, cost or refusals to show.
                let end = event
                    .attempt
                    .as_ref()
                    .and_then(|a| self.ends.remove(a))
                    .unwrap_or(AttemptEnd {
                        duration_ms: 0,
                        cost_usd: None,
                        denials: 0,
                    });
                let mark = if *status == TaskStatus::Completed {
                    "✔"
                } else {
                    "✘"
                };
                let mut line = format!(
                    "{mark} #{order} {title}: {status} in {} — {reason}",
                    seconds(end.duration_ms)
                );
                if let Some(cost) = end.cost_usd {
                    line.push_str(&format!(" (${cost:.4})"));
                }
                if end.denials > 0 {
                    line.push_str(&format!(" [{} refused tool call(s)]", end.denials));
                }
                line
            }
            EventKind::TasksBlocked { by, tasks } => {
                format!("  blocked by {by:?}: {}", tasks.join(", "))
            }
            EventKind::RunHalted { by } => {
                format!("halting: {by:?} failed and halt_on_failure is set; running tasks finish")
            }
            EventKind::WaitingForPerson { order, title } => format!(
                "… #{order} {title} is a manual task: see its steps with `weft manual {order}` and tick them with `weft manual {order} --done`"
            ),
            EventKind::ControlHandled { request, .. } => match request.task() {
                Some(task) => format!("control: {} {task:?}", request.kind()),
                None => format!("control: {}", request.kind()),
            },
            EventKind::Notice { text } => format!("note: {text}"),
            EventKind::BudgetReached { limit, spent, .. } => format!(
                "budget reached: the plan has spent {spent} ({limit}); no new task starts, running tasks finish (raise the budget and run `weft run` to continue)"
            ),
            EventKind::VerificationStarted { .. }
            | EventKind::VerificationPassed { .. }
            | EventKind::VerificationFailed { .. }
            | EventKind::VerificationFlaky { .. }
            | EventKind::BisectStep { .. }
            | EventKind::TaskQuarantined { .. } => crate::render::describe_event(&event.event),
            EventKind::NotifyFailed {
                command,
                failure,
                stderr,
                ..
            } => format!(
                "note: {}",
                weft_engine::notify::failure_line(command, failure, stderr)
            ),
            EventKind::RunEnded { status, totals } => {
                let status = status.as_str();
                match totals {
                    None => format!("run {run} {status}"),
                    Some(t) => {
                        let mut line = format!(
                            "run {run} {status}: {} completed, {} skipped, {} failed, {} blocked, {} waiting",
                            t.completed, t.skipped, t.failed, t.blocked, t.waiting
                        );
                        if t.input_tokens + t.output_tokens > 0 || t.cost_usd > 0.0 {
                            line.push_str(&format!(
                                "; tokens {} in / {} out, ${:.4}",
                                t.input_tokens, t.output_tokens, t.cost_usd
                            ));
                        }
                        line
                    }
                }
            }
            // Stored for the record and for other surfaces (`weft events` lists them),
            // not a line of the run: plan edits (from any terminal), the attempt's own
            // bookkeeping, landings (the task's line says how it ended), requeues and
            // releases, planner and approval traffic, handoff, and another version's kinds.
            EventKind::PlanCreated { .. }
            | EventKind::PlanPlanned { .. }
            | EventKind::PlanRevised { .. }
            | EventKind::PlanStatusChanged { .. }
            | EventKind::CurrentPlanSet
            | EventKind::PlanDeleted
            | EventKind::TaskAdded { .. }
            | EventKind::TaskRemoved { .. }
            | EventKind::TaskMoved { .. }
            | EventKind::DependenciesSet { .. }
            | EventKind::TaskEdited { .. }
            | EventKind::TaskHeld
            | EventKind::TaskReleased
            | EventKind::RunIsolated { .. }
            | EventKind::HandoffMerged
            | EventKind::HandoffDiscarded { .. }
            | EventKind::AttemptStarted { .. }
            | EventKind::AttemptFailedToStart { .. }
            | EventKind::LandingStarted { .. }
            | EventKind::LandingFinished { .. }
            | EventKind::TasksRequeued { .. }
            | EventKind::TasksReleased { .. }
            | EventKind::TaskRetried { .. }
            | EventKind::TaskRearmed { .. }
            | EventKind::TaskMarkedComplete { .. }
            | EventKind::TaskMarkedNotDone { .. }
            | EventKind::TaskSkipped { .. }
            | EventKind::TaskCancelled { .. }
            | EventKind::TaskRepairRequested { .. }
            | EventKind::ManualStepsTicked { .. }
            | EventKind::ControlRequested { .. }
            | EventKind::PlannerLogged { .. }
            | EventKind::ApprovalAsked { .. }
            | EventKind::ApprovalAnswered { .. }
            | EventKind::ApprovalSettled { .. }
            | EventKind::Unrecognized { .. }
            | EventKind::SpendUpdated { .. }
            | EventKind::AttemptIdle { .. } => return None,
        })
    }
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
pub struct LiveDisplay {
    lines: Lines,
    /// By task id.
    running: BTreeMap<String, Running>,
    drawn_lines: usize,
}

struct Running {
    order: u32,
    title: String,
    started: Instant,
    activity: String,
    idle: bool,
}

/// The live notice of a write waiting for a busy store, e.g. `note: the store is busy:
/// held by pid 1234 (weft task edit 3 …) for 8 s; waiting (up to 10 min)`, safe for a
/// terminal; `None` for any other progress.
pub fn busy_line(progress: &RunProgress) -> Option<String> {
    let RunProgress::StoreBusy {
        holder,
        waited_secs,
        patience_secs,
    } = progress
    else {
        return None;
    };
    let who = match holder {
        Some((pid, Some(command))) => format!("held by pid {pid} ({command})"),
        Some((pid, None)) => format!("held by pid {pid}"),
        None => "held by another process".to_owned(),
    };
    let line = format!(
        "note: the store is busy: {who} for {waited_secs} s; waiting (up to {} min)",
        patience_secs.div_ceil(60)
    );
    Some(safe(&line).into_owned())
}

impl LiveDisplay {
    fn progress(&mut self, progress: &RunProgress) {
        match progress {
            RunProgress::Stored(event) => match (&event.event, &event.task) {
                (EventKind::TaskStarted { order, title, .. }, Some(task)) => {
                    self.running.insert(
                        task.clone(),
                        Running {
                            order: *order,
                            title: title.clone(),
                            started: Instant::now(),
                            activity: String::new(),
                            idle: false,
                        },
                    );
                }
                (EventKind::TaskFinished { .. }, Some(task)) => {
                    self.running.remove(task);
                }
                _ => {}
            },
            RunProgress::Activity { task, text } => {
                if let Some(r) = self.running.get_mut(task) {
                    r.activity.clone_from(text);
                    r.idle = false;
                }
            }
            RunProgress::Idle { task, .. } => {
                if let Some(r) = self.running.get_mut(task) {
                    r.idle = true;
                }
            }
            RunProgress::Tick | RunProgress::Unstored { .. } | RunProgress::StoreBusy { .. } => {}
        }
        let line = self.lines.line(progress);
        if line.is_none() && matches!(progress, RunProgress::Stored(_)) && !changes_block(progress)
        {
            // An event that is neither a line nor a change of the block: nothing to draw.
            return;
        }
        let mut out = std::io::stdout().lock();
        // Erase the block, print the permanent line (if any), redraw the block.
        for _ in 0..self.drawn_lines {
            let _ = write!(out, "\x1b[1A\x1b[2K");
        }
        if let Some(line) = line {
            let _ = writeln!(out, "{line}");
        }
        let width = terminal_width();
        let mut rows: Vec<&Running> = self.running.values().collect();
        rows.sort_by_key(|r| r.order);
        for r in &rows {
            let elapsed = r.started.elapsed().as_secs();
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

/// Whether a stored event started or ended a running task's row.
fn changes_block(progress: &RunProgress) -> bool {
    matches!(
        progress,
        RunProgress::Stored(Event {
            event: EventKind::TaskStarted { .. } | EventKind::TaskFinished { .. },
            ..
        })
    )
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::event::{ControlRequest, RunTotals, Usage};
    use weft_core::{RunStatus, Verdict};

    fn stored(kind: EventKind) -> RunProgress {
        RunProgress::Stored(Event::new(kind).run("a1b2c3d4").task("t"))
    }

    #[test]
    fn a_run_reads_as_its_stored_events_with_an_attempts_time_cost_and_refusals_on_its_task_line() {
        let mut lines = Lines::new(RunShape {
            tasks: 3,
            parallel: 2,
        });
        let finished = RunProgress::Stored(
            Event::new(EventKind::AttemptFinished {
                status: weft_core::AttemptStatus::Passed,
                exit_code: Some(0),
                signal: None,
                verdict: Verdict {
                    outcome: weft_core::VerdictOutcome::Pass,
                    reason: "marker found".into(),
                    checks: Vec::new(),
                    decided_at: 0,
                },
                usage: Usage {
                    cost_usd: Some(0.5),
                    ..Usage::default()
                },
                denials: vec![weft_core::Denial {
                    tool: "Bash".into(),
                    detail: String::new(),
                }],
                landing: None,
                transcript: None,
                duration_ms: 1500,
            })
            .attempt("at1"),
        );
        let task_finished = |status| {
            RunProgress::Stored(
                Event::new(EventKind::TaskFinished {
                    order: 1,
                    title: "Write \x1b[2Jit".into(),
                    status,
                    reason: "marker found".into(),
                    after_restart: false,
                })
                .attempt("at1"),
            )
        };
        let shown: Vec<Option<String>> = [
            stored(EventKind::RunStarted { pid: 7 }),
            stored(EventKind::TaskStarted {
                order: 1,
                title: "Write \x1b[2Jit".into(),
                runner: "exec".into(),
                number: 2,
            }),
            RunProgress::Activity {
                task: "t".into(),
                text: "x".into(),
            },
            finished,
            task_finished(TaskStatus::Completed),
            task_finished(TaskStatus::Failed),
            stored(EventKind::ControlHandled {
                request: ControlRequest::ForceStart {
                    task: "join".into(),
                },
                request_seq: 3,
            }),
            stored(EventKind::TaskHeld),
            stored(EventKind::RunEnded {
                status: RunStatus::Completed,
                totals: Some(RunTotals {
                    completed: 3,
                    ..RunTotals::default()
                }),
            }),
        ]
        .iter()
        .map(|p| lines.line(p))
        .collect();
        assert_eq!(
            shown,
            [
                Some("starting run a1b2c3d4: 3 tasks, at most 2 at a time".to_owned()),
                Some(r"▶ #1 Write \x1b[2Jit [exec] (attempt 2)".to_owned()),
                None,
                None,
                Some(
                    r"✔ #1 Write \x1b[2Jit: completed in 1.5s — marker found ($0.5000) [1 refused tool call(s)]"
                        .to_owned()
                ),
                Some(r"✘ #1 Write \x1b[2Jit: failed in 0.0s — marker found".to_owned()),
                Some("control: force_start \"join\"".to_owned()),
                None,
                Some(
                    "run a1b2c3d4 completed: 3 completed, 0 skipped, 0 failed, 0 blocked, 0 waiting"
                        .to_owned()
                ),
            ]
        );
    }
}
