//! The event log as a contract: typed events in, the same typed events out; rows written
//! by an earlier weft replay as `unrecognized` instead of failing; secrets never stored.

use rusqlite::Connection;
use serde_json::json;
use weft_core::edit::{Edit, NewTask, TaskChanges};
use weft_core::event::{ControlRequest, Event, EventKind, FieldChange};
use weft_core::{PlanStatus, Task, TaskKind};
use weft_store::{DATABASE_FILE, PlanDraft, Store};

mod support;
use support::{create, workspace};

fn plan_with(store: &mut Store, ids: &[&str]) -> String {
    let tasks = ids
        .iter()
        .enumerate()
        .map(|(index, id)| {
            let mut task = Task::new(*id, format!("Title of {id}"));
            task.prompt = format!("do {id}");
            task.order = u32::try_from(index + 1).unwrap();
            task
        })
        .collect();
    let draft = PlanDraft {
        goal: "goal".into(),
        runner: None,
        status: PlanStatus::Approved,
        tasks,
        source: "test".into(),
    };
    store.create_plan(draft, 100).unwrap().id
}

fn any_runner(_: &str) -> bool {
    true
}

#[test]
fn rows_written_by_an_earlier_weft_replay_as_unrecognized_and_never_fail() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let plan = plan_with(&mut store, &["a"]);
    // What weft wrote before events were typed: ad-hoc kinds and payloads, one damaged.
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let old_rows = [
        (
            "task_started",
            json!({ "task": "a", "attempt": "0f" }).to_string(),
        ),
        (
            "attempt_finished",
            json!({ "attempt": "0f", "task": "a", "status": "passed", "reason": "Passed." })
                .to_string(),
        ),
        (
            "run_ended",
            json!({ "run": "r1", "status": "completed" }).to_string(),
        ),
        ("plan_status", "not json at all".to_owned()),
    ];
    for (kind, payload) in &old_rows {
        conn.execute(
            "INSERT INTO events (plan_id, kind, payload, at) VALUES (?1, ?2, ?3, 7)",
            rusqlite::params![plan, kind, payload],
        )
        .unwrap();
    }
    // A newer weft's event: a version this one does not know.
    let mut future = serde_json::to_value(Event::new(EventKind::TaskHeld).task("a")).unwrap();
    future["version"] = json!(weft_core::EVENT_SCHEMA_VERSION + 1);
    conn.execute(
        "INSERT INTO events (plan_id, kind, payload, at) VALUES (?1, 'task_held', ?2, 8)",
        rusqlite::params![plan, future.to_string()],
    )
    .unwrap();
    drop(conn);

    let events = store.events(Some(&plan), 1, 100).unwrap();
    assert_eq!(events.len(), old_rows.len() + 1, "{events:#?}");
    for (event, (kind, payload)) in events.iter().zip(&old_rows) {
        let EventKind::Unrecognized {
            original_kind,
            payload: kept,
        } = &event.event
        else {
            panic!("an old row read as a typed event: {event:#?}");
        };
        assert_eq!(original_kind, kind);
        assert_eq!(event.kind_name(), *kind);
        assert_eq!(event.plan.as_deref(), Some(plan.as_str()));
        assert_eq!(event.at, 7);
        let expected: serde_json::Value =
            serde_json::from_str(payload).unwrap_or_else(|_| json!(payload));
        assert_eq!(kept, &expected, "the payload is kept untouched");
    }
    // The ids an old payload names are kept in the envelope.
    assert_eq!(events[0].task.as_deref(), Some("a"));
    assert_eq!(events[1].attempt.as_deref(), Some("0f"));
    assert_eq!(events[2].run.as_deref(), Some("r1"));
    let newer = events.last().unwrap();
    assert!(
        matches!(newer.event, EventKind::Unrecognized { .. }),
        "{newer:#?}"
    );
    assert_eq!(newer.version, weft_core::EVENT_SCHEMA_VERSION + 1);

    // And the log goes on: a new typed event after the old rows reads back typed.
    store
        .apply_edit(
            &plan,
            &Edit::SetHold {
                task: "a".into(),
                hold: true,
            },
            &any_runner,
            200,
        )
        .unwrap();
    let last = store.events(Some(&plan), 0, 100).unwrap().pop().unwrap();
    assert_eq!(last.event, EventKind::TaskHeld);
    assert_eq!(last.task.as_deref(), Some("a"));
}

#[test]
fn a_stored_event_reads_back_exactly_with_its_seq_time_and_plan() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let plan = plan_with(&mut store, &["a"]);
    let sent = Event::new(EventKind::AttemptInterrupted {
        killed_leftover: true,
    })
    .run("r1")
    .task("a")
    .attempt("0f");
    let seq = store.record_event(Some(&plan), sent.clone(), 555).unwrap();
    let read = store.events(None, seq - 1, 10).unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(
        read[0],
        Event {
            seq,
            at: 555,
            plan: Some(plan),
            ..sent
        }
    );
}

#[test]
fn a_task_edit_event_names_each_changed_field_with_its_new_value() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let plan = plan_with(&mut store, &["a"]);
    let changes = TaskChanges {
        title: Some("Renamed".into()),
        model: Some("opus".into()),
        effort: Some(String::new()),
        checks: Some(vec!["cargo test".into()]),
        kind: Some(TaskKind::Ai),
        ..TaskChanges::default()
    };
    store
        .apply_edit(
            &plan,
            &Edit::Update {
                task: "a".into(),
                changes,
            },
            &any_runner,
            300,
        )
        .unwrap();
    let event = store.events(Some(&plan), 0, 100).unwrap().pop().unwrap();
    assert_eq!(event.kind_name(), "task_edited");
    assert_eq!(event.task.as_deref(), Some("a"));
    assert_eq!(
        event.event,
        EventKind::TaskEdited {
            changes: vec![
                FieldChange::Model(Some("opus".into())),
                FieldChange::Effort(None),
                FieldChange::Title("Renamed".into()),
                FieldChange::Checks(vec!["cargo test".into()]),
                FieldChange::Kind(TaskKind::Ai),
            ]
        }
    );
}

#[test]
fn secret_values_never_reach_the_event_log() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let plan = plan_with(&mut store, &["a"]);
    store.set_secrets(vec!["sk-live-0123456789".into()]);
    let changes = TaskChanges {
        prompt: Some("call the API with sk-live-0123456789 please".into()),
        ..TaskChanges::default()
    };
    store
        .apply_edit(
            &plan,
            &Edit::Update {
                task: "a".into(),
                changes,
            },
            &any_runner,
            300,
        )
        .unwrap();
    let notice = EventKind::Notice {
        text: "key sk-live-0123456789".into(),
    };
    store
        .record_event(Some(&plan), Event::new(notice), 301)
        .unwrap();
    // The task itself keeps what the user wrote; only the log is masked.
    assert!(
        store.plan(&plan).unwrap().tasks[0]
            .prompt
            .contains("sk-live-0123456789")
    );
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let leaked: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM events WHERE payload LIKE '%sk-live-0123456789%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(leaked, 0, "an event row carried the secret");
    let events = store.events(Some(&plan), 0, 100).unwrap();
    assert_eq!(
        events[events.len() - 2].event,
        EventKind::TaskEdited {
            changes: vec![FieldChange::Prompt("call the API with **** please".into())]
        }
    );
    assert_eq!(
        events[events.len() - 1].event,
        EventKind::Notice {
            text: "key ****".into()
        }
    );
}

#[test]
fn control_requests_go_in_typed_and_come_out_typed_with_one_event_each_way() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let plan = plan_with(&mut store, &["a"]);
    let requests = [
        ControlRequest::Stop,
        ControlRequest::Cancel { task: "a".into() },
        ControlRequest::ForceStart { task: "a".into() },
        ControlRequest::Repair { task: "a".into() },
    ];
    let mut seqs = Vec::new();
    for request in &requests {
        seqs.push(store.push_control(&plan, request, 400).unwrap());
    }
    // A kind a newer weft wrote.
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    conn.execute(
        "INSERT INTO control_requests (plan_id, kind, task_id, created_at)
         VALUES (?1, 'pause', NULL, 401)",
        [&plan],
    )
    .unwrap();
    drop(conn);

    let taken = store.take_controls(&plan, 402).unwrap();
    let got: Vec<&ControlRequest> = taken.iter().map(|q| &q.request).collect();
    let mut expected: Vec<ControlRequest> = requests.to_vec();
    expected.push(ControlRequest::Unrecognized {
        original_kind: "pause".into(),
        task: None,
    });
    assert_eq!(got, expected.iter().collect::<Vec<_>>());
    assert!(store.take_controls(&plan, 403).unwrap().is_empty());

    let events = store.events(Some(&plan), 0, 100).unwrap();
    let requested: Vec<(ControlRequest, i64)> = events
        .iter()
        .filter_map(|e| match &e.event {
            EventKind::ControlRequested {
                request,
                request_seq,
            } => Some((request.clone(), *request_seq)),
            _ => None,
        })
        .collect();
    assert_eq!(
        requested,
        requests
            .iter()
            .cloned()
            .zip(seqs.clone())
            .collect::<Vec<_>>()
    );
    let handled: Vec<&ControlRequest> = events
        .iter()
        .filter_map(|e| match &e.event {
            EventKind::ControlHandled { request, .. } => Some(request),
            _ => None,
        })
        .collect();
    assert_eq!(handled, expected.iter().collect::<Vec<_>>());
    // A request about a task names it in the envelope.
    let cancel = events
        .iter()
        .find(|e| {
            matches!(
                e.event,
                EventKind::ControlRequested {
                    request: ControlRequest::Cancel { .. },
                    ..
                }
            )
        })
        .unwrap();
    assert_eq!(cancel.task.as_deref(), Some("a"));
}

#[test]
fn an_added_task_event_carries_its_order_and_title() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let plan = plan_with(&mut store, &["a"]);
    let task = NewTask {
        id: Some("b".into()),
        title: "Second".into(),
        prompt: "do b".into(),
        ..NewTask::default()
    };
    store
        .apply_edit(&plan, &Edit::Add { task, at: None }, &any_runner, 300)
        .unwrap();
    let event = store.events(Some(&plan), 0, 100).unwrap().pop().unwrap();
    assert_eq!(event.task.as_deref(), Some("b"));
    assert_eq!(
        event.event,
        EventKind::TaskAdded {
            order: 2,
            title: "Second".into()
        }
    );
}
