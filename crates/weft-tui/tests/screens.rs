//! Every screen drawn on ratatui's test backend, at the smallest supported terminal
//! (80×24) and a large one (160×50), without colour (the text is the contract; the
//! colours follow `NO_COLOR`).

mod common;

use common::{ask, attempt, detail_of, select, snapshot, state};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use weft_core::AttemptStatus;
use weft_tui::state::{Key, Msg, State, update};
use weft_tui::view::{Theme, render};

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 50)];

fn draw(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| render(state, Theme { colour: false }, frame))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        let line: String = (0..buffer.area.width)
            .map(|x| buffer[(x, y)].symbol().to_owned())
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// The state as the app would hold it on a terminal of this size.
fn sized(width: u16, height: u16, build: impl Fn(&mut State)) -> State {
    let rows = weft_tui::view::plan_rows(ratatui::layout::Rect::new(0, 0, width, height));
    let mut s = state(40, rows);
    build(&mut s);
    s
}

fn each_size(name: &str, build: impl Fn(&mut State)) {
    for (width, height) in SIZES {
        let s = sized(width, height, &build);
        insta::assert_snapshot!(format!("{name}_{width}x{height}"), draw(&s, width, height));
    }
}

/// Task 3 (failed) selected, its two attempts read, the last one's output read.
fn failed_task_selected(s: &mut State) {
    select(s, 3);
    detail_of(
        s,
        "task-3",
        vec![
            attempt("task-3", 1, AttemptStatus::Interrupted),
            attempt("task-3", 2, AttemptStatus::Failed),
        ],
    );
    let text: String = (1..=40)
        .map(|i| format!("running test case {i} ... ok\n"))
        .chain(["test limiter::burst ... FAILED\n".to_owned()])
        .collect();
    update(
        s,
        Msg::Output {
            attempt: "task-3-attempt-2".into(),
            text,
            next: 900,
            running: false,
        },
    );
}

#[test]
fn the_plan_screen() {
    each_size("plan", failed_task_selected);
}

#[test]
fn the_task_screen() {
    each_size("task", |s| {
        failed_task_selected(s);
        update(s, Msg::Key(Key::Enter));
    });
}

#[test]
fn the_output_screen() {
    each_size("output", |s| {
        failed_task_selected(s);
        update(s, Msg::Key(Key::Char('o')));
    });
}

#[test]
fn the_output_screen_scrolled_back() {
    each_size("output_back", |s| {
        failed_task_selected(s);
        update(s, Msg::Key(Key::Char('o')));
        for _ in 0..5 {
            update(s, Msg::Key(Key::Char('k')));
        }
    });
}

#[test]
fn the_diff_screen() {
    each_size("diff", |s| {
        failed_task_selected(s);
        update(s, Msg::Key(Key::Char('d')));
        update(
            s,
            Msg::Diff(
                "diff --git a/src/limit.rs b/src/limit.rs\n+pub struct Bucket;\n-// todo\n".into(),
            ),
        );
    });
}

#[test]
fn the_handoff_screen_and_its_confirmation() {
    let review = "src/limit.rs | 40 +++++\n1 file changed\n\ndiff --git a/src/limit.rs b/src/limit.rs\n+pub struct Bucket;\n";
    each_size("handoff", |s| {
        update(s, Msg::Key(Key::Char('H')));
        update(s, Msg::Handoff(review.into()));
    });
    each_size("handoff_confirm_merge", |s| {
        update(s, Msg::Key(Key::Char('H')));
        update(s, Msg::Handoff(review.into()));
        update(s, Msg::Key(Key::Char('m')));
    });
}

#[test]
fn the_help_overlay() {
    each_size("help", |s| {
        update(s, Msg::Key(Key::Char('?')));
    });
}

#[test]
fn the_approvals_overlay() {
    each_size("approvals", |s| {
        let mut asking = snapshot(40);
        asking.asks.push(ask());
        update(s, Msg::Snapshot(asking));
    });
}

#[test]
fn the_filtered_plan_and_a_filter_that_matches_nothing() {
    each_size("filter", |s| {
        for key in "/number 1".chars().map(Key::Char).chain([Key::Enter]) {
            update(s, Msg::Key(key));
        }
    });
    each_size("filter_nothing", |s| {
        for key in "/zzz".chars().map(Key::Char) {
            update(s, Msg::Key(key));
        }
    });
}

#[test]
fn the_stop_confirmation() {
    each_size("confirm_stop", |s| {
        update(s, Msg::Key(Key::Char('R')));
    });
}

#[test]
fn a_terminal_below_80x24_gets_a_notice_instead_of_a_broken_screen() {
    let s = state(40, 10);
    insta::assert_snapshot!("too_small_79x24", draw(&s, 79, 24));
}

#[test]
fn a_10000_task_plan_draws_the_rows_on_screen_around_the_selection() {
    let mut s = state(
        10_000,
        weft_tui::view::plan_rows(ratatui::layout::Rect::new(0, 0, 80, 24)),
    );
    update(&mut s, Msg::Key(Key::End));
    for _ in 0..3 {
        update(&mut s, Msg::Key(Key::Up));
    }
    let text = draw(&s, 80, 24);
    assert!(text.contains("▸ #9997"), "{text}");
    assert!(text.contains("#10000"), "{text}");
    assert!(!text.contains("#9980 "), "only the rows on screen: {text}");
}

#[test]
fn the_header_shows_the_plans_spend_against_its_budget_and_says_when_it_is_reached() {
    use weft_core::spend::{Budget, Spend, Tokens};
    let mut s = sized(160, 50, |_| {});
    let mut reading = snapshot(40);
    reading.spend = Spend {
        tokens: Tokens {
            input: 12_000,
            output: 400,
            ..Tokens::default()
        },
        usd: 0.42,
        unpriced: None,
    };
    reading.budget = Budget {
        usd: Some(0.40),
        tokens: None,
    };
    update(&mut s, Msg::Snapshot(reading.clone()));
    let screen = draw(&s, 160, 50);
    let header = screen.lines().next().unwrap();
    assert!(
        header.contains("$0.42/$0.40, 12400 tok budget reached"),
        "{header}"
    );

    // No budget, a model without a price: the cost is unknown, never $0.
    reading.budget = Budget::default();
    reading.spend.unpriced = Some("mystery-9".into());
    reading.spend.usd = 0.0;
    update(&mut s, Msg::Snapshot(reading));
    let screen = draw(&s, 160, 50);
    let header = screen.lines().next().unwrap();
    assert!(header.contains("cost unknown, 12400 tok"), "{header}");
}
