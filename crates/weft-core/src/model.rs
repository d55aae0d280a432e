//! The plan, its tasks, and the shapes of runs and attempts.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch. Core never reads the clock; callers pass this in.
pub type Timestamp = i64;

/// What runs a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// An agent session runs it.
    #[default]
    Ai,
    /// A checklist a person ticks.
    Manual,
    /// A command run against the integrated work (tests, deploys).
    Ops,
}

impl TaskKind {
    pub const ALL: [TaskKind; 3] = [TaskKind::Ai, TaskKind::Manual, TaskKind::Ops];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Ai => "ai",
            TaskKind::Manual => "manual",
            TaskKind::Ops => "ops",
        }
    }

    pub fn parse(text: &str) -> Option<TaskKind> {
        TaskKind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

impl fmt::Display for TaskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a task stands. Stored as the snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    #[default]
    Pending,
    Approved,
    InProgress,
    Completed,
    Failed,
    Blocked,
    Skipped,
    Cancelled,
    Conflicted,
    Interrupted,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 10] = [
        TaskStatus::Pending,
        TaskStatus::Approved,
        TaskStatus::InProgress,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Blocked,
        TaskStatus::Skipped,
        TaskStatus::Cancelled,
        TaskStatus::Conflicted,
        TaskStatus::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Approved => "approved",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Skipped => "skipped",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Conflicted => "conflicted",
            TaskStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(text: &str) -> Option<TaskStatus> {
        TaskStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// A task whose fields are a record of what ran (or is running) must not be rewritten
    /// by an ordinary edit; recovery moves (retry, re-arm) exist for that.
    pub fn is_locked_for_edit(self) -> bool {
        matches!(self, TaskStatus::InProgress | TaskStatus::Completed)
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a plan stands as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Being written (planner conversation not yet confirmed).
    Draft,
    /// Ready to run.
    #[default]
    Approved,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl PlanStatus {
    pub const ALL: [PlanStatus; 6] = [
        PlanStatus::Draft,
        PlanStatus::Approved,
        PlanStatus::Running,
        PlanStatus::Completed,
        PlanStatus::Failed,
        PlanStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Draft => "draft",
            PlanStatus::Approved => "approved",
            PlanStatus::Running => "running",
            PlanStatus::Completed => "completed",
            PlanStatus::Failed => "failed",
            PlanStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<PlanStatus> {
        PlanStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for PlanStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictOutcome {
    Pass,
    Fail,
}

/// One piece of evidence consulted for a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Check {
    /// `completion_marker`, `exit_code`, `check:<command>`, `manual`, ...
    pub name: String,
    pub passed: bool,
    /// A skipped check did not decide the outcome; `detail` says why.
    pub skipped: bool,
    pub detail: String,
    /// A per-task check command's exit code (`None`: it did not finish, or this check is
    /// not a command). Kept for the evidence note of a landing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How long a per-task check command ran, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// Pass or fail, with every check that was consulted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    pub outcome: VerdictOutcome,
    pub reason: String,
    pub checks: Vec<Check>,
    pub decided_at: Timestamp,
}

/// What a finished task left for the tasks after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputSummary {
    pub review_reason: String,
    /// The last characters of the task's output (bounded by the engine).
    pub log_tail: String,
    pub captured_at: Timestamp,
}

/// One unit of work, sized for one agent session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// 1-based position; renumbered after every structural edit.
    pub order: u32,
    pub id: String,
    pub title: String,
    pub description: Option<String>,
    /// Empty for manual and ops tasks that need none.
    pub prompt: String,
    /// Ids of earlier tasks.
    pub dependencies: Vec<String>,
    pub runner: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub mode: Option<String>,
    pub kind: TaskKind,
    /// Ops tasks only.
    pub command: Option<String>,
    /// Manual tasks only.
    pub steps: Vec<String>,
    /// Which steps (0-based) a person has ticked off.
    pub steps_done: Vec<usize>,
    pub checks: Vec<String>,
    pub status: TaskStatus,
    pub hold: bool,
    pub verdict: Option<Verdict>,
    pub output: Option<OutputSummary>,
    /// Its own `timeout`, `idle_timeout` and budget (unset: the settings apply).
    #[serde(default, skip_serializing_if = "crate::limits::TaskLimits::is_empty")]
    pub limits: crate::limits::TaskLimits,
}

impl Task {
    /// A fresh pending task with only the identifying fields set.
    pub fn new(id: impl Into<String>, title: impl Into<String>) -> Task {
        Task {
            order: 0,
            id: id.into(),
            title: title.into(),
            description: None,
            prompt: String::new(),
            dependencies: Vec::new(),
            runner: None,
            model: None,
            effort: None,
            mode: None,
            kind: TaskKind::Ai,
            command: None,
            steps: Vec::new(),
            steps_done: Vec::new(),
            checks: Vec::new(),
            status: TaskStatus::Pending,
            hold: false,
            verdict: None,
            output: None,
            limits: crate::limits::TaskLimits::default(),
        }
    }

    /// `#3 "Add a limiter"`: how errors and reports name a task.
    pub fn label(&self) -> String {
        format!("#{} {:?}", self.order, self.id)
    }

    /// What a plan map or `weft status --json` shows of it.
    pub fn view(&self) -> TaskView<'_> {
        TaskView {
            order: self.order,
            id: &self.id,
            title: &self.title,
            status: self.status,
            hold: self.hold,
            kind: self.kind,
            runner: self.runner.as_deref(),
            model: self.model.as_deref(),
            effort: self.effort.as_deref(),
            mode: self.mode.as_deref(),
            checks: Strings::Owned(&self.checks),
            dependencies: Strings::Owned(&self.dependencies),
            limits: self.limits,
            verdict: self.verdict.as_ref(),
        }
    }

    /// The runner this task uses once the plan default is applied.
    pub fn effective_runner<'a>(&'a self, plan_default: Option<&'a str>) -> Option<&'a str> {
        self.runner.as_deref().or(plan_default)
    }
}

/// A task as a plan map or `weft status --json` shows it, borrowed from wherever it
/// lives: a [`Task`] ([`Task::view`]) or a row of a stored outline (weft-store's
/// `Outline`, which builds no `Task` at all). It holds everything those two show and
/// nothing only running a task needs (prompt, description, command, steps, output).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskView<'a> {
    pub order: u32,
    pub id: &'a str,
    pub title: &'a str,
    pub status: TaskStatus,
    pub hold: bool,
    pub kind: TaskKind,
    pub runner: Option<&'a str>,
    pub model: Option<&'a str>,
    pub effort: Option<&'a str>,
    pub mode: Option<&'a str>,
    pub checks: Strings<'a>,
    pub dependencies: Strings<'a>,
    pub limits: crate::limits::TaskLimits,
    pub verdict: Option<&'a Verdict>,
}

impl<'a> TaskView<'a> {
    /// The runner this task uses once the plan default is applied (see
    /// [`Task::effective_runner`]).
    pub fn effective_runner(&self, plan_default: Option<&'a str>) -> Option<&'a str> {
        self.runner.or(plan_default)
    }
}

/// A list of strings, borrowed: owned items, or the stored text of a list that needs no
/// escape (`["a","b"]` held as `a","b`, its items joined by `","`).
#[derive(Debug, Clone, Copy)]
pub enum Strings<'a> {
    Owned(&'a [String]),
    /// The text between the outer `["` and `"]` of a JSON list whose items hold no `"`,
    /// `\\` or control character; `None` for the empty list.
    Joined(Option<&'a str>),
}

impl<'a> Strings<'a> {
    pub fn is_empty(&self) -> bool {
        match self {
            Strings::Owned(items) => items.is_empty(),
            Strings::Joined(joined) => joined.is_none(),
        }
    }

    /// The items, in order.
    pub fn iter(&self) -> StringsIter<'a> {
        match *self {
            Strings::Owned(items) => StringsIter::Owned(items.iter()),
            Strings::Joined(joined) => StringsIter::Joined(joined),
        }
    }
}

/// Equal when the items are, however they are held.
impl PartialEq for Strings<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

/// The items of a [`Strings`].
#[derive(Debug, Clone)]
pub enum StringsIter<'a> {
    Owned(std::slice::Iter<'a, String>),
    /// What is left of the joined text.
    Joined(Option<&'a str>),
}

impl<'a> Iterator for StringsIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match self {
            StringsIter::Owned(items) => items.next().map(String::as_str),
            StringsIter::Joined(rest) => {
                let text = (*rest)?;
                // Items hold no `"`: the next one is where `","` begins.
                match text.find('"') {
                    Some(end) => {
                        *rest = Some(text.get(end + 3..).unwrap_or_default());
                        Some(&text[..end])
                    }
                    None => {
                        *rest = None;
                        Some(text)
                    }
                }
            }
        }
    }
}

/// The stored artifact: a goal and an ordered list of tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// 32 lowercase hex characters; the first 8 are the short id shown everywhere.
    pub id: String,
    pub goal: String,
    pub status: PlanStatus,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Runner for tasks that name none.
    pub runner: Option<String>,
    /// Bumped by every stored change; lets a reader tell whether it is stale.
    pub revision: u64,
    pub tasks: Vec<Task>,
}

impl Plan {
    pub const SHORT_ID_LEN: usize = 8;

    pub fn short_id(&self) -> &str {
        short_id(&self.id)
    }

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// Rewrite every task's order to its position (1-based).
    pub fn renumber(&mut self) {
        for (index, task) in self.tasks.iter_mut().enumerate() {
            task.order = order_of(index);
        }
    }
}

/// The short form of a plan or run id.
pub fn short_id(id: &str) -> &str {
    id.get(..Plan::SHORT_ID_LEN).unwrap_or(id)
}

/// 1-based order for a 0-based index.
pub fn order_of(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// An engine is executing it.
    Running,
    /// No engine is executing it; `weft run` continues it.
    Stopped,
    /// Every task completed or was skipped.
    Completed,
    /// The engine ended with tasks failed, blocked or waiting.
    Failed,
    /// Handed off: reviewed and merged or discarded. A plan's next run is a new one.
    HandedOff,
}

impl RunStatus {
    pub const ALL: [RunStatus; 5] = [
        RunStatus::Running,
        RunStatus::Stopped,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::HandedOff,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Stopped => "stopped",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::HandedOff => "handed_off",
        }
    }

    pub fn parse(text: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// One execution of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// 8 lowercase hex characters.
    pub id: String,
    pub plan_id: String,
    /// The commit the run started from (isolated runs).
    pub base_ref: Option<String>,
    /// `weft/<run>/integration` (isolated runs).
    pub integration_branch: Option<String>,
    pub status: RunStatus,
    /// The engine process executing it, with its start time in clock ticks so a reused
    /// pid is never mistaken for it.
    pub engine_pid: Option<u32>,
    pub engine_start_ticks: Option<u64>,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttemptStatus {
    Running,
    Passed,
    Failed,
    Interrupted,
    Cancelled,
}

impl Attempt {
    /// A running attempt as its first write records it: who it is and when it started,
    /// with nothing observed yet (no process, exit, verdict, usage or landing). Callers
    /// set what they know with struct update syntax (`Attempt { cwd, ..Attempt::new(..) }`),
    /// so the 27 fields are spelled out in one place.
    pub fn new(
        id: String,
        run_id: String,
        plan_id: String,
        task_id: String,
        number: u32,
        runner: String,
        started_at: Timestamp,
    ) -> Attempt {
        Attempt {
            id,
            run_id,
            plan_id,
            task_id,
            number,
            runner,
            status: AttemptStatus::Running,
            cwd: String::new(),
            worktree: None,
            branch: None,
            marker: None,
            session_id: None,
            agent_session_id: None,
            pid: None,
            process_group: None,
            process_start_ticks: None,
            exit_code: None,
            signal: None,
            started_at,
            ended_at: None,
            verdict: None,
            log_path: None,
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
            denials: Vec::new(),
            final_text: None,
            cut_from: None,
            landing: None,
        }
    }
}

impl AttemptStatus {
    pub const ALL: [AttemptStatus; 5] = [
        AttemptStatus::Running,
        AttemptStatus::Passed,
        AttemptStatus::Failed,
        AttemptStatus::Interrupted,
        AttemptStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AttemptStatus::Running => "running",
            AttemptStatus::Passed => "passed",
            AttemptStatus::Failed => "failed",
            AttemptStatus::Interrupted => "interrupted",
            AttemptStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<AttemptStatus> {
        AttemptStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// A tool call the agent was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Denial {
    pub tool: String,
    pub detail: String,
}

/// One try at a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// 32 lowercase hex characters.
    pub id: String,
    pub run_id: String,
    pub plan_id: String,
    pub task_id: String,
    /// 1 for the first try of a task in a run, then 2, 3, ...
    pub number: u32,
    pub runner: String,
    pub status: AttemptStatus,
    /// Where it ran.
    pub cwd: String,
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// The completion token this attempt must print (none for `exec` and ops tasks).
    pub marker: Option<String>,
    /// The session id weft chose (Claude Code `--session-id`).
    pub session_id: Option<String>,
    /// The session id the agent reported.
    pub agent_session_id: Option<String>,
    pub pid: Option<u32>,
    pub process_group: Option<i32>,
    pub process_start_ticks: Option<u64>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub verdict: Option<Verdict>,
    pub log_path: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    pub denials: Vec<Denial>,
    /// The agent's final answer, when its stream reported one.
    pub final_text: Option<String>,
    /// The integration tip the attempt's branch was cut from (isolated runs).
    pub cut_from: Option<String>,
    /// How the attempt's work landed on the integration branch (isolated runs).
    pub landing: Option<Landing>,
}

/// The outcome of landing a passed attempt on the run's integration branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Landing {
    /// Merged: the integration branch moved to `merge`.
    Landed { merge: String },
    /// The task changed nothing; nothing was merged, and it counts as landed.
    NoChanges,
    /// The merge conflicts: nothing was written; the branch and worktree are kept.
    Conflicted { files: Vec<String>, detail: String },
}

impl Landing {
    /// Whether dependents may build on it.
    pub fn is_landed(&self) -> bool {
        matches!(self, Landing::Landed { .. } | Landing::NoChanges)
    }
}
