//! A plan's outline without a `Task` per row: what `weft status` shows of 10,000 tasks,
//! read in one pass into one block of text (or by two readers at once, see
//! `rows::load_outline`, into one block each, kept as they were read).
//!
//! Contract: [`Outline::tasks`] gives, for every task of the plan in order, exactly the
//! [`TaskView`] that [`crate::Store::plan_outline`]'s task would give ([`Task::view`]),
//! and a row that one would refuse as damaged is refused here too, before anything is
//! shown: the whole plan is read and checked when the outline is built. Nothing is
//! allocated per task: the texts of every row (the shown part of its `outline` column,
//! copied at once) go into one `String`, each task is a fixed record of offsets into it,
//! and only the rare parts (a verdict, a list that needs escapes, limits) are kept
//! beside them.
//!
//! [`Task::view`]: weft_core::Task::view

use weft_core::{Plan, Strings, TaskKind, TaskLimits, TaskStatus, TaskView, Verdict};

/// Where a text lies in [`Outline::text`]; `start == u32::MAX` for none (NULL).
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    const NONE: Span = Span {
        start: u32::MAX,
        len: 0,
    };
}

/// A list column: its stored text when it needs no escape, else parsed.
#[derive(Debug, Clone, Copy)]
enum List {
    Joined(Span),
    Parsed(u32),
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    id: Span,
    title: Span,
    runner: Span,
    model: Span,
    effort: Span,
    mode: Span,
    checks: List,
    dependencies: List,
    order: u32,
    /// Index into `verdicts`, `u32::MAX` for none.
    verdict: u32,
    /// Index into `limits`, `u32::MAX` for none set.
    limits: u32,
    kind: TaskKind,
    status: TaskStatus,
    hold: bool,
}

/// A plan's outline: its own fields (`plan`, whose `tasks` is empty) and its tasks as
/// [`TaskView`]s ([`Outline::tasks`]).
///
/// Read by two readers at once (see `rows::load_outline`), the tasks are in two parts
/// kept as they were read, never copied into one: `up`, read from the first task on, and
/// `down`, read by the second reader from the last task back (so in reverse order).
#[derive(Debug, Clone)]
pub struct Outline {
    /// The plan's own fields; `tasks` is empty (see [`Outline::tasks`]).
    pub plan: Plan,
    up: Part,
    down: Part,
}

/// Tasks as one reader read them: their texts in one `String`, a fixed record each.
#[derive(Debug, Clone, Default)]
struct Part {
    text: String,
    entries: Vec<Entry>,
    verdicts: Vec<Verdict>,
    lists: Vec<Vec<String>>,
    limits: Vec<TaskLimits>,
}

/// What [`Outline::with_capacity`] sets aside for each task's text: more than a task of a
/// typical plan needs (~125 bytes), so a large plan's text is not moved as it grows. Only
/// what is written is ever touched (the rest costs address space, not memory).
const TEXT_PER_TASK: usize = 192;

impl Outline {
    pub(crate) fn new(plan: Plan) -> Outline {
        Outline {
            plan,
            up: Part::default(),
            down: Part::default(),
        }
    }

    /// An outline that will hold about `tasks` tasks (a guess: it only saves moving them).
    pub(crate) fn with_capacity(plan: Plan, tasks: usize) -> Outline {
        let mut outline = Outline::new(plan);
        outline.up.entries.reserve(tasks);
        outline.up.text.reserve(tasks.saturating_mul(TEXT_PER_TASK));
        outline
    }

    pub fn len(&self) -> usize {
        self.up.entries.len() + self.down.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether any task has limits of its own (most plans have none: a caller looking
    /// for them can skip the tasks).
    pub fn any_limits(&self) -> bool {
        !self.up.limits.is_empty() || !self.down.limits.is_empty()
    }

    /// Every task, in order.
    pub fn tasks(&self) -> OutlineTasks<'_> {
        OutlineTasks {
            outline: self,
            up: self.up.entries.iter(),
            down: self.down.entries.iter().rev(),
        }
    }

    /// The tasks after the first `skip`, in order (none past the end), without making the
    /// skipped ones: what a caller splitting the tasks between threads starts from.
    pub fn tasks_from(&self, skip: usize) -> OutlineTasks<'_> {
        let up = &self.up.entries[skip.min(self.up.entries.len())..];
        // `down` is kept last task first: skipping its first tasks drops its last entries.
        let skip_down = skip.saturating_sub(self.up.entries.len());
        let down = &self.down.entries[..self.down.entries.len().saturating_sub(skip_down)];
        OutlineTasks {
            outline: self,
            up: up.iter(),
            down: down.iter().rev(),
        }
    }

    /// Whether any task's status is `status` (no [`TaskView`] made for it).
    pub fn any_status(&self, status: TaskStatus) -> bool {
        let has = |entry: &Entry| entry.status == status;
        self.up.entries.iter().any(has) || self.down.entries.iter().any(has)
    }

    /// Add one row read up (from the first task on); `Err` describes damage (a list that
    /// does not parse).
    pub(crate) fn push(&mut self, row: RowTexts<'_>) -> Result<(), String> {
        self.up.push(row)
    }

    /// `part`'s tasks after order `after`, in order, after this outline's: `part` is an
    /// outline of the same plan read from its last task down (its own `plan` is dropped).
    /// Nothing is copied: the part is kept as it was read, without the tasks this outline
    /// has too.
    pub(crate) fn append_down_after(&mut self, part: Outline, after: i64) {
        debug_assert!(self.down.entries.is_empty() && part.down.entries.is_empty());
        self.down = part.up;
        // Read last first: the tasks both read are at the end.
        let keep = self
            .down
            .entries
            .iter()
            .take_while(|entry| i64::from(entry.order) > after)
            .count();
        self.down.entries.truncate(keep);
    }
}

impl Part {
    #[inline]
    fn view(&self, entry: &Entry) -> TaskView<'_> {
        TaskView {
            order: entry.order,
            id: self.str(entry.id).unwrap_or_default(),
            title: self.str(entry.title).unwrap_or_default(),
            status: entry.status,
            hold: entry.hold,
            kind: entry.kind,
            runner: self.str(entry.runner),
            model: self.str(entry.model),
            effort: self.str(entry.effort),
            mode: self.str(entry.mode),
            checks: self.list(entry.checks),
            dependencies: self.list(entry.dependencies),
            limits: self
                .limits
                .get(entry.limits as usize)
                .copied()
                .unwrap_or_default(),
            verdict: self.verdicts.get(entry.verdict as usize),
        }
    }

    #[inline]
    fn str(&self, span: Span) -> Option<&str> {
        if span.start == u32::MAX {
            return None;
        }
        let start = span.start as usize;
        Some(&self.text[start..start + span.len as usize])
    }

    #[inline]
    fn list(&self, list: List) -> Strings<'_> {
        match list {
            List::Joined(span) => Strings::Joined(self.str(span)),
            List::Parsed(index) => Strings::Owned(&self.lists[index as usize]),
        }
    }

    fn list_of<'t>(
        &mut self,
        text: &'t str,
        within: impl Fn(&'t str) -> Span,
        parsed: impl FnOnce() -> Result<Vec<String>, String>,
    ) -> Result<List, String> {
        match crate::lists::plain_list_items(text) {
            Some(Some(joined)) => Ok(List::Joined(within(joined))),
            Some(None) => Ok(List::Joined(Span::NONE)),
            None => {
                self.lists.push(parsed()?);
                Ok(List::Parsed(index(self.lists.len())))
            }
        }
    }

    /// Add one row; `Err` describes damage (a list that does not parse).
    ///
    /// The row's whole text is copied once and every span points into the copy: the
    /// columns are slices of `row.text` (see [`RowTexts`]).
    fn push(&mut self, row: RowTexts<'_>) -> Result<(), String> {
        let base = self.text.len();
        self.text.push_str(row.text);
        let within = |part: &str| -> Span {
            // Where `part` lies in `row.text`, by address: the parser took it from there.
            // Checked in every build (two comparisons): a span outside the copy would show
            // another task's text.
            let offset = (part.as_ptr() as usize).wrapping_sub(row.text.as_ptr() as usize);
            assert!(
                offset <= row.text.len() && part.len() <= row.text.len() - offset,
                "a column of the row's text"
            );
            Span {
                start: u32::try_from(base + offset).expect("an outline under 4 GiB"),
                len: u32::try_from(part.len()).expect("a column under 4 GiB"),
            }
        };
        let optional = |part: Option<&str>| part.map_or(Span::NONE, within);
        let id = within(row.id);
        let title = within(row.title);
        let runner = optional(row.runner);
        let model = optional(row.model);
        let effort = optional(row.effort);
        let mode = optional(row.mode);
        let checks = self.list_of(row.checks, within, || {
            crate::lists::parse_strings(row.checks, "checks list", row.id)
        })?;
        let dependencies = self.list_of(row.dependencies, within, || {
            crate::lists::parse_strings(row.dependencies, "dependencies", row.id)
        })?;
        let verdict = match row.verdict {
            Some(verdict) => {
                self.verdicts.push(verdict);
                index(self.verdicts.len())
            }
            None => u32::MAX,
        };
        let limits = if row.limits.is_empty() {
            u32::MAX
        } else {
            self.limits.push(row.limits);
            index(self.limits.len())
        };
        self.entries.push(Entry {
            id,
            title,
            runner,
            model,
            effort,
            mode,
            checks,
            dependencies,
            order: row.order,
            verdict,
            limits,
            kind: row.kind,
            status: row.status,
            hold: row.hold,
        });
        Ok(())
    }
}

fn index(len: usize) -> u32 {
    u32::try_from(len - 1).expect("fewer than 4 billion tasks")
}

/// The tasks of an [`Outline`], in order ([`Outline::tasks`]).
#[derive(Debug, Clone)]
pub struct OutlineTasks<'a> {
    outline: &'a Outline,
    up: std::slice::Iter<'a, Entry>,
    down: std::iter::Rev<std::slice::Iter<'a, Entry>>,
}

// `#[inline]` on `next` and what it calls (`Part::view`, `str`, `list`): the bin's
// renderers iterate these 10,000 times a status, and without LTO a function of another
// crate is not inlined unless it is tiny or marked, so each `TaskView` (17 fields) was
// built here and copied out of the call. Inlined: `weft status` on 10,000 tasks 5–7%
// less CPU, 7–8% less wall (A/B, 60 runs each).
impl<'a> Iterator for OutlineTasks<'a> {
    type Item = TaskView<'a>;

    #[inline]
    fn next(&mut self) -> Option<TaskView<'a>> {
        if let Some(entry) = self.up.next() {
            return Some(self.outline.up.view(entry));
        }
        self.down.next().map(|entry| self.outline.down.view(entry))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.up.len() + self.down.len();
        (len, Some(len))
    }
}

impl ExactSizeIterator for OutlineTasks<'_> {}

/// One row's columns as the loader read them, borrowed from SQLite: each a slice of
/// `text`, the row's `outline` column (see `packed.rs`).
#[derive(Debug)]
pub(crate) struct RowTexts<'r> {
    pub text: &'r str,
    pub id: &'r str,
    pub order: u32,
    pub title: &'r str,
    pub runner: Option<&'r str>,
    pub model: Option<&'r str>,
    pub effort: Option<&'r str>,
    pub mode: Option<&'r str>,
    pub kind: TaskKind,
    pub checks: &'r str,
    pub status: TaskStatus,
    pub hold: bool,
    pub verdict: Option<Verdict>,
    pub dependencies: &'r str,
    pub limits: TaskLimits,
}
