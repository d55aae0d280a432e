//! Drawing the state: pure (a [`State`] in, a ratatui frame out). Only the plan rows on
//! screen are built, so a 10,000-task plan costs what 20 rows cost.
//!
//! Layout: a header line (plan, run, engine, filter), the screen, a message line and the
//! key footer. On a terminal of 120 columns or more the plan screen shows the task and
//! its live output beside the list; narrower, the task's summary sits under the list.
//! Below 80×24 a notice asks for a larger terminal.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use weft_core::{Task, TaskStatus};

use crate::state::{Confirm, Engine, Overlay, Screen, State, verdict_word, wider_scope};

/// The smallest terminal drawn.
pub const MIN_SIZE: (u16, u16) = (80, 24);
/// From this width the plan screen shows the task and its output beside the list.
pub const WIDE: u16 = 120;

/// Colour or not (`NO_COLOR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub colour: bool,
}

impl Theme {
    fn fg(self, colour: Color) -> Style {
        if self.colour {
            Style::default().fg(colour)
        } else {
            Style::default()
        }
    }

    fn status(self, status: TaskStatus) -> Style {
        self.fg(match status {
            TaskStatus::Completed | TaskStatus::Skipped => Color::Green,
            TaskStatus::InProgress => Color::Cyan,
            TaskStatus::Failed | TaskStatus::Conflicted | TaskStatus::Cancelled => Color::Red,
            TaskStatus::Blocked | TaskStatus::Interrupted => Color::Yellow,
            TaskStatus::Pending | TaskStatus::Approved => Color::Reset,
        })
    }
}

/// The plan's spend for the header, short (`$0.42/$0.40, 12400 tok`: against the budget
/// where one is set; a model without a price makes the cost "cost unknown", never $0),
/// and whether the budget was reached.
fn spend_text(snapshot: &crate::state::Snapshot) -> Option<(String, bool)> {
    let (spend, budget) = (&snapshot.spend, &snapshot.budget);
    if !budget.is_set() && spend.tokens.total() == 0 && spend.usd == 0.0 {
        return None;
    }
    let cost = match spend.cost_usd() {
        Some(usd) => weft_core::spend::usd(usd),
        None => "cost unknown".to_owned(),
    };
    let cost = match budget.usd {
        Some(limit) => format!("{cost}/{}", weft_core::spend::usd(limit)),
        None => cost,
    };
    let total = spend.tokens.total();
    let tokens = match budget.tokens {
        Some(limit) => format!("{total}/{limit} tok"),
        None => format!("{total} tok"),
    };
    let reached = budget.reached(spend).is_some();
    let mark = if reached { " budget reached" } else { "" };
    Some((format!("{cost}, {tokens}{mark}"), reached))
}

/// The keys the footer names, per screen.
fn footer(state: &State) -> &'static str {
    if state.filter.editing {
        return "type to filter · enter keep · esc clear";
    }
    match state.screen {
        Screen::Plan | Screen::Task => {
            "j/k g/G move  enter open  o output  d diff  r retry  e rearm  c cancel  f force  s skip  m mark  h hold  x repair  / F filter  R run  H handoff  ? help  q quit"
        }
        Screen::Output => "j/k scroll  g/G top/follow  esc back  r retry  R run  ? help  q quit",
        Screen::Diff => "j/k scroll  g/G ends  esc back  ? help  q quit",
        Screen::Handoff => "j/k scroll  m merge  d discard  esc back  ? help  q quit",
    }
}

/// Rows the plan list gets on a terminal of this size (the reducer pages by it).
pub fn plan_rows(size: Rect) -> usize {
    let body = size.height.saturating_sub(4);
    if size.width >= WIDE {
        body.saturating_sub(2) as usize
    } else {
        body.saturating_sub(2 + SUMMARY_HEIGHT) as usize
    }
}

const SUMMARY_HEIGHT: u16 = 7;

pub fn render(state: &State, theme: Theme, frame: &mut Frame) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let text = format!(
            "weft tui needs at least {}×{}; this terminal is {}×{}",
            MIN_SIZE.0, MIN_SIZE.1, area.width, area.height
        );
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let [header, body, message, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(area);
    frame.render_widget(
        Paragraph::new(header_line(state, theme, area.width)),
        header,
    );
    match state.screen {
        Screen::Plan => plan_screen(state, theme, frame, body),
        Screen::Task => task_pane(state, theme, frame, body),
        Screen::Output => output_pane(state, frame, body),
        Screen::Diff => lines_pane("diff", &state.diff, state.diff_scroll, frame, body),
        Screen::Handoff => lines_pane(
            "handoff: review the run's work · m merge · d discard",
            &state.handoff,
            state.diff_scroll,
            frame,
            body,
        ),
    }
    let text = state.message.as_deref().unwrap_or("");
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(
            text.to_owned(),
            theme.fg(Color::Yellow),
        ))),
        message,
    );
    frame.render_widget(
        Paragraph::new(footer(state))
            .style(theme.fg(Color::DarkGray))
            .wrap(Wrap { trim: true }),
        keys,
    );
    match &state.overlay {
        None => {}
        Some(Overlay::Help) => help_overlay(frame, area),
        Some(Overlay::Approvals) => approvals_overlay(state, frame, area),
        Some(Overlay::Confirm(what)) => confirm_overlay(what, frame, area),
    }
}

fn header_line(state: &State, theme: Theme, width: u16) -> Line<'static> {
    // Everything but the goal first; the goal gets what is left of the line.
    let mut rest = Vec::new();
    if let Some((id, status)) = &state.snapshot.run {
        rest.push(Span::raw(format!(" · run {id} {status}")));
    }
    rest.push(Span::raw(match state.snapshot.engine {
        Engine::Idle => " · idle (R runs)".to_owned(),
        Engine::Ours => " · running here (R stops)".to_owned(),
        Engine::Elsewhere { pid } => format!(" · pid {pid} (R stops)"),
    }));
    if let Some(status) = state.filter.status {
        rest.push(Span::raw(format!(" · only {}", status.as_str())));
    }
    if !state.filter.text.is_empty() || state.filter.editing {
        rest.push(Span::raw(format!(" · /{}", clip(&state.filter.text, 20))));
    }
    if let Some((text, reached)) = spend_text(&state.snapshot) {
        let style = if reached {
            theme.fg(Color::Red)
        } else {
            Style::default()
        };
        rest.push(Span::styled(format!(" · {text}"), style));
    }
    let waiting = state.snapshot.asks.len();
    if waiting > 0 {
        rest.push(Span::styled(
            format!(" · {waiting} approval(s) (a)"),
            theme.fg(Color::Magenta),
        ));
    }
    let mut spans = vec![Span::styled("weft", theme.fg(Color::Cyan))];
    match &state.snapshot.plan {
        Some(plan) => {
            let done = plan
                .tasks
                .iter()
                .filter(|t| matches!(t.status, TaskStatus::Completed | TaskStatus::Skipped))
                .count();
            let counts = format!(" · {done}/{} done", plan.tasks.len());
            let used: usize = 4
                + 15
                + counts.chars().count()
                + rest
                    .iter()
                    .map(|s| s.content.chars().count())
                    .sum::<usize>();
            let room = (width as usize).saturating_sub(used);
            let goal = if room >= 8 {
                format!(" {}", clip(&plan.goal, room - 1))
            } else {
                String::new()
            };
            spans.push(Span::raw(format!(
                " · plan {}{goal}{counts}",
                plan.short_id()
            )));
        }
        None => spans.push(Span::raw(" · no plan yet")),
    }
    spans.extend(rest);
    Line::from(spans)
}

fn plan_screen(state: &State, theme: Theme, frame: &mut Frame, area: Rect) {
    if area.width >= WIDE {
        let [list, right] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(area);
        plan_list(state, theme, frame, list);
        let [task, output] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(right);
        task_pane(state, theme, frame, task);
        output_pane(state, frame, output);
    } else {
        let [list, summary] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(SUMMARY_HEIGHT)]).areas(area);
        plan_list(state, theme, frame, list);
        task_pane(state, theme, frame, summary);
    }
}

fn plan_list(state: &State, theme: Theme, frame: &mut Frame, area: Rect) {
    let shown = if state.visible.len() == state.tasks().len() {
        format!("plan ({} tasks)", state.visible.len())
    } else {
        format!(
            "plan ({} of {} tasks)",
            state.visible.len(),
            state.tasks().len()
        )
    };
    let block = Block::default().borders(Borders::ALL).title(shown);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = inner.height as usize;
    let (up, down) = state.relatives();
    let wide = inner.width >= 90;
    let runner_default = state
        .snapshot
        .plan
        .as_ref()
        .and_then(|p| p.runner.as_deref());
    let mut lines = Vec::with_capacity(rows);
    let top = state.top.min(state.visible.len());
    for (pos, &index) in state.visible.iter().enumerate().skip(top).take(rows) {
        let task = &state.tasks()[index];
        let selected = pos == state.cursor;
        let mark = if selected {
            "▸"
        } else if up.contains(&index) {
            "↑"
        } else if down.contains(&index) {
            "↓"
        } else {
            " "
        };
        let deps = dep_orders(state, task);
        let runner = task.effective_runner(runner_default).unwrap_or("-");
        let mut status = task.status.as_str().to_owned();
        if task.hold {
            status.push_str(" (held)");
        }
        let fixed = if wide {
            2 + 6 + 19 + 12 + 16 + 14
        } else {
            2 + 6 + 14 + 10 + 12
        };
        let title_width = (inner.width as usize).saturating_sub(fixed).max(8);
        let mut spans = vec![
            Span::raw(format!("{mark} ")),
            Span::raw(format!("#{:<5}", task.order)),
            Span::styled(
                format!(
                    "{:<w$}",
                    clip(&status, if wide { 18 } else { 13 }),
                    w = if wide { 19 } else { 14 }
                ),
                theme.status(task.status),
            ),
            Span::raw(format!(
                "{:<title_width$}",
                clip(&task.title, title_width - 1)
            )),
            Span::raw(format!(
                "{:<w$}",
                clip(&deps, if wide { 11 } else { 9 }),
                w = if wide { 12 } else { 10 }
            )),
            Span::raw(format!(
                "{:<w$}",
                clip(runner, if wide { 15 } else { 11 }),
                w = if wide { 16 } else { 12 }
            )),
        ];
        if wide {
            spans.push(Span::raw(clip(task.model.as_deref().unwrap_or(""), 13)));
        }
        let mut line = Line::from(spans);
        if selected {
            line = line.style(Style::default().add_modifier(Modifier::REVERSED));
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push(Line::raw(if state.snapshot.plan.is_none() {
            "no plan: `weft plan` makes one"
        } else {
            "no task matches the filter (esc on / clears it, F cycles the status)"
        }));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

fn dep_orders(state: &State, task: &Task) -> String {
    if task.dependencies.is_empty() {
        return String::new();
    }
    let orders: Vec<String> = task
        .dependencies
        .iter()
        .map(|id| {
            state
                .index_of(id)
                .map_or_else(|| id.clone(), |i| state.tasks()[i].order.to_string())
        })
        .collect();
    format!("←{}", orders.join(","))
}

fn task_pane(state: &State, theme: Theme, frame: &mut Frame, area: Rect) {
    let Some(task) = state.selected_task() else {
        frame.render_widget(Block::default().borders(Borders::ALL).title("task"), area);
        return;
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!("task #{} {}", task.order, task.id));
    let mut lines = vec![Line::from(vec![
        Span::styled(task.status.as_str().to_owned(), theme.status(task.status)),
        Span::raw(format!(
            " · {} · {}",
            task.kind.as_str(),
            clip(&task.title, 70)
        )),
    ])];
    let runner = task
        .effective_runner(
            state
                .snapshot
                .plan
                .as_ref()
                .and_then(|p| p.runner.as_deref()),
        )
        .unwrap_or("-");
    let mut fields = format!("runner {}", clip(runner, 30));
    if let Some(model) = &task.model {
        fields.push_str(&format!(" · model {}", clip(model, 40)));
    }
    if let Some(mode) = &task.mode {
        fields.push_str(&format!(" · mode {}", clip(mode, 30)));
    }
    let deps = dep_orders(state, task);
    if !deps.is_empty() {
        fields.push_str(&format!(" · needs {}", deps.trim_start_matches('←')));
    }
    if task.hold {
        fields.push_str(" · held");
    }
    lines.push(Line::raw(fields));
    if let Some(limits) = limits_line(&task.limits) {
        lines.push(Line::raw(limits));
    }
    if let Some(verdict) = &task.verdict {
        lines.push(Line::raw(format!(
            "verdict {}: {}",
            verdict_word(task).unwrap_or("-"),
            clip(&verdict.reason, 200)
        )));
        for check in &verdict.checks {
            let word = if check.skipped {
                "skip"
            } else if check.passed {
                "ok"
            } else {
                "FAIL"
            };
            lines.push(Line::raw(format!(
                "  {word:<4} {} {}",
                clip(&check.name, 60),
                clip(&check.detail, 80)
            )));
        }
    }
    if state.detail.task == task.id {
        for attempt in &state.detail.attempts {
            let duration = attempt
                .ended_at
                .map(|end| format!(" {}s", (end - attempt.started_at).max(0) / 1000))
                .unwrap_or_default();
            lines.push(Line::raw(format!(
                "attempt {} · {} · {}{duration}",
                attempt.number,
                attempt.runner,
                attempt.status.as_str()
            )));
        }
        if let Some(answer) = state
            .detail
            .attempts
            .last()
            .and_then(|a| a.final_text.as_ref())
        {
            lines.push(Line::raw("final answer:"));
            for line in answer.lines().take(40) {
                lines.push(Line::raw(format!("  {}", safe(line))));
            }
        }
    }
    if !task.checks.is_empty() {
        lines.push(Line::raw(format!("checks: {}", task.checks.join(" · "))));
    }
    if !task.prompt.is_empty() {
        lines.push(Line::raw("prompt:"));
        for line in task.prompt.lines().take(40) {
            lines.push(Line::raw(format!("  {}", safe(line))));
        }
    }
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}

fn output_pane(state: &State, frame: &mut Frame, area: Rect) {
    let title = match state.current_attempt() {
        Some(attempt) => format!(
            "output · attempt {} · {}{}",
            attempt.number,
            attempt.status.as_str(),
            if state.output.follow {
                " · following"
            } else {
                ""
            }
        ),
        None => "output".to_owned(),
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = inner.height as usize;
    let output = &state.output;
    let mut all: Vec<&str> = output.lines.iter().map(String::as_str).collect();
    if !output.partial.is_empty() {
        all.push(&output.partial);
    }
    let end = all.len().saturating_sub(output.back);
    let start = end.saturating_sub(rows);
    let lines: Vec<Line> = all[start..end]
        .iter()
        .map(|l| Line::raw(l.replace('\t', "    ")))
        .collect();
    let lines = if lines.is_empty() {
        vec![Line::raw(if state.current_attempt().is_none() {
            "this task has not run yet"
        } else {
            "(no output yet)"
        })]
    } else {
        lines
    };
    frame.render_widget(Paragraph::new(lines), inner);
}

fn lines_pane(title: &str, lines: &[String], scroll: usize, frame: &mut Frame, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .title(title.to_owned());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let shown: Vec<Line> = lines
        .iter()
        .skip(scroll)
        .take(inner.height as usize)
        .map(|l| Line::raw(safe(l)))
        .collect();
    let shown = if shown.is_empty() {
        vec![Line::raw("(reading…)")]
    } else {
        shown
    };
    frame.render_widget(Paragraph::new(shown), inner);
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// Every key, for the help overlay.
pub const KEYS: &[(&str, &str)] = &[
    ("j k ↓ ↑", "move (in output and diff: scroll)"),
    ("g G Home End", "first / last task"),
    ("PgUp PgDn", "a page"),
    ("enter", "open the task / back to the plan"),
    ("o", "the selected task's live output"),
    ("d", "the task's diff"),
    ("r", "retry"),
    ("e", "re-arm: edit the task in $EDITOR, run again"),
    ("c", "cancel"),
    ("f", "force start"),
    ("s", "skip"),
    ("m", "mark complete / not done"),
    ("h", "hold / release"),
    ("x", "repair a conflicted task"),
    ("/ F", "filter by text / cycle the status filter"),
    ("a", "open approval questions"),
    ("R", "start or continue the run / stop it"),
    ("H", "handoff: review, merge, discard"),
    ("esc", "back"),
    ("? q", "this help / quit"),
];

fn help_overlay(frame: &mut Frame, area: Rect) {
    let rect = centered(area, 60, KEYS.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    let lines: Vec<Line> = KEYS
        .iter()
        .map(|(key, what)| Line::raw(format!("{key:<14}{what}")))
        .collect();
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title("keys (esc closes)"),
        ),
        rect,
    );
}

fn approvals_overlay(state: &State, frame: &mut Frame, area: Rect) {
    let Some(ask) = state.waiting_asks().next() else {
        return;
    };
    let more = state.waiting_asks().count() - 1;
    let rect = centered(area, 70, 9);
    frame.render_widget(Clear, rect);
    let lines = vec![
        Line::raw(format!("{} asks:", ask.asker)),
        Line::raw(clip(&ask.subject, 64)),
        Line::raw(format!("scope {}", clip(&ask.scope, 58))),
        Line::raw(""),
        Line::raw(format!(
            "y allow · n deny · a allow {} · esc later",
            clip(&wider_scope(&ask.scope), 30)
        )),
        Line::raw(if more > 0 {
            format!("{more} more waiting")
        } else {
            String::new()
        }),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!("approval {} waits", ask.id)),
        ),
        rect,
    );
}

fn confirm_overlay(what: &Confirm, frame: &mut Frame, area: Rect) {
    let question = match what {
        Confirm::Merge => "Merge the run's work into your checked-out branch?",
        Confirm::Discard => "Discard the run's work? (its tip is kept under refs/weft/discarded)",
        Confirm::StopRun => "Stop the run? (running tasks are stopped; R continues later)",
    };
    let rect = centered(area, 72, 5);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(vec![
            Line::raw(question),
            Line::raw(""),
            Line::raw("y yes · any other key no"),
        ])
        .wrap(Wrap { trim: true })
        .block(Block::default().borders(Borders::ALL).title("confirm")),
        rect,
    );
}

/// `text` cut to `max` characters, with `…` when cut; newlines become spaces.
fn clip(text: &str, max: usize) -> String {
    let flat = safe(text).replace(['\n', '\r', '\t'], " ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut out: String = flat.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Text from the store (titles, prompts, answers) made safe to draw: control sequences
/// shown escaped (`weft_core::terminal`), tabs as spaces.
fn safe(text: &str) -> String {
    weft_core::terminal::sanitize_str(text, weft_core::terminal::Keep::Nothing)
        .replace('\t', "    ")
}

/// A task's own limits in one line (`limits timeout 30m · budget_usd $0.50`), when it has
/// any; unset ones follow the settings.
fn limits_line(limits: &weft_core::TaskLimits) -> Option<String> {
    let text = weft_core::limits::format_duration;
    let parts: Vec<String> = [
        limits.timeout.map(|t| format!("timeout {}", text(t))),
        limits
            .idle_timeout
            .map(|t| format!("idle_timeout {}", text(t))),
        limits
            .budget_usd
            .map(|u| format!("budget_usd {}", weft_core::spend::usd(u))),
        limits.budget_tokens.map(|t| format!("budget_tokens {t}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| format!("limits {}", parts.join(" · ")))
}
