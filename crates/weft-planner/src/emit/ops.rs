//! Task ops: the edits a planner emits for `weft plan revise`, `{"taskOps": [...]}`.
//!
//! Each op becomes a [`weft_core::edit::Edit`], and the batch is applied in sequence to a
//! copy: the first refusal refuses the whole batch and the plan is left as it was. The
//! planner is a stricter actor than a person at the CLI — it may not remove a completed or
//! running task, nor one such a task depends on, since either would rewrite the record of
//! what ran.

use std::fmt;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use weft_core::edit::{self, Edit, EditError, EditReport, NewTask, TaskChanges};
use weft_core::model::{Plan, TaskKind, order_of};
use weft_core::workflow::{DependencyRef, TaskSpec};

use super::PlanProblems;
use super::plan::json_type;

/// The fields an `update` op may change (every `TaskChanges` field).
pub const CHANGE_FIELDS: [&str; 15] = [
    "title",
    "description",
    "prompt",
    "runner",
    "model",
    "effort",
    "mode",
    "kind",
    "command",
    "steps",
    "checks",
    "timeout",
    "idle_timeout",
    "budget_usd",
    "budget_tokens",
];

/// How many tasks an unknown-reference problem lists.
const LISTED_REFERENCES: usize = 12;

/// How an op names a task: a number (`3`) or text (an id, `#3`, `"3"` or an exact title).
/// Text that is all digits (after an optional `#`) is always an order number; ids cannot
/// be all digits, and prefixes are not accepted (a typo must not hit a neighbour).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskRef {
    Order(u64),
    Text(String),
}

impl fmt::Display for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskRef::Order(order) => write!(f, "#{order}"),
            TaskRef::Text(text) => write!(f, "{text:?}"),
        }
    }
}

impl From<&DependencyRef> for TaskRef {
    fn from(dependency: &DependencyRef) -> TaskRef {
        match dependency {
            DependencyRef::Order(order) => TaskRef::Order(*order),
            DependencyRef::Id(text) => TaskRef::Text(text.clone()),
        }
    }
}

/// One edit the planner asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOp {
    /// Insert after `after` (`Order(0)` puts it first); at the end when absent.
    Add {
        task: TaskSpec,
        after: Option<TaskRef>,
    },
    Remove {
        task: TaskRef,
    },
    /// Change fields; an empty string clears an optional text field.
    Update {
        task: TaskRef,
        changes: TaskChanges,
    },
    SetDependencies {
        task: TaskRef,
        dependencies: Vec<TaskRef>,
    },
}

impl TaskOp {
    /// The `op` value it was written with.
    pub fn name(&self) -> &'static str {
        match self {
            TaskOp::Add { .. } => "add",
            TaskOp::Remove { .. } => "remove",
            TaskOp::Update { .. } => "update",
            TaskOp::SetDependencies { .. } => "set_dependencies",
        }
    }
}

const OP_NAMES: &str = "\"add\", \"remove\", \"update\" or \"set_dependencies\"";

/// Read a `{"taskOps": [...]}` object. Every malformed op is reported (with its 1-based
/// number), not just the first.
pub fn parse_task_ops(value: &Value) -> Result<Vec<TaskOp>, PlanProblems> {
    let Some(object) = value.as_object() else {
        return Err(PlanProblems::single(
            "the edits must be one JSON object of the form {\"taskOps\": [...]}",
        ));
    };
    let mut problems = Vec::new();
    for key in object.keys().filter(|k| *k != "taskOps") {
        problems.push(format!(
            "unknown top-level field `{key}`; the object holds only `taskOps`"
        ));
    }
    let entries = match object.get("taskOps") {
        Some(Value::Array(entries)) if entries.is_empty() => {
            problems.push(
                "`taskOps` is empty; send at least one op, or reply in prose if nothing should change"
                    .to_owned(),
            );
            return Err(PlanProblems::bounded(problems, 0));
        }
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            problems.push(format!(
                "`taskOps` must be an array of ops, not {}",
                json_type(other)
            ));
            return Err(PlanProblems::bounded(problems, 0));
        }
        None => {
            problems.push("the object has no `taskOps` array".to_owned());
            return Err(PlanProblems::bounded(problems, 0));
        }
    };
    let mut ops = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        match parse_op(entry) {
            Ok(op) => ops.push(op),
            Err(found) => problems.extend(
                found
                    .into_iter()
                    .map(|problem| format!("op #{}{problem}", index + 1)),
            ),
        }
    }
    if problems.is_empty() {
        Ok(ops)
    } else {
        Err(PlanProblems::bounded(problems, 0))
    }
}

/// One op, or its problems each starting with what follows `op #N` (` (update): ...`).
fn parse_op(entry: &Value) -> Result<TaskOp, Vec<String>> {
    let Some(object) = entry.as_object() else {
        return Err(vec![format!(
            ": must be an object with an \"op\" field, not {}",
            json_type(entry)
        )]);
    };
    let name = match object.get("op") {
        Some(Value::String(name)) => name.as_str(),
        Some(other) => {
            return Err(vec![format!(
                ": \"op\" must be {OP_NAMES}, not {}",
                json_type(other)
            )]);
        }
        None => return Err(vec![format!(": has no \"op\"; use {OP_NAMES}")]),
    };
    let allowed: &[&str] = match name {
        "add" => &["op", "task", "after"],
        "remove" => &["op", "task"],
        "update" => &["op", "task", "changes"],
        "set_dependencies" => &["op", "task", "dependencies"],
        other => return Err(vec![format!(": unknown op {other:?}; use {OP_NAMES}")]),
    };
    let mut problems = Vec::new();
    for key in object.keys().filter(|k| !allowed.contains(&k.as_str())) {
        if name == "update" && key == "dependencies" {
            problems.push(dependencies_hint());
        } else {
            let fields = allowed
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ");
            problems.push(format!("unknown field `{key}`; a {name} op has {fields}"));
        }
    }
    let op = match name {
        "add" => parse_add(object, &mut problems),
        "remove" => required_ref(object, "task", &mut problems).map(|task| TaskOp::Remove { task }),
        "update" => {
            let task = required_ref(object, "task", &mut problems);
            let changes = parse_changes(object.get("changes"), &mut problems);
            task.zip(changes)
                .map(|(task, changes)| TaskOp::Update { task, changes })
        }
        _ => {
            let task = required_ref(object, "task", &mut problems);
            let dependencies = match object.get("dependencies") {
                Some(Value::Array(entries)) => entries
                    .iter()
                    .map(|entry| task_ref(entry).map_err(|e| format!("`dependencies`: {e}")))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|problem| problems.push(problem))
                    .ok(),
                Some(other) => {
                    problems.push(format!(
                        "`dependencies` must be an array of task references, not {}",
                        json_type(other)
                    ));
                    None
                }
                None => {
                    problems.push(
                        "`dependencies` is missing; send [] to remove every dependency".to_owned(),
                    );
                    None
                }
            };
            task.zip(dependencies)
                .map(|(task, dependencies)| TaskOp::SetDependencies { task, dependencies })
        }
    };
    match op {
        Some(op) if problems.is_empty() => Ok(op),
        _ => Err(problems
            .into_iter()
            .map(|problem| format!(" ({name}): {problem}"))
            .collect()),
    }
}

fn dependencies_hint() -> String {
    "an update cannot change dependencies; use {\"op\": \"set_dependencies\", \"task\": REF, \"dependencies\": [...]}".to_owned()
}

fn parse_add(object: &Map<String, Value>, problems: &mut Vec<String>) -> Option<TaskOp> {
    let after = match object.get("after") {
        None | Some(Value::Null) => None,
        Some(entry) => match task_ref(entry) {
            Ok(after) => Some(after),
            Err(problem) => {
                problems.push(format!("`after`: {problem}"));
                return None;
            }
        },
    };
    let task = match object.get("task") {
        Some(task @ Value::Object(_)) => {
            let mut named_entries = false;
            if let Some(Value::Array(entries)) = task.get("dependencies") {
                for entry in entries.iter().filter(|e| !(e.is_string() || e.is_u64())) {
                    named_entries = true;
                    problems.push(format!(
                        "the dependency {entry} is neither a task id nor an order number"
                    ));
                }
            }
            match serde_json::from_value::<TaskSpec>(task.clone()) {
                Ok(spec) => Some(spec),
                Err(error) => {
                    let message = error.to_string();
                    if !(named_entries && message.contains("DependencyRef")) {
                        problems.push(format!("`task`: {message}"));
                    }
                    None
                }
            }
        }
        Some(other) => {
            problems.push(format!(
                "`task` must be the new task's fields as an object, not {}",
                json_type(other)
            ));
            None
        }
        None => {
            problems.push("`task` is missing: give the new task's fields".to_owned());
            None
        }
    };
    task.map(|task| TaskOp::Add { task, after })
}

fn required_ref(
    object: &Map<String, Value>,
    field: &str,
    problems: &mut Vec<String>,
) -> Option<TaskRef> {
    match object.get(field) {
        Some(entry) => task_ref(entry)
            .map_err(|problem| problems.push(format!("`{field}`: {problem}")))
            .ok(),
        None => {
            problems.push(format!(
                "`{field}` is missing: name the task by id, #order or exact title"
            ));
            None
        }
    }
}

fn task_ref(entry: &Value) -> Result<TaskRef, String> {
    match entry {
        Value::String(text) if !text.trim().is_empty() => Ok(TaskRef::Text(text.trim().to_owned())),
        Value::String(_) => Err("a task reference cannot be empty".to_owned()),
        Value::Number(number) => number
            .as_u64()
            .map(TaskRef::Order)
            .ok_or_else(|| format!("{number} is not an order number (a whole number from 1)")),
        other => Err(format!(
            "a task reference is an id, order number or title, not {}",
            json_type(other)
        )),
    }
}

/// `changes` as written: like `TaskChanges`, but `null` clears an optional text field
/// (models write `null` for "none" more often than `""`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangesSpec {
    #[serde(default, deserialize_with = "present")]
    title: Option<String>,
    #[serde(default, deserialize_with = "clearable")]
    description: Option<String>,
    #[serde(default, deserialize_with = "clearable")]
    prompt: Option<String>,
    #[serde(default, deserialize_with = "clearable")]
    runner: Option<String>,
    #[serde(default, deserialize_with = "clearable")]
    model: Option<String>,
    #[serde(default, deserialize_with = "clearable")]
    effort: Option<String>,
    #[serde(default, deserialize_with = "clearable")]
    mode: Option<String>,
    #[serde(default)]
    kind: Option<TaskKind>,
    #[serde(default, deserialize_with = "clearable")]
    command: Option<String>,
    #[serde(default, deserialize_with = "clearable_list")]
    steps: Option<Vec<String>>,
    #[serde(default, deserialize_with = "clearable_list")]
    checks: Option<Vec<String>>,
    #[serde(default, deserialize_with = "clearable_value")]
    timeout: Option<Value>,
    #[serde(default, deserialize_with = "clearable_value")]
    idle_timeout: Option<Value>,
    #[serde(default, deserialize_with = "clearable_value")]
    budget_usd: Option<Value>,
    #[serde(default, deserialize_with = "clearable_value")]
    budget_tokens: Option<Value>,
}

/// A limit: present (`null` included, which clears it) is `Some`; read by core's one parser
/// in [`limit_changes`].
fn clearable_value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// The limits an update changes, each read from its text as `weft task edit`'s flags are
/// (`null` or `""` clears it); a bad value is a problem naming the key and what is wrong.
fn limit_changes(
    spec: &ChangesSpec,
    problems: &mut Vec<String>,
) -> weft_core::limits::LimitChanges {
    use weft_core::limits;
    let mut changes = limits::LimitChanges::default();
    for (key, value) in [
        (limits::KEY_TIMEOUT, &spec.timeout),
        (limits::KEY_IDLE_TIMEOUT, &spec.idle_timeout),
        (limits::KEY_BUDGET_USD, &spec.budget_usd),
        (limits::KEY_BUDGET_TOKENS, &spec.budget_tokens),
    ] {
        let text = match value {
            None => continue,
            Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(Value::Number(number)) => number.to_string(),
            Some(other) => {
                problems.push(format!(
                    "`changes.{key}` must be a string, a number or null, not {}",
                    json_type(other)
                ));
                continue;
            }
        };
        if let Err(problem) = changes.set_text(key, &text) {
            problems.push(format!("`changes`: {problem}"));
        }
    }
    changes
}

/// A title can be changed but not cleared: `null` is a type error.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    String::deserialize(deserializer).map(Some)
}

/// Present means "set", `null` means "clear" (the empty string `TaskChanges` uses).
fn clearable<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(deserializer).map(|value| Some(value.unwrap_or_default()))
}

fn clearable_list<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<String>>, D::Error> {
    Option::<Vec<String>>::deserialize(deserializer).map(|value| Some(value.unwrap_or_default()))
}

fn parse_changes(changes: Option<&Value>, problems: &mut Vec<String>) -> Option<TaskChanges> {
    let changes = match changes {
        Some(changes @ Value::Object(map)) => {
            if map.contains_key("dependencies") {
                problems.push(dependencies_hint());
                let mut map = map.clone();
                map.remove("dependencies");
                Value::Object(map)
            } else {
                changes.clone()
            }
        }
        Some(other) => {
            problems.push(format!(
                "`changes` must be an object of fields to change, not {}",
                json_type(other)
            ));
            return None;
        }
        None => {
            problems.push("`changes` is missing: give the fields to change".to_owned());
            return None;
        }
    };
    let spec = match serde_json::from_value::<ChangesSpec>(changes) {
        Ok(spec) => spec,
        Err(error) => {
            problems.push(format!("`changes`: {error}"));
            return None;
        }
    };
    let problems_before = problems.len();
    let limits = limit_changes(&spec, problems);
    if problems.len() > problems_before {
        return None;
    }
    let changes = TaskChanges {
        title: spec.title,
        description: spec.description,
        prompt: spec.prompt,
        runner: spec.runner,
        model: spec.model,
        effort: spec.effort,
        mode: spec.mode,
        kind: spec.kind,
        command: spec.command,
        steps: spec.steps,
        checks: spec.checks,
        limits,
    };
    if changes.is_empty() {
        problems.push("`changes` names no field to change".to_owned());
        return None;
    }
    Some(changes)
}

/// Apply a parsed batch to a copy of `plan`, atomically.
///
/// References resolve against the plan as it stood before the batch (orders and titles)
/// or by id (which edits never change), so an earlier op in the batch cannot shift what a
/// later op names. Unknown runners in added or updated tasks are refused. On success the
/// edited plan (renumbered; revision and timestamps are the caller's) and one report per
/// op; on the first refusal, the problem naming the op and `plan` is untouched.
pub fn apply_task_ops(
    plan: &Plan,
    ops: &[TaskOp],
    known_runner: &dyn Fn(&str) -> bool,
) -> Result<(Plan, Vec<EditReport>), PlanProblems> {
    let mut batch = Batch {
        before: plan,
        current: plan.clone(),
        removed: Vec::new(),
        added: Vec::new(),
    };
    let mut reports = Vec::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        let number = index + 1;
        let prefix = format!("op #{number} ({})", op.name());
        let edit = batch
            .edit_for(op, known_runner)
            .map_err(|problem| PlanProblems::single(format!("{prefix}: {problem}")))?;
        let (next, report) = match edit::apply(&batch.current, &edit, known_runner) {
            Ok(applied) => applied,
            Err(EditError::Invalid(errors)) => {
                let problems: Vec<String> = errors
                    .errors
                    .iter()
                    .map(|error| format!("{prefix}: {error}"))
                    .collect();
                return Err(PlanProblems::bounded(problems, errors.more));
            }
            Err(error) => return Err(PlanProblems::single(format!("{prefix}: {error}"))),
        };
        match &edit {
            Edit::Add { .. } => {
                if let Some(task) = next.task(&report.task) {
                    batch.added.push((task.id.clone(), task.title.clone()));
                }
            }
            Edit::Remove { task } => batch.removed.push((task.clone(), number)),
            _ => {}
        }
        batch.current = next;
        reports.push(report);
    }
    Ok((batch.current, reports))
}

/// The state of a batch being applied.
#[derive(Debug)]
struct Batch<'a> {
    /// The plan before the batch: what orders and titles refer to.
    before: &'a Plan,
    current: Plan,
    /// Ids removed so far, with the op that removed them.
    removed: Vec<(String, usize)>,
    /// Ids and titles of tasks added so far.
    added: Vec<(String, String)>,
}

impl Batch<'_> {
    /// The core edit for `op`, with every reference resolved to an id, after the planner's
    /// own checks (runners, locks).
    fn edit_for(&self, op: &TaskOp, known_runner: &dyn Fn(&str) -> bool) -> Result<Edit, String> {
        match op {
            TaskOp::Add { task, after } => {
                if task.kind.unwrap_or_default() == TaskKind::Ai {
                    check_runner(task.runner.as_deref(), known_runner)?;
                }
                let at = match after {
                    None => None,
                    Some(reference) if is_zero(reference) => Some(1),
                    Some(reference) => {
                        let id = self.resolve(reference)?;
                        let index = self
                            .current
                            .tasks
                            .iter()
                            .position(|t| t.id == id)
                            .ok_or_else(|| format!("the plan has no task {reference}"))?;
                        Some(order_of(index + 1))
                    }
                };
                let dependencies = task
                    .dependencies
                    .iter()
                    .map(|d| self.resolve(&TaskRef::from(d)))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Edit::Add {
                    task: new_task(task, dependencies)?,
                    at,
                })
            }
            TaskOp::Remove { task } => {
                let id = self.resolve(task)?;
                self.check_removable(&id)?;
                Ok(Edit::Remove { task: id })
            }
            TaskOp::Update { task, changes } => {
                check_runner(changes.runner.as_deref(), known_runner)?;
                Ok(Edit::Update {
                    task: self.resolve(task)?,
                    changes: changes.clone(),
                })
            }
            TaskOp::SetDependencies { task, dependencies } => Ok(Edit::SetDependencies {
                task: self.resolve(task)?,
                dependencies: dependencies
                    .iter()
                    .map(|d| self.resolve(d))
                    .collect::<Result<Vec<_>, _>>()?,
            }),
        }
    }

    /// The id `reference` names: an id in the plan now (tasks added in this batch
    /// included), else an order number or exact title from before the batch, else the
    /// exact title of a task added in this batch.
    fn resolve(&self, reference: &TaskRef) -> Result<String, String> {
        let text = match reference {
            TaskRef::Order(order) => return self.by_order(*order),
            TaskRef::Text(text) => text.as_str(),
        };
        if self.current.task(text).is_some() {
            return Ok(text.to_owned());
        }
        self.check_not_removed(text)?;
        let digits = text.strip_prefix('#').unwrap_or(text);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            let order = digits.parse::<u64>().unwrap_or(u64::MAX);
            return self.by_order(order);
        }
        let titled: Vec<&weft_core::Task> = self
            .before
            .tasks
            .iter()
            .filter(|t| t.title == text)
            .collect();
        match titled.as_slice() {
            [only] => {
                self.check_not_removed(&only.id)?;
                return Ok(only.id.clone());
            }
            [] => {}
            many => {
                let labels: Vec<String> = many.iter().map(|t| t.label()).collect();
                return Err(format!(
                    "the title {text:?} matches tasks {}; name the task by its id",
                    labels.join(" and ")
                ));
            }
        }
        let added: Vec<&(String, String)> = self
            .added
            .iter()
            .filter(|(_, title)| title == text)
            .collect();
        match added.as_slice() {
            [(id, _)] => Ok(id.clone()),
            [] => Err(self.unknown(reference)),
            _ => Err(format!(
                "the title {text:?} matches more than one task added in this batch; give the added tasks ids"
            )),
        }
    }

    fn by_order(&self, order: u64) -> Result<String, String> {
        let task = usize::try_from(order)
            .ok()
            .and_then(|o| o.checked_sub(1))
            .and_then(|index| self.before.tasks.get(index))
            .ok_or_else(|| self.unknown(&TaskRef::Order(order)))?;
        self.check_not_removed(&task.id)?;
        Ok(task.id.clone())
    }

    fn check_not_removed(&self, id: &str) -> Result<(), String> {
        match self.removed.iter().find(|(removed, _)| removed == id) {
            Some((_, by)) => Err(format!("task {id:?} was removed by op #{by}")),
            None => Ok(()),
        }
    }

    fn unknown(&self, reference: &TaskRef) -> String {
        let tasks = &self.before.tasks;
        let mut valid: Vec<String> = tasks
            .iter()
            .take(LISTED_REFERENCES)
            .map(|t| format!("#{} {:?}", t.order, t.id))
            .collect();
        if tasks.len() > LISTED_REFERENCES {
            valid.push(format!("and {} more", tasks.len() - LISTED_REFERENCES));
        }
        let valid = if valid.is_empty() {
            "none".to_owned()
        } else {
            valid.join(", ")
        };
        format!(
            "the plan has no task {reference}; name a task by its id, #order (as numbered before this batch) or exact title; tasks: {valid}"
        )
    }

    /// The planner may not remove a task whose record must stay, nor one such a task
    /// depends on (removing it would rewrite that task's dependencies).
    fn check_removable(&self, id: &str) -> Result<(), String> {
        let Some(task) = self.current.task(id) else {
            return Ok(());
        };
        if task.status.is_locked_for_edit() {
            return Err(EditError::Locked {
                order: task.order,
                id: task.id.clone(),
                status: task.status,
            }
            .to_string());
        }
        if let Some(dependent) = self
            .current
            .tasks
            .iter()
            .find(|t| t.status.is_locked_for_edit() && t.dependencies.iter().any(|d| d == id))
        {
            return Err(format!(
                "cannot remove task {}: {} task {} depends on it, and its dependencies are the record of what ran",
                task.label(),
                dependent.status,
                dependent.label()
            ));
        }
        Ok(())
    }
}

fn is_zero(reference: &TaskRef) -> bool {
    match reference {
        TaskRef::Order(order) => *order == 0,
        TaskRef::Text(text) => {
            let digits = text.strip_prefix('#').unwrap_or(text);
            !digits.is_empty() && digits.bytes().all(|b| b == b'0')
        }
    }
}

fn check_runner(runner: Option<&str>, known_runner: &dyn Fn(&str) -> bool) -> Result<(), String> {
    match runner.filter(|r| !r.is_empty()) {
        Some(runner) if !known_runner(runner) => Err(format!(
            "the runner {runner:?} is not available; use one of the runners you were given, or omit `runner` for the default"
        )),
        _ => Ok(()),
    }
}

fn new_task(spec: &TaskSpec, dependencies: Vec<String>) -> Result<NewTask, String> {
    let limits = spec.limits().map_err(|p| p.to_string())?;
    Ok(NewTask {
        id: spec.id.clone(),
        title: spec.title.clone(),
        description: spec.description.clone(),
        prompt: spec.prompt.clone().unwrap_or_default(),
        dependencies,
        runner: spec.runner.clone(),
        model: spec.model.clone(),
        effort: spec.effort.clone(),
        mode: spec.mode.clone(),
        kind: spec.kind.unwrap_or_default(),
        command: spec.command.clone(),
        steps: spec.steps.clone(),
        checks: spec.checks.clone(),
        limits,
    })
}

/// The turn that sends a refused batch's problems back to the model.
pub fn corrective_for_ops(problems: &PlanProblems) -> String {
    format!(
        "Those task edits were refused and the plan was left unchanged. Fix exactly these problems and re-send the whole batch as one JSON object `{{\"taskOps\": [...]}}` with no other text (order numbers still refer to the plan as it is now), or reply in prose if no change is needed:\n{problems}"
    )
}

/// The turn after an ops reply was cut off.
pub fn terse_reemit_ops() -> String {
    "Your reply was cut off before the JSON object was complete. Send the edits again as one JSON object `{\"taskOps\": [...]}` and nothing else: keep descriptions and prompts brief and write no prose, so it fits in one reply.".to_owned()
}
