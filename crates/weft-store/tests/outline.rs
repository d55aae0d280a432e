//! The outline read from its index (`weft status`'s read, migration 9) is, for any plan,
//! what loading the plan's tasks column by column gives: every task, every field, in
//! order, read whole or by two readers at once. And SQLite keeps it current through every
//! kind of write, as migrating an older database computes it for the rows already there.

use std::time::Duration;

use proptest::prelude::*;
use rusqlite::Connection;
use weft_core::{
    Check, PlanStatus, Task, TaskKind, TaskLimits, TaskStatus, TaskView, Verdict, VerdictOutcome,
};
use weft_store::{DATABASE_FILE, PlanDraft, Store};

mod support;
use support::{create, workspace};

/// A plan of `tasks`, stored.
fn stored(store: &mut Store, tasks: Vec<Task>) -> weft_core::Plan {
    store
        .create_plan(
            PlanDraft {
                goal: "goal".into(),
                runner: None,
                status: PlanStatus::Approved,
                tasks,
                source: "test".into(),
            },
            100,
        )
        .expect("create plan")
}

/// Text of every kind a column may hold: the packing's own characters (`:`, `-`,
/// digits), escapes, control characters, multi-byte characters, nothing at all.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("-".to_owned()),
        Just("12:ab-".to_owned()),
        "[-:0-9a-z]{0,12}",
        any::<String>(),
        "\\PC{0,40}",
    ]
}

fn optional_text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![Just(None), text().prop_map(Some)]
}

/// A budget in dollars: any positive finite double, and the zero, negative and
/// non-finite ones a store may hold.
fn budget() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        (1u64..0x7ff0_0000_0000_0000).prop_map(|bits| Some(f64::from_bits(bits))),
        (0.001f64..10_000.0).prop_map(Some),
        Just(Some(0.1 + 0.2)),
    ]
}

fn limits() -> impl Strategy<Value = TaskLimits> {
    (
        proptest::option::of(0u64..=u64::from(u32::MAX) * 1000),
        proptest::option::of(0u64..=86_400_000),
        budget(),
        proptest::option::of(0u64..=i64::MAX as u64),
    )
        .prop_map(|(timeout, idle, usd, tokens)| TaskLimits {
            timeout: timeout.map(Duration::from_millis),
            idle_timeout: idle.map(Duration::from_millis),
            budget_usd: usd,
            budget_tokens: tokens,
        })
}

fn verdict() -> impl Strategy<Value = Option<Verdict>> {
    proptest::option::of(
        (any::<bool>(), text(), text()).prop_map(|(pass, reason, detail)| Verdict {
            outcome: if pass {
                VerdictOutcome::Pass
            } else {
                VerdictOutcome::Fail
            },
            reason,
            checks: vec![Check {
                name: "exit_code".into(),
                passed: pass,
                skipped: false,
                detail,
                exit_code: Some(1),
                duration_ms: Some(3),
            }],
            decided_at: 1_700_000_000_000,
        }),
    )
}

/// One task with every outline field drawn (its id and dependencies are set by the plan).
fn task() -> impl Strategy<Value = Task> {
    (
        (
            text(),
            optional_text(),
            optional_text(),
            optional_text(),
            optional_text(),
        ),
        (
            proptest::sample::select(TaskStatus::ALL.to_vec()),
            proptest::sample::select(vec![TaskKind::Ai, TaskKind::Manual, TaskKind::Ops]),
            any::<bool>(),
        ),
        proptest::collection::vec(text(), 0..3),
        verdict(),
        limits(),
    )
        .prop_map(
            |(
                (title, runner, model, effort, mode),
                (status, kind, hold),
                checks,
                verdict,
                limits,
            )| {
                let mut task = Task::new("x", title);
                task.runner = runner;
                task.model = model;
                task.effort = effort;
                task.mode = mode;
                task.status = status;
                task.kind = kind;
                task.hold = hold;
                task.checks = checks;
                task.verdict = verdict;
                task.limits = limits;
                task.prompt = "p".into();
                task
            },
        )
}

/// A plan of up to 12 tasks, each depending on some of the ones before it.
fn tasks() -> impl Strategy<Value = Vec<Task>> {
    proptest::collection::vec(
        (task(), proptest::collection::vec(any::<u8>(), 0..3)),
        1..12,
    )
    .prop_map(|drawn| {
        drawn
            .into_iter()
            .enumerate()
            .map(|(index, (mut task, deps))| {
                task.id = format!("t-{index}.x_{index}");
                task.order = u32::try_from(index + 1).unwrap();
                if index > 0 {
                    let mut dependencies: Vec<String> = deps
                        .iter()
                        .map(|d| format!("t-{0}.x_{0}", usize::from(*d) % index))
                        .collect();
                    dependencies.dedup();
                    task.dependencies = dependencies;
                }
                task
            })
            .collect()
    })
}

/// What the outline shows of each task, from the plan loaded column by column.
fn expected(store: &Store, plan: &str) -> Vec<Task> {
    store.plan_outline(plan).expect("plan outline").tasks
}

fn assert_outline_is_the_loaded_plan(store: &Store, plan: &str) {
    let loaded = expected(store, plan);
    let want: Vec<TaskView<'_>> = loaded.iter().map(Task::view).collect();
    for split_from in [1, 3, i64::MAX] {
        let outline = store.outline_split_from(plan, split_from).expect("outline");
        let views: Vec<TaskView<'_>> = outline.tasks().collect();
        assert_eq!(views, want, "split from {split_from}");
        // From any task on (past the end: none), across both readers' parts.
        for skip in 0..=want.len() + 1 {
            let from: Vec<TaskView<'_>> = outline.tasks_from(skip).collect();
            assert_eq!(
                from[..],
                want[skip.min(want.len())..],
                "split from {split_from}, from {skip}"
            );
            assert_eq!(outline.tasks_from(skip).len(), from.len());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_outline_from_its_index_is_every_task_as_loaded_column_by_column(tasks in tasks()) {
        let (_tmp, dir) = workspace();
        let mut store = create(&dir);
        let plan = stored(&mut store, tasks.clone());
        assert_outline_is_the_loaded_plan(&store, &plan.id);
        // The budgets read back to the bit (the outline carries them as text).
        let outline = store.outline(&plan.id).expect("outline");
        for (view, task) in outline.tasks().zip(&tasks) {
            prop_assert_eq!(
                view.limits.budget_usd.map(f64::to_bits),
                task.limits.budget_usd.filter(|u| u.is_finite() && *u > 0.0).map(f64::to_bits)
            );
        }
    }
}

/// Every column the outline holds, changed by SQL as any writer might change it, is seen
/// by the next outline read.
#[test]
fn every_write_to_a_task_row_is_in_the_next_outline() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let tasks: Vec<Task> = (1..=4)
        .map(|n| {
            let mut task = Task::new(format!("t{n}"), format!("Title {n}"));
            task.order = n;
            task.prompt = "p".into();
            task
        })
        .collect();
    let plan = stored(&mut store, tasks);
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let changes = [
        "UPDATE tasks SET title = 'new: 5:title-' WHERE id = 't1'",
        "UPDATE tasks SET status = 'in_progress', hold = 1 WHERE id = 't2'",
        "UPDATE tasks SET runner = 'codex', model = 'm', effort = 'high', mode = 'plan' WHERE id = 't3'",
        "UPDATE tasks SET checks = '[\"cargo test\"]', dependencies = '[\"t1\"]' WHERE id = 't4'",
        "UPDATE tasks SET timeout_ms = 5000, budget_usd = 0.3, budget_tokens = 7 WHERE id = 't1'",
        "UPDATE tasks SET kind = 'manual', idle_timeout_ms = 0 WHERE id = 't2'",
        "UPDATE tasks SET position = position + 10 WHERE id = 't1'",
        "DELETE FROM tasks WHERE id = 't3'",
    ];
    for change in changes {
        conn.execute_batch(change).unwrap();
        assert_outline_is_the_loaded_plan(&store, &plan.id);
    }
    let outline = store.outline(&plan.id).unwrap();
    let views: Vec<TaskView<'_>> = outline.tasks().collect();
    let ids: Vec<&str> = views.iter().map(|v| v.id).collect();
    assert_eq!(ids, ["t2", "t4", "t1"]);
    assert_eq!(views[2].title, "new: 5:title-");
    assert_eq!(views[2].limits.budget_usd, Some(0.3));
    assert_eq!(views[0].status, TaskStatus::InProgress);
    assert!(views[0].hold);
}

/// A row whose text is not UTF-8 (SQLite stores what it is given) is refused by the
/// outline as by the full load, naming the task and the column.
#[test]
fn a_title_that_is_not_utf8_is_refused_naming_the_task_and_the_column() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let mut task = Task::new("t1", "Title");
    task.order = 1;
    task.prompt = "p".into();
    let plan = stored(&mut store, vec![task]);
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    conn.execute_batch("UPDATE tasks SET title = CAST(x'41ff42' AS TEXT) WHERE id = 't1'")
        .unwrap();
    let outline = match store.outline(&plan.id) {
        Err(weft_store::StoreError::Damaged { detail, .. }) => detail,
        other => panic!("expected damage, got {other:?}"),
    };
    let full = match store.plan(&plan.id) {
        Err(weft_store::StoreError::Damaged { detail, .. }) => detail,
        other => panic!("expected damage, got {other:?}"),
    };
    assert!(
        outline.starts_with("task \"t1\": the title column holds text that is not UTF-8"),
        "{outline}"
    );
    assert!(
        full.starts_with("task \"t1\": the title column holds text that is not UTF-8"),
        "{full}"
    );
}
