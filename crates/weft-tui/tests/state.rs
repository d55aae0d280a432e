//! The reducer, without a terminal: keys, store readings and events in; state and
//! effects out.

mod common;

use common::{ask, attempt, detail_of, select, snapshot, state};
use proptest::prelude::*;
use weft_core::event::{Event, EventKind};
use weft_core::{AttemptStatus, TaskStatus};
use weft_tui::state::{
    Action, Confirm, Effect, Engine, Key, Msg, OUTPUT_LINES, Overlay, Screen, State, update,
    wider_scope,
};

fn key(state: &mut State, k: Key) -> Vec<Effect> {
    update(state, Msg::Key(k))
}

fn ch(state: &mut State, c: char) -> Vec<Effect> {
    key(state, Key::Char(c))
}

fn selected(state: &State) -> &str {
    state.selected.as_deref().expect("a task is selected")
}

#[test]
fn the_first_task_is_selected_and_moving_reads_the_newly_selected_task_once() {
    let mut s = state(10, 5);
    assert_eq!(selected(&s), "task-1");
    assert_eq!(
        ch(&mut s, 'j'),
        vec![Effect::LoadDetail {
            task: "task-2".into()
        }]
    );
    assert_eq!(
        key(&mut s, Key::Up),
        vec![Effect::LoadDetail {
            task: "task-1".into()
        }]
    );
    // Already at the top: nothing changes, nothing is read.
    assert_eq!(ch(&mut s, 'k'), vec![]);
    ch(&mut s, 'G');
    assert_eq!(selected(&s), "task-10");
    assert!(
        s.top + s.page > s.cursor && s.top <= s.cursor,
        "the cursor is on screen"
    );
    key(&mut s, Key::Home);
    assert_eq!((selected(&s), s.top), ("task-1", 0));
    key(&mut s, Key::PageDown);
    assert_eq!(selected(&s), "task-6");
}

#[test]
fn the_selection_follows_its_task_through_a_reload_that_reorders_and_survives_its_removal() {
    let mut s = state(6, 10);
    select(&mut s, 4);
    assert_eq!(selected(&s), "task-4");
    let mut moved = snapshot(6);
    let plan = moved.plan.as_mut().unwrap();
    plan.tasks.rotate_left(2);
    for (i, t) in plan.tasks.iter_mut().enumerate() {
        t.order = i as u32 + 1;
    }
    plan.revision += 1;
    update(&mut s, Msg::Snapshot(moved));
    assert_eq!(selected(&s), "task-4");
    assert_eq!(s.cursor, 1);
    let mut removed = snapshot(6);
    removed
        .plan
        .as_mut()
        .unwrap()
        .tasks
        .retain(|t| t.id != "task-4");
    let effects = update(&mut s, Msg::Snapshot(removed));
    assert!(s.selected.is_some(), "a neighbour is selected");
    assert_ne!(selected(&s), "task-4");
    assert!(effects.contains(&Effect::LoadDetail {
        task: selected(&s).to_owned()
    }));
}

#[test]
fn the_text_filter_and_the_status_filter_narrow_the_plan_and_esc_clears_the_text() {
    let mut s = state(30, 10);
    ch(&mut s, '/');
    for c in "number 2".chars() {
        ch(&mut s, c);
    }
    key(&mut s, Key::Enter);
    assert!(!s.filter.editing);
    // "Task number 2" and "Task number 2x".
    assert_eq!(s.visible.len(), 11);
    assert_eq!(selected(&s), "task-2");
    // Typing q in the filter does not quit.
    ch(&mut s, '/');
    ch(&mut s, 'q');
    assert!(!s.quit);
    key(&mut s, Key::Esc);
    assert!(s.filter.text.is_empty());
    assert_eq!(s.visible.len(), 30);
    ch(&mut s, 'F');
    assert_eq!(s.filter.status, Some(TaskStatus::InProgress));
    assert!(
        s.visible
            .iter()
            .all(|&i| s.tasks()[i].status == TaskStatus::InProgress)
    );
    assert_eq!(s.tasks()[s.visible[s.cursor]].id, selected(&s));
}

#[test]
fn each_control_key_asks_for_the_engine_operation_of_its_cli_command_on_the_selected_task() {
    let mut s = state(7, 10);
    select(&mut s, 3);
    let on = |action| {
        vec![Effect::Control {
            action,
            task: "task-3".into(),
        }]
    };
    assert_eq!(ch(&mut s, 'r'), on(Action::Retry));
    assert_eq!(ch(&mut s, 'c'), on(Action::Cancel));
    assert_eq!(ch(&mut s, 'f'), on(Action::ForceStart));
    assert_eq!(ch(&mut s, 's'), on(Action::Skip));
    assert_eq!(ch(&mut s, 'x'), on(Action::Repair));
    assert_eq!(ch(&mut s, 'm'), on(Action::Complete));
    assert_eq!(ch(&mut s, 'h'), on(Action::Hold));
    assert_eq!(
        ch(&mut s, 'e'),
        vec![Effect::Rearm {
            task: "task-3".into()
        }]
    );
    // A completed task is marked not done; a held one released.
    select(&mut s, 1);
    assert!(matches!(
        ch(&mut s, 'm')[..],
        [Effect::Control {
            action: Action::Uncomplete,
            ..
        }]
    ));
    select(&mut s, 5);
    assert!(matches!(
        ch(&mut s, 'h')[..],
        [Effect::Control {
            action: Action::Release,
            ..
        }]
    ));
}

#[test]
fn r_capital_starts_an_idle_run_and_stops_a_running_one_only_after_a_yes() {
    let mut s = state(3, 10);
    let mut idle = snapshot(3);
    idle.engine = Engine::Idle;
    update(&mut s, Msg::Snapshot(idle));
    assert_eq!(ch(&mut s, 'R'), vec![Effect::StartRun]);
    update(&mut s, Msg::Snapshot(snapshot(3)));
    assert_eq!(ch(&mut s, 'R'), vec![]);
    assert_eq!(s.overlay, Some(Overlay::Confirm(Confirm::StopRun)));
    assert_eq!(ch(&mut s, 'n'), vec![]);
    assert_eq!(s.overlay, None);
    ch(&mut s, 'R');
    assert_eq!(ch(&mut s, 'y'), vec![Effect::StopRun]);
}

#[test]
fn an_approval_that_waits_opens_the_overlay_and_y_n_a_answer_it() {
    let mut s = state(3, 10);
    let mut asking = snapshot(3);
    asking.asks.push(ask());
    update(&mut s, Msg::Snapshot(asking.clone()));
    assert_eq!(s.overlay, Some(Overlay::Approvals));
    // While it is open, plan keys do nothing.
    assert_eq!(ch(&mut s, 'r'), vec![]);
    assert_eq!(
        ch(&mut s, 'a'),
        vec![Effect::Answer {
            ask: 3,
            allow: true,
            scope: Some("command:cat".into())
        }]
    );
    assert_eq!(s.overlay, None);
    // Esc puts it away; the same question does not reopen it, a new one does.
    let mut s = state(3, 10);
    update(&mut s, Msg::Snapshot(asking.clone()));
    key(&mut s, Key::Esc);
    update(&mut s, Msg::Snapshot(asking.clone()));
    assert_eq!(s.overlay, None);
    assert_eq!(ch(&mut s, 'a'), vec![], "a reopens the questions");
    assert_eq!(s.overlay, Some(Overlay::Approvals));
    assert_eq!(
        ch(&mut s, 'n'),
        vec![Effect::Answer {
            ask: 3,
            allow: false,
            scope: None
        }]
    );
    let mut s = state(3, 10);
    update(&mut s, Msg::Snapshot(asking));
    assert_eq!(
        ch(&mut s, 'y'),
        vec![Effect::Answer {
            ask: 3,
            allow: true,
            scope: None
        }]
    );
}

#[test]
fn new_events_ask_for_one_reading_and_a_bell_only_for_a_transition() {
    let mut s = state(3, 10);
    let event = |seq, kind| Event {
        seq,
        ..Event::new(kind)
    };
    let edited = event(13, EventKind::TaskHeld);
    assert_eq!(
        update(&mut s, Msg::Events(vec![edited])),
        vec![Effect::Reload]
    );
    assert_eq!(s.last_seq, 13);
    let failed = event(
        14,
        EventKind::TaskFinished {
            order: 1,
            title: "a".into(),
            status: TaskStatus::Failed,
            reason: "exit 1".into(),
            after_restart: false,
        },
    );
    assert_eq!(
        update(&mut s, Msg::Events(vec![failed.clone()])),
        vec![Effect::Reload, Effect::Bell]
    );
    // Seen already: no second bell.
    assert_eq!(
        update(&mut s, Msg::Events(vec![failed.clone()])),
        vec![Effect::Reload]
    );
    let mut quiet = State::new(false);
    assert_eq!(
        update(&mut quiet, Msg::Events(vec![failed])),
        vec![Effect::Reload]
    );
}

#[test]
fn output_is_split_into_lines_bounded_and_only_the_selected_attempts_is_kept() {
    let mut s = state(3, 10);
    select(&mut s, 2);
    detail_of(
        &mut s,
        "task-2",
        vec![attempt("task-2", 1, AttemptStatus::Running)],
    );
    let out = |text: &str, attempt: &str, next| Msg::Output {
        attempt: attempt.into(),
        text: text.into(),
        next,
        running: true,
    };
    update(&mut s, out("one\ntw", "task-2-attempt-1", 6));
    update(&mut s, out("o\nthree", "task-2-attempt-1", 12));
    assert_eq!(s.output.lines, vec!["one", "two"]);
    assert_eq!(s.output.partial, "three");
    assert_eq!(
        s.output_wanted(),
        Some(Effect::LoadOutput {
            attempt: "task-2-attempt-1".into(),
            offset: 12
        })
    );
    update(&mut s, out("stray\n", "task-9-attempt-1", 6));
    assert_eq!(s.output.lines.len(), 2);
    let flood = "x\n".repeat(OUTPUT_LINES + 10);
    update(&mut s, out(&flood, "task-2-attempt-1", 99));
    assert_eq!(s.output.lines.len(), OUTPUT_LINES);
    // Scrolling back stops following; G follows again.
    ch(&mut s, 'o');
    assert_eq!(s.screen, Screen::Output);
    ch(&mut s, 'k');
    assert!(!s.output.follow);
    ch(&mut s, 'G');
    assert!(s.output.follow);
}

#[test]
fn the_handoff_screen_merges_and_discards_only_after_a_yes() {
    let mut s = state(3, 10);
    assert_eq!(ch(&mut s, 'H'), vec![Effect::LoadHandoff]);
    assert_eq!(s.screen, Screen::Handoff);
    ch(&mut s, 'm');
    assert_eq!(s.overlay, Some(Overlay::Confirm(Confirm::Merge)));
    assert_eq!(ch(&mut s, 'y'), vec![Effect::Merge]);
    ch(&mut s, 'd');
    assert_eq!(ch(&mut s, 'x'), vec![]);
    ch(&mut s, 'd');
    assert_eq!(ch(&mut s, 'y'), vec![Effect::Discard]);
    key(&mut s, Key::Esc);
    assert_eq!(s.screen, Screen::Plan);
}

#[test]
fn a_wider_scope_is_the_folder_of_a_path_or_the_program_of_a_command() {
    assert_eq!(wider_scope("path:/etc/hosts"), "path:/etc/*");
    assert_eq!(wider_scope("path:/etc/*"), "path:/*");
    assert_eq!(wider_scope("path:/hosts"), "path:/*");
    assert_eq!(wider_scope("command:git log -1"), "command:git");
    assert_eq!(wider_scope("network:example"), "network:example");
    for scope in ["path:/etc/hosts", "command:git log -1"] {
        weft_core::approval::Scope::parse(&wider_scope(scope)).expect("a valid scope");
    }
}

fn any_key() -> impl Strategy<Value = Key> {
    prop_oneof![
        prop::sample::select("jkgGrecfsmhxRHoda/Fqy n?\u{e9}".chars().collect::<Vec<_>>())
            .prop_map(Key::Char),
        Just(Key::Enter),
        Just(Key::Esc),
        Just(Key::Up),
        Just(Key::Down),
        Just(Key::PageUp),
        Just(Key::PageDown),
        Just(Key::Home),
        Just(Key::End),
        Just(Key::Backspace),
        Just(Key::Tab),
    ]
}

#[derive(Debug, Clone)]
enum Step {
    Key(Key),
    /// A reading with this many tasks (and maybe a question).
    Reload(usize, bool),
    Page(usize),
}

fn any_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => any_key().prop_map(Step::Key),
        1 => (0usize..40, any::<bool>()).prop_map(|(n, a)| Step::Reload(n, a)),
        1 => (1usize..60).prop_map(Step::Page),
    ]
}

fn check_invariant(s: &State) -> Result<(), TestCaseError> {
    if s.visible.is_empty() {
        prop_assert!(s.selected.is_none());
        return Ok(());
    }
    prop_assert!(s.cursor < s.visible.len());
    let id = &s.tasks()[s.visible[s.cursor]].id;
    prop_assert_eq!(s.selected.as_ref(), Some(id));
    prop_assert!(s.top <= s.cursor && s.cursor < s.top + s.page.max(1));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// No key sequence, interleaved with readings of any size and resizes, panics or
    /// leaves no (or a hidden) task selected while a visible one exists; a reading that
    /// still shows the selected task keeps it selected.
    #[test]
    fn no_key_sequence_panics_or_loses_the_selection(steps in prop::collection::vec(any_step(), 0..120)) {
        let mut s = state(12, 5);
        for step in steps {
            match step {
                Step::Key(k) => { update(&mut s, Msg::Key(k)); }
                Step::Reload(n, asking) => {
                    let mut reading = snapshot(n);
                    if asking { reading.asks.push(ask()); }
                    let before = s.selected.clone();
                    update(&mut s, Msg::Snapshot(reading));
                    if let Some(id) = before
                        && s.visible.iter().any(|&i| s.tasks()[i].id == id)
                    {
                        prop_assert_eq!(s.selected.as_ref(), Some(&id));
                    }
                }
                Step::Page(rows) => { update(&mut s, Msg::Page(rows)); }
            }
            check_invariant(&s)?;
            if s.quit { s.quit = false; }
        }
    }
}
