//! Workflow files: a plan written by hand (or exported), in TOML or JSON.
//!
//! The file carries the goal, the plan's default runner and every task field a person
//! writes; run state (status, verdicts) is not part of it, so an export imports back into
//! the same plan definition.

use std::collections::HashSet;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::Hint;
use crate::model::{Task, TaskKind, order_of};
use crate::slug::IdDeriver;
use crate::validate::{ValidationErrors, Warning, validate_tasks};

/// A plan as written in a workflow file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    /// The tasks in the order they run; a task may depend only on tasks before it.
    pub tasks: Vec<TaskSpec>,
}

/// One task as written in a workflow file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
}

impl Hint for WorkflowError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            WorkflowError::Syntax { .. } => {
                "fix the file at that line and column; `weft plan schema` prints every field".into()
            }
            WorkflowError::EmptyGoal { .. } => "write what the plan is for in `goal`".into(),
            WorkflowError::Invalid { errors, .. } => return errors.hint(),
        })
    }
}

/// The tasks a workflow file describes, checked against every plan rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedPlan {
    pub goal: String,
    pub runner: Option<String>,
    /// The plan's own `verify` commands (blank ones dropped).
    pub verify: Vec<String>,
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

    /// Resolve ids and dependency references, then validate the result as a plan.
    pub fn into_plan(
        self,
        source_name: &str,
        known_runner: &dyn Fn(&str) -> bool,
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
        // Looked up once per dependency: a scan of `ids` each time made importing
        // 100,000 tasks take half a minute.
        let known: HashSet<&str> = ids.iter().map(String::as_str).collect();

        let tasks: Vec<Task> = self
            .tasks
            .into_iter()
            .zip(&ids)
            .enumerate()
            .map(|(index, (spec, id))| {
                let mut task = Task::new(id.clone(), spec.title);
                task.order = order_of(index);
                task.description = spec.description.filter(|d| !d.is_empty());
                task.prompt = spec.prompt.unwrap_or_default();
                task.dependencies = spec
                    .dependencies
                    .iter()
                    .map(|d| resolve_file_dependency(d, &ids, &known))
                    .collect();
                task.runner = spec.runner.filter(|v| !v.is_empty());
                task.model = spec.model.filter(|v| !v.is_empty());
                task.effort = spec.effort.filter(|v| !v.is_empty());
                task.mode = spec.mode.filter(|v| !v.is_empty());
                task.kind = spec.kind.unwrap_or_default();
                task.command = spec.command;
                task.steps = spec.steps;
                task.checks = spec.checks;
                task
            })
            .collect();
        let runner = self.runner.filter(|r| !r.is_empty());
        let warnings =
            validate_tasks(&tasks, runner.as_deref(), known_runner).map_err(|errors| {
                WorkflowError::Invalid {
                    source_name: source_name.to_owned(),
                    errors,
                }
            })?;
        Ok(ImportedPlan {
            goal: self.goal,
            runner,
            verify,
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
                })
                .collect(),
        }
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

/// Order numbers (`3`, `"3"`, `"#3"`) become the id at that position; anything else is
/// taken as an id and left for validation to judge.
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
