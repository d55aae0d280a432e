//! A plan the model emitted, checked against every rule a workflow file obeys, and the
//! corrective turns that send the problems back.
//!
//! A planner-emitted plan is held to more than a file import: unknown runners are problems
//! (the model must pick from the runners it was told), and so is an empty plan.

use std::collections::HashSet;

use serde_json::Value;
use weft_core::model::TaskKind;
use weft_core::slug::{slugify, unique_id};
use weft_core::workflow::{ImportedPlan, TaskSpec};
use weft_core::{Warning, WorkflowError, WorkflowFile};

use super::PlanProblems;
use super::help::TASK_FIELDS;

/// Corrective re-sends per reply before the reply is shown to the user as it is.
pub const MAX_REPAIRS: usize = 2;

/// The source name `into_plan` would prefix errors with; never shown, since problems are
/// taken from the structured error.
const SOURCE: &str = "planner reply";

/// Validate the `{"tasks": [...]}` object a model emitted as a plan for `goal`.
///
/// `goal` is the user's text: a `goal` the model adds is ignored. `default_runner` is the
/// plan's runner for tasks that name none. Every problem is reported, in this order:
/// the object's shape, each task that does not deserialize (with its 1-based number and
/// serde's message), then — when every task could be read — the plan rules of
/// [`weft_core::validate`] and unknown runners.
pub fn plan_from_value(
    value: &Value,
    goal: &str,
    default_runner: Option<&str>,
    known_runner: &dyn Fn(&str) -> bool,
) -> Result<ImportedPlan, PlanProblems> {
    let Some(object) = value.as_object() else {
        return Err(PlanProblems::single(
            "the plan must be one JSON object of the form {\"tasks\": [...]}",
        ));
    };
    let mut problems = Vec::new();
    for key in object.keys() {
        if key != "tasks" && key != "goal" {
            problems.push(format!(
                "unknown top-level field `{key}`; the plan object holds only `tasks`"
            ));
        }
    }
    let tasks = match object.get("tasks") {
        Some(Value::Array(tasks)) => tasks,
        Some(other) => {
            problems.push(format!(
                "`tasks` must be an array of task objects, not {}",
                json_type(other)
            ));
            return Err(PlanProblems::bounded(problems, 0));
        }
        None => {
            problems.push("the object has no `tasks` array".to_owned());
            return Err(PlanProblems::bounded(problems, 0));
        }
    };
    if tasks.is_empty() {
        problems.push("the plan has no tasks".to_owned());
        return Err(PlanProblems::bounded(problems, 0));
    }

    let mut specs = Vec::with_capacity(tasks.len());
    let mut all_read = true;
    for (index, task) in tasks.iter().enumerate() {
        let number = index + 1;
        let entry_problems = dependency_entry_problems(number, task);
        let named_entries = !entry_problems.is_empty();
        problems.extend(entry_problems);
        match read_task(task) {
            ReadTask::Read(spec) => specs.push(spec),
            ReadTask::Unreadable(message, lenient) => {
                if !(named_entries && message.contains("DependencyRef")) {
                    problems.push(format!("task #{number}: {message}"));
                }
                match lenient {
                    Some(spec) => specs.push(*spec),
                    None => all_read = false,
                }
            }
        }
    }
    if !all_read {
        // Order numbers and dependencies only mean something when every task is present.
        return Err(PlanProblems::bounded(problems, 0));
    }

    let runner_problems = unknown_runners(&specs, known_runner);
    let file = WorkflowFile {
        goal: goal.to_owned(),
        runner: default_runner.map(str::to_owned),
        verify: Vec::new(),
        budget_usd: None,
        budget_tokens: None,
        tasks: specs,
    };
    match file.into_plan(SOURCE, known_runner) {
        Ok(mut plan) if problems.is_empty() && runner_problems.is_empty() => {
            // Task runners were judged above; what is left is the caller's default.
            plan.warnings
                .retain(|w| matches!(w, Warning::UnknownRunner { task: None, .. }));
            Ok(plan)
        }
        Ok(_) => {
            problems.extend(runner_problems);
            Err(PlanProblems::bounded(problems, 0))
        }
        Err(error) => {
            let (listed, unlisted) = workflow_problems(error);
            problems.extend(listed);
            problems.extend(runner_problems);
            Err(PlanProblems::bounded(problems, unlisted))
        }
    }
}

/// How one emitted task reads as a `TaskSpec`.
#[derive(Debug)]
enum ReadTask {
    Read(TaskSpec),
    /// serde's message, and the task read without the fields `TaskSpec` does not have
    /// when those were the only trouble (so the plan rules can still be checked in the
    /// same round).
    Unreadable(String, Option<Box<TaskSpec>>),
}

fn read_task(task: &Value) -> ReadTask {
    let error = match serde_json::from_value::<TaskSpec>(task.clone()) {
        Ok(spec) => return ReadTask::Read(spec),
        Err(error) => error.to_string(),
    };
    let lenient = task.as_object().and_then(|object| {
        let known: serde_json::Map<String, Value> = object
            .iter()
            .filter(|(key, _)| TASK_FIELDS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        if known.len() == object.len() {
            return None;
        }
        serde_json::from_value::<TaskSpec>(Value::Object(known))
            .ok()
            .map(Box::new)
    });
    ReadTask::Unreadable(error, lenient)
}

/// serde's message for a bad entry in an untagged list is "did not match any variant of
/// untagged enum DependencyRef"; name the entry instead (and drop serde's message).
fn dependency_entry_problems(number: usize, task: &Value) -> Vec<String> {
    let Some(Value::Array(entries)) = task.get("dependencies") else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|entry| !(entry.is_string() || entry.is_u64()))
        .map(|entry| {
            format!(
                "task #{number}: the dependency {entry} is neither a task id nor an order number"
            )
        })
        .collect()
}

/// The listed problems of a failed import, and how many more it counted.
fn workflow_problems(error: WorkflowError) -> (Vec<String>, usize) {
    match error {
        WorkflowError::Invalid { errors, .. } => (
            errors.errors.iter().map(ToString::to_string).collect(),
            errors.more,
        ),
        WorkflowError::EmptyGoal { .. } => (vec!["the goal is empty".to_owned()], 0),
        WorkflowError::Syntax { message, .. } => (vec![message], 0),
        error @ WorkflowError::BadLimit { .. } => (vec![error.to_string()], 0),
    }
}

/// AI tasks whose runner the caller does not know. A planner was told which runners exist,
/// so unlike a file import this is a problem, not a warning.
fn unknown_runners(specs: &[TaskSpec], known_runner: &dyn Fn(&str) -> bool) -> Vec<String> {
    let ids = task_ids(specs);
    specs
        .iter()
        .zip(&ids)
        .enumerate()
        .filter_map(|(index, (spec, id))| {
            let runner = spec.runner.as_deref().filter(|r| !r.is_empty())?;
            let ai = spec.kind.unwrap_or_default() == TaskKind::Ai;
            (ai && !known_runner(runner)).then(|| {
                format!(
                    "task #{} {id:?} uses the runner {runner:?}, which is not available; use one of the runners you were given, or omit `runner` for the default",
                    index + 1
                )
            })
        })
        .collect()
}

/// The ids `WorkflowFile::into_plan` gives the tasks (explicit, else a unique slug of the
/// title). weft-core does not expose this, so it is mirrored here for error messages.
fn task_ids(specs: &[TaskSpec]) -> Vec<String> {
    let explicit: HashSet<&str> = specs.iter().filter_map(|t| t.id.as_deref()).collect();
    let mut derived: HashSet<String> = HashSet::new();
    specs
        .iter()
        .map(|spec| match &spec.id {
            Some(id) => id.clone(),
            None => {
                let id = unique_id(&slugify(&spec.title), |c| {
                    explicit.contains(c) || derived.contains(c)
                });
                derived.insert(id.clone());
                id
            }
        })
        .collect()
}

pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The turn that sends a rejected plan's problems back to the model.
pub fn corrective_for_problems(problems: &PlanProblems) -> String {
    format!(
        "Your plan could not be committed. Fix exactly these problems and re-send the complete plan as one JSON object `{{\"tasks\": [...]}}` with no other text:\n{problems}"
    )
}

/// The turn that quotes the parser's error for a reply whose JSON does not parse.
pub fn corrective_for_broken(error: &str) -> String {
    format!(
        "Your reply contained a JSON object that could not be parsed: {error}. Re-send only the complete, corrected JSON object: no code fences, no comments, no text before or after it."
    )
}

/// The turn after a reply was cut off: the whole plan again, shorter.
pub fn terse_reemit() -> String {
    "Your reply was cut off before the JSON object was complete. Send the complete plan again as one JSON object `{\"tasks\": [...]}` and nothing else: keep every description and prompt brief, and write no prose, so the whole plan fits in one reply.".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn derived_ids_match_the_import() {
        let specs: Vec<TaskSpec> = serde_json::from_value(json!([
            {"title": "Same", "prompt": "p"},
            {"id": "same-2", "title": "x", "prompt": "p"},
            {"title": "Same", "prompt": "p"},
        ]))
        .unwrap();
        let file = WorkflowFile {
            goal: "g".into(),
            runner: None,
            verify: Vec::new(),
            budget_usd: None,
            budget_tokens: None,
            tasks: specs.clone(),
        };
        let plan = file.into_plan("t", &|_| true).unwrap();
        let imported: Vec<String> = plan.tasks.iter().map(|t| t.id.clone()).collect();
        assert_eq!(task_ids(&specs), imported);
    }
}
