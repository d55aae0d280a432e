//! Property tests for the scheduler's decisions (DESIGN §5).
//!
//! 1. `next_to_start` on random valid plans (every status, holds, kinds, partly landed work)
//!    with random caps and running counts: never more than the free slots, only ready tasks
//!    (dependencies met, nothing failed upstream, not manual, not held), in plan order,
//!    nothing when halted, and every ready task when the slots allow (maximality). Readiness
//!    is checked against a reference written here from the rules, not from the code.
//! 2. `descendants`, `waiting_for_person` and `blockers` agree with references.
//! 3. Whole runs are simulated: start what `next_to_start` returns, finish, fail, land or
//!    conflict random running work, mark descendants of failures blocked, let a person tick
//!    manual tasks. The cap is never exceeded, every start is legal when it happens, and the
//!    run ends with every task settled or a stated reason (a hold, a person) for the rest.

use std::collections::{BTreeSet, HashSet};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use weft_core::model::{Plan, PlanStatus, Task, TaskKind, TaskStatus};
use weft_core::schedule::{
    Blocker, blockers, descendants, next_to_start, readiness, stopped_by_failure,
    waiting_for_person,
};

type Checked = Result<(), TestCaseError>;

// ---------------------------------------------------------------------------------------
// Plans.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Seed {
    kind: TaskKind,
    status: TaskStatus,
    hold: bool,
    landed: bool,
    /// Each picks one earlier task (modulo the position); duplicates collapse.
    deps: Vec<prop::sample::Index>,
}

/// A random valid plan and the ids of its completed tasks that have landed.
#[derive(Debug, Clone)]
struct World {
    plan: Plan,
    landed: HashSet<String>,
}

impl World {
    fn landed(&self) -> impl Fn(&Task) -> bool + '_ {
        |task: &Task| self.landed.contains(&task.id)
    }
}

fn kind() -> impl Strategy<Value = TaskKind> {
    prop_oneof![6 => Just(TaskKind::Ai), 2 => Just(TaskKind::Ops), 2 => Just(TaskKind::Manual)]
}

fn any_status() -> impl Strategy<Value = TaskStatus> {
    prop_oneof![
        4 => prop_oneof![Just(TaskStatus::Pending), Just(TaskStatus::Approved)],
        3 => Just(TaskStatus::Completed),
        3 => prop::sample::select(TaskStatus::ALL.to_vec()),
    ]
}

fn seed(status: BoxedStrategy<TaskStatus>, hold_weight: u32) -> impl Strategy<Value = Seed> {
    (
        kind(),
        status,
        prop::bool::weighted(f64::from(hold_weight) / 100.0),
        prop::bool::weighted(0.7),
        prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    )
        .prop_map(|(kind, status, hold, landed, deps)| Seed {
            kind,
            status,
            hold,
            landed,
            deps,
        })
}

fn build(seeds: Vec<Seed>) -> World {
    let mut tasks = Vec::with_capacity(seeds.len());
    let mut landed = HashSet::new();
    for (index, seed) in seeds.into_iter().enumerate() {
        let id = format!("t{}", index + 1);
        let mut task = Task::new(id.clone(), format!("Task {}", index + 1));
        match seed.kind {
            TaskKind::Ai => task.prompt = format!("do {id}"),
            TaskKind::Ops => task.command = Some("make test".into()),
            TaskKind::Manual => task.steps = vec!["tick it".into()],
        }
        task.kind = seed.kind;
        task.status = seed.status;
        task.hold = seed.hold;
        if index > 0 {
            let mut deps: Vec<usize> = seed.deps.iter().map(|d| d.index(index)).collect();
            deps.sort_unstable();
            deps.dedup();
            task.dependencies = deps.iter().map(|d| format!("t{}", d + 1)).collect();
        }
        if seed.landed && task.status == TaskStatus::Completed {
            landed.insert(id);
        }
        tasks.push(task);
    }
    let mut plan = Plan {
        id: "0123456789abcdef0123456789abcdef".into(),
        goal: "goal".into(),
        status: PlanStatus::Running,
        created_at: 0,
        updated_at: 0,
        runner: None,
        revision: 0,
        tasks,
    };
    plan.renumber();
    World { plan, landed }
}

/// Plans in any state: every status, holds, kinds, partly landed work.
fn any_world(max: usize) -> impl Strategy<Value = World> {
    prop::collection::vec(seed(any_status().boxed(), 15), 1..=max).prop_map(build)
}

/// Plans as a run finds them: not started, some done or skipped before, a few holds.
fn fresh_world(max: usize) -> impl Strategy<Value = World> {
    let status = prop_oneof![
        8 => prop_oneof![Just(TaskStatus::Pending), Just(TaskStatus::Approved)],
        1 => Just(TaskStatus::Completed),
        1 => Just(TaskStatus::Skipped),
    ];
    prop::collection::vec(seed(status.boxed(), 5), 1..=max).prop_map(|seeds| {
        let mut world = build(seeds);
        // Work done before this run has landed.
        for task in &world.plan.tasks {
            if task.status == TaskStatus::Completed {
                world.landed.insert(task.id.clone());
            }
        }
        world
    })
}

fn cap() -> impl Strategy<Value = usize> {
    prop_oneof![1..=4usize, 1..=64usize]
}

// ---------------------------------------------------------------------------------------
// References, written from DESIGN §5 rather than from the code under test.
// ---------------------------------------------------------------------------------------

fn position(plan: &Plan, id: &str) -> usize {
    plan.tasks.iter().position(|t| t.id == id).unwrap()
}

fn met(world: &World, task: &Task) -> bool {
    task.status == TaskStatus::Skipped
        || (task.status == TaskStatus::Completed && world.landed.contains(&task.id))
}

fn failed(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Failed | TaskStatus::Conflicted | TaskStatus::Cancelled
    )
}

/// Every task reachable through dependencies (not the task itself).
fn ancestors(plan: &Plan, index: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![index];
    while let Some(next) = stack.pop() {
        for dep in &plan.tasks[next].dependencies {
            let d = position(plan, dep);
            if seen.insert(d) {
                stack.push(d);
            }
        }
    }
    seen
}

/// A failed task upstream, reached only through dependencies that are not done (a
/// completed or skipped dependency shields what lies above it).
fn has_failed_ancestor(plan: &Plan, index: usize) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![index];
    while let Some(next) = stack.pop() {
        for dep in &plan.tasks[next].dependencies {
            let d = position(plan, dep);
            if !seen.insert(d) {
                continue;
            }
            let status = plan.tasks[d].status;
            if failed(status) {
                return true;
            }
            if !matches!(status, TaskStatus::Completed | TaskStatus::Skipped) {
                stack.push(d);
            }
        }
    }
    false
}

fn dependencies_met(world: &World, index: usize) -> bool {
    let plan = &world.plan;
    plan.tasks[index]
        .dependencies
        .iter()
        .all(|d| met(world, &plan.tasks[position(plan, d)]))
}

/// May the task start now (the five gates, and not manual)?
fn reference_ready(world: &World, index: usize) -> bool {
    let task = &world.plan.tasks[index];
    matches!(task.status, TaskStatus::Pending | TaskStatus::Approved)
        && !task.hold
        && task.kind != TaskKind::Manual
        && !has_failed_ancestor(&world.plan, index)
        && dependencies_met(world, index)
}

fn reference_waiting_for_person(world: &World) -> Vec<usize> {
    (0..world.plan.tasks.len())
        .filter(|&i| {
            let task = &world.plan.tasks[i];
            task.kind == TaskKind::Manual
                && matches!(task.status, TaskStatus::Pending | TaskStatus::Approved)
                && !task.hold
                && !has_failed_ancestor(&world.plan, i)
                && dependencies_met(world, i)
        })
        .collect()
}

fn reference_descendants(plan: &Plan, index: usize) -> Vec<usize> {
    (0..plan.tasks.len())
        .filter(|&i| ancestors(plan, i).contains(&index))
        .collect()
}

/// Every invariant of one `next_to_start` answer.
fn check_start(
    world: &World,
    running: usize,
    cap: usize,
    halted: bool,
    started: &[usize],
) -> Checked {
    let free = cap.saturating_sub(running);
    prop_assert!(
        started.len() <= free,
        "{} started with {} free slots",
        started.len(),
        free
    );
    if halted {
        prop_assert!(started.is_empty(), "started {:?} while halted", started);
        return Ok(());
    }
    prop_assert!(
        started.windows(2).all(|w| w[0] < w[1]),
        "not in plan order: {:?}",
        started
    );
    for &index in started {
        let task = &world.plan.tasks[index];
        prop_assert!(
            dependencies_met(world, index),
            "{} started with an unmet dependency",
            task.id
        );
        prop_assert!(
            !has_failed_ancestor(&world.plan, index),
            "{} started below a failure",
            task.id
        );
        prop_assert!(
            reference_ready(world, index),
            "{} ({:?}, hold {}, {:?}) is not ready",
            task.id,
            task.status,
            task.hold,
            task.kind
        );
    }
    let ready: Vec<usize> = (0..world.plan.tasks.len())
        .filter(|&i| reference_ready(world, i))
        .collect();
    let expected: Vec<usize> = ready.into_iter().take(free).collect();
    prop_assert_eq!(
        started,
        expected.as_slice(),
        "not every ready task that fits"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn next_to_start_obeys_every_rule(
        world in any_world(40),
        cap in cap(),
        running in 0..70usize,
        halted in any::<bool>(),
    ) {
        let started = next_to_start(&world.plan, running, cap, halted, &world.landed());
        check_start(&world, running, cap, halted, &started)?;
    }

    #[test]
    fn readiness_views_agree_with_the_references(world in any_world(30)) {
        let plan = &world.plan;
        let landed = world.landed();
        let all = blockers(plan, &landed);
        prop_assert_eq!(all.len(), plan.tasks.len());
        for (index, answer) in all.iter().enumerate() {
            prop_assert_eq!(answer, &readiness(plan, index, &landed));
            prop_assert_eq!(answer.is_ok(), reference_ready(&world, index), "task {}", index + 1);
            if let Err(Blocker::DependencyFailed { id }) = answer {
                let failed_index = position(plan, id);
                prop_assert!(failed(plan.tasks[failed_index].status));
                prop_assert!(ancestors(plan, index).contains(&failed_index));
            }
            if let Err(Blocker::DependencyNotMet { id }) = answer {
                prop_assert!(plan.tasks[index].dependencies.contains(id));
                prop_assert!(!met(&world, &plan.tasks[position(plan, id)]));
            }
        }
        prop_assert_eq!(waiting_for_person(plan, &landed), reference_waiting_for_person(&world));
        for (index, task) in plan.tasks.iter().enumerate() {
            prop_assert_eq!(descendants(plan, &task.id), reference_descendants(plan, index));
        }
    }

    #[test]
    fn simulated_runs_keep_the_cap_and_the_order(
        world in fresh_world(30),
        cap in cap(),
        halt_on_failure in prop::bool::weighted(0.3),
        person_present in any::<bool>(),
        seed in any::<u64>(),
    ) {
        simulate(world, cap, halt_on_failure, person_present, seed)?;
    }
}

// ---------------------------------------------------------------------------------------
// The simulation.
// ---------------------------------------------------------------------------------------

/// A small deterministic generator, so a failing case replays from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*; the seed is forced odd so it is never zero.
        let mut x = self.0 | 1;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn settled(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Completed
            | TaskStatus::Skipped
            | TaskStatus::Failed
            | TaskStatus::Conflicted
            | TaskStatus::Cancelled
            | TaskStatus::Blocked
    )
}

/// Record a failure the way the engine does: the task's status, then every pending
/// descendant parked at blocked.
fn fail(world: &mut World, index: usize, status: TaskStatus) -> Checked {
    world.plan.tasks[index].status = status;
    let id = world.plan.tasks[index].id.clone();
    let downstream = descendants(&world.plan, &id);
    prop_assert_eq!(&downstream, &reference_descendants(&world.plan, index));
    // A descendant may already be running or done when a task between them was completed
    // by hand; running work always finishes with its own verdict. Only what the failure
    // stops (not what a done task shields) is blocked.
    let stopped = stopped_by_failure(&world.plan, &id);
    prop_assert!(stopped.iter().all(|i| downstream.contains(i)));
    for d in stopped {
        let task = &mut world.plan.tasks[d];
        if matches!(task.status, TaskStatus::Pending | TaskStatus::Approved) {
            task.status = TaskStatus::Blocked;
        }
    }
    Ok(())
}

fn simulate(
    mut world: World,
    cap: usize,
    halt_on_failure: bool,
    person_present: bool,
    seed: u64,
) -> Checked {
    let mut rng = Rng(seed);
    let mut running: Vec<usize> = Vec::new();
    // Passed AI tasks waiting to land, lowest plan order first.
    let mut landing: BTreeSet<usize> = BTreeSet::new();
    let mut halted = false;
    let limit = 10 * world.plan.tasks.len() + 20;
    let mut steps = 0;
    loop {
        steps += 1;
        prop_assert!(steps <= limit, "the run did not settle in {} steps", limit);

        let started = next_to_start(&world.plan, running.len(), cap, halted, &world.landed());
        check_start(&world, running.len(), cap, halted, &started)?;
        for &index in &started {
            world.plan.tasks[index].status = TaskStatus::InProgress;
            running.push(index);
        }
        prop_assert!(
            running.len() <= cap,
            "{} running over a cap of {}",
            running.len(),
            cap
        );
        let in_progress = world
            .plan
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::InProgress)
            .count();
        prop_assert_eq!(in_progress, running.len());

        let waiting = waiting_for_person(&world.plan, &world.landed());
        prop_assert_eq!(&waiting, &reference_waiting_for_person(&world));
        let person_acts = person_present && !waiting.is_empty();
        let mut choices = Vec::new();
        if !running.is_empty() {
            choices.extend([0, 0, 0]);
        }
        if !landing.is_empty() {
            choices.push(1);
        }
        if person_acts {
            choices.push(2);
        }
        if choices.is_empty() {
            break;
        }
        match choices[rng.below(choices.len())] {
            0 => {
                let index = running.swap_remove(rng.below(running.len()));
                let kind = world.plan.tasks[index].kind;
                if rng.chance(75) {
                    world.plan.tasks[index].status = TaskStatus::Completed;
                    if kind == TaskKind::Ai {
                        landing.insert(index);
                    } else {
                        // Ops work runs in the integration checkout: nothing to land.
                        world.landed.insert(world.plan.tasks[index].id.clone());
                    }
                } else {
                    let status = if rng.chance(80) {
                        TaskStatus::Failed
                    } else {
                        TaskStatus::Cancelled
                    };
                    fail(&mut world, index, status)?;
                    halted |= halt_on_failure;
                }
            }
            1 => {
                let index = landing.pop_first().unwrap();
                if rng.chance(10) {
                    fail(&mut world, index, TaskStatus::Conflicted)?;
                    halted |= halt_on_failure;
                } else {
                    world.landed.insert(world.plan.tasks[index].id.clone());
                }
            }
            _ => {
                let index = waiting[rng.below(waiting.len())];
                world.plan.tasks[index].status = TaskStatus::Completed;
                world.landed.insert(world.plan.tasks[index].id.clone());
            }
        }
    }

    // Settled: nothing running, nothing left to land, nothing more can start.
    prop_assert!(running.is_empty() && landing.is_empty());
    prop_assert!(next_to_start(&world.plan, 0, cap, halted, &world.landed()).is_empty());
    let plan = &world.plan;
    let waiting = waiting_for_person(plan, &world.landed());
    if person_present {
        prop_assert!(
            waiting.is_empty(),
            "a person was there to tick {:?}",
            waiting
        );
    }
    // Every unsettled task has a stated reason: a hold, a person, a halt, or a dependency
    // that is itself unsettled for one of those reasons.
    let mut explained = vec![false; plan.tasks.len()];
    for (index, task) in plan.tasks.iter().enumerate() {
        if settled(task.status) {
            prop_assert!(
                task.status != TaskStatus::Blocked || has_failed_ancestor(plan, index),
                "{} is blocked with nothing failed upstream",
                task.id
            );
            continue;
        }
        prop_assert!(
            matches!(task.status, TaskStatus::Pending | TaskStatus::Approved),
            "{} ended {:?}",
            task.id,
            task.status
        );
        prop_assert!(
            !has_failed_ancestor(plan, index),
            "{} below a failure was not parked at blocked",
            task.id
        );
        let reason = if halted {
            Some("halted")
        } else if task.hold {
            Some("held")
        } else if waiting.contains(&index) {
            Some("waiting for a person")
        } else if task.dependencies.iter().any(|d| {
            let dep = position(plan, d);
            explained[dep] && !settled(plan.tasks[dep].status)
        }) {
            Some("waiting for an unsettled dependency")
        } else {
            None
        };
        prop_assert!(
            reason.is_some(),
            "{} ({:?}, {:?}) was left behind: {:?}",
            task.id,
            task.status,
            task.kind,
            readiness(plan, index, &world.landed())
        );
        explained[index] = true;
    }
    if !halted && person_present && !plan.tasks.iter().any(|t| t.hold) {
        // No halt, no hold, and a person to tick manual tasks: everything settles.
        let unsettled: Vec<&str> = plan
            .tasks
            .iter()
            .filter(|t| !settled(t.status))
            .map(|t| t.id.as_str())
            .collect();
        prop_assert!(unsettled.is_empty(), "left unsettled: {:?}", unsettled);
    }
    Ok(())
}

#[test]
fn a_diamond_run_fans_out_under_the_cap() {
    // a; b, c, d after a; e after b and c. Cap 2.
    let seeds = [
        (TaskKind::Ai, vec![]),
        (TaskKind::Ai, vec![0]),
        (TaskKind::Ai, vec![0]),
        (TaskKind::Ai, vec![0]),
        (TaskKind::Ops, vec![1, 2]),
    ];
    let mut world = build(
        seeds
            .iter()
            .map(|(kind, _)| Seed {
                kind: *kind,
                status: TaskStatus::Pending,
                hold: false,
                landed: false,
                deps: Vec::new(),
            })
            .collect(),
    );
    for (task, (_, deps)) in world.plan.tasks.iter_mut().zip(&seeds) {
        task.dependencies = deps.iter().map(|d: &usize| format!("t{}", d + 1)).collect();
    }
    let start = |w: &World, running: usize| next_to_start(&w.plan, running, 2, false, &w.landed());
    assert_eq!(start(&world, 0), [0]);
    world.plan.tasks[0].status = TaskStatus::Completed;
    assert_eq!(start(&world, 0), Vec::<usize>::new(), "not landed yet");
    world.landed.insert("t1".into());
    assert_eq!(start(&world, 0), [1, 2]);
    assert_eq!(start(&world, 1), [1], "a cap, not waves");
    world.plan.tasks[1].status = TaskStatus::Failed;
    world.plan.tasks[2].status = TaskStatus::InProgress;
    assert_eq!(start(&world, 1), [3]);
    assert_eq!(descendants(&world.plan, "t2"), [4]);
    assert_eq!(
        readiness(&world.plan, 4, &world.landed()),
        Err(Blocker::DependencyFailed { id: "t2".into() })
    );
}
