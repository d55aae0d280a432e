//! Turning plans into text for people and JSON for programs.

use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use std::collections::HashMap;

use serde::Serialize;
use weft_core::{Plan, PlanStatus, Task, TaskKind, TaskStatus, Timestamp, Warning};

/// What a task's attempts used and were refused, summed over every attempt.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskUsage {
    pub attempts: u32,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// Tool calls the agent was refused in its latest attempt.
    pub denials: Vec<weft_core::Denial>,
    /// How its latest attempt landed (isolated runs).
    pub landing: Option<weft_core::Landing>,
}

/// Per-task usage from the plan's attempts.
pub fn usage_by_task(attempts: &[weft_core::Attempt]) -> HashMap<String, TaskUsage> {
    let mut usage: HashMap<String, TaskUsage> = HashMap::new();
    for attempt in attempts {
        let entry = usage.entry(attempt.task_id.clone()).or_default();
        entry.attempts += 1;
        let add = |slot: &mut Option<u64>, value: Option<u64>| {
            if let Some(v) = value {
                *slot = Some(slot.unwrap_or(0) + v);
            }
        };
        add(&mut entry.input_tokens, attempt.input_tokens);
        add(&mut entry.output_tokens, attempt.output_tokens);
        if let Some(cost) = attempt.cost_usd {
            entry.cost_usd = Some(entry.cost_usd.unwrap_or(0.0) + cost);
        }
        entry.denials = attempt.denials.clone();
        entry.landing = attempt.landing.clone();
    }
    usage
}

/// Longest title the plan map shows before it cuts with `…`.
const MAP_TITLE_CHARS: usize = 60;
/// Longest goal a list row shows.
pub const LIST_GOAL_CHARS: usize = 60;

/// `2026-09-30T08:44` in UTC.
pub fn minute(at: Timestamp) -> String {
    let millis = u64::try_from(at).unwrap_or(0);
    let time = UNIX_EPOCH + Duration::from_millis(millis);
    let text = humantime::format_rfc3339_seconds(time).to_string();
    text.get(..16).unwrap_or(&text).to_owned()
}

pub fn cut(text: &str, max_chars: usize) -> String {
    let first_line = text.lines().next().unwrap_or("");
    let mut chars = first_line.chars();
    let mut out: String = chars.by_ref().take(max_chars).collect();
    if chars.next().is_some() || first_line.len() < text.trim_end().len() {
        out.push('…');
    }
    out
}

/// What the runner column shows for a task.
pub fn runner_label(task: &Task, plan: &Plan, default_runner: &str) -> String {
    match task.kind {
        TaskKind::Ai => task
            .effective_runner(plan.runner.as_deref())
            .unwrap_or(default_runner)
            .to_owned(),
        TaskKind::Manual => "(manual)".into(),
        TaskKind::Ops => "(ops)".into(),
    }
}

fn status_style(status: TaskStatus) -> anstyle::Style {
    use anstyle::AnsiColor::*;
    let color = match status {
        TaskStatus::Completed => Green,
        TaskStatus::Failed | TaskStatus::Conflicted => Red,
        TaskStatus::InProgress => Cyan,
        TaskStatus::Blocked | TaskStatus::Interrupted => Yellow,
        _ => return anstyle::Style::new(),
    };
    color.on_default()
}

/// The plan map: header, then one row per task (order, status, title, runner, deps).
pub fn plan_map(
    out: &mut dyn Write,
    plan: &Plan,
    default_runner: &str,
    usage: &HashMap<String, TaskUsage>,
) -> std::io::Result<()> {
    let bold = anstyle::Style::new().bold();
    writeln!(
        out,
        "{bold}plan {}{bold:#}  {}  {} task{}  updated {}",
        plan.short_id(),
        plan.status,
        plan.tasks.len(),
        if plan.tasks.len() == 1 { "" } else { "s" },
        minute(plan.updated_at),
    )?;
    writeln!(out, "goal: {}", plan.goal)?;
    if plan.tasks.is_empty() {
        if plan.status == PlanStatus::Draft {
            writeln!(
                out,
                "\n(a planner draft with no plan yet: `weft plan log` shows what the planner did; plan again with `weft plan \"goal\"`)"
            )?;
        } else {
            writeln!(
                out,
                "\n(no tasks yet: add one with `weft task add --title ... --prompt ...`)"
            )?;
        }
        return Ok(());
    }
    let order_width = plan.tasks.len().to_string().len().max(1);
    let order_of: HashMap<&str, u32> = plan
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.order))
        .collect();
    let rows: Vec<(String, String, String, String)> = plan
        .tasks
        .iter()
        .map(|task| {
            let no_changes = usage
                .get(&task.id)
                .is_some_and(|u| u.landing == Some(weft_core::Landing::NoChanges));
            let status = if task.hold {
                format!("{} (held)", task.status)
            } else if no_changes && task.status == TaskStatus::Completed {
                format!("{} (no changes)", task.status)
            } else {
                task.status.to_string()
            };
            let deps: Vec<String> = task
                .dependencies
                .iter()
                .map(|d| {
                    order_of
                        .get(d.as_str())
                        .map_or_else(|| d.clone(), u32::to_string)
                })
                .collect();
            let deps = if deps.is_empty() {
                "-".into()
            } else {
                deps.join(",")
            };
            (
                status,
                cut(&task.title, MAP_TITLE_CHARS),
                runner_label(task, plan, default_runner),
                deps,
            )
        })
        .collect();
    let status_width = rows.iter().map(|r| r.0.len()).max().unwrap_or(6).max(6);
    let title_width = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let runner_width = rows.iter().map(|r| r.2.len()).max().unwrap_or(6).max(6);
    writeln!(out)?;
    writeln!(
        out,
        "{bold}{:>order_width$}  {:<status_width$}  {:<title_width$}  {:<runner_width$}  deps{bold:#}",
        "#", "status", "title", "runner"
    )?;
    for (task, (status, title, runner, deps)) in plan.tasks.iter().zip(rows) {
        let style = status_style(task.status);
        let title_pad = title_width - title.chars().count();
        writeln!(
            out,
            "{:>order_width$}  {style}{status:<status_width$}{style:#}  {title}{:title_pad$}  {runner:<runner_width$}  {deps}",
            task.order, ""
        )?;
    }
    let mut notes = Vec::new();
    let (mut tokens_in, mut tokens_out, mut cost, mut reported) = (0u64, 0u64, 0f64, false);
    for task in &plan.tasks {
        let failed = matches!(
            task.status,
            TaskStatus::Failed
                | TaskStatus::Cancelled
                | TaskStatus::Interrupted
                | TaskStatus::Conflicted
        );
        if failed && let Some(verdict) = &task.verdict {
            notes.push(format!(
                "  #{} {}: {}",
                task.order,
                task.status,
                cut(&verdict.reason, 100)
            ));
        }
        let Some(used) = usage.get(&task.id) else {
            continue;
        };
        if used.input_tokens.is_some() || used.cost_usd.is_some() {
            reported = true;
            tokens_in += used.input_tokens.unwrap_or(0);
            tokens_out += used.output_tokens.unwrap_or(0);
            cost += used.cost_usd.unwrap_or(0.0);
            notes.push(format!(
                "  #{} tokens {} in / {} out{}",
                task.order,
                used.input_tokens.unwrap_or(0),
                used.output_tokens.unwrap_or(0),
                used.cost_usd
                    .map(|c| format!(", ${c:.4}"))
                    .unwrap_or_default()
            ));
        }
        if !used.denials.is_empty() {
            let tools: Vec<&str> = used.denials.iter().map(|d| d.tool.as_str()).collect();
            notes.push(format!(
                "  #{} was refused {} tool call(s): {}",
                task.order,
                used.denials.len(),
                tools.join(", ")
            ));
        }
    }
    if !notes.is_empty() {
        writeln!(out)?;
        for note in notes {
            writeln!(out, "{note}")?;
        }
    }
    if reported {
        writeln!(
            out,
            "total: tokens {tokens_in} in / {tokens_out} out, ${cost:.4}"
        )?;
    }
    Ok(())
}

/// The `weft status --json` object, serialized straight from the plan without a tree.
#[derive(Serialize)]
pub struct StatusJson<'a> {
    plan: PlanJson<'a>,
}

#[derive(Serialize)]
struct PlanJson<'a> {
    id: &'a str,
    short_id: &'a str,
    goal: &'a str,
    status: PlanStatus,
    runner: Option<&'a str>,
    revision: u64,
    created_at: Timestamp,
    updated_at: Timestamp,
    tasks: Vec<TaskJson<'a>>,
}

#[derive(Serialize)]
struct TaskJson<'a> {
    order: u32,
    id: &'a str,
    title: &'a str,
    status: TaskStatus,
    kind: TaskKind,
    /// The effective runner of an AI task; null for manual and ops tasks.
    runner: Option<&'a str>,
    dependencies: &'a [String],
    hold: bool,
    model: Option<&'a str>,
    effort: Option<&'a str>,
    mode: Option<&'a str>,
    checks: &'a [String],
    verdict: Option<&'a weft_core::Verdict>,
    #[serde(flatten)]
    usage: Option<&'a TaskUsage>,
}

pub fn plan_json<'a>(
    plan: &'a Plan,
    default_runner: &'a str,
    usage: &'a HashMap<String, TaskUsage>,
) -> StatusJson<'a> {
    let tasks = plan
        .tasks
        .iter()
        .map(|task| TaskJson {
            order: task.order,
            id: &task.id,
            title: &task.title,
            status: task.status,
            kind: task.kind,
            runner: match task.kind {
                TaskKind::Ai => Some(
                    task.effective_runner(plan.runner.as_deref())
                        .unwrap_or(default_runner),
                ),
                _ => None,
            },
            dependencies: &task.dependencies,
            hold: task.hold,
            model: task.model.as_deref(),
            effort: task.effort.as_deref(),
            mode: task.mode.as_deref(),
            checks: &task.checks,
            verdict: task.verdict.as_ref(),
            usage: usage.get(&task.id),
        })
        .collect();
    StatusJson {
        plan: PlanJson {
            id: &plan.id,
            short_id: plan.short_id(),
            goal: &plan.goal,
            status: plan.status,
            runner: plan.runner.as_deref(),
            revision: plan.revision,
            created_at: plan.created_at,
            updated_at: plan.updated_at,
            tasks,
        },
    }
}

/// `warning:` lines on stderr.
pub fn warnings(warnings: &[Warning]) {
    let mut err = anstream::stderr().lock();
    let yellow = anstyle::AnsiColor::Yellow.on_default().bold();
    for warning in warnings {
        let _ = writeln!(err, "{yellow}warning:{yellow:#} {warning}");
    }
}

/// A note for the person (stderr), never data.
pub fn note(text: &str) {
    let _ = writeln!(anstream::stderr().lock(), "{text}");
}
