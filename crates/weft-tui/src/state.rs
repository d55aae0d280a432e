//! The TUI's state and its reducer: pure. Messages (a key, what was read from the store,
//! the outcome of an action) go in; the state changes and a list of [`Effect`]s comes
//! out, which the app (`app.rs`) carries out against the store and the engine. Nothing
//! here reads a clock, a file or the terminal, so every screen and every key is tested
//! without one.
//!
//! The state keeps no plan of its own: [`Snapshot`] is the last reading of the store, and
//! it is replaced whole whenever the typed events move past [`State::last_seq`]. What the
//! state adds is only where the user is looking (selection, filter, screen, scroll).
//!
//! The selection is a task id, not a row number, so it survives reloads that reorder or
//! filter the plan; the invariant (kept by [`State::fix_selection`], checked by property
//! tests): whenever a visible task exists, exactly one visible task is selected.

use std::collections::HashSet;

use weft_core::{Attempt, Plan, Task, TaskStatus, VerdictOutcome};

/// The most output lines kept for the output pane (older ones are dropped first).
pub const OUTPUT_LINES: usize = 5000;
/// The most diff lines kept.
pub const DIFF_LINES: usize = 20_000;

/// A key, as the reducer sees it (the app maps crossterm's key events to these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Enter,
    Esc,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Backspace,
    Tab,
}

/// What the run of the plan is doing, as read from the store.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Engine {
    /// No engine executes the plan.
    #[default]
    Idle,
    /// An engine in another process (`weft run` elsewhere).
    Elsewhere { pid: u32 },
    /// The engine this TUI started, on its own thread.
    Ours,
}

/// One open approval question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub id: i64,
    pub subject: String,
    pub scope: String,
    pub asker: String,
}

/// One reading of the store: the plan, its run and the open questions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    pub plan: Option<Plan>,
    /// The open run's id and status (`running`, `stopped`, …), if any.
    pub run: Option<(String, String)>,
    pub engine: Engine,
    /// Whether the open run is isolated (has a handoff).
    pub isolated: bool,
    pub asks: Vec<Ask>,
    /// The last event sequence number this reading includes.
    pub seq: i64,
    /// What the plan's attempts spent (running ones so far), every run and retry.
    pub spend: weft_core::spend::Spend,
    /// The plan's budget (the settings'), shown against the spend.
    pub budget: weft_core::spend::Budget,
}

/// What the task pane shows of the selected task beyond its stored fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Detail {
    pub task: String,
    /// Newest last.
    pub attempts: Vec<Attempt>,
}

/// Which screen fills the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Screen {
    #[default]
    Plan,
    Task,
    Output,
    Diff,
    Handoff,
}

/// What waits for y / n.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm {
    Merge,
    Discard,
    StopRun,
}

/// What covers the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Approvals,
    Confirm(Confirm),
}

/// A control move on one task: each is the engine operation the CLI command of that name
/// calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Retry,
    Cancel,
    ForceStart,
    Skip,
    Complete,
    Uncomplete,
    Hold,
    Release,
    Repair,
}

impl Action {
    /// The CLI command that does the same.
    pub fn command(self) -> &'static str {
        match self {
            Action::Retry => "retry",
            Action::Cancel => "cancel",
            Action::ForceStart => "force-start",
            Action::Skip => "skip",
            Action::Complete => "complete",
            Action::Uncomplete => "uncomplete",
            Action::Hold => "task hold",
            Action::Release => "task release",
            Action::Repair => "repair",
        }
    }
}

/// What the app is asked to do after a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Read the store again (the plan, the run, the questions).
    Reload,
    /// Read the selected task's attempts.
    LoadDetail {
        task: String,
    },
    /// Read an attempt's output from a byte offset.
    LoadOutput {
        attempt: String,
        offset: u64,
    },
    /// Read the task's diff (its last attempt's work).
    LoadDiff {
        task: String,
    },
    /// Read the run's handoff review.
    LoadHandoff,
    Control {
        action: Action,
        task: String,
    },
    /// Open `$EDITOR` on the task's editable fields, then re-arm it.
    Rearm {
        task: String,
    },
    StartRun,
    StopRun,
    Answer {
        ask: i64,
        allow: bool,
        scope: Option<String>,
    },
    Merge,
    Discard,
    Bell,
    Quit,
}

/// The text filter and the status filter of the plan pane.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    pub text: String,
    pub status: Option<TaskStatus>,
    /// Typing goes into the text filter.
    pub editing: bool,
}

impl Filter {
    fn matches(&self, task: &Task) -> bool {
        if let Some(status) = self.status
            && task.status != status
        {
            return false;
        }
        if self.text.is_empty() {
            return true;
        }
        let needle = self.text.to_lowercase();
        task.title.to_lowercase().contains(&needle)
            || task.id.to_lowercase().contains(&needle)
            || task.order.to_string() == needle
    }
}

/// The statuses the status filter cycles through (then back to all).
const STATUS_CYCLE: [TaskStatus; 6] = [
    TaskStatus::InProgress,
    TaskStatus::Failed,
    TaskStatus::Pending,
    TaskStatus::Completed,
    TaskStatus::Blocked,
    TaskStatus::Conflicted,
];

/// An attempt's output as shown: sanitized text split into lines, bounded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutputView {
    pub attempt: Option<String>,
    pub lines: Vec<String>,
    /// An unfinished last line.
    pub partial: String,
    pub offset: u64,
    /// More output may come (the attempt had not finished at the last read).
    pub running: bool,
    /// Stay at the end as output arrives.
    pub follow: bool,
    /// Lines scrolled back from the end (when not following).
    pub back: usize,
}

/// Everything the TUI shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct State {
    pub snapshot: Snapshot,
    /// Indexes into the plan's tasks that pass the filter, in plan order.
    pub visible: Vec<usize>,
    /// The selected task's id.
    pub selected: Option<String>,
    /// The selected task's position in `visible`.
    pub cursor: usize,
    /// The first visible row drawn (kept by the view so the cursor stays on screen).
    pub top: usize,
    pub filter: Filter,
    pub screen: Screen,
    pub overlay: Option<Overlay>,
    /// Questions the user put away with Esc (the overlay comes back for new ones).
    pub dismissed: HashSet<i64>,
    pub detail: Detail,
    pub output: OutputView,
    pub diff: Vec<String>,
    pub diff_scroll: usize,
    pub handoff: Vec<String>,
    /// The last action's outcome or error, shown above the footer.
    pub message: Option<String>,
    /// Ring the bell for notable events (the `bell` setting).
    pub bell: bool,
    /// The last event seen.
    pub last_seq: i64,
    /// Per reading: each task's index by id, and the indexes of its direct dependents
    /// (so drawing a row costs its own dependencies, not the plan).
    pub by_id: std::collections::HashMap<String, usize>,
    pub dependents: Vec<Vec<usize>>,
    /// Rows the plan list has on screen (set by the view from the terminal size).
    pub page: usize,
    pub quit: bool,
}

/// Something the reducer is told.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    Key(Key),
    /// A fresh reading of the store.
    Snapshot(Snapshot),
    /// Typed events after [`State::last_seq`], in order.
    Events(Vec<weft_core::event::Event>),
    Detail(Detail),
    /// Output bytes of `attempt` (already sanitized text) read from `offset`.
    Output {
        attempt: String,
        text: String,
        next: u64,
        running: bool,
    },
    Diff(String),
    Handoff(String),
    /// What an action did (its report lines) or why it was refused.
    Done(Result<Vec<String>, String>),
    /// The terminal's plan rows changed (a resize).
    Page(usize),
}

impl State {
    pub fn new(bell: bool) -> State {
        State {
            bell,
            page: 10,
            output: OutputView {
                follow: true,
                ..OutputView::default()
            },
            ..State::default()
        }
    }

    pub fn tasks(&self) -> &[Task] {
        self.snapshot.plan.as_ref().map_or(&[], |p| &p.tasks)
    }

    /// The selected task, if any.
    pub fn selected_task(&self) -> Option<&Task> {
        let index = *self.visible.get(self.cursor)?;
        self.tasks().get(index)
    }

    /// Indexes (into the tasks) of the selected task's direct dependencies and direct
    /// dependents.
    pub fn relatives(&self) -> (HashSet<usize>, HashSet<usize>) {
        let Some(&index) = self.visible.get(self.cursor) else {
            return (HashSet::new(), HashSet::new());
        };
        let task = &self.tasks()[index];
        let up = task
            .dependencies
            .iter()
            .filter_map(|id| self.by_id.get(id).copied())
            .collect();
        let down = self
            .dependents
            .get(index)
            .map(|d| d.iter().copied().collect())
            .unwrap_or_default();
        (up, down)
    }

    /// The index of the task with this id.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    fn index_plan(&mut self) {
        let tasks = self.snapshot.plan.as_ref().map_or(&[][..], |p| &p.tasks);
        self.by_id = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        let mut dependents = vec![Vec::new(); tasks.len()];
        for (i, task) in tasks.iter().enumerate() {
            for dep in &task.dependencies {
                if let Some(&d) = self.by_id.get(dep) {
                    dependents[d].push(i);
                }
            }
        }
        self.dependents = dependents;
    }

    /// The open questions not put away.
    pub fn waiting_asks(&self) -> impl Iterator<Item = &Ask> {
        self.snapshot
            .asks
            .iter()
            .filter(|a| !self.dismissed.contains(&a.id))
    }

    fn refilter(&mut self) {
        let filter = &self.filter;
        self.visible = self
            .tasks()
            .iter()
            .enumerate()
            .filter(|(_, t)| filter.matches(t))
            .map(|(i, _)| i)
            .collect();
        self.fix_selection();
    }

    /// Keep the invariant: a visible task is selected whenever one exists; the selected
    /// id stays selected while it is visible.
    pub fn fix_selection(&mut self) {
        if self.visible.is_empty() {
            self.cursor = 0;
            self.selected = None;
            self.top = 0;
            return;
        }
        let tasks = self.snapshot.plan.as_ref().map_or(&[][..], |p| &p.tasks);
        if let Some(id) = &self.selected
            && let Some(pos) = self.visible.iter().position(|&i| tasks[i].id == *id)
        {
            self.cursor = pos;
        } else {
            self.cursor = self.cursor.min(self.visible.len() - 1);
            self.selected = Some(tasks[self.visible[self.cursor]].id.clone());
        }
        self.keep_cursor_on_screen();
    }

    fn keep_cursor_on_screen(&mut self) {
        let page = self.page.max(1);
        if self.cursor < self.top {
            self.top = self.cursor;
        } else if self.cursor >= self.top + page {
            self.top = self.cursor + 1 - page;
        }
        let last_top = self.visible.len().saturating_sub(page);
        self.top = self.top.min(last_top);
    }

    fn move_to(&mut self, cursor: usize) -> Vec<Effect> {
        if self.visible.is_empty() {
            return Vec::new();
        }
        let before = self.selected.clone();
        self.cursor = cursor.min(self.visible.len() - 1);
        self.selected = Some(self.tasks()[self.visible[self.cursor]].id.clone());
        self.keep_cursor_on_screen();
        if self.selected != before {
            self.selection_changed()
        } else {
            Vec::new()
        }
    }

    /// What the newly selected task needs read.
    fn selection_changed(&mut self) -> Vec<Effect> {
        self.output = OutputView {
            follow: true,
            ..OutputView::default()
        };
        self.diff.clear();
        self.diff_scroll = 0;
        match &self.selected {
            Some(task) => {
                let mut effects = vec![Effect::LoadDetail { task: task.clone() }];
                if self.screen == Screen::Diff {
                    effects.push(Effect::LoadDiff { task: task.clone() });
                }
                effects
            }
            None => Vec::new(),
        }
    }

    /// The attempt the output pane follows: the selected task's newest.
    pub fn current_attempt(&self) -> Option<&Attempt> {
        let task = self.selected.as_deref()?;
        if self.detail.task != task {
            return None;
        }
        self.detail.attempts.last()
    }

    /// The effect that reads more output, when the output is shown and more may come.
    pub fn output_wanted(&self) -> Option<Effect> {
        let attempt = self.current_attempt()?;
        let same = self.output.attempt.as_deref() == Some(attempt.id.as_str());
        if same && !self.output.running {
            return None;
        }
        Some(Effect::LoadOutput {
            attempt: attempt.id.clone(),
            offset: if same { self.output.offset } else { 0 },
        })
    }
}

/// The reducer: one message in, the effects out.
pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Key(key) => on_key(state, key),
        Msg::Snapshot(snapshot) => {
            let plan_changed = state.snapshot.plan.as_ref().map(|p| (&p.id, p.revision))
                != snapshot.plan.as_ref().map(|p| (&p.id, p.revision));
            state.last_seq = state.last_seq.max(snapshot.seq);
            let had_asks: HashSet<i64> = state.snapshot.asks.iter().map(|a| a.id).collect();
            state.snapshot = snapshot;
            // Every reading (not only a new revision): the index must match the tasks.
            state.index_plan();
            let open: HashSet<i64> = state.snapshot.asks.iter().map(|a| a.id).collect();
            state.dismissed.retain(|id| open.contains(id));
            let new_ask = open.iter().any(|id| !had_asks.contains(id));
            if new_ask && state.overlay.is_none() {
                state.overlay = Some(Overlay::Approvals);
            }
            if state.overlay == Some(Overlay::Approvals) && state.waiting_asks().next().is_none() {
                state.overlay = None;
            }
            let before = state.selected.clone();
            state.refilter();
            let mut effects = Vec::new();
            if state.selected != before {
                effects.extend(state.selection_changed());
            } else if plan_changed && let Some(task) = state.selected.clone() {
                effects.push(Effect::LoadDetail { task });
            }
            effects
        }
        Msg::Events(events) => {
            let mut effects = Vec::new();
            let mut notable = false;
            for event in &events {
                if event.seq <= state.last_seq {
                    continue;
                }
                state.last_seq = event.seq;
                notable |= weft_engine::notify::transition(event).is_some();
            }
            if !events.is_empty() {
                effects.push(Effect::Reload);
            }
            if notable && state.bell {
                effects.push(Effect::Bell);
            }
            effects
        }
        Msg::Detail(detail) => {
            if Some(&detail.task) != state.selected.as_ref() {
                return Vec::new();
            }
            state.detail = detail;
            state.output_wanted().into_iter().collect()
        }
        Msg::Output {
            attempt,
            text,
            next,
            running,
        } => {
            if state.current_attempt().map(|a| &a.id) != Some(&attempt) {
                return Vec::new();
            }
            if state.output.attempt.as_ref() != Some(&attempt) {
                state.output = OutputView {
                    attempt: Some(attempt),
                    follow: state.output.follow,
                    ..OutputView::default()
                };
            }
            push_output(&mut state.output, &text);
            state.output.offset = next;
            state.output.running = running;
            Vec::new()
        }
        Msg::Diff(text) => {
            state.diff = text.lines().take(DIFF_LINES).map(str::to_owned).collect();
            state.diff_scroll = 0;
            Vec::new()
        }
        Msg::Handoff(text) => {
            state.handoff = text.lines().take(DIFF_LINES).map(str::to_owned).collect();
            state.diff_scroll = 0;
            Vec::new()
        }
        Msg::Done(result) => {
            state.message = Some(match result {
                Ok(lines) if lines.is_empty() => "done".to_owned(),
                Ok(lines) => lines.join("; "),
                Err(error) => error,
            });
            vec![Effect::Reload]
        }
        Msg::Page(rows) => {
            state.page = rows.max(1);
            state.keep_cursor_on_screen();
            Vec::new()
        }
    }
}

fn push_output(output: &mut OutputView, text: &str) {
    let mut rest = text;
    while let Some(newline) = rest.find('\n') {
        let mut line = std::mem::take(&mut output.partial);
        line.push_str(&rest[..newline]);
        output.lines.push(line);
        rest = &rest[newline + 1..];
    }
    output.partial.push_str(rest);
    if output.lines.len() > OUTPUT_LINES {
        let drop = output.lines.len() - OUTPUT_LINES;
        output.lines.drain(..drop);
    }
}

fn on_key(state: &mut State, key: Key) -> Vec<Effect> {
    if state.filter.editing {
        return filter_key(state, key);
    }
    if let Some(overlay) = state.overlay.clone() {
        return overlay_key(state, overlay, key);
    }
    // Keys that work on every screen.
    match key {
        Key::Char('q') => {
            state.quit = true;
            return vec![Effect::Quit];
        }
        Key::Char('?') => {
            state.overlay = Some(Overlay::Help);
            return Vec::new();
        }
        Key::Char('a') if !state.snapshot.asks.is_empty() => {
            state.dismissed.clear();
            state.overlay = Some(Overlay::Approvals);
            return Vec::new();
        }
        Key::Char('R') => return run_key(state),
        Key::Char('H') => {
            state.screen = Screen::Handoff;
            state.handoff.clear();
            state.diff_scroll = 0;
            return vec![Effect::LoadHandoff];
        }
        Key::Esc if state.screen != Screen::Plan => {
            state.screen = Screen::Plan;
            return Vec::new();
        }
        _ => {}
    }
    match state.screen {
        Screen::Output => {
            if let Some(effects) = scroll_output(state, key) {
                return effects;
            }
        }
        Screen::Diff | Screen::Handoff => {
            if let Some(effects) = scroll_diff(state, key) {
                return effects;
            }
        }
        Screen::Plan | Screen::Task => {}
    }
    if state.screen == Screen::Handoff {
        match key {
            Key::Char('m') => state.overlay = Some(Overlay::Confirm(Confirm::Merge)),
            Key::Char('d') => state.overlay = Some(Overlay::Confirm(Confirm::Discard)),
            _ => {}
        }
        return Vec::new();
    }
    plan_key(state, key)
}

fn run_key(state: &mut State) -> Vec<Effect> {
    match state.snapshot.engine {
        Engine::Idle => {
            state.message = Some("starting the run…".to_owned());
            vec![Effect::StartRun]
        }
        Engine::Ours | Engine::Elsewhere { .. } => {
            state.overlay = Some(Overlay::Confirm(Confirm::StopRun));
            Vec::new()
        }
    }
}

fn plan_key(state: &mut State, key: Key) -> Vec<Effect> {
    let page = state.page.max(1);
    match key {
        Key::Char('j') | Key::Down => state.move_to(state.cursor + 1),
        Key::Char('k') | Key::Up => state.move_to(state.cursor.saturating_sub(1)),
        Key::PageDown => state.move_to(state.cursor + page),
        Key::PageUp => state.move_to(state.cursor.saturating_sub(page)),
        Key::Char('g') | Key::Home => state.move_to(0),
        Key::Char('G') | Key::End => state.move_to(usize::MAX),
        Key::Enter => {
            state.screen = match state.screen {
                Screen::Plan => Screen::Task,
                _ => Screen::Plan,
            };
            Vec::new()
        }
        Key::Char('o') => {
            state.screen = Screen::Output;
            state.output_wanted().into_iter().collect()
        }
        Key::Char('d') => {
            state.screen = Screen::Diff;
            state
                .selected
                .clone()
                .map(|task| Effect::LoadDiff { task })
                .into_iter()
                .collect()
        }
        Key::Char('/') => {
            state.filter.editing = true;
            Vec::new()
        }
        Key::Char('F') => {
            state.filter.status = match state.filter.status {
                None => Some(STATUS_CYCLE[0]),
                Some(s) => STATUS_CYCLE
                    .iter()
                    .position(|&c| c == s)
                    .and_then(|i| STATUS_CYCLE.get(i + 1).copied()),
            };
            let before = state.selected.clone();
            state.refilter();
            if state.selected != before {
                state.selection_changed()
            } else {
                Vec::new()
            }
        }
        Key::Char(c) => task_key(state, c),
        _ => Vec::new(),
    }
}

/// The per-task control keys.
fn task_key(state: &mut State, c: char) -> Vec<Effect> {
    let Some(task) = state.selected_task() else {
        return Vec::new();
    };
    let id = task.id.clone();
    let action = match c {
        'r' => Action::Retry,
        'c' => Action::Cancel,
        'f' => Action::ForceStart,
        's' => Action::Skip,
        'x' => Action::Repair,
        'm' if matches!(task.status, TaskStatus::Completed | TaskStatus::Skipped) => {
            Action::Uncomplete
        }
        'm' => Action::Complete,
        'h' if task.hold => Action::Release,
        'h' => Action::Hold,
        'e' => return vec![Effect::Rearm { task: id }],
        _ => return Vec::new(),
    };
    vec![Effect::Control { action, task: id }]
}

fn filter_key(state: &mut State, key: Key) -> Vec<Effect> {
    match key {
        Key::Enter | Key::Esc | Key::Tab => {
            state.filter.editing = false;
            if key == Key::Esc {
                state.filter.text.clear();
            }
        }
        Key::Backspace => {
            state.filter.text.pop();
        }
        // Bounded: a filter longer than any title is of no use.
        Key::Char(c) if state.filter.text.chars().count() < 200 => state.filter.text.push(c),
        _ => return Vec::new(),
    }
    let before = state.selected.clone();
    state.refilter();
    if state.selected != before {
        state.selection_changed()
    } else {
        Vec::new()
    }
}

fn overlay_key(state: &mut State, overlay: Overlay, key: Key) -> Vec<Effect> {
    match overlay {
        Overlay::Help => {
            if matches!(key, Key::Esc | Key::Char('?' | 'q') | Key::Enter) {
                state.overlay = None;
            }
            Vec::new()
        }
        Overlay::Confirm(what) => {
            state.overlay = None;
            if key != Key::Char('y') {
                state.message = Some("nothing was done".to_owned());
                return Vec::new();
            }
            vec![match what {
                Confirm::Merge => Effect::Merge,
                Confirm::Discard => Effect::Discard,
                Confirm::StopRun => Effect::StopRun,
            }]
        }
        Overlay::Approvals => {
            let Some(ask) = state.waiting_asks().next().cloned() else {
                state.overlay = None;
                return Vec::new();
            };
            let answer = |allow, scope| Effect::Answer {
                ask: ask.id,
                allow,
                scope,
            };
            let effect = match key {
                Key::Char('y') => answer(true, None),
                Key::Char('n') => answer(false, None),
                Key::Char('a') => answer(true, Some(wider_scope(&ask.scope))),
                Key::Esc => {
                    state.dismissed.insert(ask.id);
                    if state.waiting_asks().next().is_none() {
                        state.overlay = None;
                    }
                    return Vec::new();
                }
                _ => return Vec::new(),
            };
            // Answered: it leaves the overlay now; the store's next reading confirms.
            state.dismissed.insert(ask.id);
            if state.waiting_asks().next().is_none() {
                state.overlay = None;
            }
            vec![effect]
        }
    }
}

fn scroll_output(state: &mut State, key: Key) -> Option<Vec<Effect>> {
    let total = state.output.lines.len();
    let page = state.page.max(1);
    let back = &mut state.output.back;
    match key {
        Key::Char('k') | Key::Up => *back = (*back + 1).min(total),
        Key::Char('j') | Key::Down => *back = back.saturating_sub(1),
        Key::PageUp => *back = (*back + page).min(total),
        Key::PageDown => *back = back.saturating_sub(page),
        Key::Char('g') | Key::Home => *back = total,
        Key::Char('G') | Key::End => *back = 0,
        _ => return None,
    }
    state.output.follow = state.output.back == 0;
    Some(Vec::new())
}

fn scroll_diff(state: &mut State, key: Key) -> Option<Vec<Effect>> {
    let total = if state.screen == Screen::Handoff {
        state.handoff.len()
    } else {
        state.diff.len()
    };
    let page = state.page.max(1);
    let at = &mut state.diff_scroll;
    match key {
        Key::Char('j') | Key::Down => *at = (*at + 1).min(total.saturating_sub(1)),
        Key::Char('k') | Key::Up => *at = at.saturating_sub(1),
        Key::PageDown => *at = (*at + page).min(total.saturating_sub(1)),
        Key::PageUp => *at = at.saturating_sub(page),
        Key::Char('g') | Key::Home => *at = 0,
        Key::Char('G') | Key::End => *at = total.saturating_sub(1),
        _ => return None,
    }
    Some(Vec::new())
}

/// The scope `a` grants: the asked path's folder (`path:/etc/*`), or the asked command's
/// program (`command:git`); anything else as asked.
pub fn wider_scope(scope: &str) -> String {
    if let Some(path) = scope.strip_prefix("path:") {
        let path = path.trim_end_matches("/*");
        return match path.rsplit_once('/') {
            Some(("", _)) | None => "path:/*".to_owned(),
            Some((folder, _)) => format!("path:{folder}/*"),
        };
    }
    if let Some(command) = scope.strip_prefix("command:")
        && let Some(program) = command.split_whitespace().next()
    {
        return format!("command:{program}");
    }
    scope.to_owned()
}

/// `pass` / `fail` of a task's stored verdict, for the panes.
pub fn verdict_word(task: &Task) -> Option<&'static str> {
    task.verdict.as_ref().map(|v| match v.outcome {
        VerdictOutcome::Pass => "pass",
        VerdictOutcome::Fail => "fail",
    })
}
