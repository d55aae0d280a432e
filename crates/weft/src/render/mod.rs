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
use weft_core::{Plan, PlanStatus, Task, TaskKind, TaskStatus, TaskView, Timestamp};

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
    /// How the map shows `title`: what [`safe`] and [`cut_parts`] make of it, measured.
    fn of(title: &str) -> ShownTitle {
        let fit = |len: usize, width: usize, cut: bool| ShownTitle {
            len: u32::try_from(len).unwrap_or(u32::MAX),
            width: u32::try_from(width).unwrap_or(u32::MAX),
            cut,
        };
        // Printable ASCII, what nearly every title is: safe as it is, one line, a
        // character a byte. One branch-free pass (what the compiler vectorizes) instead of
        // the sanitizer's, the cut's and the count's.
        let printable = title
            .bytes()
            .fold(true, |ok, b| ok & (b.wrapping_sub(0x20) < 0x5f));
        if printable {
            let cut = title.len() > MAP_TITLE_CHARS;
            let len = title.len().min(MAP_TITLE_CHARS);
            return fit(len, len + usize::from(cut), cut);
        }
        let shown = safe(title);
        let (kept, cut) = cut_parts(&shown, MAP_TITLE_CHARS);
        let width = chars(kept) + usize::from(cut);
        match shown {
            Cow::Borrowed(_) => fit(kept.len(), width, cut),
            Cow::Owned(_) => ShownTitle {
                width: u32::try_from(width).unwrap_or(u32::MAX),
                ..ShownTitle::AGAIN
            },
        }
    }

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
    // Digit by digit: ASCII needs no UTF-8 check (which cost more than the digits).
    for &digit in digits {
        line.push(char::from(digit));
    }
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

    /// The tasks after the first `skip`, as [`PlanView::tasks`] gives them (none past the
    /// end), without making the skipped ones.
    pub fn tasks_from(&self, skip: usize) -> ViewTasks<'a> {
        ViewTasks {
            tasks: match self.tasks {
                Source::Plan(tasks) => TasksOf::Plan(tasks[skip.min(tasks.len())..].iter()),
                Source::Outline(outline) => TasksOf::Outline(outline.tasks_from(skip)),
            },
            orphaned: self.orphaned,
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

mod events;
mod json;
mod map;
mod turns;

pub use events::*;
pub use json::*;
pub use map::*;

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

    /// The printable-ASCII shortcut measures a title exactly as sanitizing, cutting and
    /// counting it does.
    #[test]
    fn a_printable_title_is_measured_as_the_sanitizer_and_the_cut_measure_it() {
        let titles = [
            String::new(),
            "Plain title".into(),
            "x".repeat(MAP_TITLE_CHARS),
            "y".repeat(MAP_TITLE_CHARS + 1),
            "z".repeat(MAP_TITLE_CHARS * 3),
            format!("{}   ", "a".repeat(MAP_TITLE_CHARS - 1)),
            format!("{}   ", "a".repeat(MAP_TITLE_CHARS + 1)),
            " ~!@#$%^&*()_+{}|:<>? `-=[]\\;',./".into(),
        ];
        for title in &titles {
            let shown = safe(title);
            let (kept, cut) = cut_parts(&shown, MAP_TITLE_CHARS);
            let fit = ShownTitle::of(title);
            assert_eq!(fit.len as usize, kept.len(), "{title:?}");
            assert_eq!(fit.cut, cut, "{title:?}");
            assert_eq!(
                fit.width as usize,
                chars(kept) + usize::from(cut),
                "{title:?}"
            );
        }
        // Anything else takes the general path: a newline cuts, an escape is made again.
        let fit = ShownTitle::of("first\nsecond");
        assert_eq!((fit.len, fit.cut, fit.width), (5, true, 6));
        assert_eq!(ShownTitle::of("esc \u{1b}[2J").len, u32::MAX);
        assert_eq!(ShownTitle::of("é").width, 1);
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
