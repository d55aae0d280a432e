//! Workflow files: a plan written by hand (or exported), in TOML or JSON.
//!
//! The file carries the goal, the plan's default runner and every task field a person
//! writes; run state (status, verdicts) is not part of it, so an export imports back into
//! the same plan definition.

use foldhash::HashSet;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::Hint;
use crate::limits::{self, LimitValue, TaskLimits};
use crate::model::{Task, TaskKind};
use crate::slug::IdDeriver;
use crate::spend::Budget;
use crate::validate::{ValidationErrors, Warning};

mod halves;

/// A plan as written in a workflow file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "weft workflow file")]
pub struct WorkflowFile {
    /// What the plan is for.
    pub goal: String,
    /// Runner for tasks that name none (e.g. `claude-code`, `codex`, `opencode`, `exec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// Commands that verify the run's integration tip after landings (each run with
    /// `sh -c` in the integration checkout); for this plan they replace the `verify`
    /// setting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<String>,
    /// Dollars the whole plan may spend (every task, attempt and run): reached, no new
    /// task starts. For this plan it replaces the `budget_usd` and `budget_tokens`
    /// settings (as does `budget_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// Tokens the whole plan may spend (see `budget_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub budget_tokens: Option<i64>,
    /// The tasks in the order they run; a task may depend only on tasks before it.
    pub tasks: Vec<TaskSpec>,
}

/// One task as written in a workflow file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Unique id; defaults to a slug of the title. Not all digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub title: String,
    /// Why the task exists and the assumptions made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the agent is asked to do (required for AI tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Ids or order numbers (1-based) of earlier tasks.
    #[serde(default)]
    pub dependencies: Vec<DependencyRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Runner-specific mode (e.g. `bypassPermissions`, `plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `ai` (default), `manual` or `ops`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<TaskKind>,
    /// The command an ops task runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The checklist of a manual task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    /// Commands that must all exit 0 after the task for it to pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Wall-clock limit of each attempt (`"30m"`); replaces the `task_timeout` setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// No output, stream event or file change for this long ends an attempt (`"5m"`;
    /// `"0"`: never); replaces the `idle_timeout` setting and must be longer than
    /// `idle_after`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<String>,
    /// Dollars the task may spend over all its attempts; over it, the attempt is stopped
    /// and fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// Tokens the task may spend over all its attempts (see `budget_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub budget_tokens: Option<i64>,
}

/// A dependency: an earlier task's id, or its 1-based order number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DependencyRef {
    Order(u64),
    Id(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkflowFormat {
    Toml,
    Json,
}

impl WorkflowFormat {
    /// The format a file name implies, if its extension says.
    pub fn from_extension(name: &str) -> Option<WorkflowFormat> {
        let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match extension.as_str() {
            "toml" => Some(WorkflowFormat::Toml),
            "json" => Some(WorkflowFormat::Json),
            _ => None,
        }
    }

    /// Guess from the content: JSON starts with `{`.
    pub fn sniff(text: &str) -> WorkflowFormat {
        if text.trim_start().starts_with('{') {
            WorkflowFormat::Json
        } else {
            WorkflowFormat::Toml
        }
    }
}

impl fmt::Display for WorkflowFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkflowFormat::Toml => "TOML",
            WorkflowFormat::Json => "JSON",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WorkflowError {
    #[error("{source_name}:{line}:{column}: invalid {format}: {message}")]
    Syntax {
        source_name: String,
        format: WorkflowFormat,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{source_name}: the goal is empty")]
    EmptyGoal { source_name: String },
    #[error("{source_name}: {errors}")]
    Invalid {
        source_name: String,
        errors: ValidationErrors,
    },
    /// A limit (`timeout`, `budget_usd`, ...) of a task, or of the plan (`task: None`),
    /// that cannot be read.
    #[error("{source_name}: {}`{key}` = {value}: {problem}", task.as_ref().map(|t| format!("task {t}: ")).unwrap_or_default())]
    BadLimit {
        source_name: String,
        /// The task's label (`#2 "wire"`).
        task: Option<String>,
        key: &'static str,
        value: String,
        problem: String,
    },
}

impl Hint for WorkflowError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            WorkflowError::Syntax { .. } => {
                "fix the file at that line and column; `weft plan schema` prints every field".into()
            }
            WorkflowError::EmptyGoal { .. } => "write what the plan is for in `goal`".into(),
            WorkflowError::Invalid { errors, .. } => return errors.hint(),
            WorkflowError::BadLimit { key, .. } => format!(
                "fix `{key}` in the file; durations read like \"30m\", budgets are positive \
                 numbers (`weft plan schema` prints every field)"
            ),
        })
    }
}

/// The tasks a workflow file describes, checked against every plan rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedPlan {
    pub goal: String,
    pub runner: Option<String>,
    /// The plan's own `verify` commands (blank ones dropped).
    pub verify: Vec<String>,
    /// The plan's own budget (unset: the settings' applies).
    pub budget: Budget,
    pub tasks: Vec<Task>,
    pub warnings: Vec<Warning>,
}

impl WorkflowFile {
    /// Parse `text`; `source_name` (usually the path) prefixes every error.
    pub fn parse(
        text: &str,
        format: WorkflowFormat,
        source_name: &str,
    ) -> Result<WorkflowFile, WorkflowError> {
        match format {
            WorkflowFormat::Toml => toml::from_str(text).map_err(|e| {
                let (line, column) = e
                    .span()
                    .map(|span| line_and_column(text, span.start))
                    .unwrap_or((1, 1));
                WorkflowError::Syntax {
                    source_name: source_name.to_owned(),
                    format,
                    line,
                    column,
                    message: e.message().trim().to_owned(),
                }
            }),
            WorkflowFormat::Json => serde_json::from_str(text).map_err(|e| WorkflowError::Syntax {
                source_name: source_name.to_owned(),
                format,
                line: e.line().max(1),
                column: e.column().max(1),
                message: strip_json_position(&e.to_string()),
            }),
        }
    }

    /// [`WorkflowFile::parse`], with a large TOML file parsed in two halves at once:
    /// `join(first, second)` must run `first` on another thread and `second` on this one,
    /// and return when both have. The result is always what [`WorkflowFile::parse`] gives
    /// (see `halves.rs` for why, and for when the file is parsed whole instead).
    pub fn parse_in_two(
        text: &str,
        format: WorkflowFormat,
        source_name: &str,
        join: impl FnOnce(&mut (dyn FnMut() + Send), &mut dyn FnMut()),
    ) -> Result<WorkflowFile, WorkflowError> {
        if format == WorkflowFormat::Toml
            && text.len() >= halves::SPLIT_FROM
            && let Some(file) = halves::parse(text, join)
        {
            return Ok(file);
        }
        WorkflowFile::parse(text, format, source_name)
    }

    /// Resolve ids and dependency references, then validate the result as a plan.
    pub fn into_plan(
        self,
        source_name: &str,
        known_runner: &dyn Fn(&str) -> bool,
    ) -> Result<ImportedPlan, WorkflowError> {
        self.into_plan_split(source_name, known_runner, one_thread, usize::MAX)
    }

    /// [`WorkflowFile::into_plan`], with each half of the tasks made and checked on its
    /// own thread: `join` as for [`WorkflowFile::parse_in_two`]. The ids are given in
    /// order on this thread first (a derived id depends on every id before it); then
    /// each half's tasks are built (limits read, dependencies resolved) and checked
    /// against every rule, and the problems of both are listed in plan order, exactly
    /// as one thread would list them.
    pub fn into_plan_in_two(
        self,
        source_name: &str,
        known_runner: &dyn Fn(&str) -> bool,
        join: impl Fn(&mut (dyn FnMut() + Send), &mut dyn FnMut()),
    ) -> Result<ImportedPlan, WorkflowError> {
        self.into_plan_split(source_name, known_runner, join, halves::SPLIT_TASKS_FROM)
    }

    /// Split in two halves from `split_from` tasks on; [`WorkflowFile::into_plan`] is the
    /// one that never splits, which the property tests hold the split one equal to.
    fn into_plan_split(
        self,
        source_name: &str,
        known_runner: &dyn Fn(&str) -> bool,
        join: impl Fn(&mut (dyn FnMut() + Send), &mut dyn FnMut()),
        split_from: usize,
    ) -> Result<ImportedPlan, WorkflowError> {
        if self.goal.trim().is_empty() {
            return Err(WorkflowError::EmptyGoal {
                source_name: source_name.to_owned(),
            });
        }
        let verify: Vec<String> = self
            .verify
            .iter()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect();
        let mut deriver = IdDeriver::new(self.tasks.iter().filter_map(|t| t.id.as_deref()));
        let ids: Vec<String> = self
            .tasks
            .iter()
            .map(|spec| match &spec.id {
                Some(id) => id.clone(),
                None => deriver.derive(&spec.title),
            })
            .collect();
        drop(deriver);
        // Looked up once per dependency: a scan of `ids` each time made importing
        // 100,000 tasks take half a minute.
        let known: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let budget = plan_budget(self.budget_usd, self.budget_tokens, source_name)?;
        let mut head = self.tasks;
        let half = if head.len() >= split_from {
            head.len() / 2
        } else {
            head.len()
        };
        let tail = head.split_off(half);
        let (ids, known) = (&ids, &known);
        let (mut head_tasks, mut tail_tasks) = (None, None);
        let mut tail = Some(tail);
        let mut head = Some(head);
        join(
            &mut || {
                if let Some(tail) = tail.take() {
                    tail_tasks = Some(halves::tasks_from(tail, half, ids, known, source_name));
                }
            },
            &mut || {
                if let Some(head) = head.take() {
                    head_tasks = Some(halves::tasks_from(head, 0, ids, known, source_name));
                }
            },
        );
        let (Some(head_tasks), Some(tail_tasks)) = (head_tasks, tail_tasks) else {
            unreachable!("`join` runs both halves before it returns")
        };
        // A bad limit is refused for the first task that has one, as in one pass.
        let mut tasks = head_tasks?;
        tasks.append(&mut tail_tasks?);
        let runner = self.runner.filter(|r| !r.is_empty());
        let warnings = crate::validate::validate_tasks_in_two(
            &tasks,
            runner.as_deref(),
            known_runner,
            half,
            join,
        )
        .map_err(|errors| WorkflowError::Invalid {
            source_name: source_name.to_owned(),
            errors,
        })?;
        Ok(ImportedPlan {
            goal: self.goal,
            runner,
            verify,
            budget,
            tasks,
            warnings,
        })
    }

    /// The workflow file that describes a plan's definition.
    pub fn from_plan(goal: &str, runner: Option<&str>, tasks: &[Task]) -> WorkflowFile {
        WorkflowFile {
            goal: goal.to_owned(),
            runner: runner.map(str::to_owned),
            verify: Vec::new(),
            budget_usd: None,
            budget_tokens: None,
            tasks: tasks
                .iter()
                .map(|task| TaskSpec {
                    id: Some(task.id.clone()),
                    title: task.title.clone(),
                    description: task.description.clone(),
                    prompt: Some(task.prompt.clone()).filter(|p| !p.is_empty()),
                    dependencies: task
                        .dependencies
                        .iter()
                        .map(|d| DependencyRef::Id(d.clone()))
                        .collect(),
                    runner: task.runner.clone(),
                    model: task.model.clone(),
                    effort: task.effort.clone(),
                    mode: task.mode.clone(),
                    kind: Some(task.kind),
                    command: task.command.clone(),
                    steps: task.steps.clone(),
                    checks: task.checks.clone(),
                    timeout: task.limits.timeout.map(limits::format_duration),
                    idle_timeout: task.limits.idle_timeout.map(limits::format_duration),
                    budget_usd: task.limits.budget_usd,
                    budget_tokens: task.limits.budget_tokens.map(tokens_field),
                })
                .collect(),
        }
    }

    /// With the plan's own budget (what `budget` of [`ImportedPlan`] was).
    pub fn with_budget(mut self, budget: Budget) -> WorkflowFile {
        self.budget_usd = budget.usd;
        self.budget_tokens = budget.tokens.map(tokens_field);
        self
    }

    pub fn to_text(&self, format: WorkflowFormat) -> String {
        match format {
            WorkflowFormat::Toml => {
                toml::to_string_pretty(self).expect("a workflow file always serializes to TOML")
            }
            WorkflowFormat::Json => {
                let mut text = serde_json::to_string_pretty(self)
                    .expect("a workflow file always serializes to JSON");
                text.push('\n');
                text
            }
        }
    }

    /// The JSON Schema of the file format, generated from these types.
    pub fn json_schema() -> String {
        let schema = schemars::schema_for!(WorkflowFile);
        let mut text =
            serde_json::to_string_pretty(&schema).expect("a JSON Schema always serializes");
        text.push('\n');
        text
    }
}

fn tokens_field(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}

/// A limit that cannot be read: its key, the value as written, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitProblem {
    pub key: &'static str,
    pub value: String,
    pub problem: String,
}

impl fmt::Display for LimitProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` = {}: {}", self.key, self.value, self.problem)
    }
}

impl TaskSpec {
    /// The task's limits as the file writes them, each read by the one parser the flags
    /// use.
    pub fn limits(&self) -> Result<TaskLimits, LimitProblem> {
        let duration = |key: &'static str, text: &Option<String>| match text {
            None => Ok(None),
            Some(text) => match limits::parse_value(key, text) {
                Ok(LimitValue::Duration(d)) => Ok(Some(d)),
                Ok(_) => unreachable!("a duration key reads a duration"),
                Err(problem) => Err(LimitProblem {
                    key,
                    value: format!("{text:?}"),
                    problem,
                }),
            },
        };
        Ok(TaskLimits {
            timeout: duration(limits::KEY_TIMEOUT, &self.timeout)?,
            idle_timeout: duration(limits::KEY_IDLE_TIMEOUT, &self.idle_timeout)?,
            budget_usd: checked_usd(self.budget_usd)?,
            budget_tokens: checked_tokens(self.budget_tokens)?,
        })
    }
}

fn checked_usd(usd: Option<f64>) -> Result<Option<f64>, LimitProblem> {
    usd.map(|u| {
        limits::check_usd(u).map_err(|problem| LimitProblem {
            key: limits::KEY_BUDGET_USD,
            value: u.to_string(),
            problem,
        })
    })
    .transpose()
}

fn checked_tokens(tokens: Option<i64>) -> Result<Option<u64>, LimitProblem> {
    tokens
        .map(|n| {
            limits::check_tokens(i128::from(n)).map_err(|problem| LimitProblem {
                key: limits::KEY_BUDGET_TOKENS,
                value: n.to_string(),
                problem,
            })
        })
        .transpose()
}

fn bad_limit(source_name: &str, task: Option<String>, p: LimitProblem) -> WorkflowError {
    WorkflowError::BadLimit {
        source_name: source_name.to_owned(),
        task,
        key: p.key,
        value: p.value,
        problem: p.problem,
    }
}

/// The plan's own budget from the file's top-level keys.
fn plan_budget(
    usd: Option<f64>,
    tokens: Option<i64>,
    source_name: &str,
) -> Result<Budget, WorkflowError> {
    let bad = |p| bad_limit(source_name, None, p);
    Ok(Budget {
        usd: checked_usd(usd).map_err(bad)?,
        tokens: checked_tokens(tokens).map_err(bad)?,
    })
}

/// Order numbers (`3`, `"3"`, `"#3"`) become the id at that position; anything else is
/// taken as an id and left for validation to judge.
/// A `join` that runs both on this thread, one after the other.
pub fn one_thread(first: &mut (dyn FnMut() + Send), second: &mut dyn FnMut()) {
    first();
    second();
}

fn resolve_file_dependency(
    dependency: &DependencyRef,
    ids: &[String],
    known: &HashSet<&str>,
) -> String {
    let text = match dependency {
        DependencyRef::Order(order) => return order_to_id(*order, ids),
        DependencyRef::Id(text) => text,
    };
    if known.contains(text.as_str()) {
        return text.clone();
    }
    let digits = text.strip_prefix('#').unwrap_or(text);
    match digits.parse::<u64>() {
        Ok(order) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            order_to_id(order, ids)
        }
        _ => text.clone(),
    }
}

fn order_to_id(order: u64, ids: &[String]) -> String {
    usize::try_from(order)
        .ok()
        .and_then(|o| o.checked_sub(1))
        .and_then(|index| ids.get(index))
        .cloned()
        .unwrap_or_else(|| format!("#{order}"))
}

/// 1-based line and column (in characters) of a byte offset.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// serde_json appends " at line L column C"; weft puts the position up front instead.
fn strip_json_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r##"
goal = "Add rate limiting"
runner = "claude-code"

[[tasks]]
id = "limiter"
title = "Add a token-bucket limiter"
prompt = """
Write it.
"""

[[tasks]]
title = "Wire it in"
prompt = "wire"
dependencies = ["limiter"]
checks = ["cargo test"]
timeout = "30m"
idle_timeout = "5m"
budget_usd = 0.5
budget_tokens = 200000

[[tasks]]
title = "Run the tests"
kind = "ops"
command = "cargo test"
dependencies = [1, "#2"]
"##;

    fn import(text: &str, format: WorkflowFormat) -> Result<ImportedPlan, WorkflowError> {
        WorkflowFile::parse(text, format, "plan.toml")?.into_plan("plan.toml", &|_| true)
    }

    #[test]
    fn imports_ids_slugs_and_order_references() {
        let plan = import(SAMPLE, WorkflowFormat::Toml).unwrap();
        let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["limiter", "wire-it-in", "run-the-tests"]);
        assert_eq!(plan.tasks[2].dependencies, ["limiter", "wire-it-in"]);
        assert_eq!(plan.tasks[0].prompt, "Write it.\n");
        assert_eq!(plan.tasks[2].kind, TaskKind::Ops);
    }

    #[test]
    fn export_round_trips_in_both_formats() {
        let plan = import(SAMPLE, WorkflowFormat::Toml).unwrap();
        for format in [WorkflowFormat::Toml, WorkflowFormat::Json] {
            let file = WorkflowFile::from_plan(&plan.goal, plan.runner.as_deref(), &plan.tasks);
            let text = file.to_text(format);
            let again = import(&text, format).unwrap();
            assert_eq!(again, plan, "{format}:\n{text}");
            let file_again =
                WorkflowFile::from_plan(&again.goal, again.runner.as_deref(), &again.tasks);
            assert_eq!(file_again.to_text(format), text);
        }
    }

    #[test]
    fn task_limits_are_read_and_written_back_as_typed() {
        let plan = import(SAMPLE, WorkflowFormat::Toml).unwrap();
        let limits = plan.tasks[1].limits;
        assert_eq!(limits.timeout, Some(std::time::Duration::from_secs(1800)));
        assert_eq!(
            limits.idle_timeout,
            Some(std::time::Duration::from_secs(300))
        );
        assert_eq!(limits.budget_usd, Some(0.5));
        assert_eq!(limits.budget_tokens, Some(200_000));
        assert!(plan.tasks[0].limits.is_empty());
        let text =
            WorkflowFile::from_plan(&plan.goal, None, &plan.tasks).to_text(WorkflowFormat::Toml);
        for line in [
            "timeout = \"30m\"",
            "idle_timeout = \"5m\"",
            "budget_usd = 0.5",
            "budget_tokens = 200000",
        ] {
            assert!(text.contains(line), "{line} in:\n{text}");
        }
    }

    #[test]
    fn a_plan_budget_is_read_and_written_back() {
        let text = format!("budget_usd = 2.5\nbudget_tokens = 1000\n{SAMPLE}");
        let plan = import(&text, WorkflowFormat::Toml).unwrap();
        assert_eq!(
            plan.budget,
            Budget {
                usd: Some(2.5),
                tokens: Some(1000)
            }
        );
        let file = WorkflowFile::from_plan(&plan.goal, None, &plan.tasks).with_budget(plan.budget);
        let again = import(&file.to_text(WorkflowFormat::Json), WorkflowFormat::Json).unwrap();
        assert_eq!(again.budget, plan.budget);
    }

    #[test]
    fn a_bad_limit_names_the_task_and_the_key() {
        let err = import(
            "goal = \"g\"\n[[tasks]]\ntitle = \"t\"\nprompt = \"p\"\ntimeout = \"soon\"\n",
            WorkflowFormat::Toml,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("plan.toml: task #1 \"t\": `timeout` = \"soon\": "),
            "{text}"
        );
        let err = import(
            "goal = \"g\"\n[[tasks]]\ntitle = \"t\"\nprompt = \"p\"\nbudget_tokens = -5\n",
            WorkflowFormat::Toml,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("`budget_tokens` = -5: a budget must be a positive"),
            "{err}"
        );
        let err = import(
            "goal = \"g\"\nbudget_usd = 0\ntasks = []\n",
            WorkflowFormat::Toml,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "plan.toml: `budget_usd` = 0: a budget must be a positive amount of dollars"
        );
    }

    #[test]
    fn toml_errors_carry_line_and_column() {
        let err = import(
            "goal = \"g\"\ntasks = [\n  { title = 3 },\n]\n",
            WorkflowFormat::Toml,
        )
        .unwrap_err();
        let WorkflowError::Syntax { line, column, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!((*line, *column), (3, 13), "{err}");
    }

    #[test]
    fn json_errors_carry_line_and_column() {
        let err = import(
            "{\n  \"goal\": \"g\",\n  \"tasks\": [ { \"title\": \"t\", \"kind\": \"robot\" } ]\n}",
            WorkflowFormat::Json,
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("plan.toml:3:"), "{err}");
        assert!(err.to_string().contains("unknown variant `robot`"), "{err}");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = import(
            "goal = \"g\"\n[[tasks]]\ntitle = \"t\"\npromt = \"x\"\n",
            WorkflowFormat::Toml,
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown field `promt`"), "{err}");
        assert!(err.to_string().starts_with("plan.toml:4:1:"), "{err}");
    }

    #[test]
    fn order_reference_past_the_end_is_unknown() {
        let err = import(
            "goal = \"g\"\n[[tasks]]\ntitle = \"t\"\nprompt = \"p\"\ndependencies = [7]\n",
            WorkflowFormat::Toml,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "plan.toml: task #1 \"t\" depends on \"#7\", which is not a task in this plan"
        );
    }

    #[test]
    fn format_detection() {
        assert_eq!(
            WorkflowFormat::from_extension("a/b.JSON"),
            Some(WorkflowFormat::Json)
        );
        assert_eq!(WorkflowFormat::from_extension("plan"), None);
        assert_eq!(WorkflowFormat::sniff("  {"), WorkflowFormat::Json);
    }
}
