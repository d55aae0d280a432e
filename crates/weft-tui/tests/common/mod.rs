//! A plan and its surroundings as the store would hand them to the TUI, built in memory.

#![allow(dead_code)]

use weft_core::{
    Attempt, AttemptStatus, Check, Plan, PlanStatus, Task, TaskStatus, Verdict, VerdictOutcome,
};
use weft_tui::state::{Ask, Detail, Engine, Msg, Snapshot, State, update};

pub const PLAN_ID: &str = "4c30aa11bb22cc33dd44ee55ff667788";

/// `n` tasks: a chain with a fan-out, in every status, the third failed with a verdict.
pub fn plan(n: usize) -> Plan {
    let statuses = [
        TaskStatus::Completed,
        TaskStatus::InProgress,
        TaskStatus::Failed,
        TaskStatus::Blocked,
        TaskStatus::Pending,
        TaskStatus::Skipped,
        TaskStatus::Conflicted,
    ];
    let tasks = (0..n)
        .map(|i| {
            let mut task = Task::new(format!("task-{}", i + 1), format!("Task number {}", i + 1));
            task.order = i as u32 + 1;
            task.status = statuses[i % statuses.len()];
            task.prompt = format!("Do step {} of the work.", i + 1);
            if i > 0 {
                task.dependencies.push(format!("task-{}", i));
            }
            if i > 2 && i % 3 == 0 {
                task.dependencies.push("task-1".into());
            }
            if i % 4 == 1 {
                task.runner = Some("claude-code".into());
                task.model = Some("sonnet".into());
            }
            if i == 4 {
                task.hold = true;
            }
            if task.status == TaskStatus::Failed {
                task.checks = vec!["cargo test".into()];
                task.verdict = Some(Verdict {
                    outcome: VerdictOutcome::Fail,
                    reason: "check `cargo test` exited 101".into(),
                    checks: vec![
                        Check {
                            name: "completion_marker".into(),
                            passed: true,
                            skipped: false,
                            detail: "found in the output".into(),
                            exit_code: None,
                            duration_ms: None,
                        },
                        Check {
                            name: "check:cargo test".into(),
                            passed: false,
                            skipped: false,
                            detail: "exit 101".into(),
                            exit_code: None,
                            duration_ms: None,
                        },
                    ],
                    decided_at: 0,
                });
            }
            task
        })
        .collect();
    Plan {
        id: PLAN_ID.into(),
        goal: "Add rate limiting to the public API".into(),
        status: PlanStatus::Running,
        created_at: 0,
        updated_at: 0,
        runner: Some("exec".into()),
        revision: 7,
        tasks,
    }
}

pub fn snapshot(n: usize) -> Snapshot {
    Snapshot {
        plan: Some(plan(n)),
        run: Some(("894a4fac".into(), "running".into())),
        engine: Engine::Elsewhere { pid: 4242 },
        isolated: true,
        asks: Vec::new(),
        seq: 12,
        ..Snapshot::default()
    }
}

pub fn ask() -> Ask {
    Ask {
        id: 3,
        subject: "Bash: cat /etc/hosts".into(),
        scope: "command:cat /etc/hosts".into(),
        asker: "task #2 (claude-code)".into(),
    }
}

pub fn attempt(task: &str, number: u32, status: AttemptStatus) -> Attempt {
    let mut attempt = Attempt::new(
        format!("{task}-attempt-{number}"),
        "894a4fac".into(),
        PLAN_ID.into(),
        task.into(),
        number,
        "claude-code".into(),
        1_000,
    );
    attempt.status = status;
    if status != AttemptStatus::Running {
        attempt.ended_at = Some(43_000);
        attempt.final_text = Some("Added the limiter; `cargo test` fails on one case.".into());
    }
    attempt
}

/// A state that read `n` tasks, with the given rows on screen.
pub fn state(n: usize, page: usize) -> State {
    let mut state = State::new(true);
    update(&mut state, Msg::Page(page));
    update(&mut state, Msg::Snapshot(snapshot(n)));
    state
}

/// Select task `order` by moving down from the top.
pub fn select(state: &mut State, order: usize) {
    update(state, Msg::Key(weft_tui::state::Key::Home));
    for _ in 1..order {
        update(state, Msg::Key(weft_tui::state::Key::Down));
    }
}

pub fn detail_of(state: &mut State, task: &str, attempts: Vec<Attempt>) {
    update(
        state,
        Msg::Detail(Detail {
            task: task.into(),
            attempts,
        }),
    );
}
