//! How long one keypress takes on a 10,000-task plan: the reducer's move plus drawing the
//! whole screen on ratatui's test backend (no terminal I/O), at 80×24 and 160×50, and a
//! reading of the store's plan replacing the snapshot (the filter and the selection
//! recomputed). Figures are printed, never asserted; the aim is well under one 60 Hz
//! frame (16 ms) per key. `WEFT_BENCH_QUICK=1` cuts the repetitions.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use weft_core::{Plan, PlanStatus, Task, TaskStatus};
use weft_tui::state::{Key, Msg, Snapshot, State, update};
use weft_tui::view::{Theme, plan_rows, render};

fn plan(n: usize) -> Plan {
    let tasks = (0..n)
        .map(|i| {
            let mut task = Task::new(format!("task-{i}"), format!("Task number {i} of the plan"));
            task.order = i as u32 + 1;
            task.status = TaskStatus::ALL[i % TaskStatus::ALL.len()];
            if i > 0 {
                task.dependencies.push(format!("task-{}", i - 1));
            }
            task
        })
        .collect();
    Plan {
        id: "4c30aa11bb22cc33dd44ee55ff667788".into(),
        goal: "A large plan".into(),
        status: PlanStatus::Running,
        created_at: 0,
        updated_at: 0,
        runner: Some("exec".into()),
        revision: 1,
        tasks,
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let quick = std::env::var_os("WEFT_BENCH_QUICK").is_some();
    let keys = if quick { 50 } else { 1000 };
    let tasks = 10_000;
    for (width, height) in [(80u16, 24u16), (160, 50)] {
        let mut state = State::new(false);
        update(
            &mut state,
            Msg::Page(plan_rows(Rect::new(0, 0, width, height))),
        );
        update(
            &mut state,
            Msg::Snapshot(Snapshot {
                plan: Some(plan(tasks)),
                ..Snapshot::default()
            }),
        );
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        let mut samples = Vec::with_capacity(keys);
        let mut reducer = Vec::with_capacity(keys);
        for i in 0..keys {
            let key = if i % 200 < 100 {
                Key::PageDown
            } else {
                Key::Up
            };
            let start = Instant::now();
            update(&mut state, Msg::Key(key));
            reducer.push(start.elapsed());
            terminal
                .draw(|frame| render(&state, Theme { colour: true }, frame))
                .unwrap();
            samples.push(start.elapsed());
        }
        let worst = samples.iter().max().copied().unwrap_or_default();
        println!(
            "{tasks} tasks, {width}x{height}: key + full redraw median {:?}, worst {worst:?}; the reducer alone median {:?} ({keys} keys)",
            median(samples),
            median(reducer)
        );
    }
    let mut state = State::new(false);
    let reading = plan(tasks);
    let rounds = if quick { 5 } else { 50 };
    let mut samples = Vec::with_capacity(rounds);
    for revision in 0..rounds {
        let mut next = reading.clone();
        next.revision = revision as u64;
        let start = Instant::now();
        update(
            &mut state,
            Msg::Snapshot(Snapshot {
                plan: Some(next),
                ..Snapshot::default()
            }),
        );
        samples.push(start.elapsed());
    }
    println!(
        "{tasks} tasks: a new reading replacing the snapshot, median {:?} ({rounds} rounds)",
        median(samples)
    );
}
