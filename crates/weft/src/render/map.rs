//! The plan map (`weft status`, `weft plan`): a header, then one row per task (order,
//! status, title, runner, dependencies), then the notes under it.
//!
//! Cost: the map of a large plan is measured in a first pass and written in a second,
//! straight from the tasks; nothing is built per task but its row. From
//! [`turns::SPLIT_FROM`] tasks on, two threads do both passes, taking turns
//! ([`turns::in_turns`]): the bytes are the ones one thread writes (a test holds them
//! equal).

use super::turns::{self, Prepared};
use super::*;

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
pub fn plan_map_styled(
    out: &mut dyn Write,
    view: PlanView<'_>,
    default_runner: &str,
    usage: &HashMap<String, TaskUsage>,
    styled: bool,
) -> std::io::Result<()> {
    plan_map_split(out, view, default_runner, usage, styled, turns::SPLIT_FROM)
}

/// [`plan_map_styled`], its rows written by two threads from `split_from` tasks on (what
/// tests of the split use).
#[doc(hidden)]
pub fn plan_map_split(
    out: &mut dyn Write,
    view: PlanView<'_>,
    default_runner: &str,
    usage: &HashMap<String, TaskUsage>,
    styled: bool,
    split_from: usize,
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
    let measure = |range: std::ops::Range<usize>| measure(view, range, default_runner, usage);
    let written = turns::in_turns(
        out,
        task_count,
        split_from,
        measure,
        |measured, range, sink| {
            let columns = Columns::of(measured, view, default_runner, usage, styled);
            // The header, once the widths are known: before the first row.
            if range.start == 0 {
                columns.header(sink, bold)?;
            }
            write_rows(
                sink,
                view.tasks_from(range.start).take(range.len()),
                range,
                &columns,
            )
        },
    );
    let mut notes = Notes::default();
    for more in written? {
        notes.append(more);
    }
    notes.write(out)
}

/// What the first pass finds in some of the tasks: their widths, each title as shown and
/// each task's order by id.
struct Measured<'a> {
    status_width: usize,
    title_width: usize,
    runner_width: usize,
    /// Each title as shown, measured here and kept for the rows' pass when it needs no
    /// escape (nearly every title): sanitizing and cutting it twice was a tenth of the map.
    titles: Vec<ShownTitle>,
    order_of: HashMap<&'a str, u32, BuildFnv>,
}

/// The first pass over the tasks of `range`.
fn measure<'a>(
    view: PlanView<'a>,
    range: std::ops::Range<usize>,
    default_runner: &'a str,
    usage: &HashMap<String, TaskUsage>,
) -> Measured<'a> {
    let plan = view.plan();
    let mut order_of: HashMap<&str, u32, BuildFnv> =
        HashMap::with_capacity_and_hasher(range.len(), BuildFnv::default());
    let (mut status_width, mut title_width, mut runner_width) = (6, 5, 6);
    // Most tasks show the same runner as the task before: measured once (compared by
    // text, since a task's own runner is its own `&str`).
    let (mut last_runner, mut last_runner_width): (&str, usize) = ("", 0);
    let mut titles: Vec<ShownTitle> = Vec::with_capacity(range.len());
    for (task, _) in view.tasks_from(range.start).take(range.len()) {
        order_of.insert(task.id, task.order);
        let (status, note) = status_label(&task, usage);
        status_width = status_width.max(status.len() + note.len());
        let fit = ShownTitle::of(task.title);
        title_width = title_width.max(fit.width as usize);
        titles.push(fit);
        let runner = runner_str(&task, plan, default_runner);
        if runner != last_runner {
            last_runner = runner;
            last_runner_width = chars(&safe(runner));
        }
        runner_width = runner_width.max(last_runner_width);
    }
    Measured {
        status_width,
        title_width,
        runner_width,
        titles,
        order_of,
    }
}

/// What the rows' pass needs of the whole plan: the columns' widths over both halves,
/// each title as shown and each task's order by id.
struct Columns<'c, 'a> {
    measured: &'c Prepared<'c, Measured<'a>>,
    plan: &'a Plan,
    default_runner: &'a str,
    usage: &'c HashMap<String, TaskUsage>,
    styled: bool,
    order_width: usize,
    status_width: usize,
    title_width: usize,
    runner_width: usize,
}

impl<'c, 'a> Columns<'c, 'a> {
    fn of(
        measured: &'c Prepared<'c, Measured<'a>>,
        view: PlanView<'a>,
        default_runner: &'a str,
        usage: &'c HashMap<String, TaskUsage>,
        styled: bool,
    ) -> Self {
        let [(first, _), (second, _)] = &measured.halves;
        Columns {
            measured,
            plan: view.plan(),
            default_runner,
            usage,
            styled,
            order_width: view.len().to_string().len().max(1),
            status_width: first.status_width.max(second.status_width),
            title_width: first.title_width.max(second.title_width),
            runner_width: first.runner_width.max(second.runner_width),
        }
    }

    fn header(&self, out: &mut dyn Write, bold: anstyle::Style) -> std::io::Result<()> {
        writeln!(out)?;
        writeln!(
            out,
            "{bold}{:>order_width$}  {:<status_width$}  {:<title_width$}  {:<runner_width$}  deps{bold:#}",
            "#",
            "status",
            "title",
            "runner",
            order_width = self.order_width,
            status_width = self.status_width,
            title_width = self.title_width,
            runner_width = self.runner_width,
        )
    }

    fn title(&self, index: usize) -> ShownTitle {
        let (measured, from) = self.measured.of(index);
        measured.titles[index - from]
    }

    fn order_of(&self, id: &str) -> Option<u32> {
        let [(first, _), (second, _)] = &self.measured.halves;
        first
            .order_of
            .get(id)
            .or_else(|| second.order_of.get(id))
            .copied()
    }
}

/// The notes under the map, gathered in the same pass as its rows, and the totals.
#[derive(Default)]
struct Notes {
    lines: Vec<String>,
    tokens_in: u64,
    tokens_out: u64,
    /// Each reported cost in plan order, summed when written: in the order one pass adds
    /// them, to the last bit, however the rows were split.
    costs: Vec<f64>,
    reported: bool,
    cost_unknown: bool,
}

impl Notes {
    /// The notes of the tasks after these.
    fn append(&mut self, later: Notes) {
        self.lines.extend(later.lines);
        self.tokens_in += later.tokens_in;
        self.tokens_out += later.tokens_out;
        self.costs.extend(later.costs);
        self.reported |= later.reported;
        self.cost_unknown |= later.cost_unknown;
    }

    fn write(self, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.lines.is_empty() {
            writeln!(out)?;
            for note in self.lines {
                writeln!(out, "{note}")?;
            }
        }
        if self.reported {
            let total = self.costs.iter().fold(0f64, |sum, cost| sum + cost);
            let cost = if self.cost_unknown {
                format!("at least ${total:.4} (a model's price is unknown)")
            } else {
                format!("${total:.4}")
            };
            writeln!(
                out,
                "total: tokens {} in / {} out, {cost}",
                self.tokens_in, self.tokens_out
            )?;
        }
        Ok(())
    }
}

/// The second pass: the rows of `tasks`, the tasks of `range`.
fn write_rows<'a>(
    out: &mut dyn Write,
    tasks: impl Iterator<Item = (TaskView<'a>, Option<&'static str>)>,
    range: std::ops::Range<usize>,
    columns: &Columns<'_, '_>,
) -> std::io::Result<Notes> {
    let Columns {
        plan,
        default_runner,
        usage,
        styled,
        order_width,
        status_width,
        title_width,
        runner_width,
        ..
    } = *columns;
    let mut notes = Notes::default();
    // Each row is put together in one buffer by hand and written at once: `write!` with
    // nine padded arguments was most of the cost of rendering a large plan.
    let mut line = String::with_capacity(256);
    let (mut last_runner, mut last_shown): (&str, Cow<'_, str>) = ("", Cow::Borrowed(""));
    let mut last_runner_width = 0;
    for ((task, _), index) in tasks.zip(range) {
        let fit = columns.title(index);
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
        if runner != last_runner {
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
            match columns.order_of(dependency) {
                Some(order) => push_number(&mut line, order, 0),
                None => line.push_str(&safe(dependency)),
            }
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
        note_task(&mut notes, &task, usage);
    }
    Ok(notes)
}

/// What the notes under the map say of `task`.
fn note_task(notes: &mut Notes, task: &TaskView<'_>, usage: &HashMap<String, TaskUsage>) {
    let failed = matches!(
        task.status,
        TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted
            | TaskStatus::Conflicted
    );
    if failed && let Some(verdict) = task.verdict {
        notes.lines.push(format!(
            "  #{} {}: {}",
            task.order,
            task.status,
            cut(&safe(&verdict.reason), 100)
        ));
    }
    let Some(used) = usage.get(task.id) else {
        return;
    };
    if used.input_tokens.is_some() || used.cost_usd.is_some() {
        notes.reported = true;
        notes.tokens_in += used.input_tokens.unwrap_or(0);
        notes.tokens_out += used.output_tokens.unwrap_or(0);
        notes.costs.push(used.cost_usd.unwrap_or(0.0));
        notes.cost_unknown |= used.cost_unknown;
        notes.lines.push(format!(
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
        notes.lines.push(format!(
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
        notes.lines.push(format!(
            "  #{} was refused {} tool call(s): {}",
            task.order,
            used.denials.len(),
            tools.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::{Denial, Landing, Task, Verdict, VerdictOutcome};

    /// A plan of `count` tasks with every kind of row and note: each status (coloured or
    /// not), held tasks, titles to escape, cut and of several widths, runners that change,
    /// dependencies on tasks of either half and on none the plan has, verdicts on failed
    /// tasks and usage of every shape (tokens, costs, unknown costs, budgets, refusals, no changes).
    fn many_tasks(count: usize) -> (Plan, HashMap<String, TaskUsage>) {
        let titles = [
            "Plain title",
            "quote \" and \u{1b}[2J escape",
            "first line\nsecond line",
            "Ünïcödé «title» — with dashes",
        ];
        let mut usage = HashMap::new();
        let tasks = (0..count)
            .map(|index| {
                let id = format!("t{index}");
                let mut title = titles[index % titles.len()].repeat(1 + index % 9);
                title.push_str(&index.to_string());
                let mut task = Task::new(&id, &title);
                task.status = TaskStatus::ALL[index % TaskStatus::ALL.len()];
                task.hold = index % 7 == 3;
                task.kind =
                    [TaskKind::Ai, TaskKind::Ai, TaskKind::Manual, TaskKind::Ops][index % 4];
                if index % 5 == 1 {
                    task.runner = Some(format!("runner-{}", index % 3));
                }
                task.dependencies = (1..=index.min(3))
                    .map(|back| format!("t{}", (index * 7 + back * 131) % count))
                    .chain((index % 11 == 0).then(|| "ghost".to_owned()))
                    .collect();
                if index % 3 == 0 {
                    task.verdict = Some(Verdict {
                        outcome: VerdictOutcome::Fail,
                        reason: format!("exit 1: \"boom\" {index}\n\u{1b}[31mred"),
                        checks: Vec::new(),
                        decided_at: 1_796_000_000_000,
                    });
                }
                if index % 4 != 3 {
                    usage.insert(
                        id,
                        TaskUsage {
                            attempts: 1,
                            input_tokens: (index % 2 == 0).then_some(1000 + index as u64),
                            output_tokens: (index % 2 == 0).then_some(index as u64),
                            cost_usd: (index % 3 != 2).then_some(0.1 + index as f64 * 1e-7),
                            cost_unknown: index % 13 == 2,
                            denials: (index % 6 == 0)
                                .then(|| Denial {
                                    tool: "Bash".into(),
                                    detail: "rm -rf /".into(),
                                })
                                .into_iter()
                                .collect(),
                            landing: (index % 8 == 0).then_some(Landing::NoChanges),
                            idle_secs: (index % 10 == 1).then_some(61 + index as u64),
                            budget: (index % 17 == 5).then(|| TaskBudgetJson {
                                budget_usd: Some(0.5),
                                budget_tokens: None,
                                exceeded: (index % 2 == 0).then(|| "budget_usd = $0.50".into()),
                                text: format!("${index} of $0.50"),
                            }),
                        },
                    );
                }
                task
            })
            .collect();
        let mut plan = Plan {
            id: "0123456789abcdef0123456789abcdef".into(),
            goal: "a goal".into(),
            status: PlanStatus::Running,
            created_at: 0,
            updated_at: 0,
            runner: Some("claude-code".into()),
            revision: 1,
            tasks,
        };
        plan.renumber();
        (plan, usage)
    }

    fn map(
        view: PlanView<'_>,
        usage: &HashMap<String, TaskUsage>,
        styled: bool,
        split_from: usize,
    ) -> String {
        let mut out = Vec::new();
        plan_map_split(&mut out, view, "opencode", usage, styled, split_from).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_map_two_threads_write_is_the_map_one_thread_writes() {
        // Fewer tasks than a chunk, a chunk and one more, several chunks with a short last.
        for count in [2, 7, turns::CHUNK + 1, 3 * turns::CHUNK + 5] {
            let (plan, usage) = many_tasks(count);
            for view in [
                PlanView::of(&plan),
                PlanView::of(&plan).orphaned("engine gone"),
            ] {
                for styled in [false, true] {
                    let one = map(view, &usage, styled, usize::MAX);
                    let two = map(view, &usage, styled, 2);
                    assert!(one.lines().count() > count, "{count} rows and notes");
                    assert_eq!(two, one, "{count} tasks, styled {styled}");
                }
            }
        }
        // The split a large plan gets by default, and the tasks each thread measured.
        let (plan, usage) = many_tasks(turns::SPLIT_FROM + 3);
        let one = map(PlanView::of(&plan), &usage, false, usize::MAX);
        assert_eq!(
            map(PlanView::of(&plan), &usage, false, turns::SPLIT_FROM),
            one
        );
        assert!(one.contains("total: tokens"), "the totals line");
    }

    #[test]
    fn the_json_two_threads_write_is_the_json_one_thread_writes() {
        for count in [2, turns::CHUNK + 1, 3 * turns::CHUNK + 5] {
            let (plan, usage) = many_tasks(count);
            for view in [
                PlanView::of(&plan),
                PlanView::of(&plan).orphaned("engine gone"),
            ] {
                let status = plan_json(view, "opencode", &usage);
                let mut one = Vec::new();
                status.write_fields_split(&mut one, usize::MAX).unwrap();
                let mut two = Vec::new();
                status.write_fields_split(&mut two, 2).unwrap();
                assert_eq!(
                    String::from_utf8(two).unwrap(),
                    String::from_utf8(one.clone()).unwrap()
                );
                let whole: serde_json::Value =
                    serde_json::from_slice(&[b"{", &one[..], b"}"].concat()).unwrap();
                assert_eq!(whole["plan"]["tasks"].as_array().unwrap().len(), count);
            }
        }
    }
}
