//! Property tests for weft-core's plan rules.
//!
//! 1. Any sequence of edits keeps a valid plan valid, whether each edit is accepted or
//!    refused, and a refused edit changes nothing.
//! 2. Removing a task reports exactly the tasks that depended on it and detaches them.
//! 3. Validation refuses exactly an injected defect, naming the task and the value.
//! 4. Workflow files round-trip (TOML and JSON) and re-export byte-identically.
//! 5. Ids derived for a batch of titles are exactly `unique_id`'s, one title at a time.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use weft_core::edit::{Edit, EditError, NewTask, TaskChanges, apply};
use weft_core::model::{Plan, PlanStatus, Task, TaskKind, TaskStatus};
use weft_core::refs::resolve_task_ref;
use weft_core::slug::{IdDeriver, slugify, unique_id};
use weft_core::validate::{ValidationError, validate_tasks};
use weft_core::workflow::{WorkflowFile, WorkflowFormat};

type Checked = Result<(), TestCaseError>;

fn every_runner(_: &str) -> bool {
    true
}

// ---------------------------------------------------------------------------------------
// Plan invariants, checked without relying on weft-core's own rules where possible.
// ---------------------------------------------------------------------------------------

/// Every rule a stored plan obeys. Acyclicity is checked by a topological sort that
/// ignores the order numbers, so it does not lean on the "earlier only" rule.
fn check_invariants(plan: &Plan) -> Checked {
    let tasks = &plan.tasks;
    for (index, task) in tasks.iter().enumerate() {
        prop_assert_eq!(
            usize::try_from(task.order).unwrap(),
            index + 1,
            "task {:?} at position {} has order {}",
            task.id,
            index + 1,
            task.order
        );
    }
    let mut position: HashMap<&str, usize> = HashMap::new();
    for (index, task) in tasks.iter().enumerate() {
        prop_assert!(
            position.insert(task.id.as_str(), index).is_none(),
            "the id {:?} appears twice",
            task.id
        );
    }
    for task in tasks {
        for dependency in &task.dependencies {
            let target = position.get(dependency.as_str());
            prop_assert!(
                target.is_some(),
                "task {:?} depends on {:?}, which is not in the plan",
                task.id,
                dependency
            );
            let target = &tasks[*target.unwrap()];
            prop_assert!(
                target.order < task.order,
                "task {:?} (#{}) depends on {:?} (#{}), which is not earlier",
                task.id,
                task.order,
                target.id,
                target.order
            );
        }
    }
    // Kahn's algorithm over the dependency graph.
    let mut waiting: Vec<usize> = tasks.iter().map(|t| t.dependencies.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    for (index, task) in tasks.iter().enumerate() {
        for dependency in &task.dependencies {
            dependents[position[dependency.as_str()]].push(index);
        }
    }
    let mut ready: Vec<usize> = (0..tasks.len()).filter(|&i| waiting[i] == 0).collect();
    let mut sorted = 0;
    while let Some(index) = ready.pop() {
        sorted += 1;
        for &dependent in &dependents[index] {
            waiting[dependent] -= 1;
            if waiting[dependent] == 0 {
                ready.push(dependent);
            }
        }
    }
    prop_assert_eq!(sorted, tasks.len(), "the dependency graph has a cycle");
    let verdict = validate_tasks(tasks, plan.runner.as_deref(), &every_runner);
    prop_assert!(verdict.is_ok(), "validate_tasks refused: {:?}", verdict);
    Ok(())
}

/// Every dependency names a task at an earlier position (the only rule a move or a
/// dependency change can break in an otherwise valid plan).
fn dependencies_point_back(tasks: &[Task]) -> bool {
    tasks.iter().enumerate().all(|(index, task)| {
        task.dependencies
            .iter()
            .all(|d| tasks[..index].iter().any(|earlier| earlier.id == *d))
    })
}

// ---------------------------------------------------------------------------------------
// Plan generators.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct TaskSeed {
    id: String,
    title: String,
    description: Option<String>,
    prompt: String,
    runner: Option<String>,
    model: Option<String>,
    effort: Option<String>,
    mode: Option<String>,
    kind: TaskKind,
    command: String,
    steps: Vec<String>,
    checks: Vec<String>,
    status: TaskStatus,
    hold: bool,
    dependency_mask: u64,
}

/// Text with at least one non-whitespace character.
fn non_blank(text: BoxedStrategy<String>) -> BoxedStrategy<String> {
    text.prop_map(|mut s| {
        if s.trim().is_empty() {
            s.insert(0, 'T');
        }
        s
    })
    .boxed()
}

/// Text with at least one character (optional fields store no empty strings).
fn non_empty(text: BoxedStrategy<String>) -> BoxedStrategy<String> {
    text.prop_map(|s| if s.is_empty() { "x".to_owned() } else { s })
        .boxed()
}

fn kind() -> impl Strategy<Value = TaskKind> {
    prop::sample::select(TaskKind::ALL.to_vec())
}

fn task_seed(
    text: BoxedStrategy<String>,
    ids: BoxedStrategy<String>,
    with_state: bool,
) -> impl Strategy<Value = TaskSeed> {
    let line = non_blank(text.clone());
    let optional = prop::option::of(non_empty(text.clone()));
    let status = if with_state {
        prop_oneof![4 => Just(TaskStatus::Pending), 2 => prop::sample::select(TaskStatus::ALL.to_vec())]
            .boxed()
    } else {
        Just(TaskStatus::Pending).boxed()
    };
    (
        (ids, line.clone(), optional.clone(), text),
        (
            optional.clone(),
            optional.clone(),
            optional.clone(),
            optional,
        ),
        (
            kind(),
            line.clone(),
            prop::collection::vec(line.clone(), 0..3),
            prop::collection::vec(line, 0..3),
        ),
        (status, any::<bool>(), any::<u64>(), any::<u64>()),
    )
        .prop_map(
            move |(
                (id, title, description, prompt),
                (runner, model, effort, mode),
                (kind, command, steps, checks),
                (status, hold, mask_a, mask_b),
            )| TaskSeed {
                id,
                title,
                description,
                prompt,
                runner,
                model,
                effort,
                mode,
                kind,
                command,
                steps,
                checks,
                status,
                hold: hold && with_state,
                // About one earlier task in four.
                dependency_mask: mask_a & mask_b,
            },
        )
}

/// A valid plan: unique ids, dependencies on earlier tasks only, kind-specific fields
/// only where their kind uses them.
fn build_plan(goal: String, runner: Option<String>, seeds: Vec<TaskSeed>) -> Plan {
    let mut tasks: Vec<Task> = Vec::with_capacity(seeds.len());
    for (index, seed) in seeds.into_iter().enumerate() {
        let mut id = seed.id;
        while tasks.iter().any(|t| t.id == id) {
            id.push_str(&format!(".{index}"));
        }
        let mut task = Task::new(id, seed.title);
        task.dependencies = (0..index)
            .filter(|earlier| (seed.dependency_mask >> (earlier % 64)) & 1 == 1)
            .map(|earlier| tasks[earlier].id.clone())
            .collect();
        task.description = seed.description;
        task.prompt = seed.prompt;
        task.runner = seed.runner;
        task.model = seed.model;
        task.effort = seed.effort;
        task.mode = seed.mode;
        task.kind = seed.kind;
        match seed.kind {
            TaskKind::Ai => {
                if task.prompt.trim().is_empty() {
                    task.prompt.insert_str(0, "do it");
                }
            }
            TaskKind::Manual => task.steps = seed.steps,
            TaskKind::Ops => task.command = Some(seed.command),
        }
        task.checks = seed.checks;
        task.status = seed.status;
        task.hold = seed.hold;
        tasks.push(task);
    }
    let mut plan = Plan {
        id: "0123456789abcdef0123456789abcdef".into(),
        goal,
        status: PlanStatus::Approved,
        created_at: 1,
        updated_at: 2,
        runner,
        revision: 3,
        tasks,
    };
    plan.renumber();
    plan
}

fn simple_text() -> BoxedStrategy<String> {
    "[A-Za-z][A-Za-z0-9 ]{0,10}".boxed()
}

/// Few letters, so ids collide, share prefixes and collide with derived slugs.
fn simple_id() -> BoxedStrategy<String> {
    "[a-c][a-c0-9._-]{0,3}".boxed()
}

/// Any usable id: ASCII letters, digits, '-', '_', '.', not all digits.
fn any_id() -> BoxedStrategy<String> {
    "[A-Za-z0-9._-]{1,40}"
        .prop_map(|id| {
            if id.bytes().all(|b| b.is_ascii_digit()) {
                format!("t{id}")
            } else {
                id
            }
        })
        .boxed()
}

/// Text built to trouble a serializer: quotes, triple quotes, backslashes, newlines,
/// carriage returns, tabs, control characters, TOML syntax and arbitrary unicode.
fn rich_text() -> BoxedStrategy<String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z0-9 ]{1,8}",
        1 => Just("\"\"\"".to_owned()),
        1 => Just("'''".to_owned()),
        1 => Just("\"".to_owned()),
        1 => Just("'".to_owned()),
        1 => Just("\\".to_owned()),
        1 => Just("\n".to_owned()),
        1 => Just("\r\n".to_owned()),
        1 => Just("\t".to_owned()),
        1 => Just("\\n\\u0041\\\"".to_owned()),
        1 => Just("[[tasks]]\ntitle = \"x\"".to_owned()),
        1 => Just("# not a comment".to_owned()),
        2 => "\\PC{1,4}",
        2 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..8)
        .prop_map(|pieces| pieces.concat())
        .boxed()
}

fn arb_plan(
    text: BoxedStrategy<String>,
    ids: BoxedStrategy<String>,
    tasks: std::ops::Range<usize>,
    with_state: bool,
) -> BoxedStrategy<Plan> {
    (
        non_blank(text.clone()),
        prop::option::of(non_empty(text.clone())),
        prop::collection::vec(task_seed(text, ids, with_state), tasks),
    )
        .prop_map(|(goal, runner, seeds)| build_plan(goal, runner, seeds))
        .boxed()
}

// ---------------------------------------------------------------------------------------
// Edit generators. References are drawn abstractly and written out against the plan as it
// stands when the edit is applied, so they stay meaningful through a sequence.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum RefSpec {
    /// `k`, with k in 0..=n+1 (so 0 and n+1 are out of range).
    Order(usize),
    /// `#k`, likewise.
    Hash(usize),
    Id(usize),
    /// A prefix of an id (may be ambiguous, or another task's exact id).
    Prefix(usize, usize),
    /// An id with surrounding whitespace.
    Padded(usize),
    /// A task before the edit's target, written as `k`, `#k` or its id.
    Earlier(usize, u8),
    Raw(String),
}

const JUNK_REFS: &[&str] = &[
    "",
    " ",
    "ghost",
    "#",
    "#x",
    "0",
    "#0",
    "-1",
    "#-1",
    "##1",
    "99999999999999999999999",
    "a b",
];

const JUNK_IDS: &[&str] = &["", "12", "has space", "#3", "ü", "a/b"];

#[derive(Debug, Clone)]
enum EditSpec {
    Add {
        task: NewTask,
        dependencies: Vec<RefSpec>,
        at: Option<usize>,
    },
    Remove(RefSpec),
    Move(RefSpec, usize),
    SetDependencies(RefSpec, Vec<RefSpec>),
    Update(RefSpec, TaskChanges),
    SetHold(RefSpec, bool),
}

/// A reference naming the task an edit is about.
fn ref_spec() -> impl Strategy<Value = RefSpec> {
    prop_oneof![
        2 => any::<usize>().prop_map(RefSpec::Order),
        1 => any::<usize>().prop_map(RefSpec::Hash),
        3 => any::<usize>().prop_map(RefSpec::Id),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(s, l)| RefSpec::Prefix(s, l)),
        1 => any::<usize>().prop_map(RefSpec::Padded),
        2 => (any::<usize>(), 0u8..3).prop_map(|(s, f)| RefSpec::Earlier(s, f)),
        1 => prop::sample::select(JUNK_REFS).prop_map(|s| RefSpec::Raw(s.to_owned())),
    ]
}

/// A dependency reference: mostly an earlier task, sometimes anything at all.
fn dependency_spec() -> impl Strategy<Value = RefSpec> {
    prop_oneof![
        10 => (any::<usize>(), 0u8..3).prop_map(|(s, f)| RefSpec::Earlier(s, f)),
        1 => any::<usize>().prop_map(RefSpec::Order),
        1 => any::<usize>().prop_map(RefSpec::Hash),
        1 => any::<usize>().prop_map(RefSpec::Id),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(s, l)| RefSpec::Prefix(s, l)),
        1 => any::<usize>().prop_map(RefSpec::Padded),
        1 => prop::sample::select(JUNK_REFS).prop_map(|s| RefSpec::Raw(s.to_owned())),
    ]
}

/// `None`, an empty string (clears) or a value.
fn edit_text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(String::new())),
        2 => "[a-z]{1,6}".prop_map(Some),
    ]
}

fn entry() -> impl Strategy<Value = String> {
    prop_oneof![6 => "[a-z][a-z ]{0,8}", 1 => Just(" ".to_owned())]
}

fn title() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[A-Za-z][A-Za-z0-9 ]{0,10}",
        1 => Just(String::new()),
        1 => Just("  ".to_owned()),
        1 => "[0-9]{1,3}",
        2 => "[a-c]{1,2}",
    ]
}

fn prompt() -> impl Strategy<Value = String> {
    prop_oneof![6 => "[a-z][a-z ]{0,8}", 1 => Just(String::new()), 1 => Just(" \n".to_owned())]
}

fn new_task() -> impl Strategy<Value = NewTask> {
    (
        (
            prop_oneof![
                3 => Just(None),
                3 => simple_id().prop_map(Some),
                1 => prop::sample::select(JUNK_IDS).prop_map(|s| Some(s.to_owned())),
            ],
            title(),
            prompt(),
        ),
        (
            edit_text(),
            edit_text(),
            edit_text(),
            edit_text(),
            edit_text(),
        ),
        (
            kind(),
            edit_text(),
            prop::collection::vec(entry(), 0..3),
            prop::collection::vec(entry(), 0..3),
            prop::bool::weighted(0.75),
        ),
    )
        .prop_map(
            |(
                (id, title, prompt),
                (description, runner, model, effort, mode),
                (kind, command, steps, checks, consistent),
            )| {
                let mut task = NewTask {
                    id,
                    title,
                    description,
                    prompt,
                    dependencies: Vec::new(),
                    runner,
                    model,
                    effort,
                    mode,
                    kind,
                    command,
                    steps,
                    checks,
                    limits: Default::default(),
                };
                if consistent {
                    // Mostly well-formed, so sequences grow; the rest probe the refusals.
                    task.checks.retain(|c| !c.trim().is_empty());
                    match kind {
                        TaskKind::Ai => {
                            task.command = None;
                            task.steps.clear();
                            if task.prompt.trim().is_empty() {
                                task.prompt = "do it".into();
                            }
                        }
                        TaskKind::Manual => {
                            task.command = None;
                            task.steps.retain(|s| !s.trim().is_empty());
                        }
                        TaskKind::Ops => {
                            task.steps.clear();
                            if task.command.as_deref().is_none_or(str::is_empty) {
                                task.command = Some("make test".into());
                            }
                        }
                    }
                }
                task
            },
        )
}

fn changes() -> impl Strategy<Value = TaskChanges> {
    let sometimes = |s: BoxedStrategy<String>| prop::option::weighted(0.2, s);
    let text = || prop_oneof![1 => Just(String::new()), 4 => "[a-z]{1,6}"].boxed();
    (
        (
            sometimes(title().boxed()),
            sometimes(text()),
            sometimes(prompt().boxed()),
            sometimes(text()),
            sometimes(text()),
            sometimes(text()),
            sometimes(text()),
        ),
        (
            prop::option::weighted(0.4, kind()),
            sometimes(text()),
            prop::option::weighted(0.2, prop::collection::vec(entry(), 0..3)),
            prop::option::weighted(0.2, prop::collection::vec(entry(), 0..3)),
            prop::bool::weighted(0.75),
        ),
    )
        .prop_map(
            |(
                (title, description, prompt, runner, model, effort, mode),
                (kind, command, steps, checks, consistent),
            )| {
                let mut changes = TaskChanges {
                    title,
                    description,
                    prompt,
                    runner,
                    model,
                    effort,
                    mode,
                    kind,
                    command,
                    steps,
                    checks,
                    limits: Default::default(),
                };
                if consistent && let Some(kind) = kind {
                    match kind {
                        TaskKind::Ops if changes.command.is_none() => {
                            changes.command = Some("make test".into());
                        }
                        TaskKind::Ai if changes.prompt.is_none() => {
                            changes.prompt = Some("do it".into());
                        }
                        _ => {}
                    }
                    if kind != TaskKind::Ops && changes.command.is_some() {
                        changes.command = None;
                    }
                    if kind != TaskKind::Manual && changes.steps.is_some() {
                        changes.steps = None;
                    }
                }
                changes
            },
        )
}

fn edit_spec() -> impl Strategy<Value = EditSpec> {
    prop_oneof![
        5 => (
            new_task(),
            prop::collection::vec(dependency_spec(), 0..4),
            prop::option::of(any::<usize>()),
        )
            .prop_map(|(task, dependencies, at)| EditSpec::Add { task, dependencies, at }),
        1 => ref_spec().prop_map(EditSpec::Remove),
        2 => (ref_spec(), any::<usize>()).prop_map(|(r, to)| EditSpec::Move(r, to)),
        2 => (ref_spec(), prop::collection::vec(dependency_spec(), 0..4))
            .prop_map(|(r, deps)| EditSpec::SetDependencies(r, deps)),
        3 => (ref_spec(), changes()).prop_map(|(r, c)| EditSpec::Update(r, c)),
        1 => (ref_spec(), any::<bool>()).prop_map(|(r, hold)| EditSpec::SetHold(r, hold)),
    ]
}

/// Write a reference out against `tasks`; `target` is the index of the task the edit is
/// about (for `Earlier`), or `tasks.len()` for "any task".
fn render(reference: &RefSpec, tasks: &[Task], target: usize) -> String {
    let n = tasks.len();
    let pick = |seed: usize| (n > 0).then(|| &tasks[seed % n]);
    let ghost = || "ghost".to_owned();
    match reference {
        RefSpec::Order(seed) => (seed % (n + 2)).to_string(),
        RefSpec::Hash(seed) => format!("#{}", seed % (n + 2)),
        RefSpec::Id(seed) => pick(*seed).map_or_else(ghost, |t| t.id.clone()),
        RefSpec::Prefix(seed, len) => pick(*seed).map_or_else(ghost, |t| {
            let len = 1 + len % t.id.len();
            t.id[..len].to_owned()
        }),
        RefSpec::Padded(seed) => pick(*seed).map_or_else(ghost, |t| format!(" {}\t", t.id)),
        RefSpec::Earlier(seed, form) => {
            let before = target.min(n);
            if before == 0 {
                return render(&RefSpec::Order(*seed), tasks, target);
            }
            let index = seed % before;
            match form {
                0 => (index + 1).to_string(),
                1 => format!("#{}", index + 1),
                _ => tasks[index].id.clone(),
            }
        }
        RefSpec::Raw(text) => text.clone(),
    }
}

fn to_u32(value: usize) -> u32 {
    u32::try_from(value).expect("small plan")
}

/// A 1-based position in 1..=max, or one in eight times 0 or max + 1 (outside).
fn position(seed: usize, max: usize) -> u32 {
    if seed.is_multiple_of(8) {
        to_u32(if seed.is_multiple_of(16) { 0 } else { max + 1 })
    } else {
        to_u32(1 + (seed / 8) % max.max(1))
    }
}

fn materialize(spec: &EditSpec, tasks: &[Task]) -> Edit {
    let n = tasks.len();
    let any = |r: &RefSpec| render(r, tasks, n);
    match spec {
        EditSpec::Add {
            task,
            dependencies,
            at,
        } => {
            let at = at.map(|seed| position(seed, n + 1));
            let target = match at {
                Some(position) if (1..=n + 1).contains(&(position as usize)) => {
                    position as usize - 1
                }
                _ => n,
            };
            let mut task = task.clone();
            task.dependencies = dependencies
                .iter()
                .map(|r| render(r, tasks, target))
                .collect();
            Edit::Add { task, at }
        }
        EditSpec::Remove(r) => Edit::Remove { task: any(r) },
        EditSpec::Move(r, to) => Edit::Move {
            task: any(r),
            to: position(*to, n),
        },
        EditSpec::SetDependencies(r, dependencies) => {
            let task = any(r);
            let target = resolve_task_ref(tasks, &task).unwrap_or(n);
            Edit::SetDependencies {
                task,
                dependencies: dependencies
                    .iter()
                    .map(|d| render(d, tasks, target))
                    .collect(),
            }
        }
        EditSpec::Update(r, changes) => Edit::Update {
            task: any(r),
            changes: changes.clone(),
        },
        EditSpec::SetHold(r, hold) => Edit::SetHold {
            task: any(r),
            hold: *hold,
        },
    }
}

// ---------------------------------------------------------------------------------------
// What an edit should do, worked out independently where that is simple.
// ---------------------------------------------------------------------------------------

#[derive(Debug)]
enum Expect {
    /// Must be accepted and produce exactly this plan.
    Accept(Plan),
    /// Must be refused.
    Refuse,
}

/// Accept `next` if it is a valid plan. Used for adds and updates, whose new fields are
/// judged by the full rule set; the other edits are decided without `validate_tasks`.
fn accept_if_valid(next: Plan) -> Expect {
    if validate_tasks(&next.tasks, next.runner.as_deref(), &every_runner).is_ok() {
        Expect::Accept(next)
    } else {
        Expect::Refuse
    }
}

/// A move to a valid position that is refused names a task it would jump over: one of
/// its dependents when moving later, one of its dependencies when moving earlier.
fn check_move_refusal(plan: &Plan, edit: &Edit, error: &EditError) -> Checked {
    let Edit::Move { task, to } = edit else {
        return Ok(());
    };
    let (Ok(from), Some(to)) = (
        resolve_task_ref(&plan.tasks, task),
        (*to as usize)
            .checked_sub(1)
            .filter(|&t| t < plan.tasks.len()),
    ) else {
        return Ok(());
    };
    let EditError::MoveAcrossDependency { reason, .. } = error else {
        return Err(TestCaseError::fail(format!(
            "{edit:?} refused with {error:?}"
        )));
    };
    let moving = &plan.tasks[from];
    let jumped = if to > from {
        &plan.tasks[from + 1..=to]
    } else {
        &plan.tasks[to..from]
    };
    let named = jumped.iter().any(|t| {
        let linked = if to > from {
            t.dependencies.contains(&moving.id)
        } else {
            moving.dependencies.contains(&t.id)
        };
        linked && reason.contains(&format!("{:?}", t.id))
    });
    prop_assert!(named, "{:?} refused with {:?}", edit, reason);
    Ok(())
}

fn cleared_when_empty(value: &Option<String>) -> Option<String> {
    value.clone().filter(|v| !v.is_empty())
}

fn expect(plan: &Plan, edit: &Edit) -> Expect {
    let tasks = &plan.tasks;
    let n = tasks.len();
    let resolve = |r: &str| resolve_task_ref(tasks, r).ok();
    match edit {
        Edit::Add { task: new, at } => {
            let index = match at {
                None => n,
                Some(p) if (1..=n + 1).contains(&(*p as usize)) => *p as usize - 1,
                Some(_) => return Expect::Refuse,
            };
            let mut dependencies = Vec::new();
            for reference in &new.dependencies {
                let Some(target) = resolve(reference) else {
                    return Expect::Refuse;
                };
                dependencies.push(tasks[target].id.clone());
            }
            let id = new
                .id
                .clone()
                .unwrap_or_else(|| unique_id(&slugify(&new.title), |c| plan.task(c).is_some()));
            let mut task = Task::new(id, new.title.clone());
            task.description = cleared_when_empty(&new.description);
            task.prompt = new.prompt.clone();
            task.dependencies = dependencies;
            task.runner = cleared_when_empty(&new.runner);
            task.model = cleared_when_empty(&new.model);
            task.effort = cleared_when_empty(&new.effort);
            task.mode = cleared_when_empty(&new.mode);
            task.kind = new.kind;
            task.command = cleared_when_empty(&new.command);
            task.steps = new.steps.clone();
            task.checks = new.checks.clone();
            let mut next = plan.clone();
            next.tasks.insert(index, task);
            next.renumber();
            accept_if_valid(next)
        }
        Edit::Remove { task } => match resolve(task) {
            None => Expect::Refuse,
            Some(index) if tasks[index].status == TaskStatus::InProgress => Expect::Refuse,
            Some(index) => {
                let mut next = plan.clone();
                let removed = next.tasks.remove(index);
                for task in &mut next.tasks {
                    if task.dependencies.contains(&removed.id) {
                        task.dependencies.retain(|d| *d != removed.id);
                        if task.status == TaskStatus::Blocked {
                            task.status = TaskStatus::Pending;
                        }
                    }
                }
                next.renumber();
                Expect::Accept(next)
            }
        },
        Edit::Move { task, to } => {
            let Some(from) = resolve(task) else {
                return Expect::Refuse;
            };
            let to = *to as usize;
            if to == 0 || to > n {
                return Expect::Refuse;
            }
            let mut next = plan.clone();
            let moved = next.tasks.remove(from);
            next.tasks.insert(to - 1, moved);
            next.renumber();
            if dependencies_point_back(&next.tasks) {
                Expect::Accept(next)
            } else {
                Expect::Refuse
            }
        }
        Edit::SetDependencies { task, dependencies } => {
            let Some(index) = resolve(task) else {
                return Expect::Refuse;
            };
            if tasks[index].status.is_locked_for_edit() {
                return Expect::Refuse;
            }
            let mut targets = Vec::new();
            for reference in dependencies {
                let Some(target) = resolve(reference) else {
                    return Expect::Refuse;
                };
                targets.push(target);
            }
            let distinct = targets.iter().collect::<HashSet<_>>().len() == targets.len();
            if !distinct || targets.iter().any(|&t| t >= index) {
                return Expect::Refuse;
            }
            let mut next = plan.clone();
            next.tasks[index].dependencies = targets.iter().map(|&t| tasks[t].id.clone()).collect();
            Expect::Accept(next)
        }
        Edit::Update { task, changes } => {
            if *changes == TaskChanges::default() {
                return Expect::Refuse;
            }
            let index = match resolve(task) {
                Some(index) if !tasks[index].status.is_locked_for_edit() => index,
                _ => return Expect::Refuse,
            };
            let mut next = plan.clone();
            let task = &mut next.tasks[index];
            let text = |slot: &mut Option<String>, value: &Option<String>| {
                if let Some(value) = value {
                    *slot = cleared_when_empty(&Some(value.clone()));
                }
            };
            text(&mut task.description, &changes.description);
            text(&mut task.runner, &changes.runner);
            text(&mut task.model, &changes.model);
            text(&mut task.effort, &changes.effort);
            text(&mut task.mode, &changes.mode);
            text(&mut task.command, &changes.command);
            if let Some(title) = &changes.title {
                task.title = title.clone();
            }
            if let Some(prompt) = &changes.prompt {
                task.prompt = prompt.clone();
            }
            if let Some(steps) = &changes.steps {
                task.steps = steps.clone();
            }
            if let Some(checks) = &changes.checks {
                task.checks = checks.clone();
            }
            // A kind change drops the old kind's fields unless this edit sets them.
            if let Some(kind) = changes.kind
                && kind != task.kind
            {
                if kind != TaskKind::Ops && changes.command.is_none() {
                    task.command = None;
                }
                if kind != TaskKind::Manual && changes.steps.is_none() {
                    task.steps.clear();
                }
                task.kind = kind;
            }
            accept_if_valid(next)
        }
        Edit::SetHold { task, hold } => match resolve(task) {
            None => Expect::Refuse,
            Some(index) => {
                let mut next = plan.clone();
                next.tasks[index].hold = *hold;
                Expect::Accept(next)
            }
        },
    }
}

// ---------------------------------------------------------------------------------------
// Properties.
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 1: whatever edits arrive, the plan stays valid after every step, and a
    /// refused edit changes nothing.
    #[test]
    fn edit_sequences_keep_every_plan_rule(
        start in arb_plan(simple_text(), simple_id(), 0..10, true),
        edits in prop::collection::vec(edit_spec(), 1..=40),
    ) {
        check_invariants(&start)?;
        let mut plan = start;
        for spec in &edits {
            let edit = materialize(spec, &plan.tasks);
            let before = plan.clone();
            let expected = expect(&plan, &edit);
            let result = apply(&plan, &edit, &every_runner);
            // `apply` borrows the plan; whatever it returned, the caller's copy is intact.
            prop_assert_eq!(&plan, &before);
            match (result, expected) {
                (Ok((next, report)), Expect::Accept(expected)) => {
                    prop_assert!(!report.lines.is_empty());
                    prop_assert_eq!(&next, &expected, "{:?}", edit);
                    plan = next;
                }
                (Ok((next, _)), Expect::Refuse) => {
                    return Err(TestCaseError::fail(format!(
                        "accepted {edit:?}\non {before:?}\ngiving {next:?}"
                    )));
                }
                (Err(error), Expect::Accept(_)) => {
                    return Err(TestCaseError::fail(format!(
                        "refused {edit:?}: {error}\non {before:?}"
                    )));
                }
                // A refused edit hands nothing back; the caller keeps the old plan.
                (Err(error), Expect::Refuse) => check_move_refusal(&before, &edit, &error)?,
            }
            check_invariants(&plan)?;
        }
    }

    /// Property 2: removing a task names exactly its dependents and leaves no reference to
    /// it behind.
    #[test]
    fn removal_reports_and_detaches_exactly_its_dependents(
        plan in arb_plan(simple_text(), simple_id(), 1..12, true),
        pick in any::<usize>(),
        form in 0u8..3,
    ) {
        let index = pick % plan.tasks.len();
        let removed = plan.tasks[index].clone();
        let reference = match form {
            0 => removed.order.to_string(),
            1 => format!("#{}", removed.order),
            _ => removed.id.clone(),
        };
        let result = apply(&plan, &Edit::Remove { task: reference }, &every_runner);
        if removed.status == TaskStatus::InProgress {
            prop_assert!(matches!(result, Err(EditError::Locked { .. })), "{:?}", result);
            return Ok(());
        }
        let (next, report) = result.map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_invariants(&next)?;
        prop_assert_eq!(next.tasks.len(), plan.tasks.len() - 1);
        prop_assert!(next.task(&removed.id).is_none());
        for task in &next.tasks {
            prop_assert!(
                !task.dependencies.contains(&removed.id),
                "task {:?} still depends on the removed {:?}", task.id, removed.id
            );
        }

        let quoted = |id: &str| format!("{id:?}");
        prop_assert!(report.lines[0].contains(&quoted(&removed.id)), "{:?}", report.lines);
        let dependents: Vec<&str> = plan
            .tasks
            .iter()
            .filter(|t| t.dependencies.contains(&removed.id))
            .map(|t| t.id.as_str())
            .collect();
        let mut named: Vec<&str> = Vec::new();
        for line in &report.lines[1..] {
            let tasks: Vec<&Task> =
                next.tasks.iter().filter(|t| line.contains(&quoted(&t.id))).collect();
            prop_assert_eq!(tasks.len(), 1, "{:?} should name one task", line);
            prop_assert!(
                line.contains(&format!("#{}", tasks[0].order)),
                "{:?} should give the task's new order", line
            );
            prop_assert!(!line.contains(&quoted(&removed.id)), "{:?}", line);
            named.push(tasks[0].id.as_str());
        }
        prop_assert_eq!(&named, &dependents, "lines: {:?}", report.lines);
        let weft_core::EventKind::TaskRemoved { detached } = &report.event else {
            panic!("a removal reports task_removed: {:?}", report.event);
        };
        let detached: Vec<&str> = detached.iter().map(String::as_str).collect();
        prop_assert_eq!(&detached, &dependents);
        // Everything but the detached dependency is as it was.
        for task in &next.tasks {
            let old = plan.task(&task.id).unwrap();
            let kept: Vec<&String> =
                old.dependencies.iter().filter(|d| **d != removed.id).collect();
            prop_assert_eq!(task.dependencies.iter().collect::<Vec<_>>(), kept);
        }
    }

    /// Property 3: a valid plan with one injected defect is refused with exactly that
    /// error, and the message names the task and the offending value.
    #[test]
    fn validation_refuses_exactly_the_injected_defect(
        plan in arb_plan(simple_text(), any_id(), 2..10, false),
        defect in prop::sample::select(Defect::ALL.to_vec()),
        a in any::<usize>(),
        b in any::<usize>(),
        ghost in "[a-z0-9]{1,8}",
        blank in prop::sample::select(vec!["", " ", "\n\t "]),
        command_absent in any::<bool>(),
    ) {
        let accepted = validate_tasks(&plan.tasks, None, &every_runner);
        prop_assert_eq!(accepted, Ok(vec![]));
        let mut tasks = plan.tasks.clone();
        let n = tasks.len();
        let quoted = |id: &str| format!("{id:?}");
        let i = a % (n - 1);
        let j = i + 1 + b % (n - 1 - i);
        let (expected, needles) = match defect {
            Defect::SelfDependency => {
                let i = a % n;
                let id = tasks[i].id.clone();
                tasks[i].dependencies.push(id.clone());
                let order = tasks[i].order;
                (
                    ValidationError::SelfDependency { order, id: id.clone() },
                    vec![quoted(&id), format!("#{order}")],
                )
            }
            Defect::LaterDependency => {
                let later = tasks[j].id.clone();
                tasks[i].dependencies.push(later.clone());
                (
                    ValidationError::LaterDependency {
                        order: tasks[i].order,
                        id: tasks[i].id.clone(),
                        dependency: later.clone(),
                        dependency_order: tasks[j].order,
                    },
                    vec![quoted(&tasks[i].id), quoted(&later), format!("#{}", tasks[j].order)],
                )
            }
            Defect::UnknownDependency => {
                let mut ghost = format!("ghost-{ghost}");
                while tasks.iter().any(|t| t.id == ghost) {
                    ghost.push('x');
                }
                let i = a % n;
                tasks[i].dependencies.push(ghost.clone());
                (
                    ValidationError::UnknownDependency {
                        order: tasks[i].order,
                        id: tasks[i].id.clone(),
                        dependency: ghost.clone(),
                    },
                    vec![quoted(&tasks[i].id), quoted(&ghost)],
                )
            }
            Defect::DuplicateId => {
                // Give task j task i's id, first dropping every reference that the renaming
                // would otherwise turn into a second defect.
                let (first, second) = (tasks[i].id.clone(), tasks[j].id.clone());
                for task in &mut tasks {
                    task.dependencies.retain(|d| *d != second);
                }
                tasks[j].dependencies.retain(|d| *d != first);
                tasks[j].id = first.clone();
                (
                    ValidationError::DuplicateId {
                        id: first.clone(),
                        first: tasks[i].order,
                        second: tasks[j].order,
                    },
                    vec![
                        quoted(&first),
                        format!("#{}", tasks[i].order),
                        format!("#{}", tasks[j].order),
                    ],
                )
            }
            Defect::EmptyPrompt => {
                let i = a % n;
                let task = &mut tasks[i];
                task.kind = TaskKind::Ai;
                task.command = None;
                task.steps.clear();
                task.prompt = blank.to_owned();
                (
                    ValidationError::EmptyPrompt { order: task.order, id: task.id.clone() },
                    vec![quoted(&task.id), format!("#{}", task.order)],
                )
            }
            Defect::MissingCommand => {
                let i = a % n;
                let task = &mut tasks[i];
                task.kind = TaskKind::Ops;
                task.steps.clear();
                task.command = if command_absent { None } else { Some(blank.to_owned()) };
                (
                    ValidationError::MissingCommand { order: task.order, id: task.id.clone() },
                    vec![quoted(&task.id), format!("#{}", task.order)],
                )
            }
        };
        let refused = validate_tasks(&tasks, None, &every_runner);
        let errors = match refused {
            Ok(_) => return Err(TestCaseError::fail(format!("accepted {defect:?}: {tasks:?}"))),
            Err(errors) => errors,
        };
        prop_assert_eq!(errors.more, 0);
        prop_assert_eq!(&errors.errors, &vec![expected]);
        let message = errors.errors[0].to_string();
        for needle in &needles {
            prop_assert!(message.contains(needle.as_str()), "{:?} lacks {:?}", message, needle);
        }
    }

    /// Property 4: export then import gives back the same plan definition in both formats,
    /// and exporting that again is byte-identical.
    #[test]
    fn workflow_files_round_trip(plan in arb_plan(rich_text(), any_id(), 0..8, false)) {
        for format in [WorkflowFormat::Toml, WorkflowFormat::Json] {
            let text =
                WorkflowFile::from_plan(&plan.goal, plan.runner.as_deref(), &plan.tasks)
                    .to_text(format);
            prop_assert_eq!(WorkflowFormat::sniff(&text), format);
            let imported = WorkflowFile::parse(&text, format, "plan")
                .and_then(|file| file.into_plan("plan", &every_runner))
                .map_err(|e| TestCaseError::fail(format!("{format}: {e}\n{text}")))?;
            prop_assert_eq!(&imported.goal, &plan.goal, "{}:\n{}", format, text);
            prop_assert_eq!(&imported.runner, &plan.runner, "{}:\n{}", format, text);
            prop_assert_eq!(&imported.tasks, &plan.tasks, "{}:\n{}", format, text);
            let again = WorkflowFile::from_plan(
                &imported.goal,
                imported.runner.as_deref(),
                &imported.tasks,
            )
            .to_text(format);
            prop_assert_eq!(again, text);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 5: the batch deriver gives every title the id `unique_id` gives it against
    /// the fixed ids and all ids derived before it, however the titles repeat or collide
    /// with a suffixed form (`a`, `a 2`, `a-2`, `a`).
    #[test]
    fn derived_ids_match_unique_id_one_title_at_a_time(
        fixed in prop::collection::vec(
            prop::sample::select(vec!["a", "a-2", "a-3", "b", "b-2", "task", "task-2"]),
            0..5,
        ),
        titles in prop::collection::vec(
            prop::sample::select(vec!["a", "A", "a 2", "a-2", "a 3", "b", "b-2", "!!!", "a-2-2"]),
            0..40,
        ),
    ) {
        let mut deriver = IdDeriver::new(fixed.iter().copied());
        let mut taken: HashSet<String> = fixed.iter().map(|f| (*f).to_owned()).collect();
        for title in &titles {
            let expected = unique_id(&slugify(title), |c| taken.contains(c));
            let derived = deriver.derive(title);
            prop_assert_eq!(&derived, &expected, "title {:?} after {:?}", title, taken);
            taken.insert(derived);
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Defect {
    SelfDependency,
    LaterDependency,
    UnknownDependency,
    DuplicateId,
    EmptyPrompt,
    MissingCommand,
}

impl Defect {
    const ALL: [Defect; 6] = [
        Defect::SelfDependency,
        Defect::LaterDependency,
        Defect::UnknownDependency,
        Defect::DuplicateId,
        Defect::EmptyPrompt,
        Defect::MissingCommand,
    ];
}

/// A fault put into one task of a large file, for the split import's property.
#[derive(Debug, Clone)]
enum Fault {
    BadTimeout,
    DuplicateId,
    LaterDependency,
    UnknownDependency,
    SelfDependency,
    EmptyTitle,
    EmptyPrompt,
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        Just(Fault::BadTimeout),
        Just(Fault::DuplicateId),
        Just(Fault::LaterDependency),
        Just(Fault::UnknownDependency),
        Just(Fault::SelfDependency),
        Just(Fault::EmptyTitle),
        Just(Fault::EmptyPrompt),
    ]
}

/// `tasks` tasks, each depending on the one before (by order number, by `#n` or by id),
/// a few with ids of their own, and `faults` at the given places.
fn large_file(tasks: usize, faults: &[(proptest::sample::Index, Fault)]) -> WorkflowFile {
    use weft_core::workflow::{DependencyRef, TaskSpec};
    let mut specs: Vec<TaskSpec> = (1..=tasks)
        .map(|n| {
            let id = (n % 7 == 0).then(|| format!("own-{n}"));
            let dependencies = match n {
                1 => vec![],
                _ if n % 3 == 0 => vec![DependencyRef::Order(n as u64 - 1)],
                _ if n % 3 == 1 => vec![DependencyRef::Id(format!("#{}", n - 1))],
                _ => vec![
                    DependencyRef::Id(format!("own-{}", n - 1)),
                    DependencyRef::Order(1),
                ],
            };
            TaskSpec {
                id,
                title: format!("Task {}", n % 500),
                description: None,
                prompt: Some(format!("do {n}")),
                dependencies,
                runner: None,
                model: None,
                effort: None,
                mode: None,
                kind: None,
                command: None,
                steps: vec![],
                checks: vec![],
                timeout: (n % 11 == 0).then(|| "30m".to_owned()),
                idle_timeout: None,
                budget_usd: None,
                budget_tokens: None,
            }
        })
        .collect();
    for (at, fault) in faults {
        let at = at.index(tasks);
        let spec = &mut specs[at];
        match fault {
            Fault::BadTimeout => spec.timeout = Some("soon".to_owned()),
            Fault::DuplicateId => spec.id = Some("own-7".to_owned()),
            Fault::LaterDependency => {
                spec.dependencies.push(DependencyRef::Order(tasks as u64));
            }
            Fault::UnknownDependency => spec.dependencies.push(DependencyRef::Id("ghost".into())),
            Fault::SelfDependency => spec.dependencies.push(DependencyRef::Order(at as u64 + 1)),
            Fault::EmptyTitle => spec.title = " ".to_owned(),
            Fault::EmptyPrompt => spec.prompt = None,
        }
    }
    WorkflowFile {
        goal: "g".to_owned(),
        runner: Some("exec".to_owned()),
        verify: vec![],
        budget_usd: None,
        budget_tokens: None,
        tasks: specs,
    }
}

fn two_threads(first: &mut (dyn FnMut() + Send), second: &mut dyn FnMut()) {
    std::thread::scope(|scope| {
        scope.spawn(first);
        second();
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A large file made into a plan in two halves on two threads gives what one thread
    /// gives: the same tasks, or the same refusal (the first bad limit; the same problems
    /// in the same order, as many listed and as many counted).
    #[test]
    fn a_plan_made_in_two_halves_is_the_plan_made_in_one(
        tasks in 1_990usize..2_200,
        faults in proptest::collection::vec((any::<proptest::sample::Index>(), fault()), 0..80),
        clean in proptest::bool::weighted(0.25),
    ) {
        let file = large_file(tasks, if clean { &[] } else { &faults });
        let one = file.clone().into_plan("plan", &every_runner);
        let two = file.into_plan_in_two("plan", &every_runner, two_threads);
        prop_assert_eq!(two, one);
    }
}
