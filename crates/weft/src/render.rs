//! Turning plans into text for people and JSON for programs.
//!
//! Terminal safety: every text an agent or a planner could have written (a title, a goal,
//! a verdict's reason, a refused tool's name, an event's text) passes through [`safe`]
//! before it is written: its control sequences are shown escaped and its colour is
//! removed (a table's own colours are weft's; an agent's would break its columns).
//! JSON needs nothing: serde writes every control character as `\u00XX`.

use std::borrow::Cow;
use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use std::collections::HashMap;

use serde::Serialize;
use weft_core::{
    Plan, PlanStatus, Strings, Task, TaskKind, TaskStatus, TaskView, Timestamp, Warning,
};

/// What a task's attempts used and were refused, summed over every attempt.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskUsage {
    pub attempts: u32,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// An attempt counted tokens of a model without a price: `cost_usd` is then only the
    /// priced part, and the cost is shown as unknown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cost_unknown: bool,
    /// Tool calls the agent was refused in its latest attempt.
    pub denials: Vec<weft_core::Denial>,
    /// How its latest attempt landed (isolated runs).
    pub landing: Option<weft_core::Landing>,
    /// Its running attempt has had no output for this long, past `idle_after` (`weft
    /// status` fills it in from the store while an engine runs the plan).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_secs: Option<u64>,
    /// Its spend against its own budget, when it has one (`weft status`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<TaskBudgetJson>,
}

/// A task's spend (every attempt) against its own `budget_usd`/`budget_tokens`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskBudgetJson {
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    /// The limit its spend went over (`budget_usd = $0.50`), if it did.
    pub exceeded: Option<String>,
    /// For people: `$0.12 of $0.50, 3400 tokens`.
    pub text: String,
}

impl TaskUsage {
    /// The spend of its attempts, as the engine counts it against a budget.
    pub fn spend(&self) -> weft_core::spend::Spend {
        let mut spend = weft_core::spend::Spend::stored(
            self.input_tokens,
            self.output_tokens,
            self.cost_usd.or(self.cost_unknown.then_some(0.0)),
        );
        if self.cost_unknown {
            spend.unpriced = Some("a model without a price".into());
        }
        spend
    }

    /// With its spend against `budget` (a task's own).
    pub fn set_budget(&mut self, budget: &weft_core::spend::Budget) {
        let spend = self.spend();
        self.budget = Some(TaskBudgetJson {
            budget_usd: budget.usd,
            budget_tokens: budget.tokens,
            exceeded: budget.exceeded(&spend).map(|l| l.to_string()),
            text: budget.against(&spend),
        });
    }
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
        } else if attempt.input_tokens.unwrap_or(0) + attempt.output_tokens.unwrap_or(0) > 0 {
            entry.cost_unknown = true;
        }
        entry.denials = attempt.denials.clone();
        entry.landing = attempt.landing.clone();
    }
    usage
}

/// `text` as it may be written to a terminal: every control sequence shown escaped
/// (`\x1b[2J`), colour removed; borrowed (no copy) when it holds none, which is nearly
/// always.
pub fn safe(text: &str) -> Cow<'_, str> {
    weft_core::terminal::sanitize_str(text, weft_core::terminal::Keep::Nothing)
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
    let (kept, cut) = cut_parts(text, max_chars);
    let mut out = kept.to_owned();
    if cut {
        out.push('…');
    }
    out
}

/// What [`cut`] keeps of `text`, borrowed, and whether it adds `…`.
fn cut_parts(text: &str, max_chars: usize) -> (&str, bool) {
    // One line (no `\n`, no `\r`) that fits, what nearly every title is: itself.
    if text.len() <= max_chars && !text.bytes().any(|b| b == b'\n' || b == b'\r') {
        return (text, false);
    }
    let first_line = text.lines().next().unwrap_or("");
    // No more bytes than allowed characters: nothing to count.
    let kept = if first_line.len() <= max_chars {
        first_line
    } else {
        match first_line.char_indices().nth(max_chars) {
            Some((end, _)) => &first_line[..end],
            None => first_line,
        }
    };
    let cut = kept.len() < first_line.len() || first_line.len() < text.trim_end().len();
    (kept, cut)
}

/// A plan map title as its first pass measured it: the first `len` bytes of the task's
/// title, `cut` or not, `width` characters with the `…`; [`ShownTitle::AGAIN`] when the
/// title needs escapes (the rows' pass makes it again).
#[derive(Debug, Clone, Copy)]
struct ShownTitle {
    len: u32,
    width: u32,
    cut: bool,
}

impl ShownTitle {
    const AGAIN: ShownTitle = ShownTitle {
        len: u32::MAX,
        width: 0,
        cut: false,
    };
}

/// Characters in `text` (what a column's width counts).
fn chars(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// `count` spaces.
fn pad(line: &mut String, count: usize) {
    const SPACES: &str = "                                                                ";
    let mut left = count;
    while left > 0 {
        let now = left.min(SPACES.len());
        line.push_str(&SPACES[..now]);
        left -= now;
    }
}

/// `number` in decimal, right-aligned in `width` columns (`write!` with a width was a
/// tenth of rendering a 10,000-task map).
fn push_number(line: &mut String, number: u32, width: usize) {
    let mut buffer = [0u8; 10];
    let digits = decimal(number, &mut buffer);
    pad(line, width.saturating_sub(digits.len()));
    line.push_str(std::str::from_utf8(digits).expect("ASCII digits"));
}

/// `number`'s decimal digits, written at the end of `buffer`.
fn decimal(number: u32, buffer: &mut [u8; 10]) -> &[u8] {
    let mut at = buffer.len();
    let mut rest = number;
    loop {
        at -= 1;
        buffer[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    &buffer[at..]
}

/// FNV-1a: the plan map's id-to-order table hashes 10,000 short ids and looks up every
/// dependency; SipHash (the default, proof against chosen keys) was a tenth of its time,
/// and the ids are the plan's own, not an attacker's.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type BuildFnv = std::hash::BuildHasherDefault<Fnv>;

/// What a plan map and `weft status --json` render: a plan's own fields and its tasks,
/// either a [`Plan`]'s (built in memory: `weft plan --file`) or a stored
/// [`weft_store::Outline`]'s (`weft status`, which builds no `Task`). Both render through
/// the same functions below, task by task, as [`TaskView`]s.
#[derive(Clone, Copy)]
pub struct PlanView<'a> {
    plan: &'a Plan,
    tasks: Source<'a>,
    /// Tasks recorded in progress read interrupted, for this reason.
    orphaned: Option<&'static str>,
}

#[derive(Clone, Copy)]
enum Source<'a> {
    Plan(&'a [Task]),
    Outline(&'a weft_store::Outline),
}

impl<'a> PlanView<'a> {
    /// `plan` and its tasks.
    pub fn of(plan: &'a Plan) -> PlanView<'a> {
        PlanView {
            plan,
            tasks: Source::Plan(&plan.tasks),
            orphaned: None,
        }
    }

    /// A stored outline's plan and tasks.
    pub fn outline(outline: &'a weft_store::Outline) -> PlanView<'a> {
        PlanView {
            plan: &outline.plan,
            tasks: Source::Outline(outline),
            orphaned: None,
        }
    }

    /// Every task recorded in progress shown interrupted, with `reason` (in `--json`, a
    /// `reason` after its fields): what `weft status` shows when the plan's engine is
    /// gone.
    pub fn orphaned(self, reason: &'static str) -> PlanView<'a> {
        PlanView {
            orphaned: Some(reason),
            ..self
        }
    }

    /// The plan's own fields (its `tasks` may be empty: see [`PlanView::tasks`]).
    pub fn plan(&self) -> &'a Plan {
        self.plan
    }

    pub fn len(&self) -> usize {
        match self.tasks {
            Source::Plan(tasks) => tasks.len(),
            Source::Outline(outline) => outline.len(),
        }
    }

    /// Whether any task may have limits of its own (`false`: none has).
    pub fn may_have_limits(&self) -> bool {
        match self.tasks {
            Source::Plan(_) => true,
            Source::Outline(outline) => outline.any_limits(),
        }
    }

    /// Whether any task reads interrupted because its engine is gone.
    pub fn any_orphaned(&self) -> bool {
        self.orphaned.is_some()
            && match self.tasks {
                Source::Plan(tasks) => tasks.iter().any(|t| t.status == TaskStatus::InProgress),
                Source::Outline(outline) => outline.any_status(TaskStatus::InProgress),
            }
    }

    /// Every task as it is shown, in order, with the reason it reads so when it has one.
    pub fn tasks(&self) -> ViewTasks<'a> {
        ViewTasks {
            tasks: match self.tasks {
                Source::Plan(tasks) => TasksOf::Plan(tasks.iter()),
                Source::Outline(outline) => TasksOf::Outline(outline.tasks()),
            },
            orphaned: self.orphaned,
        }
    }
}

/// The tasks of a [`PlanView`] ([`PlanView::tasks`]).
pub struct ViewTasks<'a> {
    tasks: TasksOf<'a>,
    orphaned: Option<&'static str>,
}

enum TasksOf<'a> {
    Plan(std::slice::Iter<'a, Task>),
    Outline(weft_store::OutlineTasks<'a>),
}

impl<'a> Iterator for ViewTasks<'a> {
    type Item = (TaskView<'a>, Option<&'static str>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut task = match &mut self.tasks {
            TasksOf::Plan(tasks) => tasks.next()?.view(),
            TasksOf::Outline(tasks) => tasks.next()?,
        };
        match self.orphaned {
            Some(reason) if task.status == TaskStatus::InProgress => {
                task.status = TaskStatus::Interrupted;
                Some((task, Some(reason)))
            }
            _ => Some((task, None)),
        }
    }
}

/// The status column of a plan map row: the status and what qualifies it.
fn status_label(
    task: &TaskView<'_>,
    usage: &HashMap<String, TaskUsage>,
) -> (&'static str, Cow<'static, str>) {
    let idle = (task.status == TaskStatus::InProgress)
        .then(|| usage.get(task.id).and_then(|u| u.idle_secs))
        .flatten();
    if let Some(secs) = idle {
        return (
            task.status.as_str(),
            Cow::Owned(format!(" (idle for {})", idle_for(secs))),
        );
    }
    let note = if task.hold {
        " (held)"
    } else if task.status == TaskStatus::Completed
        && !usage.is_empty()
        && usage
            .get(task.id)
            .is_some_and(|u| u.landing == Some(weft_core::Landing::NoChanges))
    {
        " (no changes)"
    } else {
        ""
    };
    (task.status.as_str(), Cow::Borrowed(note))
}

/// `12m`, `1h 5m`: how long an attempt has been idle, to the minute past one minute.
pub fn idle_for(secs: u64) -> String {
    let rounded = if secs >= 60 { secs - secs % 60 } else { secs };
    humantime::format_duration(Duration::from_secs(rounded)).to_string()
}

/// What the runner column shows for a task.
fn runner_str<'a>(task: &TaskView<'a>, plan: &'a Plan, default_runner: &'a str) -> &'a str {
    match task.kind {
        TaskKind::Ai => task
            .effective_runner(plan.runner.as_deref())
            .unwrap_or(default_runner),
        TaskKind::Manual => "(manual)",
        TaskKind::Ops => "(ops)",
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
    view: PlanView<'_>,
    default_runner: &str,
    usage: &HashMap<String, TaskUsage>,
) -> std::io::Result<()> {
    plan_map_styled(out, view, default_runner, usage, true)
}

/// [`plan_map`], with `styled: false` writing no escape codes at all: the very bytes
/// [`plan_map`] gives once a colour-stripping stream has removed them, without a stream
/// having to scan every byte for them (`weft status` on 10,000 tasks, piped).
///
/// The rows are measured in a first pass and written in a second, straight from the
/// tasks: nothing is built per task but its dependency list (a plan map of 10,000 tasks
/// used to allocate five strings per row).
pub fn plan_map_styled(
    out: &mut dyn Write,
    view: PlanView<'_>,
    default_runner: &str,
    usage: &HashMap<String, TaskUsage>,
    styled: bool,
) -> std::io::Result<()> {
    let plan = view.plan();
    let task_count = view.len();
    let bold = if styled {
        anstyle::Style::new().bold()
    } else {
        anstyle::Style::new()
    };
    writeln!(
        out,
        "{bold}plan {}{bold:#}  {}  {} task{}  updated {}",
        plan.short_id(),
        plan.status,
        task_count,
        if task_count == 1 { "" } else { "s" },
        minute(plan.updated_at),
    )?;
    writeln!(out, "goal: {}", safe(&plan.goal))?;
    if task_count == 0 {
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
    let order_width = task_count.to_string().len().max(1);
    let mut order_of: HashMap<&str, u32, BuildFnv> =
        HashMap::with_capacity_and_hasher(task_count, BuildFnv::default());
    let (mut status_width, mut title_width, mut runner_width) = (6, 5, 6);
    // Most tasks show the same runner (the very same `&str`): measured once.
    let (mut last_runner, mut last_runner_width): (&str, usize) = ("", 0);
    // Each title as shown, measured here and kept for the rows' pass when it needs no
    // escape (nearly every title): sanitizing and cutting it twice was a tenth of the map.
    let mut titles: Vec<ShownTitle> = Vec::with_capacity(task_count);
    for (task, _) in view.tasks() {
        order_of.insert(task.id, task.order);
        let (status, note) = status_label(&task, usage);
        status_width = status_width.max(status.len() + note.len());
        let shown = safe(task.title);
        let (title, cut) = cut_parts(&shown, MAP_TITLE_CHARS);
        let width = chars(title) + usize::from(cut);
        title_width = title_width.max(width);
        titles.push(match shown {
            Cow::Borrowed(_) => ShownTitle {
                len: u32::try_from(title.len()).unwrap_or(u32::MAX),
                width: u32::try_from(width).unwrap_or(u32::MAX),
                cut,
            },
            Cow::Owned(_) => ShownTitle::AGAIN,
        });
        let runner = runner_str(&task, plan, default_runner);
        if !std::ptr::eq(runner, last_runner) {
            last_runner = runner;
            last_runner_width = chars(&safe(runner));
        }
        runner_width = runner_width.max(last_runner_width);
    }
    writeln!(out)?;
    writeln!(
        out,
        "{bold}{:>order_width$}  {:<status_width$}  {:<title_width$}  {:<runner_width$}  deps{bold:#}",
        "#", "status", "title", "runner"
    )?;
    // The notes under the map are gathered in the same pass as its rows.
    let mut notes = Vec::new();
    let (mut tokens_in, mut tokens_out, mut cost, mut reported) = (0u64, 0u64, 0f64, false);
    let mut cost_unknown = false;
    // Each row is put together in one buffer by hand and written at once: `write!` with
    // nine padded arguments was most of the cost of rendering a large plan.
    let mut line = String::with_capacity(256);
    let (mut last_runner, mut last_shown): (&str, Cow<'_, str>) = ("", Cow::Borrowed(""));
    let mut last_runner_width = 0;
    for ((task, _), fit) in view.tasks().zip(&titles) {
        use std::fmt::Write as _;
        line.clear();
        push_number(&mut line, task.order, order_width);
        line.push_str("  ");
        let style = status_style(task.status);
        if styled {
            let _ = write!(line, "{}", style.render());
        }
        let (status, note) = status_label(&task, usage);
        line.push_str(status);
        line.push_str(&note);
        pad(&mut line, status_width - status.len() - note.len());
        if styled {
            let _ = write!(line, "{}", style.render_reset());
        }
        line.push_str("  ");
        let width = if fit.len == u32::MAX {
            let title = safe(task.title);
            let (title, cut) = cut_parts(&title, MAP_TITLE_CHARS);
            line.push_str(title);
            if cut {
                line.push('…');
            }
            chars(title) + usize::from(cut)
        } else {
            line.push_str(&task.title[..fit.len as usize]);
            if fit.cut {
                line.push('…');
            }
            fit.width as usize
        };
        pad(&mut line, title_width - width);
        line.push_str("  ");
        let runner = runner_str(&task, plan, default_runner);
        if !std::ptr::eq(runner, last_runner) {
            last_runner = runner;
            last_shown = safe(runner);
            last_runner_width = chars(&last_shown);
        }
        line.push_str(&last_shown);
        pad(&mut line, runner_width - last_runner_width);
        line.push_str("  ");
        if task.dependencies.is_empty() {
            line.push('-');
        }
        for (index, dependency) in task.dependencies.iter().enumerate() {
            if index > 0 {
                line.push(',');
            }
            match order_of.get(dependency) {
                Some(&order) => push_number(&mut line, order, 0),
                None => line.push_str(&safe(dependency)),
            }
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
        let failed = matches!(
            task.status,
            TaskStatus::Failed
                | TaskStatus::Cancelled
                | TaskStatus::Interrupted
                | TaskStatus::Conflicted
        );
        if failed && let Some(verdict) = task.verdict {
            notes.push(format!(
                "  #{} {}: {}",
                task.order,
                task.status,
                cut(&safe(&verdict.reason), 100)
            ));
        }
        let Some(used) = usage.get(task.id) else {
            continue;
        };
        if used.input_tokens.is_some() || used.cost_usd.is_some() {
            reported = true;
            tokens_in += used.input_tokens.unwrap_or(0);
            tokens_out += used.output_tokens.unwrap_or(0);
            cost += used.cost_usd.unwrap_or(0.0);
            cost_unknown |= used.cost_unknown;
            notes.push(format!(
                "  #{} tokens {} in / {} out{}",
                task.order,
                used.input_tokens.unwrap_or(0),
                used.output_tokens.unwrap_or(0),
                match (used.cost_usd, used.cost_unknown) {
                    (_, true) => ", cost unknown (a model without a price)".to_owned(),
                    (Some(c), false) => format!(", ${c:.4}"),
                    (None, false) => String::new(),
                }
            ));
        }
        if let Some(budget) = &used.budget {
            notes.push(format!(
                "  #{} spent {} (task budget{})",
                task.order,
                budget.text,
                budget
                    .exceeded
                    .as_ref()
                    .map(|l| format!(": over its {l}"))
                    .unwrap_or_default()
            ));
        }
        if !used.denials.is_empty() {
            let tools: Vec<Cow<'_, str>> = used.denials.iter().map(|d| safe(&d.tool)).collect();
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
        let cost = if cost_unknown {
            format!("at least ${cost:.4} (a model's price is unknown)")
        } else {
            format!("${cost:.4}")
        };
        writeln!(
            out,
            "total: tokens {tokens_in} in / {tokens_out} out, {cost}"
        )?;
    }
    Ok(())
}

/// The `weft status --json` object, serialized straight from the plan without a tree.
#[derive(Serialize)]
pub struct StatusJson<'a> {
    plan: PlanJson<'a>,
    /// The plan's spend over every attempt (running ones so far), against its budget.
    spend: SpendJson,
}

/// The plan's spend against its budget (`budget_usd`, `budget_tokens`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendJson {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `null` when a model's price is unknown (never 0 for that).
    pub cost_usd: Option<f64>,
    /// The priced part, a lower bound when `cost_usd` is null.
    pub cost_usd_known: f64,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    /// The limit the spend reached (`budget_usd = $0.30`): no new task starts.
    pub reached: Option<String>,
    /// For people: `$0.40 of $0.30, 12000 tokens`.
    pub text: String,
}

/// The plan's spend from its tasks' usage, against `budget`.
pub fn spend_json(
    usage: &HashMap<String, TaskUsage>,
    budget: &weft_core::spend::Budget,
) -> SpendJson {
    let mut spend = weft_core::spend::Spend::default();
    for used in usage.values() {
        spend.add(&used.spend());
    }
    SpendJson {
        input_tokens: spend.tokens.input,
        output_tokens: spend.tokens.output,
        cost_usd: spend.cost_usd(),
        cost_usd_known: spend.usd,
        budget_usd: budget.usd,
        budget_tokens: budget.tokens,
        reached: budget.reached(&spend).map(|l| l.to_string()),
        text: budget.against(&spend),
    }
}

impl StatusJson<'_> {
    /// With the plan's budget (the settings'; none by default).
    pub fn budget(
        mut self,
        usage: &HashMap<String, TaskUsage>,
        budget: &weft_core::spend::Budget,
    ) -> Self {
        self.spend = spend_json(usage, budget);
        self
    }
}

impl StatusJson<'_> {
    /// This object's fields, `"plan":{…},"spend":{…}` without the braces, exactly as
    /// `serde_json::to_writer` writes them (a test holds the two equal), so a caller can
    /// add fields of its own. The tasks are written by hand: through serde, `flatten`
    /// makes each task a map whose every key goes through the string escaper, and that
    /// was two thirds of `weft status --json` on 10,000 tasks.
    ///
    /// Each task is put together in one reused buffer and written with one `write_all`:
    /// `out` should be buffered; a whole 10,000-task object in memory cost more in page
    /// faults than its writes did.
    pub fn write_fields(&self, sink: &mut impl Write) -> serde_json::Result<()> {
        let plan = &self.plan;
        let mut buffer = Vec::with_capacity(1024);
        let out = &mut buffer;
        out.extend_from_slice(b"\"plan\":{\"id\":");
        json_str(out, plan.id);
        out.extend_from_slice(b",\"short_id\":");
        json_str(out, plan.short_id);
        out.extend_from_slice(b",\"goal\":");
        json_str(out, plan.goal);
        out.extend_from_slice(b",\"status\":");
        json_str(out, plan.status.as_str());
        out.extend_from_slice(b",\"runner\":");
        json_opt_str(out, plan.runner);
        out.extend_from_slice(b",\"revision\":");
        serde_json::to_writer(&mut *out, &plan.revision)?;
        out.extend_from_slice(b",\"created_at\":");
        serde_json::to_writer(&mut *out, &plan.created_at)?;
        out.extend_from_slice(b",\"updated_at\":");
        serde_json::to_writer(&mut *out, &plan.updated_at)?;
        out.extend_from_slice(b",\"tasks\":[");
        for (index, task) in plan.tasks.each().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            task.write(out)?;
            sink.write_all(out).map_err(serde_json::Error::io)?;
            out.clear();
        }
        out.extend_from_slice(b"]},\"spend\":");
        serde_json::to_writer(&mut *out, &self.spend)?;
        sink.write_all(out).map_err(serde_json::Error::io)
    }
}

/// `text` as a JSON string, the bytes `serde_json` writes: straight through when nothing
/// in it needs an escape (`"`, `\\`, a control character), which is nearly always.
fn json_str(out: &mut Vec<u8>, text: &str) {
    // 16 bytes at a time, a branch-free test the compiler vectorizes, then the rest.
    let escaped = |bytes: &[u8]| {
        bytes.iter().fold(false, |any, &b| {
            any | (b < 0x20) | (b == b'"') | (b == b'\\')
        })
    };
    let mut chunks = text.as_bytes().chunks_exact(16);
    let plain = !chunks.any(escaped) && !escaped(chunks.remainder());
    if plain {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, text).expect("a string always serializes");
    }
}

/// One of weft's own names (a status, a kind: lowercase ASCII letters and `_`, nothing to
/// escape) as a JSON string, without looking for escapes.
fn json_name(out: &mut Vec<u8>, name: &'static str) {
    debug_assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.push(b'"');
}

fn json_opt_str(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => json_str(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

fn json_strs(out: &mut Vec<u8>, items: Strings<'_>) {
    match items {
        // Items with nothing to escape, between their stored `["` and `"]`: serde's bytes.
        Strings::Joined(Some(joined)) => {
            out.extend_from_slice(b"[\"");
            out.extend_from_slice(joined.as_bytes());
            out.extend_from_slice(b"\"]");
        }
        _ => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                json_str(out, item);
            }
            out.push(b']');
        }
    }
}

/// A list of strings as serde writes a `Vec<String>`.
struct StringsJson<'a>(Strings<'a>);

impl Serialize for StringsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
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
    tasks: TasksJson<'a>,
}

/// The tasks of the JSON, made one at a time from the view ([`task_json`]): never all at
/// once (10,000 of them were 2 MiB).
struct TasksJson<'a> {
    view: PlanView<'a>,
    default_runner: &'a str,
    usage: &'a HashMap<String, TaskUsage>,
}

impl<'a> TasksJson<'a> {
    fn each(&self) -> impl Iterator<Item = TaskJson<'a>> + 'a {
        let (plan, default_runner, usage) = (self.view.plan(), self.default_runner, self.usage);
        self.view
            .tasks()
            .map(move |(task, reason)| task_json(task, reason, plan, default_runner, usage))
    }
}

impl Serialize for TasksJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.each())
    }
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
    dependencies: StringsJson<'a>,
    hold: bool,
    model: Option<&'a str>,
    effort: Option<&'a str>,
    mode: Option<&'a str>,
    checks: StringsJson<'a>,
    /// Its own `timeout`, `idle_timeout`, `budget_usd`, `budget_tokens` (unset: absent).
    #[serde(skip_serializing_if = "weft_core::TaskLimits::is_empty")]
    limits: weft_core::TaskLimits,
    verdict: Option<&'a weft_core::Verdict>,
    #[serde(flatten)]
    usage: Option<&'a TaskUsage>,
    /// Why it reads as it does, when the status was not the store's (see
    /// [`PlanView::orphaned`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
}

impl TaskJson<'_> {
    /// What `serde_json` writes for this task (see [`StatusJson::write_fields`]); the
    /// rare parts, a verdict and the usage, still go through serde.
    fn write(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"order\":");
        out.extend_from_slice(decimal(self.order, &mut [0; 10]));
        out.extend_from_slice(b",\"id\":");
        json_str(out, self.id);
        out.extend_from_slice(b",\"title\":");
        json_str(out, self.title);
        out.extend_from_slice(b",\"status\":");
        json_name(out, self.status.as_str());
        out.extend_from_slice(b",\"kind\":");
        json_name(out, self.kind.as_str());
        out.extend_from_slice(b",\"runner\":");
        json_opt_str(out, self.runner);
        out.extend_from_slice(b",\"dependencies\":");
        json_strs(out, self.dependencies.0);
        out.extend_from_slice(if self.hold {
            b",\"hold\":true"
        } else {
            b",\"hold\":false"
        });
        out.extend_from_slice(b",\"model\":");
        json_opt_str(out, self.model);
        out.extend_from_slice(b",\"effort\":");
        json_opt_str(out, self.effort);
        out.extend_from_slice(b",\"mode\":");
        json_opt_str(out, self.mode);
        out.extend_from_slice(b",\"checks\":");
        json_strs(out, self.checks.0);
        if !self.limits.is_empty() {
            out.extend_from_slice(b",\"limits\":");
            serde_json::to_writer(&mut *out, &self.limits)?;
        }
        out.extend_from_slice(b",\"verdict\":");
        serde_json::to_writer(&mut *out, &self.verdict)?;
        if let Some(usage) = self.usage {
            // Flattened: its fields, without its braces, follow the task's own.
            let object = serde_json::to_vec(usage)?;
            if let Some(fields) = object.get(1..object.len() - 1).filter(|f| !f.is_empty()) {
                out.push(b',');
                out.extend_from_slice(fields);
            }
        }
        if let Some(reason) = self.reason {
            out.extend_from_slice(b",\"reason\":");
            json_str(out, reason);
        }
        out.push(b'}');
        Ok(())
    }
}

/// One task of the JSON.
fn task_json<'a>(
    task: TaskView<'a>,
    reason: Option<&'static str>,
    plan: &'a Plan,
    default_runner: &'a str,
    usage: &'a HashMap<String, TaskUsage>,
) -> TaskJson<'a> {
    TaskJson {
        order: task.order,
        id: task.id,
        title: task.title,
        status: task.status,
        kind: task.kind,
        runner: match task.kind {
            TaskKind::Ai => Some(
                task.effective_runner(plan.runner.as_deref())
                    .unwrap_or(default_runner),
            ),
            _ => None,
        },
        dependencies: StringsJson(task.dependencies),
        hold: task.hold,
        model: task.model,
        effort: task.effort,
        mode: task.mode,
        checks: StringsJson(task.checks),
        limits: task.limits,
        verdict: task.verdict,
        usage: usage.get(task.id),
        reason,
    }
}

/// The `weft status --json` object of `view` (`weft plan --file --json` too).
pub fn plan_json<'a>(
    view: PlanView<'a>,
    default_runner: &'a str,
    usage: &'a HashMap<String, TaskUsage>,
) -> StatusJson<'a> {
    let plan = view.plan();
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
            tasks: TasksJson {
                view,
                default_runner,
                usage,
            },
        },
        spend: spend_json(usage, &weft_core::spend::Budget::default()),
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

/// One line of `weft events`: sequence number, time (UTC), what it is about, what happened.
pub fn event_line(event: &weft_core::Event) -> String {
    let about = match (&event.task, &event.run, &event.plan) {
        (Some(task), _, _) => format!("task {task:?}"),
        (None, Some(run), _) => format!("run {run}"),
        (None, None, Some(plan)) => format!("plan {}", weft_core::model::short_id(plan)),
        (None, None, None) => "workspace".to_owned(),
    };
    let line = format!(
        "{:>6}  {}  {about}: {}",
        event.seq,
        minute(event.at),
        describe_event(&event.event)
    );
    safe(&line).into_owned()
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn shown(value: &Option<String>) -> String {
    value
        .as_deref()
        .map_or_else(|| "(cleared)".into(), |v| cut(v, 60))
}

fn describe_change(change: &weft_core::FieldChange) -> String {
    use weft_core::FieldChange as F;
    let value = match change {
        F::Title(text) | F::Prompt(text) => cut(text, 60),
        F::Description(v)
        | F::Runner(v)
        | F::Model(v)
        | F::Effort(v)
        | F::Mode(v)
        | F::Command(v) => shown(v),
        F::Kind(kind) => kind.to_string(),
        F::Steps(items) | F::Checks(items) => list(items),
        F::Timeout(v) | F::IdleTimeout(v) => shown(v),
        F::BudgetUsd(v) => v.map_or_else(|| "(cleared)".into(), weft_core::spend::usd),
        F::BudgetTokens(v) => v.map_or_else(|| "(cleared)".into(), |t| t.to_string()),
    };
    format!("{} = {value}", change.field())
}

fn describe_changes(changes: &[weft_core::FieldChange]) -> String {
    changes
        .iter()
        .map(describe_change)
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe_control(request: &weft_core::ControlRequest) -> String {
    use weft_core::ControlRequest as C;
    match request {
        C::Stop => "stop".into(),
        C::Cancel { task } => format!("cancel {task:?}"),
        C::ForceStart { task } => format!("force-start {task:?}"),
        C::Repair { task } => format!("repair {task:?}"),
        C::Unrecognized { original_kind, .. } => format!("{original_kind} (not known here)"),
    }
}

fn describe_landing(landing: &weft_core::Landing) -> String {
    match landing {
        weft_core::Landing::Landed { merge } => format!("landed as {}", cut(merge, 12)),
        weft_core::Landing::NoChanges => "nothing to land (no changes)".into(),
        weft_core::Landing::Conflicted { files, detail } => {
            format!("conflicted in {}: {}", list(files), cut(detail, 80))
        }
    }
}

/// Why a verification ran, in words.
fn verify_purpose(purpose: &str) -> &str {
    match purpose {
        "landed" => "after landings",
        "repeat" => "once more, after a failure",
        "bisect" => "bisecting",
        "alone" => "the culprit alone on the last green tip",
        "by_hand" => "weft verify",
        other => other,
    }
}

/// What happened, in a few words. Exhaustive: a new kind must say how it reads.
pub fn describe_event(kind: &weft_core::EventKind) -> String {
    use weft_core::EventKind as E;
    match kind {
        E::PlanCreated {
            goal,
            tasks,
            source,
        } => format!(
            "plan created from {source} with {tasks} task(s): {}",
            cut(goal, 60)
        ),
        E::PlanPlanned { tasks } => format!("the planner committed a plan of {tasks} task(s)"),
        E::PlanRevised { edits } => {
            let edits: Vec<String> = edits
                .iter()
                .map(|e| format!("{:?} {}", e.task, describe_event(&e.edit)))
                .collect();
            format!("the planner revised the plan: {}", edits.join("; "))
        }
        E::PlanStatusChanged { status } => format!("plan is {status}"),
        E::CurrentPlanSet => "made the current plan".into(),
        E::PlanDeleted => "plan deleted".into(),
        E::TaskAdded { order, title } => format!("added as #{order}: {}", cut(title, 60)),
        E::TaskRemoved { detached } => format!("removed; detached from {}", list(detached)),
        E::TaskMoved { from, to } => format!("moved from #{from} to #{to}"),
        E::DependenciesSet { dependencies } => format!("now depends on {}", list(dependencies)),
        E::TaskEdited { changes } => format!("edited: {}", describe_changes(changes)),
        E::TaskHeld => "held".into(),
        E::TaskReleased => "released".into(),
        E::RunStarted { pid } => format!("run started (engine pid {pid})"),
        E::RunContinued { pid, previous_pid } => match previous_pid {
            Some(previous) => format!("run continued by engine pid {pid} (was {previous})"),
            None => format!("run continued by engine pid {pid}"),
        },
        E::RunIsolated {
            base,
            integration_branch,
        } => format!("isolated: {integration_branch} cut from {}", cut(base, 12)),
        E::RunHalted { by } => format!("halting: {by:?} failed and halt_on_failure is set"),
        E::RunEnded { status, totals } => match totals {
            Some(t) => format!(
                "run ended {}: {} completed, {} skipped, {} failed, {} blocked, {} waiting; tokens {} in / {} out, ${:.4}",
                status.as_str(),
                t.completed,
                t.skipped,
                t.failed,
                t.blocked,
                t.waiting,
                t.input_tokens,
                t.output_tokens,
                t.cost_usd
            ),
            None => format!("run ended {}", status.as_str()),
        },
        E::HandoffMerged => "handed off: merged".into(),
        E::HandoffDiscarded { kept } => format!("handed off: discarded (tip kept as {kept})"),
        E::Notice { text } => format!("note: {text}"),
        E::AttemptIdle { silent_secs } => format!(
            "idle: no output for {}",
            humantime::format_duration(Duration::from_secs(*silent_secs))
        ),
        E::BudgetReached { limit, spent, .. } => {
            format!("budget reached: spent {spent} ({limit}); no new task starts")
        }
        E::SpendUpdated {
            input_tokens,
            output_tokens,
            cost_usd,
            unpriced,
            reported,
        } => {
            let cost = match (cost_usd, unpriced) {
                (Some(usd), _) => weft_core::spend::usd(*usd),
                (None, Some(model)) => format!("cost unknown (no price for {})", cut(model, 40)),
                (None, None) => "cost unknown".into(),
            };
            format!(
                "{} so far: {cost}, tokens {input_tokens} in / {output_tokens} out",
                if *reported {
                    "spent (as the agent reported)"
                } else {
                    "spent"
                }
            )
        }
        E::VerificationStarted { tip, purpose, .. } => {
            format!("verifying {} ({})", cut(tip, 12), verify_purpose(purpose))
        }
        E::VerificationPassed {
            tip, duration_ms, ..
        } => format!(
            "verification passed on {} in {:.1} s: a green tip",
            cut(tip, 12),
            *duration_ms as f64 / 1000.0
        ),
        E::VerificationFailed {
            tip,
            purpose,
            command,
            exit_code,
            ..
        } => format!(
            "verification failed on {} ({}): `{}` {}",
            cut(tip, 12),
            verify_purpose(purpose),
            cut(command, 60),
            match exit_code {
                Some(code) => format!("exited {code}"),
                None => "did not finish".into(),
            }
        ),
        E::VerificationFlaky { tip, command } => format!(
            "verification is flaky on {}: `{}` passed once and failed once; nobody is blamed",
            cut(tip, 12),
            cut(command, 60)
        ),
        E::BisectStep {
            tip,
            landing,
            of,
            task,
            passed,
            runs,
        } => format!(
            "bisect step {runs}: the tip after landing {landing} of {of}{} ({}) {}",
            task.as_deref()
                .map(|t| format!(" ({t:?})"))
                .unwrap_or_default(),
            cut(tip, 12),
            if *passed { "passes" } else { "fails" }
        ),
        E::TaskQuarantined {
            order,
            title,
            broke,
            rebuilt,
            only_in_combination,
            bisect_runs,
            requeued,
            conflicted,
            ..
        } => {
            let mut line = format!(
                "quarantined #{order} {}: its landing broke verification at {}{} (found in {bisect_runs} bisect run(s)); the integration branch was rebuilt without it at {}",
                cut(title, 60),
                cut(broke, 12),
                match only_in_combination {
                    Some(true) => ", only in combination with the landings before it",
                    _ => "",
                },
                cut(rebuilt, 12)
            );
            if !requeued.is_empty() {
                line.push_str(&format!("; runs again: {}", list(requeued)));
            }
            if !conflicted.is_empty() {
                line.push_str(&format!("; conflicted without it: {}", list(conflicted)));
            }
            line
        }
        E::NotifyFailed {
            command,
            failure,
            stderr,
            ..
        } => weft_engine::notify::failure_line(command, failure, stderr),
        E::AttemptStarted {
            number,
            runner,
            pid,
            ..
        } => match pid {
            Some(pid) => format!("attempt {number} started [{runner}] (pid {pid})"),
            None => format!("attempt {number} started [{runner}]"),
        },
        E::AttemptFailedToStart { reason } => {
            format!("attempt could not start: {}", cut(reason, 100))
        }
        E::AttemptInterrupted { killed_leftover } => format!(
            "attempt left by an engine that is gone: interrupted{}",
            if *killed_leftover {
                " (leftover processes killed)"
            } else {
                ""
            }
        ),
        E::LandingStarted { branch } => format!("landing {branch}"),
        E::LandingFinished {
            landing,
            after_restart,
        } => format!(
            "{}{}",
            describe_landing(landing),
            if *after_restart {
                " (after a restart)"
            } else {
                ""
            }
        ),
        E::AttemptFinished {
            status,
            verdict,
            usage,
            landing,
            duration_ms,
            ..
        } => {
            let mut line = format!(
                "attempt {} in {} ms: {}",
                status.as_str(),
                duration_ms,
                cut(&verdict.reason, 100)
            );
            if let (Some(input), Some(output)) = (usage.input_tokens, usage.output_tokens) {
                line.push_str(&format!("; tokens {input} in / {output} out"));
            }
            if let Some(cost) = usage.cost_usd {
                line.push_str(&format!(", ${cost:.4}"));
            }
            if let Some(landing) = landing {
                line.push_str(&format!("; {}", describe_landing(landing)));
            }
            line
        }
        E::TaskStarted {
            order,
            title,
            runner,
            number,
        } => format!(
            "#{order} {} started [{runner}] (attempt {number})",
            cut(title, 60)
        ),
        E::TaskFinished {
            order,
            status,
            reason,
            ..
        } => format!("#{order} {status}: {}", cut(reason, 100)),
        E::TasksRequeued { tasks } => format!("back in line: {}", list(tasks)),
        E::TasksBlocked { by, tasks } => format!("blocked by {by:?}: {}", list(tasks)),
        E::TasksReleased { by, tasks } => format!("released by {by:?}: {}", list(tasks)),
        E::WaitingForPerson { order, .. } => {
            format!("#{order} waits for a person (`weft manual {order}`)")
        }
        E::TaskRetried { was } => format!("retried (was {was})"),
        E::TaskRearmed { was, changes } if changes.is_empty() => format!("re-armed (was {was})"),
        E::TaskRearmed { was, changes } => {
            format!("re-armed (was {was}): {}", describe_changes(changes))
        }
        E::TaskMarkedComplete { was } => format!("marked complete by hand (was {was})"),
        E::TaskMarkedNotDone { was } => format!("marked not done (was {was})"),
        E::TaskSkipped { was } => format!("skipped (was {was})"),
        E::TaskCancelled { blocked } => format!("cancelled; blocked {}", list(blocked)),
        E::TaskRepairRequested { branch } => format!("one repair attempt of {branch} requested"),
        E::ManualStepsTicked { steps, completed } => {
            let steps: Vec<String> = steps.iter().map(|s| (s + 1).to_string()).collect();
            format!(
                "ticked step(s) {}{}",
                steps.join(", "),
                if *completed { "; complete" } else { "" }
            )
        }
        E::ControlRequested {
            request,
            request_seq,
        } => format!("requested {} (#{request_seq})", describe_control(request)),
        E::ControlHandled {
            request,
            request_seq,
        } => format!(
            "the engine took {} (#{request_seq})",
            describe_control(request)
        ),
        E::PlannerLogged { entries, .. } => format!("planner logged {entries} entr(ies)"),
        E::ApprovalAsked { ask, subject, .. } => {
            format!("approval #{ask} asked: {}", cut(subject, 80))
        }
        E::ApprovalAnswered { ask, allowed, .. } => format!(
            "approval #{ask} answered: {}",
            if *allowed { "allow" } else { "deny" }
        ),
        E::ApprovalSettled { ask, decision } => format!("approval #{ask} settled: {decision}"),
        E::Unrecognized { original_kind, .. } => {
            format!("{original_kind} (written by another weft version)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::{Landing, Task, TaskStatus};

    fn task(id: &str, title: &str, status: TaskStatus) -> Task {
        let mut task = Task::new(id, title);
        task.status = status;
        task
    }

    /// A plan that touches every branch of a row: every coloured status, hold, a landing
    /// with no changes, titles cut by length and by line, non-ASCII titles and a
    /// dependency the plan does not have.
    fn varied_plan() -> (Plan, HashMap<String, TaskUsage>) {
        let mut tasks = vec![
            task("a", "Plain title", TaskStatus::Completed),
            task("b", &"long title ".repeat(9), TaskStatus::Failed),
            task("c", "first line\nsecond line", TaskStatus::InProgress),
            task("d", "Ünïcödé «title» — with dashes", TaskStatus::Blocked),
            task("e", &"é".repeat(61), TaskStatus::Interrupted),
            task("f", "held", TaskStatus::Pending),
            task("g", "no changes", TaskStatus::Completed),
            task("h", "ops", TaskStatus::Conflicted),
        ];
        tasks[5].hold = true;
        tasks[1].dependencies = vec!["a".into()];
        tasks[3].dependencies = vec!["c".into(), "a".into(), "ghost".into()];
        tasks[7].kind = TaskKind::Ops;
        tasks[6].runner = Some("codex".into());
        let plan = Plan {
            id: "0123456789abcdef0123456789abcdef".into(),
            goal: "a goal".into(),
            status: PlanStatus::Running,
            created_at: 0,
            updated_at: 0,
            runner: None,
            revision: 1,
            tasks,
        };
        let mut plan = plan;
        plan.renumber();
        let usage = HashMap::from([(
            "g".to_owned(),
            TaskUsage {
                attempts: 1,
                landing: Some(Landing::NoChanges),
                ..TaskUsage::default()
            },
        )]);
        (plan, usage)
    }

    #[test]
    fn the_plain_map_is_the_styled_map_without_its_escape_codes() {
        let (plan, usage) = varied_plan();
        let mut styled = Vec::new();
        plan_map(&mut styled, PlanView::of(&plan), "claude-code", &usage).unwrap();
        let mut plain = Vec::new();
        plan_map_styled(
            &mut plain,
            PlanView::of(&plan),
            "claude-code",
            &usage,
            false,
        )
        .unwrap();
        let styled = String::from_utf8(styled).unwrap();
        assert!(styled.contains('\u{1b}'), "the styled map has colour");
        let plain = String::from_utf8(plain).unwrap();
        assert!(!plain.contains('\u{1b}'));
        assert_eq!(anstream::adapter::strip_str(&styled).to_string(), plain);
        assert!(plain.contains("pending (held)"), "{plain}");
        assert!(plain.contains("completed (no changes)"), "{plain}");
        assert!(plain.contains("first line…"), "{plain}");
        assert!(plain.contains(&format!("{}…", "é".repeat(60))), "{plain}");
        assert!(plain.contains("3,1,ghost\n"), "{plain}");
    }

    #[test]
    fn cut_keeps_the_first_line_and_at_most_the_characters_allowed() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("exactly10!", 10), "exactly10!");
        assert_eq!(cut("eleven char", 10), "eleven cha…");
        assert_eq!(cut("ééééé", 4), "éééé…");
        assert_eq!(cut("ééééé", 5), "ééééé");
        assert_eq!(cut("one\ntwo", 10), "one…");
        assert_eq!(cut("trailing\n", 10), "trailing");
        assert_eq!(cut("", 0), "");
        assert_eq!(cut("x", 0), "…");
    }
}
