//! The rules every plan obeys, whether it came from a file, a hand edit or a planner.
//!
//! Dependencies may only point at earlier tasks, so a valid plan is acyclic by
//! construction and its order is always a valid execution order.

use foldhash::{HashMap, HashMapExt};
use std::fmt;

use thiserror::Error;

use crate::model::{Task, TaskKind};
use crate::slug::id_problem;

/// How many problems one report lists; the rest are counted.
const LISTED_PROBLEMS: usize = 50;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValidationError {
    #[error("task #{order} has the id {id:?}, which is not usable: {problem}")]
    BadId {
        order: u32,
        id: String,
        problem: &'static str,
    },
    #[error("tasks #{first} and #{second} share the id {id:?}; ids must be unique")]
    DuplicateId { id: String, first: u32, second: u32 },
    #[error("task #{order} {id:?} has an empty title")]
    EmptyTitle { order: u32, id: String },
    #[error("task #{order} {id:?} depends on itself")]
    SelfDependency { order: u32, id: String },
    #[error("task #{order} {id:?} depends on {dependency:?}, which is not a task in this plan")]
    UnknownDependency {
        order: u32,
        id: String,
        dependency: String,
    },
    #[error(
        "task #{order} {id:?} depends on {dependency:?} (#{dependency_order}), which comes later in the order; a task may only depend on earlier tasks"
    )]
    LaterDependency {
        order: u32,
        id: String,
        dependency: String,
        dependency_order: u32,
    },
    #[error("task #{order} {id:?} lists the dependency {dependency:?} more than once")]
    RepeatedDependency {
        order: u32,
        id: String,
        dependency: String,
    },
    #[error("task #{order} {id:?} is an AI task with an empty prompt")]
    EmptyPrompt { order: u32, id: String },
    #[error("task #{order} {id:?} is an ops task with no command")]
    MissingCommand { order: u32, id: String },
    #[error(
        "task #{order} {id:?} is a {kind} task but sets `{field}`, which only {owner} tasks use"
    )]
    FieldNotForKind {
        order: u32,
        id: String,
        kind: TaskKind,
        field: &'static str,
        owner: &'static str,
    },
    #[error("task #{order} {id:?} has an empty entry in `{field}`")]
    EmptyEntry {
        order: u32,
        id: String,
        field: &'static str,
    },
}

impl crate::Hint for ValidationError {
    fn hint(&self) -> Option<String> {
        let advice = match self {
            ValidationError::BadId { .. } => {
                "use ASCII letters, digits, '-', '_' or '.', not only digits"
            }
            ValidationError::DuplicateId { .. } => "give one of the tasks another id",
            ValidationError::EmptyTitle { .. } => "give the task a title",
            ValidationError::SelfDependency { .. } | ValidationError::RepeatedDependency { .. } => {
                "remove the entry from the task's dependencies"
            }
            ValidationError::UnknownDependency { .. } => {
                "name an earlier task by its id or order number"
            }
            ValidationError::LaterDependency { .. } => {
                "move the dependency before the task, or the task after it"
            }
            ValidationError::EmptyPrompt { .. } => {
                "write the prompt the agent should follow, or make it a manual task"
            }
            ValidationError::MissingCommand { .. } => "set `command` to the command the task runs",
            ValidationError::FieldNotForKind { .. } => "remove the field or change the task's kind",
            ValidationError::EmptyEntry { .. } => "remove the empty entry",
        };
        Some(advice.into())
    }
}

/// Every problem found in one plan, in task order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationErrors {
    pub errors: Vec<ValidationError>,
    /// Problems found beyond the ones listed.
    pub more: usize,
}

impl ValidationErrors {
    pub fn single(error: ValidationError) -> Self {
        ValidationErrors {
            errors: vec![error],
            more: 0,
        }
    }

    pub fn first(&self) -> &ValidationError {
        &self.errors[0]
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errors.as_slice() {
            [only] if self.more == 0 => write!(f, "{only}"),
            errors => {
                write!(f, "the plan has {} problems:", errors.len() + self.more)?;
                for error in errors {
                    write!(f, "\n  - {error}")?;
                }
                if self.more > 0 {
                    write!(f, "\n  - and {} more", self.more)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ValidationErrors {}

impl crate::Hint for ValidationErrors {
    /// The first problem's advice: fixing them in order is the way through.
    fn hint(&self) -> Option<String> {
        self.first().hint()
    }
}

/// Something accepted that the user should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    UnknownRunner {
        /// None for the plan default.
        task: Option<(u32, String)>,
        runner: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::UnknownRunner {
                task: Some((order, id)),
                runner,
            } => write!(
                f,
                "task #{order} {id:?} uses the runner {runner:?}, which weft does not know; a run will refuse it until a manifest for it exists"
            ),
            Warning::UnknownRunner { task: None, runner } => write!(
                f,
                "the plan's default runner {runner:?} is not known to weft; a run will refuse tasks that use it until a manifest for it exists"
            ),
        }
    }
}

/// Check `tasks` (already numbered 1..n in order) against every plan rule.
///
/// `known_runner` answers whether a runner name has a manifest; unknown runners are
/// warnings here, since manifests can be added later.
pub fn validate_tasks(
    tasks: &[Task],
    plan_runner: Option<&str>,
    known_runner: &dyn Fn(&str) -> bool,
) -> Result<Vec<Warning>, ValidationErrors> {
    validate_tasks_in_two(
        tasks,
        plan_runner,
        known_runner,
        tasks.len(),
        crate::workflow::one_thread,
    )
}

/// [`validate_tasks`], the tasks before `half` checked on this thread and the others on
/// another (`join` runs its first on another thread, its second on this one, and returns
/// when both have). The problems are the same, in the same order: the repeated ids
/// first (found in one pass), then each task's in plan order, the first
/// `LISTED_PROBLEMS` listed and the rest counted.
pub(crate) fn validate_tasks_in_two(
    tasks: &[Task],
    plan_runner: Option<&str>,
    known_runner: &dyn Fn(&str) -> bool,
    half: usize,
    join: impl FnOnce(&mut (dyn FnMut() + Send), &mut dyn FnMut()),
) -> Result<Vec<Warning>, ValidationErrors> {
    let mut found = Found::default();
    let mut first_index: HashMap<&str, usize> = HashMap::with_capacity(tasks.len());
    for (index, task) in tasks.iter().enumerate() {
        if let Some(&first) = first_index.get(task.id.as_str()) {
            found.push(ValidationError::DuplicateId {
                id: task.id.clone(),
                first: tasks[first].order,
                second: task.order,
            });
        } else {
            first_index.insert(&task.id, index);
        }
    }
    let half = half.min(tasks.len());
    let (mut head, mut tail) = (Found::default(), Found::default());
    let first_index = &first_index;
    join(
        &mut || {
            for (index, task) in tasks.iter().enumerate().skip(half) {
                check_task(index, task, first_index, tasks, &mut tail);
            }
        },
        &mut || {
            for (index, task) in tasks.iter().enumerate().take(half) {
                check_task(index, task, first_index, tasks, &mut head);
            }
        },
    );
    for part in [head, tail] {
        for error in part.errors {
            found.push(error);
        }
        found.more += part.more;
    }
    if !found.errors.is_empty() {
        return Err(ValidationErrors {
            errors: found.errors,
            more: found.more,
        });
    }

    let mut warnings = Vec::new();
    if let Some(runner) = plan_runner
        && !known_runner(runner)
    {
        warnings.push(Warning::UnknownRunner {
            task: None,
            runner: runner.to_owned(),
        });
    }
    for task in tasks.iter().filter(|t| t.kind == TaskKind::Ai) {
        if let Some(runner) = task.runner.as_deref()
            && !known_runner(runner)
        {
            warnings.push(Warning::UnknownRunner {
                task: Some((task.order, task.id.clone())),
                runner: runner.to_owned(),
            });
        }
    }
    Ok(warnings)
}

#[derive(Default)]
struct Found {
    errors: Vec<ValidationError>,
    more: usize,
}

impl Found {
    fn push(&mut self, error: ValidationError) {
        if self.errors.len() < LISTED_PROBLEMS {
            self.errors.push(error);
        } else {
            self.more += 1;
        }
    }
}

fn check_task(
    index: usize,
    task: &Task,
    first_index: &HashMap<&str, usize>,
    tasks: &[Task],
    found: &mut Found,
) {
    let order = task.order;
    let id = || task.id.clone();
    if let Some(problem) = id_problem(&task.id) {
        found.push(ValidationError::BadId {
            order,
            id: id(),
            problem,
        });
    }
    if task.title.trim().is_empty() {
        found.push(ValidationError::EmptyTitle { order, id: id() });
    }
    for (position, dependency) in task.dependencies.iter().enumerate() {
        if task.dependencies[..position].contains(dependency) {
            found.push(ValidationError::RepeatedDependency {
                order,
                id: id(),
                dependency: dependency.clone(),
            });
        } else if *dependency == task.id {
            found.push(ValidationError::SelfDependency { order, id: id() });
        } else {
            match first_index.get(dependency.as_str()) {
                None => found.push(ValidationError::UnknownDependency {
                    order,
                    id: id(),
                    dependency: dependency.clone(),
                }),
                Some(&target) if target >= index => found.push(ValidationError::LaterDependency {
                    order,
                    id: id(),
                    dependency: dependency.clone(),
                    dependency_order: tasks[target].order,
                }),
                Some(_) => {}
            }
        }
    }
    match task.kind {
        TaskKind::Ai if task.prompt.trim().is_empty() => {
            found.push(ValidationError::EmptyPrompt { order, id: id() });
        }
        TaskKind::Ops if task.command.as_deref().is_none_or(|c| c.trim().is_empty()) => {
            found.push(ValidationError::MissingCommand { order, id: id() });
        }
        _ => {}
    }
    if task.kind != TaskKind::Ops && task.command.is_some() {
        found.push(ValidationError::FieldNotForKind {
            order,
            id: id(),
            kind: task.kind,
            field: "command",
            owner: "ops",
        });
    }
    if task.kind != TaskKind::Manual && !task.steps.is_empty() {
        found.push(ValidationError::FieldNotForKind {
            order,
            id: id(),
            kind: task.kind,
            field: "steps",
            owner: "manual",
        });
    }
    for (field, entries) in [("steps", &task.steps), ("checks", &task.checks)] {
        if entries.iter().any(|e| e.trim().is_empty()) {
            found.push(ValidationError::EmptyEntry {
                order,
                id: id(),
                field,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::order_of;

    fn ai(id: &str, deps: &[&str]) -> Task {
        let mut task = Task::new(id, format!("Title of {id}"));
        task.prompt = format!("do {id}");
        task.dependencies = deps.iter().map(|d| (*d).to_owned()).collect();
        task
    }

    fn numbered(mut tasks: Vec<Task>) -> Vec<Task> {
        for (i, t) in tasks.iter_mut().enumerate() {
            t.order = order_of(i);
        }
        tasks
    }

    fn errors(tasks: Vec<Task>) -> Vec<String> {
        validate_tasks(&numbered(tasks), None, &|_| true)
            .unwrap_err()
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_clean_plan_passes() {
        let tasks = numbered(vec![ai("a", &[]), ai("b", &["a"]), ai("c", &["a", "b"])]);
        assert_eq!(validate_tasks(&tasks, None, &|_| true), Ok(vec![]));
    }

    #[test]
    fn dependency_rules_name_task_and_value() {
        assert_eq!(
            errors(vec![ai("a", &["a"])]),
            ["task #1 \"a\" depends on itself"]
        );
        assert_eq!(
            errors(vec![ai("a", &["ghost"])]),
            ["task #1 \"a\" depends on \"ghost\", which is not a task in this plan"]
        );
        assert_eq!(
            errors(vec![ai("a", &["b"]), ai("b", &[])]),
            [
                "task #1 \"a\" depends on \"b\" (#2), which comes later in the order; a task may only depend on earlier tasks"
            ]
        );
        assert_eq!(
            errors(vec![ai("a", &[]), ai("b", &["a", "a"])]),
            ["task #2 \"b\" lists the dependency \"a\" more than once"]
        );
    }

    #[test]
    fn duplicate_ids_are_refused() {
        assert_eq!(
            errors(vec![ai("a", &[]), ai("b", &[]), ai("a", &[])]),
            ["tasks #1 and #3 share the id \"a\"; ids must be unique"]
        );
    }

    #[test]
    fn kind_rules() {
        let mut empty = ai("a", &[]);
        empty.prompt = "  \n".into();
        let mut ops = ai("o", &[]);
        ops.kind = TaskKind::Ops;
        let mut manual_with_command = ai("m", &[]);
        manual_with_command.kind = TaskKind::Manual;
        manual_with_command.command = Some("make".into());
        assert_eq!(
            errors(vec![empty, ops, manual_with_command]),
            [
                "task #1 \"a\" is an AI task with an empty prompt",
                "task #2 \"o\" is an ops task with no command",
                "task #3 \"m\" is a manual task but sets `command`, which only ops tasks use",
            ]
        );
    }

    #[test]
    fn unknown_runner_is_a_warning() {
        let mut task = ai("a", &[]);
        task.runner = Some("nope".into());
        let warnings = validate_tasks(&numbered(vec![task]), Some("also-nope"), &|r| {
            r == "claude-code"
        })
        .unwrap();
        assert_eq!(warnings.len(), 2);
        assert!(warnings[1].to_string().contains("\"nope\""));
    }

    #[test]
    fn reports_are_bounded() {
        let tasks: Vec<Task> = (0..200).map(|i| ai(&format!("t{i}"), &["ghost"])).collect();
        let err = validate_tasks(&numbered(tasks), None, &|_| true).unwrap_err();
        assert_eq!(err.errors.len(), LISTED_PROBLEMS);
        assert_eq!(err.more, 150);
        assert!(err.to_string().starts_with("the plan has 200 problems:"));
    }
}
