//! Readiness and the scheduler's decisions (DESIGN §5).
//!
//! A task may start when its status is pending or approved, it is not on hold, it has what
//! its kind needs (a prompt for AI, a command for ops), nothing upstream of it failed, and
//! every dependency is **met**: completed and landed, or skipped. Manual tasks never start:
//! once they pass every other gate they wait for a person. Ready tasks start in plan order
//! up to the free slots (a cap, not waves).
//!
//! Plans are validated before they get here (dependencies point at earlier tasks). On an
//! invalid plan nothing panics: an unknown dependency is simply never met.

use std::collections::HashMap;
use std::fmt;

use crate::model::{Plan, Task, TaskKind, TaskStatus};

/// Why a task may not start now. Checked in the order of the variants below, so the first
/// gate that refuses is the one reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// Not pending or approved (running, done, failed, blocked, ...).
    NotWaiting(TaskStatus),
    /// On hold.
    Held,
    /// An AI task with an empty prompt.
    NoPrompt,
    /// An ops task with no command.
    NoCommand,
    /// A task upstream (a dependency, or one of theirs) failed, conflicted or was cancelled.
    /// `id` is a failed direct dependency when there is one, else the failed task reached
    /// through the first dependency (in listed order) that leads to one.
    DependencyFailed { id: String },
    /// The first dependency (in listed order) that has not completed and landed, or been
    /// skipped.
    DependencyNotMet { id: String },
    /// A manual task that passes every other gate: a person completes it.
    NeedsPerson,
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Blocker::NotWaiting(status) => write!(f, "it is {status}, not pending or approved"),
            Blocker::Held => f.write_str("it is on hold"),
            Blocker::NoPrompt => f.write_str("it is an AI task with an empty prompt"),
            Blocker::NoCommand => f.write_str("it is an ops task with no command"),
            Blocker::DependencyFailed { id } => write!(
                f,
                "task {id:?} upstream of it failed, conflicted or was cancelled"
            ),
            Blocker::DependencyNotMet { id } => write!(
                f,
                "it waits for task {id:?} to complete and land on the integration branch"
            ),
            Blocker::NeedsPerson => f.write_str("it is a manual task: a person completes it"),
        }
    }
}

/// Statuses that stop everything downstream: the work is not there and will not arrive
/// without someone acting.
pub fn is_failure(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Failed | TaskStatus::Conflicted | TaskStatus::Cancelled
    )
}

/// Whether `task` counts as met for its dependents: completed and landed, or skipped.
/// Shared (non-isolated) runs pass a `landed` that answers true for completed tasks.
pub fn is_met(task: &Task, landed: &dyn Fn(&Task) -> bool) -> bool {
    match task.status {
        TaskStatus::Skipped => true,
        TaskStatus::Completed => landed(task),
        _ => false,
    }
}

/// Whether the task at `index` may start now, and if not, the first gate that refuses it.
/// An index outside the plan panics, as slice indexing does.
pub fn readiness(plan: &Plan, index: usize, landed: &dyn Fn(&Task) -> bool) -> Result<(), Blocker> {
    Graph::new(plan).readiness(index, landed)
}

/// [`readiness`] of every task, in plan order, computed in one pass (for status views over
/// large plans).
pub fn blockers(plan: &Plan, landed: &dyn Fn(&Task) -> bool) -> Vec<Result<(), Blocker>> {
    let graph = Graph::new(plan);
    (0..plan.tasks.len())
        .map(|index| graph.readiness(index, landed))
        .collect()
}

/// Indices of tasks to start now, in plan order, at most `cap - running` (none when
/// `running >= cap`), none at all when `halted`. Manual tasks are never returned.
pub fn next_to_start(
    plan: &Plan,
    running: usize,
    cap: usize,
    halted: bool,
    landed: &dyn Fn(&Task) -> bool,
) -> Vec<usize> {
    let free = cap.saturating_sub(running);
    if halted || free == 0 {
        return Vec::new();
    }
    let graph = Graph::new(plan);
    (0..plan.tasks.len())
        .filter(|&index| graph.readiness(index, landed).is_ok())
        .take(free)
        .collect()
}

/// Every task downstream of `id` (its transitive dependents), in plan order. Empty for an
/// unknown id.
pub fn descendants(plan: &Plan, id: &str) -> Vec<usize> {
    downstream(plan, id, false)
}

/// The tasks a failure of `id` stops: its descendants, except those reached only through a
/// dependency that completed or was skipped (that dependency's work is done, so it shields
/// what depends on it). In plan order.
pub fn stopped_by_failure(plan: &Plan, id: &str) -> Vec<usize> {
    downstream(plan, id, true)
}

fn downstream(plan: &Plan, id: &str, done_shields: bool) -> Vec<usize> {
    let graph = Graph::new(plan);
    let Some(&root) = graph.index_of.get(id) else {
        return Vec::new();
    };
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); plan.tasks.len()];
    for (index, deps) in graph.deps.iter().enumerate() {
        for &dep in deps {
            dependents[dep].push(index);
        }
    }
    let mut seen = vec![false; plan.tasks.len()];
    let mut stack = vec![root];
    while let Some(next) = stack.pop() {
        for &dependent in &dependents[next] {
            if !seen[dependent] {
                seen[dependent] = true;
                let done = matches!(
                    plan.tasks[dependent].status,
                    TaskStatus::Completed | TaskStatus::Skipped
                );
                if !(done_shields && done) {
                    stack.push(dependent);
                }
            }
        }
    }
    // A dependency cycle (only in an invalid plan) could reach the root itself.
    seen[root] = false;
    (0..plan.tasks.len()).filter(|&i| seen[i]).collect()
}

/// Manual tasks whose dependencies are all met, that are pending or approved and not held:
/// the ones waiting for a person right now. In plan order.
pub fn waiting_for_person(plan: &Plan, landed: &dyn Fn(&Task) -> bool) -> Vec<usize> {
    let graph = Graph::new(plan);
    (0..plan.tasks.len())
        .filter(|&index| {
            plan.tasks[index].kind == TaskKind::Manual
                && graph.readiness(index, landed) == Err(Blocker::NeedsPerson)
        })
        .collect()
}

/// What the scheduler needs to know about one task to classify it, beside its
/// dependencies.
fn gate(task: &Task) -> Option<TaskKind> {
    let waiting = matches!(task.status, TaskStatus::Pending | TaskStatus::Approved);
    let content = match task.kind {
        TaskKind::Ai => !task.prompt.trim().is_empty(),
        TaskKind::Ops => task
            .command
            .as_deref()
            .is_some_and(|c| !c.trim().is_empty()),
        TaskKind::Manual => true,
    };
    (waiting && !task.hold && content).then_some(task.kind)
}

/// [`next_to_start`] and [`waiting_for_person`] kept current as tasks change, for a run
/// loop that asks after every finished task: building it costs one pass over the plan,
/// and each change costs the task's direct dependents, not the plan.
///
/// It agrees with [`readiness`] (`Ok`, or `NeedsPerson` for manual tasks) at every step:
/// a task with a failed upstream always has a dependency that is not met (a failure is not
/// met, and a failure is only inherited through dependencies that are not done), so
/// counting unmet dependencies is enough. The plan's shape (tasks, order, dependencies)
/// must not change under it: after such an edit, build a new one.
#[derive(Debug, Clone)]
pub struct Frontier {
    /// Per task: the tasks listing it as a dependency, once per listing.
    dependents: Vec<Vec<usize>>,
    /// Per task: listed dependencies that are not met (unknown and self ones never are).
    unmet: Vec<u32>,
    met: Vec<bool>,
    /// Tasks that may start now, by plan order.
    ready: std::collections::BTreeSet<usize>,
    /// Manual tasks waiting for a person, by plan order.
    person: std::collections::BTreeSet<usize>,
}

impl Frontier {
    pub fn new(plan: &Plan, landed: &dyn Fn(&Task) -> bool) -> Frontier {
        let tasks = &plan.tasks;
        let mut index_of: HashMap<&str, usize> = HashMap::with_capacity(tasks.len());
        for (index, task) in tasks.iter().enumerate() {
            index_of.entry(task.id.as_str()).or_insert(index);
        }
        let met: Vec<bool> = tasks.iter().map(|t| is_met(t, landed)).collect();
        let mut dependents = vec![Vec::new(); tasks.len()];
        let mut unmet = vec![0u32; tasks.len()];
        for (index, task) in tasks.iter().enumerate() {
            for dependency in &task.dependencies {
                match index_of.get(dependency.as_str()) {
                    Some(&d) if d != index => {
                        dependents[d].push(index);
                        unmet[index] += u32::from(!met[d]);
                    }
                    _ => unmet[index] += 1,
                }
            }
        }
        let mut frontier = Frontier {
            dependents,
            unmet,
            met,
            ready: Default::default(),
            person: Default::default(),
        };
        for index in 0..tasks.len() {
            frontier.classify(plan, index);
        }
        frontier
    }

    /// Task `index` changed (status, hold, prompt, command): update what depends on it.
    pub fn update(&mut self, plan: &Plan, index: usize, landed: &dyn Fn(&Task) -> bool) {
        let met = is_met(&plan.tasks[index], landed);
        if met != self.met[index] {
            self.met[index] = met;
            for position in 0..self.dependents[index].len() {
                let dependent = self.dependents[index][position];
                if met {
                    self.unmet[dependent] -= 1;
                } else {
                    self.unmet[dependent] += 1;
                }
                self.classify(plan, dependent);
            }
        }
        self.classify(plan, index);
    }

    fn classify(&mut self, plan: &Plan, index: usize) {
        self.ready.remove(&index);
        self.person.remove(&index);
        if self.unmet[index] > 0 {
            return;
        }
        match gate(&plan.tasks[index]) {
            Some(TaskKind::Manual) => {
                self.person.insert(index);
            }
            Some(_) => {
                self.ready.insert(index);
            }
            None => {}
        }
    }

    /// As [`next_to_start`]: at most `cap - running` ready tasks in plan order, none when
    /// `halted`.
    pub fn next_to_start(&self, running: usize, cap: usize, halted: bool) -> Vec<usize> {
        let free = cap.saturating_sub(running);
        if halted {
            return Vec::new();
        }
        self.ready.iter().copied().take(free).collect()
    }

    /// As [`waiting_for_person`].
    pub fn waiting_for_person(&self) -> Vec<usize> {
        self.person.iter().copied().collect()
    }
}

/// The dependency graph of one plan, resolved once.
struct Graph<'a> {
    plan: &'a Plan,
    index_of: HashMap<&'a str, usize>,
    /// Resolved dependency indices per task, in listed order (unknown ids left out).
    deps: Vec<Vec<usize>>,
    /// Per task: the failed task upstream of it, if any.
    failed_upstream: Vec<Option<usize>>,
}

impl<'a> Graph<'a> {
    fn new(plan: &'a Plan) -> Graph<'a> {
        let tasks = &plan.tasks;
        let mut index_of = HashMap::with_capacity(tasks.len());
        for (index, task) in tasks.iter().enumerate() {
            // The first of duplicate ids wins (duplicates only exist in invalid plans).
            index_of.entry(task.id.as_str()).or_insert(index);
        }
        let deps: Vec<Vec<usize>> = tasks
            .iter()
            .map(|t| {
                t.dependencies
                    .iter()
                    .filter_map(|d| index_of.get(d.as_str()).copied())
                    .collect()
            })
            .collect();
        // Dependencies point at earlier tasks, so one pass in plan order sees every
        // dependency's answer before its dependents need it.
        let mut failed_upstream: Vec<Option<usize>> = vec![None; tasks.len()];
        for index in 0..tasks.len() {
            let direct = deps[index]
                .iter()
                .copied()
                .find(|&d| is_failure(tasks[d].status));
            // A dependency that completed or was skipped shields what lies above it: its
            // work is done whatever happened upstream of it.
            failed_upstream[index] = direct.or_else(|| {
                deps[index]
                    .iter()
                    .filter(|&&d| {
                        d < index
                            && !matches!(
                                tasks[d].status,
                                TaskStatus::Completed | TaskStatus::Skipped
                            )
                    })
                    .find_map(|&d| failed_upstream[d])
            });
        }
        Graph {
            plan,
            index_of,
            deps,
            failed_upstream,
        }
    }

    fn readiness(&self, index: usize, landed: &dyn Fn(&Task) -> bool) -> Result<(), Blocker> {
        let tasks = &self.plan.tasks;
        let task = &tasks[index];
        if !matches!(task.status, TaskStatus::Pending | TaskStatus::Approved) {
            return Err(Blocker::NotWaiting(task.status));
        }
        if task.hold {
            return Err(Blocker::Held);
        }
        match task.kind {
            TaskKind::Ai if task.prompt.trim().is_empty() => return Err(Blocker::NoPrompt),
            TaskKind::Ops if task.command.as_deref().is_none_or(|c| c.trim().is_empty()) => {
                return Err(Blocker::NoCommand);
            }
            _ => {}
        }
        if let Some(failed) = self.failed_upstream[index] {
            return Err(Blocker::DependencyFailed {
                id: tasks[failed].id.clone(),
            });
        }
        for dependency in &task.dependencies {
            let met = self
                .index_of
                .get(dependency.as_str())
                .is_some_and(|&d| d != index && is_met(&tasks[d], landed));
            if !met {
                return Err(Blocker::DependencyNotMet {
                    id: dependency.clone(),
                });
            }
        }
        if task.kind == TaskKind::Manual {
            return Err(Blocker::NeedsPerson);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PlanStatus;

    fn plan(specs: &[(&str, &[&str])]) -> Plan {
        let mut plan = Plan {
            id: "0123456789abcdef0123456789abcdef".into(),
            goal: "goal".into(),
            status: PlanStatus::Approved,
            created_at: 0,
            updated_at: 0,
            runner: None,
            revision: 0,
            tasks: specs
                .iter()
                .map(|(id, deps)| {
                    let mut t = Task::new(*id, format!("Title {id}"));
                    t.prompt = format!("do {id}");
                    t.dependencies = deps.iter().map(|d| (*d).to_owned()).collect();
                    t
                })
                .collect(),
        };
        plan.renumber();
        plan
    }

    fn all_landed(_: &Task) -> bool {
        true
    }

    fn none_landed(_: &Task) -> bool {
        false
    }

    fn set(plan: &mut Plan, id: &str, status: TaskStatus) {
        plan.tasks.iter_mut().find(|t| t.id == id).unwrap().status = status;
    }

    #[test]
    fn only_pending_or_approved_tasks_can_start() {
        for status in TaskStatus::ALL {
            let mut p = plan(&[("a", &[])]);
            p.tasks[0].status = status;
            let expected = match status {
                TaskStatus::Pending | TaskStatus::Approved => Ok(()),
                other => Err(Blocker::NotWaiting(other)),
            };
            assert_eq!(readiness(&p, 0, &all_landed), expected, "{status}");
        }
    }

    #[test]
    fn held_tasks_wait() {
        let mut p = plan(&[("a", &[])]);
        p.tasks[0].hold = true;
        assert_eq!(readiness(&p, 0, &all_landed), Err(Blocker::Held));
    }

    #[test]
    fn ai_needs_a_prompt_and_ops_a_command() {
        let mut p = plan(&[("a", &[]), ("o", &[]), ("o2", &[])]);
        p.tasks[0].prompt = " \n".into();
        p.tasks[1].kind = TaskKind::Ops;
        p.tasks[1].prompt.clear();
        p.tasks[2].kind = TaskKind::Ops;
        p.tasks[2].prompt.clear();
        p.tasks[2].command = Some("make test".into());
        assert_eq!(readiness(&p, 0, &all_landed), Err(Blocker::NoPrompt));
        assert_eq!(readiness(&p, 1, &all_landed), Err(Blocker::NoCommand));
        p.tasks[1].command = Some("  ".into());
        assert_eq!(readiness(&p, 1, &all_landed), Err(Blocker::NoCommand));
        assert_eq!(readiness(&p, 2, &all_landed), Ok(()));
    }

    #[test]
    fn a_dependency_is_met_when_completed_and_landed_or_skipped() {
        let mut p = plan(&[("a", &[]), ("b", &["a"])]);
        let waiting = Err(Blocker::DependencyNotMet { id: "a".into() });
        assert_eq!(readiness(&p, 1, &all_landed), waiting);
        set(&mut p, "a", TaskStatus::InProgress);
        assert_eq!(readiness(&p, 1, &all_landed), waiting);
        set(&mut p, "a", TaskStatus::Completed);
        assert_eq!(readiness(&p, 1, &none_landed), waiting, "the merge gate");
        assert_eq!(readiness(&p, 1, &all_landed), Ok(()));
        set(&mut p, "a", TaskStatus::Skipped);
        assert_eq!(
            readiness(&p, 1, &none_landed),
            Ok(()),
            "skipped counts as met"
        );
        set(&mut p, "a", TaskStatus::Blocked);
        assert_eq!(readiness(&p, 1, &all_landed), waiting);
        set(&mut p, "a", TaskStatus::Interrupted);
        assert_eq!(readiness(&p, 1, &all_landed), waiting);
    }

    #[test]
    fn the_first_unmet_dependency_in_listed_order_is_named() {
        let mut p = plan(&[("a", &[]), ("b", &[]), ("c", &["b", "a"])]);
        set(&mut p, "a", TaskStatus::Completed);
        assert_eq!(
            readiness(&p, 2, &all_landed),
            Err(Blocker::DependencyNotMet { id: "b".into() })
        );
    }

    #[test]
    fn every_failure_status_blocks_downstream_transitively() {
        for status in [
            TaskStatus::Failed,
            TaskStatus::Conflicted,
            TaskStatus::Cancelled,
        ] {
            let mut p = plan(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &[])]);
            set(&mut p, "a", status);
            let failed = Err(Blocker::DependencyFailed { id: "a".into() });
            assert_eq!(readiness(&p, 1, &all_landed), failed);
            assert_eq!(readiness(&p, 2, &all_landed), failed, "a grandchild");
            assert_eq!(readiness(&p, 3, &all_landed), Ok(()), "not downstream");
        }
    }

    #[test]
    fn a_completed_dependency_shields_its_dependents_from_a_failure_above_it() {
        // b was completed by hand while a failed: b's work is done, so c may start; d,
        // which still waits on a pending task below a, may not.
        let mut p = plan(&[
            ("a", &[]),
            ("b", &["a"]),
            ("c", &["b"]),
            ("x", &["a"]),
            ("d", &["x"]),
        ]);
        set(&mut p, "a", TaskStatus::Failed);
        set(&mut p, "b", TaskStatus::Completed);
        assert_eq!(readiness(&p, 2, &all_landed), Ok(()));
        assert_eq!(
            readiness(&p, 4, &all_landed),
            Err(Blocker::DependencyFailed { id: "a".into() })
        );
    }

    #[test]
    fn a_direct_failure_is_named_before_an_inherited_one() {
        let mut p = plan(&[("a", &[]), ("b", &["a"]), ("c", &[]), ("d", &["b", "c"])]);
        set(&mut p, "a", TaskStatus::Failed);
        set(&mut p, "c", TaskStatus::Conflicted);
        assert_eq!(
            readiness(&p, 3, &all_landed),
            Err(Blocker::DependencyFailed { id: "c".into() })
        );
    }

    #[test]
    fn gates_are_reported_in_order() {
        let mut p = plan(&[("a", &[]), ("b", &["a"])]);
        set(&mut p, "a", TaskStatus::Failed);
        p.tasks[1].hold = true;
        p.tasks[1].prompt.clear();
        assert_eq!(readiness(&p, 1, &all_landed), Err(Blocker::Held));
        p.tasks[1].hold = false;
        assert_eq!(readiness(&p, 1, &all_landed), Err(Blocker::NoPrompt));
        p.tasks[1].prompt = "p".into();
        assert_eq!(
            readiness(&p, 1, &all_landed),
            Err(Blocker::DependencyFailed { id: "a".into() })
        );
    }

    #[test]
    fn manual_tasks_need_a_person_once_their_dependencies_are_met() {
        let mut p = plan(&[("a", &[]), ("m", &["a"]), ("n", &[])]);
        for t in &mut p.tasks[1..] {
            t.kind = TaskKind::Manual;
            t.prompt.clear();
            t.steps = vec!["check the dashboard".into()];
        }
        assert_eq!(
            readiness(&p, 1, &all_landed),
            Err(Blocker::DependencyNotMet { id: "a".into() })
        );
        assert_eq!(readiness(&p, 2, &all_landed), Err(Blocker::NeedsPerson));
        assert_eq!(waiting_for_person(&p, &all_landed), [2]);
        set(&mut p, "a", TaskStatus::Completed);
        assert_eq!(waiting_for_person(&p, &all_landed), [1, 2]);
        assert_eq!(waiting_for_person(&p, &none_landed), [2]);
        p.tasks[2].hold = true;
        assert_eq!(waiting_for_person(&p, &all_landed), [1]);
        assert_eq!(
            next_to_start(&p, 0, 8, false, &all_landed),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn unknown_and_self_dependencies_are_never_met() {
        let p = plan(&[("a", &["ghost"]), ("b", &["b"])]);
        assert_eq!(
            readiness(&p, 0, &all_landed),
            Err(Blocker::DependencyNotMet { id: "ghost".into() })
        );
        assert_eq!(
            readiness(&p, 1, &all_landed),
            Err(Blocker::DependencyNotMet { id: "b".into() })
        );
    }

    #[test]
    fn next_to_start_fills_free_slots_in_plan_order() {
        let p = plan(&[
            ("a", &[]),
            ("b", &["a"]),
            ("c", &[]),
            ("d", &[]),
            ("e", &[]),
        ]);
        assert_eq!(next_to_start(&p, 0, 3, false, &all_landed), [0, 2, 3]);
        assert_eq!(next_to_start(&p, 1, 3, false, &all_landed), [0, 2]);
        assert_eq!(next_to_start(&p, 0, 64, false, &all_landed), [0, 2, 3, 4]);
        assert!(next_to_start(&p, 3, 3, false, &all_landed).is_empty());
        assert!(next_to_start(&p, 5, 3, false, &all_landed).is_empty());
        assert!(next_to_start(&p, 0, 3, true, &all_landed).is_empty());
    }

    #[test]
    fn blockers_agree_with_readiness() {
        let mut p = plan(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &[])]);
        set(&mut p, "a", TaskStatus::Failed);
        p.tasks[3].hold = true;
        let all = blockers(&p, &all_landed);
        for (index, answer) in all.iter().enumerate() {
            assert_eq!(*answer, readiness(&p, index, &all_landed));
        }
    }

    #[test]
    fn descendants_are_transitive_and_in_plan_order() {
        let p = plan(&[
            ("a", &[]),
            ("b", &["a"]),
            ("c", &[]),
            ("d", &["c", "b"]),
            ("e", &["d"]),
            ("f", &[]),
        ]);
        assert_eq!(descendants(&p, "a"), [1, 3, 4]);
        assert_eq!(descendants(&p, "c"), [3, 4]);
        assert!(descendants(&p, "e").is_empty());
        assert!(descendants(&p, "ghost").is_empty());
    }

    #[test]
    fn blocker_messages() {
        let shown: Vec<String> = [
            Blocker::NotWaiting(TaskStatus::InProgress),
            Blocker::Held,
            Blocker::NoPrompt,
            Blocker::NoCommand,
            Blocker::DependencyFailed { id: "a".into() },
            Blocker::DependencyNotMet { id: "b".into() },
            Blocker::NeedsPerson,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            shown,
            [
                "it is in_progress, not pending or approved",
                "it is on hold",
                "it is an AI task with an empty prompt",
                "it is an ops task with no command",
                "task \"a\" upstream of it failed, conflicted or was cancelled",
                "it waits for task \"b\" to complete and land on the integration branch",
                "it is a manual task: a person completes it",
            ]
        );
    }

    mod frontier {
        use super::*;
        use proptest::prelude::*;

        const STATUSES: [TaskStatus; 7] = [
            TaskStatus::Pending,
            TaskStatus::Approved,
            TaskStatus::InProgress,
            TaskStatus::Completed,
            TaskStatus::Skipped,
            TaskStatus::Failed,
            TaskStatus::Blocked,
        ];

        /// A task: its dependencies (earlier indices, an unknown id, or itself), kind,
        /// status, hold and whether it has its prompt/command.
        type Spec = (Vec<usize>, bool, bool, u8, usize, bool, bool);

        fn build(specs: &[Spec]) -> Plan {
            let mut p = plan(&[]);
            for (index, (deps, unknown, itself, kind, status, hold, empty)) in
                specs.iter().enumerate()
            {
                let mut t = Task::new(format!("t{index}"), "T");
                t.kind = [TaskKind::Ai, TaskKind::Ops, TaskKind::Manual][*kind as usize % 3];
                t.prompt = if *empty { String::new() } else { "do".into() };
                t.command = (!*empty).then(|| "make".to_owned());
                t.status = STATUSES[status % STATUSES.len()];
                t.hold = *hold;
                t.dependencies = deps
                    .iter()
                    .filter(|&&d| d < index)
                    .map(|d| format!("t{d}"))
                    .collect();
                if *unknown {
                    t.dependencies.push("nowhere".into());
                }
                if *itself {
                    t.dependencies.push(format!("t{index}"));
                }
                p.tasks.push(t);
            }
            p.renumber();
            p
        }

        fn spec() -> impl Strategy<Value = Spec> {
            (
                proptest::collection::vec(0usize..12, 0..3),
                proptest::bool::weighted(0.05),
                proptest::bool::weighted(0.05),
                0u8..3,
                0usize..7,
                proptest::bool::weighted(0.1),
                proptest::bool::weighted(0.1),
            )
        }

        fn completed(t: &Task) -> bool {
            t.status == TaskStatus::Completed
        }

        proptest! {
            /// After any sequence of changes, the frontier answers what the batch
            /// functions answer on the whole plan.
            #[test]
            fn the_frontier_agrees_with_the_batch_rules(
                specs in proptest::collection::vec(spec(), 1..12),
                changes in proptest::collection::vec((0usize..12, 0usize..7, any::<bool>()), 0..24),
                cap in 1usize..5,
                running in 0usize..3,
            ) {
                let mut p = build(&specs);
                let mut frontier = Frontier::new(&p, &completed);
                for (index, status, hold) in changes {
                    let index = index % p.tasks.len();
                    p.tasks[index].status = STATUSES[status];
                    p.tasks[index].hold = hold && status % 2 == 0;
                    frontier.update(&p, index, &completed);
                    prop_assert_eq!(
                        frontier.next_to_start(running, cap, false),
                        next_to_start(&p, running, cap, false, &completed)
                    );
                    prop_assert_eq!(
                        frontier.waiting_for_person(),
                        waiting_for_person(&p, &completed)
                    );
                }
                prop_assert!(frontier.next_to_start(0, cap, true).is_empty());
                prop_assert_eq!(
                    frontier.next_to_start(0, 64, false),
                    next_to_start(&p, 0, 64, false, &completed)
                );
            }
        }
    }
}
