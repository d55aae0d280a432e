//! Structural and field edits to a plan, each validated as a whole before it is accepted.
//!
//! An edit is applied to a copy; the copy replaces the plan only when every rule still
//! holds, so a refused edit leaves the plan exactly as it was.

use thiserror::Error;

use crate::Hint;
use crate::event::{Event, EventKind, FieldChange};

use crate::limits::{LimitChanges, TaskLimits, format_duration};
use crate::model::{Plan, Task, TaskKind, TaskStatus, order_of};
use crate::refs::{RefError, resolve_task_ref};
use crate::slug::{slugify, unique_id};
use crate::validate::{ValidationErrors, Warning, validate_tasks};

/// A task to add. Dependencies are references as a user types them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewTask {
    /// Derived from the title when absent.
    pub id: Option<String>,
    pub title: String,
    pub description: Option<String>,
    pub prompt: String,
    pub dependencies: Vec<String>,
    pub runner: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub mode: Option<String>,
    pub kind: TaskKind,
    pub command: Option<String>,
    pub steps: Vec<String>,
    pub checks: Vec<String>,
    pub limits: TaskLimits,
}

/// Field changes; `None` leaves a field alone. For optional text fields an empty string
/// clears the field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskChanges {
    pub title: Option<String>,
    pub description: Option<String>,
    pub prompt: Option<String>,
    pub runner: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub mode: Option<String>,
    pub kind: Option<TaskKind>,
    pub command: Option<String>,
    pub steps: Option<Vec<String>>,
    pub checks: Option<Vec<String>>,
    /// `timeout`, `idle_timeout`, `budget_usd`, `budget_tokens`.
    pub limits: LimitChanges,
}

impl TaskChanges {
    pub fn is_empty(&self) -> bool {
        *self == TaskChanges::default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Insert at a 1-based position (the end when absent).
    Add {
        task: NewTask,
        at: Option<u32>,
    },
    Remove {
        task: String,
    },
    /// Move a task to a 1-based position.
    Move {
        task: String,
        to: u32,
    },
    SetDependencies {
        task: String,
        dependencies: Vec<String>,
    },
    Update {
        task: String,
        changes: TaskChanges,
    },
    SetHold {
        task: String,
        hold: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EditError {
    #[error(transparent)]
    Ref(#[from] RefError),
    #[error(transparent)]
    Invalid(#[from] ValidationErrors),
    #[error("task #{order} {id:?} is {status}; its fields are the record of what ran")]
    Locked {
        order: u32,
        id: String,
        status: TaskStatus,
    },
    #[error("position {position} is outside the plan (1 to {max})")]
    BadPosition { position: u32, max: usize },
    #[error("nothing to change: name at least one field to edit")]
    NoChanges,
    #[error("cannot move task #{order} {id:?} to #{to}: {reason}")]
    MoveAcrossDependency {
        order: u32,
        id: String,
        to: u32,
        reason: String,
    },
}

impl Hint for EditError {
    fn hint(&self) -> Option<String> {
        match self {
            EditError::Ref(error) => error.hint(),
            EditError::Invalid(errors) => errors.hint(),
            EditError::Locked { .. } => {
                Some("retry or re-arm the task to run it again with new fields".into())
            }
            EditError::BadPosition { .. } => None,
            EditError::NoChanges => Some("see `weft task edit --help` for the fields".into()),
            EditError::MoveAcrossDependency { .. } => Some(
                "a task must stay after its dependencies and before its dependents; re-wire them first with `weft task deps`".into(),
            ),
        }
    }
}

/// What an accepted edit did, for the user and for the event log.
#[derive(Debug, Clone, PartialEq)]
pub struct EditReport {
    /// The task the edit was about (for a removal: the removed task's id).
    pub task: String,
    /// One line per thing that happened, the first being the edit itself.
    pub lines: Vec<String>,
    pub warnings: Vec<Warning>,
    /// What the event log records: what changed, with the new values.
    pub event: EventKind,
}

impl EditReport {
    /// The event to store (the store adds the plan, the time and the sequence number).
    pub fn to_event(&self) -> Event {
        Event::new(self.event.clone()).task(self.task.clone())
    }
}

/// Apply `edit` to a copy of `plan`; return the edited plan and what happened.
pub fn apply(
    plan: &Plan,
    edit: &Edit,
    known_runner: &dyn Fn(&str) -> bool,
) -> Result<(Plan, EditReport), EditError> {
    let mut next = plan.clone();
    let (event, task, lines) = match edit {
        Edit::Add { task, at } => add(&mut next, task, *at)?,
        Edit::Remove { task } => remove(&mut next, task)?,
        Edit::Move { task, to } => move_task(&mut next, task, *to)?,
        Edit::SetDependencies { task, dependencies } => {
            set_dependencies(&mut next, task, dependencies)?
        }
        Edit::Update { task, changes } => update(&mut next, task, changes)?,
        Edit::SetHold { task, hold } => set_hold(&mut next, task, *hold)?,
    };
    next.renumber();
    let warnings = validate_tasks(&next.tasks, next.runner.as_deref(), known_runner)?;
    Ok((
        next,
        EditReport {
            task,
            lines,
            warnings,
            event,
        },
    ))
}

/// The event, the task it is about, and the report's lines.
type Applied = (EventKind, String, Vec<String>);

fn position_index(position: u32, len: usize) -> Result<usize, EditError> {
    let index = usize::try_from(position).unwrap_or(usize::MAX);
    if index == 0 || index > len {
        return Err(EditError::BadPosition { position, max: len });
    }
    Ok(index - 1)
}

fn unlocked(plan: &Plan, reference: &str) -> Result<usize, EditError> {
    let index = resolve_task_ref(&plan.tasks, reference)?;
    let task = &plan.tasks[index];
    if task.status.is_locked_for_edit() {
        return Err(EditError::Locked {
            order: task.order,
            id: task.id.clone(),
            status: task.status,
        });
    }
    Ok(index)
}

fn resolve_dependencies(plan: &Plan, references: &[String]) -> Result<Vec<String>, EditError> {
    references
        .iter()
        .map(|r| Ok(plan.tasks[resolve_task_ref(&plan.tasks, r)?].id.clone()))
        .collect()
}

fn non_empty(value: &Option<String>) -> Option<String> {
    value.clone().filter(|v| !v.is_empty())
}

/// Apply limit changes; what the event records for each one set (or cleared).
fn set_limits(limits: &mut TaskLimits, changes: &LimitChanges) -> Vec<FieldChange> {
    let mut changed = Vec::new();
    if let Some(timeout) = changes.timeout {
        limits.timeout = timeout;
        changed.push(FieldChange::Timeout(timeout.map(format_duration)));
    }
    if let Some(idle_timeout) = changes.idle_timeout {
        limits.idle_timeout = idle_timeout;
        changed.push(FieldChange::IdleTimeout(idle_timeout.map(format_duration)));
    }
    if let Some(usd) = changes.budget_usd {
        limits.budget_usd = usd;
        changed.push(FieldChange::BudgetUsd(usd));
    }
    if let Some(tokens) = changes.budget_tokens {
        limits.budget_tokens = tokens;
        changed.push(FieldChange::BudgetTokens(tokens));
    }
    changed
}

fn add(plan: &mut Plan, new: &NewTask, at: Option<u32>) -> Result<Applied, EditError> {
    let index = match at {
        None => plan.tasks.len(),
        Some(position) => position_index(position, plan.tasks.len() + 1)?,
    };
    let dependencies = resolve_dependencies(plan, &new.dependencies)?;
    let id = match &new.id {
        Some(id) => id.clone(),
        None => unique_id(&slugify(&new.title), |c| plan.task(c).is_some()),
    };
    let mut task = Task::new(id, new.title.clone());
    task.description = non_empty(&new.description);
    task.prompt = new.prompt.clone();
    task.dependencies = dependencies;
    task.runner = non_empty(&new.runner);
    task.model = non_empty(&new.model);
    task.effort = non_empty(&new.effort);
    task.mode = non_empty(&new.mode);
    task.kind = new.kind;
    task.command = non_empty(&new.command);
    task.steps = new.steps.clone();
    task.checks = new.checks.clone();
    task.limits = new.limits;
    task.order = order_of(index);
    let line = format!("added task #{} {:?}: {}", task.order, task.id, task.title);
    let event = EventKind::TaskAdded {
        order: task.order,
        title: task.title.clone(),
    };
    let id = task.id.clone();
    plan.tasks.insert(index, task);
    Ok((event, id, vec![line]))
}

fn remove(plan: &mut Plan, reference: &str) -> Result<Applied, EditError> {
    let index = resolve_task_ref(&plan.tasks, reference)?;
    let removed = plan.tasks.remove(index);
    if removed.status == TaskStatus::InProgress {
        return Err(EditError::Locked {
            order: removed.order,
            id: removed.id,
            status: removed.status,
        });
    }
    let mut lines = vec![format!(
        "removed task {:?} (was #{}): {}",
        removed.id, removed.order, removed.title
    )];
    // Report dependents by the orders the user will see from now on.
    plan.renumber();
    let mut detached = Vec::new();
    for task in &mut plan.tasks {
        let before = task.dependencies.len();
        task.dependencies.retain(|d| *d != removed.id);
        if task.dependencies.len() != before {
            lines.push(format!(
                "detached it from task #{} {:?}, which depended on it",
                task.order, task.id
            ));
            detached.push(task.id.clone());
            if task.status == TaskStatus::Blocked {
                task.status = TaskStatus::Pending;
            }
        }
    }
    Ok((EventKind::TaskRemoved { detached }, removed.id, lines))
}

fn move_task(plan: &mut Plan, reference: &str, to: u32) -> Result<Applied, EditError> {
    let from = resolve_task_ref(&plan.tasks, reference)?;
    let to_index = position_index(to, plan.tasks.len())?;
    let moving = &plan.tasks[from];
    let refuse = |reason: String| EditError::MoveAcrossDependency {
        order: moving.order,
        id: moving.id.clone(),
        to,
        reason,
    };
    // The tasks the move jumps over must not be its dependents (moving later) or its
    // dependencies (moving earlier).
    if to_index > from {
        if let Some(dependent) = plan.tasks[from + 1..=to_index]
            .iter()
            .find(|t| t.dependencies.contains(&moving.id))
        {
            return Err(refuse(format!(
                "task #{} {:?} depends on it",
                dependent.order, dependent.id
            )));
        }
    } else if let Some(dependency) = plan.tasks[to_index..from]
        .iter()
        .find(|t| moving.dependencies.contains(&t.id))
    {
        return Err(refuse(format!(
            "it depends on task #{} {:?}",
            dependency.order, dependency.id
        )));
    }
    let task = plan.tasks.remove(from);
    let line = format!("moved task {:?} from #{} to #{}", task.id, task.order, to);
    let event = EventKind::TaskMoved {
        from: task.order,
        to,
    };
    let id = task.id.clone();
    plan.tasks.insert(to_index, task);
    Ok((event, id, vec![line]))
}

fn set_dependencies(
    plan: &mut Plan,
    reference: &str,
    references: &[String],
) -> Result<Applied, EditError> {
    let index = unlocked(plan, reference)?;
    let dependencies = resolve_dependencies(plan, references)?;
    let task = &mut plan.tasks[index];
    task.dependencies = dependencies;
    let shown = if task.dependencies.is_empty() {
        "none".to_owned()
    } else {
        task.dependencies.join(", ")
    };
    let line = format!("task #{} {:?} now depends on: {shown}", task.order, task.id);
    let event = EventKind::DependenciesSet {
        dependencies: task.dependencies.clone(),
    };
    Ok((event, task.id.clone(), vec![line]))
}

fn update(plan: &mut Plan, reference: &str, changes: &TaskChanges) -> Result<Applied, EditError> {
    if changes.is_empty() {
        return Err(EditError::NoChanges);
    }
    let index = unlocked(plan, reference)?;
    let task = &mut plan.tasks[index];
    // What the event records: each field set, with its new value (cleared ones too).
    let mut changed: Vec<FieldChange> = Vec::new();
    let mut lines = Vec::new();
    let mut set_text = |slot: &mut Option<String>,
                        value: &Option<String>,
                        change: fn(Option<String>) -> FieldChange| {
        if let Some(value) = value {
            *slot = Some(value.clone()).filter(|v| !v.is_empty());
            changed.push(change(slot.clone()));
        }
    };
    set_text(
        &mut task.description,
        &changes.description,
        FieldChange::Description,
    );
    set_text(&mut task.runner, &changes.runner, FieldChange::Runner);
    set_text(&mut task.model, &changes.model, FieldChange::Model);
    set_text(&mut task.effort, &changes.effort, FieldChange::Effort);
    set_text(&mut task.mode, &changes.mode, FieldChange::Mode);
    set_text(&mut task.command, &changes.command, FieldChange::Command);
    if let Some(title) = &changes.title {
        task.title = title.clone();
        changed.push(FieldChange::Title(title.clone()));
    }
    if let Some(prompt) = &changes.prompt {
        task.prompt = prompt.clone();
        changed.push(FieldChange::Prompt(prompt.clone()));
    }
    if let Some(steps) = &changes.steps {
        task.steps = steps.clone();
        task.steps_done.clear();
        changed.push(FieldChange::Steps(steps.clone()));
    }
    if let Some(checks) = &changes.checks {
        task.checks = checks.clone();
        changed.push(FieldChange::Checks(checks.clone()));
    }
    changed.extend(set_limits(&mut task.limits, &changes.limits));
    let named: Vec<&'static str> = changed
        .iter()
        .map(FieldChange::field)
        .chain(changes.kind.map(|_| "kind"))
        .collect();
    if let Some(kind) = changes.kind {
        changed.push(FieldChange::Kind(kind));
        if kind != task.kind {
            task.kind = kind;
            // Fields that belong to the old kind are dropped unless this edit sets them.
            if kind != TaskKind::Ops && task.command.is_some() && changes.command.is_none() {
                task.command = None;
                changed.push(FieldChange::Command(None));
                lines.push(format!("cleared `command`, which {kind} tasks do not use"));
            }
            if kind != TaskKind::Manual && !task.steps.is_empty() && changes.steps.is_none() {
                task.steps.clear();
                changed.push(FieldChange::Steps(Vec::new()));
                lines.push(format!("cleared `steps`, which {kind} tasks do not use"));
            }
        }
    }
    lines.insert(
        0,
        format!(
            "updated task #{} {:?}: {}",
            task.order,
            task.id,
            named.join(", ")
        ),
    );
    let event = EventKind::TaskEdited { changes: changed };
    Ok((event, task.id.clone(), lines))
}

fn set_hold(plan: &mut Plan, reference: &str, hold: bool) -> Result<Applied, EditError> {
    let index = resolve_task_ref(&plan.tasks, reference)?;
    let task = &mut plan.tasks[index];
    let already = task.hold == hold;
    task.hold = hold;
    let (event, verb) = if hold {
        (EventKind::TaskHeld, "held")
    } else {
        (EventKind::TaskReleased, "released")
    };
    let line = if already {
        format!("task #{} {:?} was already {verb}", task.order, task.id)
    } else {
        format!("{verb} task #{} {:?}", task.order, task.id)
    };
    Ok((event, task.id.clone(), vec![line]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PlanStatus;

    fn plan(ids: &[(&str, &[&str])]) -> Plan {
        let mut plan = Plan {
            id: "0123456789abcdef0123456789abcdef".into(),
            goal: "goal".into(),
            status: PlanStatus::Approved,
            created_at: 0,
            updated_at: 0,
            runner: None,
            revision: 0,
            tasks: ids
                .iter()
                .map(|(id, deps)| {
                    let mut t = Task::new(*id, format!("Title {id}"));
                    t.prompt = "p".into();
                    t.dependencies = deps.iter().map(|d| (*d).to_owned()).collect();
                    t
                })
                .collect(),
        };
        plan.renumber();
        plan
    }

    fn ok(plan: &Plan, edit: Edit) -> (Plan, EditReport) {
        apply(plan, &edit, &|_| true).unwrap()
    }

    #[test]
    fn add_derives_a_unique_id_and_resolves_references() {
        let p = plan(&[("a", &[]), ("title-x", &[])]);
        let (p, report) = ok(
            &p,
            Edit::Add {
                task: NewTask {
                    title: "Title X".into(),
                    prompt: "p".into(),
                    dependencies: vec!["1".into(), "#2".into()],
                    ..NewTask::default()
                },
                at: None,
            },
        );
        assert_eq!(p.tasks[2].id, "title-x-2");
        assert_eq!(p.tasks[2].dependencies, ["a", "title-x"]);
        assert_eq!(report.lines, ["added task #3 \"title-x-2\": Title X"]);
    }

    #[test]
    fn remove_detaches_dependents_and_says_so() {
        let p = plan(&[("a", &[]), ("b", &["a"]), ("c", &["a", "b"])]);
        let (p, report) = ok(&p, Edit::Remove { task: "a".into() });
        assert_eq!(p.tasks[0].order, 1);
        assert!(p.tasks[0].dependencies.is_empty());
        assert_eq!(p.tasks[1].dependencies, ["b"]);
        assert_eq!(
            report.lines,
            [
                "removed task \"a\" (was #1): Title a",
                "detached it from task #1 \"b\", which depended on it",
                "detached it from task #2 \"c\", which depended on it",
            ]
        );
    }

    #[test]
    fn moving_before_a_dependency_is_refused_and_changes_nothing() {
        let p = plan(&[("a", &[]), ("b", &["a"])]);
        let err = apply(
            &p,
            &Edit::Move {
                task: "b".into(),
                to: 1,
            },
            &|_| true,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot move task #2 \"b\" to #1: it depends on task #1 \"a\""
        );
        let err = apply(
            &p,
            &Edit::Move {
                task: "a".into(),
                to: 2,
            },
            &|_| true,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot move task #1 \"a\" to #2: task #2 \"b\" depends on it"
        );
    }

    #[test]
    fn kind_change_clears_fields_of_the_old_kind() {
        let mut p = plan(&[("a", &[])]);
        p.tasks[0].kind = TaskKind::Ops;
        p.tasks[0].command = Some("make".into());
        let (p, report) = ok(
            &p,
            Edit::Update {
                task: "1".into(),
                changes: TaskChanges {
                    kind: Some(TaskKind::Ai),
                    ..TaskChanges::default()
                },
            },
        );
        assert_eq!(p.tasks[0].command, None);
        assert_eq!(
            report.lines[1],
            "cleared `command`, which ai tasks do not use"
        );
    }

    #[test]
    fn completed_tasks_are_locked() {
        let mut p = plan(&[("a", &[])]);
        p.tasks[0].status = TaskStatus::Completed;
        let err = apply(
            &p,
            &Edit::Update {
                task: "a".into(),
                changes: TaskChanges {
                    prompt: Some("new".into()),
                    ..TaskChanges::default()
                },
            },
            &|_| true,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "task #1 \"a\" is completed; its fields are the record of what ran"
        );
    }

    #[test]
    fn empty_string_clears_optional_fields() {
        let mut p = plan(&[("a", &[])]);
        p.tasks[0].model = Some("opus".into());
        let (p, _) = ok(
            &p,
            Edit::Update {
                task: "a".into(),
                changes: TaskChanges {
                    model: Some(String::new()),
                    ..TaskChanges::default()
                },
            },
        );
        assert_eq!(p.tasks[0].model, None);
    }
}
