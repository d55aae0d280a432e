//! Integration tests for weft's SQLite store.
//!
//! 1. Migrating an empty database: state folder, `.gitignore`, schema, WAL, re-open.
//! 2. `open_existing` never creates anything.
//! 3. Every change appends exactly one event; a refused change appends none and changes
//!    nothing.
//! 4. Plans round-trip with every task field set.
//! 5. A database from a newer weft is refused and left untouched.
//! 6. A corrupt database (garbage bytes, or a directory) is refused and never replaced.
//! 7. A file where the state folder should be is refused and left untouched.
//! 8. A write lock held by another connection gives `Busy` after the timeout; reads work.
//! 9. Plan references, listing order, the current plan and deletion.
//! 10. Concurrent writers through separate handles never lose an edit.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use weft_core::Hint as _;
use weft_core::edit::{Edit, EditError, NewTask, TaskChanges};
use weft_core::{
    Check, EventKind, OutputSummary, Plan, PlanStatus, Task, TaskKind, TaskStatus, Timestamp,
    Verdict, VerdictOutcome,
};
use weft_store::{DATABASE_FILE, Event, OpenOptions, PlanDraft, SCHEMA_VERSION, Store, StoreError};

mod support;
use support::{create, workspace};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn any_runner(_: &str) -> bool {
    true
}

fn existing(dir: &Path) -> Store {
    Store::open_existing(dir, OpenOptions::default())
        .expect("open_existing")
        .expect("a database exists")
}

fn ai_task(id: &str) -> Task {
    let mut task = Task::new(id, format!("Title of {id}"));
    task.prompt = format!("do {id}");
    task
}

fn numbered(mut tasks: Vec<Task>) -> Vec<Task> {
    for (index, task) in tasks.iter_mut().enumerate() {
        task.order = u32::try_from(index + 1).unwrap();
    }
    tasks
}

fn draft(goal: &str, tasks: Vec<Task>) -> PlanDraft {
    PlanDraft {
        goal: goal.to_owned(),
        runner: None,
        status: PlanStatus::Approved,
        tasks: numbered(tasks),
        source: "test".to_owned(),
    }
}

fn new_task(id: &str) -> NewTask {
    NewTask {
        id: Some(id.to_owned()),
        title: format!("Title of {id}"),
        prompt: format!("do {id}"),
        ..NewTask::default()
    }
}

fn add(id: &str) -> Edit {
    Edit::Add {
        task: new_task(id),
        at: None,
    }
}

fn ids(plan: &Plan) -> Vec<&str> {
    plan.tasks.iter().map(|t| t.id.as_str()).collect()
}

fn all_events(store: &Store) -> Vec<Event> {
    store.events(None, 0, 10_000).expect("events")
}

fn bytes(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Names in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The schema as text, one block per object.
fn schema(conn: &Connection) -> String {
    let version: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    let mut out = format!("user_version = {version}\n");
    let mut select = conn
        .prepare(
            "SELECT type, name, tbl_name, sql FROM sqlite_master
             WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
        )
        .unwrap();
    let rows = select
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (kind, name, table, sql) = row.unwrap();
        out.push_str(&format!(
            "\n-- {kind} {name} on {table}\n{}\n",
            sql.as_deref().unwrap_or("(no sql)")
        ));
    }
    out
}

/// Asserts that exactly one event was appended since `seen` and returns it.
#[track_caller]
fn one_new_event(store: &Store, seen: &mut i64, kind: &str, plan_id: &str, at: Timestamp) -> Event {
    let new = store.events(None, *seen, 100).expect("events");
    assert_eq!(
        new.len(),
        1,
        "expected exactly one new event {kind:?}, got {new:#?}"
    );
    let event = new.into_iter().next().unwrap();
    assert_eq!(event.kind_name(), kind, "{event:#?}");
    assert_eq!(event.plan.as_deref(), Some(plan_id), "{event:#?}");
    assert_eq!(event.at, at, "{event:#?}");
    assert!(event.seq > *seen, "{event:#?}");
    *seen = event.seq;
    event
}

// ---------------------------------------------------------------------------------------
// 1. Migrating an empty database
// ---------------------------------------------------------------------------------------

#[test]
fn open_or_create_builds_the_state_folder_and_migrates_an_empty_database() {
    let (_tmp, dir) = workspace();
    assert!(!dir.exists());

    let store = create(&dir);
    let db = dir.join(DATABASE_FILE);
    assert!(dir.is_dir());
    assert_eq!(fs::read_to_string(dir.join(".gitignore")).unwrap(), "*\n");
    assert!(db.is_file());
    assert_eq!(store.path(), db);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);

    let conn = Connection::open(&db).unwrap();
    let version: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode.to_ascii_lowercase(), "wal");
    let before = schema(&conn);
    insta::assert_snapshot!("schema", before);
    assert!(store.plans().unwrap().is_empty());
    assert!(all_events(&store).is_empty());
    assert_eq!(store.current_plan_id().unwrap(), None);
    drop(store);

    // A second open finds everything in place and changes nothing.
    let again = create(&dir);
    assert_eq!(again.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(schema(&conn), before);
    assert_eq!(fs::read_to_string(dir.join(".gitignore")).unwrap(), "*\n");
    let again = existing(&dir);
    assert_eq!(again.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(schema(&conn), before);
}

#[test]
fn open_or_create_keeps_an_existing_gitignore() {
    let (_tmp, dir) = workspace();
    fs::create_dir(&dir).unwrap();
    let ignore = dir.join(".gitignore");
    fs::write(&ignore, "weft.db\n# mine\n").unwrap();

    let store = create(&dir);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(fs::read_to_string(&ignore).unwrap(), "weft.db\n# mine\n");
    drop(store);
    create(&dir);
    assert_eq!(fs::read_to_string(&ignore).unwrap(), "weft.db\n# mine\n");
}

#[test]
fn open_or_create_adds_the_gitignore_to_an_existing_empty_folder() {
    let (_tmp, dir) = workspace();
    fs::create_dir(&dir).unwrap();
    create(&dir);
    assert_eq!(fs::read_to_string(dir.join(".gitignore")).unwrap(), "*\n");
    assert!(dir.join(DATABASE_FILE).is_file());
}

/// Two processes starting weft in a new workspace at the same moment both succeed and
/// the schema is migrated once.
#[test]
fn concurrent_first_opens_all_succeed() {
    let (_tmp, dir) = workspace();
    let results: Vec<Result<u32, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    Store::open_or_create(&dir, OpenOptions::default())
                        .and_then(|s| s.schema_version())
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for result in results {
        assert_eq!(result, Ok(SCHEMA_VERSION));
    }
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let tables: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'plans'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 1);
    assert_eq!(fs::read_to_string(dir.join(".gitignore")).unwrap(), "*\n");
}

/// Switching a new database to WAL needs an exclusive lock, and while another connection
/// is writing SQLite refuses the switch at once, without its busy handler: the store
/// waits for it like for any other lock, and reports `Busy` only after the timeout.
#[test]
fn the_switch_to_wal_waits_for_a_writer() {
    let (_tmp, dir) = workspace();
    fs::create_dir(&dir).unwrap();
    let db = dir.join(DATABASE_FILE);
    let writer = Connection::open(&db).unwrap();
    writer
        .execute_batch(
            "CREATE TABLE unrelated (x); BEGIN IMMEDIATE; INSERT INTO unrelated VALUES (1);",
        )
        .unwrap();

    // Held longer than the timeout: Busy, after waiting for it.
    let options = OpenOptions {
        busy_timeout: Duration::from_millis(200),
    };
    let started = Instant::now();
    let err = Store::open_or_create(&dir, options).unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(err, StoreError::Busy { .. }), "{err:?}");
    assert!(
        waited >= Duration::from_millis(150),
        "gave up after {waited:?}, before the busy timeout"
    );

    // Released while the store waits: the open succeeds.
    let options = OpenOptions {
        busy_timeout: Duration::from_secs(5),
    };
    let store = std::thread::scope(|scope| {
        let opening = scope.spawn(|| Store::open_or_create(&dir, options));
        std::thread::sleep(Duration::from_millis(150));
        writer.execute_batch("COMMIT").unwrap();
        opening.join().unwrap()
    })
    .unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let mode: String = Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode.to_ascii_lowercase(), "wal");
}

// ---------------------------------------------------------------------------------------
// 2. open_existing never creates anything
// ---------------------------------------------------------------------------------------

#[test]
fn open_existing_without_a_database_is_none_and_creates_nothing() {
    let (tmp, dir) = workspace();
    let found = Store::open_existing(&dir, OpenOptions::default()).unwrap();
    assert!(found.is_none());
    assert!(!dir.exists(), "open_existing created {}", dir.display());
    assert_eq!(listing(tmp.path()), Vec::<String>::new());

    // An existing but empty state folder stays empty.
    fs::create_dir(&dir).unwrap();
    let found = Store::open_existing(&dir, OpenOptions::default()).unwrap();
    assert!(found.is_none());
    assert_eq!(listing(&dir), Vec::<String>::new());
}

/// A reader that leaves the log in place keeps the next reader from creating its two
/// files again; the next writer to close last still folds it into the database file and
/// deletes it, and nothing committed is lost on the way.
#[test]
fn a_reader_leaves_the_log_for_the_next_and_the_next_writer_folds_it_in() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let plan = store
        .create_plan(draft("first", numbered(vec![ai_task("a")])), 1)
        .unwrap();
    drop(store);
    let log_files = |dir: &Path| {
        listing(dir)
            .into_iter()
            .filter(|name| name.ends_with("-wal") || name.ends_with("-shm"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        log_files(&dir),
        Vec::<String>::new(),
        "a writer closing last folds the log in"
    );

    let reader = existing(&dir);
    reader.leave_log_on_close().unwrap();
    assert_eq!(ids(&reader.plan(&plan.id).unwrap()), ["a"]);
    drop(reader);
    assert_eq!(log_files(&dir), ["weft.db-shm", "weft.db-wal"]);

    let mut writer = existing(&dir);
    let second = writer
        .create_plan(draft("second", numbered(vec![ai_task("b")])), 2)
        .unwrap();
    drop(writer);
    assert_eq!(log_files(&dir), Vec::<String>::new());
    // The database file alone holds both plans.
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let goals: Vec<String> = conn
        .prepare("SELECT goal FROM plans ORDER BY goal")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(goals, ["first", "second"]);
    assert!(existing(&dir).plan(&second.id).is_ok());
}

// ---------------------------------------------------------------------------------------
// 3. One event per change, none for a refused change
// ---------------------------------------------------------------------------------------

#[test]
fn every_change_appends_exactly_one_event() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let mut seen = 0;

    let other = store
        .create_plan(draft("other plan", vec![ai_task("x")]), 50)
        .unwrap();
    let event = one_new_event(&store, &mut seen, "plan_created", &other.id, 50);
    assert_eq!(
        event.event,
        EventKind::PlanCreated {
            goal: "other plan".into(),
            tasks: 1,
            source: "test".into()
        }
    );

    let plan = store
        .create_plan(draft("goal", vec![ai_task("a"), ai_task("b")]), 100)
        .unwrap();
    let id = plan.id.clone();
    one_new_event(&store, &mut seen, "plan_created", &id, 100);
    assert_eq!(
        store.current_plan_id().unwrap().as_deref(),
        Some(id.as_str())
    );

    let edits: Vec<(Edit, &str, Vec<&str>)> = vec![
        (add("c"), "task_added", vec!["a", "b", "c"]),
        (
            Edit::Move {
                task: "c".into(),
                to: 1,
            },
            "task_moved",
            vec!["c", "a", "b"],
        ),
        (
            Edit::SetDependencies {
                task: "b".into(),
                dependencies: vec!["a".into(), "c".into()],
            },
            "dependencies_set",
            vec!["c", "a", "b"],
        ),
        (
            Edit::Update {
                task: "a".into(),
                changes: TaskChanges {
                    description: Some("more words".into()),
                    model: Some("opus".into()),
                    ..TaskChanges::default()
                },
            },
            "task_edited",
            vec!["c", "a", "b"],
        ),
        (
            Edit::SetHold {
                task: "a".into(),
                hold: true,
            },
            "task_held",
            vec!["c", "a", "b"],
        ),
        (
            Edit::SetHold {
                task: "a".into(),
                hold: false,
            },
            "task_released",
            vec!["c", "a", "b"],
        ),
        (
            Edit::Remove { task: "c".into() },
            "task_removed",
            vec!["a", "b"],
        ),
    ];
    let mut revision = plan.revision;
    for (step, (edit, kind, order)) in edits.into_iter().enumerate() {
        let now = 200 + i64::try_from(step).unwrap();
        let (edited, report) = store.apply_edit(&id, &edit, &any_runner, now).unwrap();
        assert_eq!(report.to_event().kind_name(), kind);
        revision += 1;
        assert_eq!(edited.revision, revision, "after {kind}");
        assert_eq!(edited.updated_at, now);
        assert_eq!(ids(&edited), order, "after {kind}");
        assert_eq!(store.plan(&id).unwrap(), edited, "after {kind}");
        let event = one_new_event(&store, &mut seen, kind, &id, now);
        assert_eq!(event.event, report.event, "after {kind}");
        assert_eq!(
            event.task.as_deref(),
            Some(report.task.as_str()),
            "after {kind}"
        );
    }
    let stored = store.plan(&id).unwrap();
    assert_eq!(
        stored.task("a").unwrap().description.as_deref(),
        Some("more words")
    );
    assert_eq!(stored.task("a").unwrap().model.as_deref(), Some("opus"));
    assert!(!stored.task("a").unwrap().hold);
    // Removing "c" detached it from "b".
    assert_eq!(stored.task("b").unwrap().dependencies, ["a"]);

    store.set_current_plan(&other.id, 300).unwrap();
    one_new_event(&store, &mut seen, "current_plan_set", &other.id, 300);
    assert_eq!(
        store.current_plan_id().unwrap().as_deref(),
        Some(other.id.as_str())
    );

    store.delete_plan(&id, 301).unwrap();
    one_new_event(&store, &mut seen, "plan_deleted", &id, 301);

    // The whole log, oldest first; a deleted plan's events stay.
    let log: Vec<(String, Option<String>)> = all_events(&store)
        .into_iter()
        .map(|e| (e.kind_name(), e.plan))
        .collect();
    let on = |kind: &str, plan: &str| (kind.to_owned(), Some(plan.to_owned()));
    assert_eq!(
        log,
        [
            on("plan_created", &other.id),
            on("plan_created", &id),
            on("task_added", &id),
            on("task_moved", &id),
            on("dependencies_set", &id),
            on("task_edited", &id),
            on("task_held", &id),
            on("task_released", &id),
            on("task_removed", &id),
            on("current_plan_set", &other.id),
            on("plan_deleted", &id),
        ]
    );
    let seqs: Vec<i64> = all_events(&store).iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // Filtering by plan, paging by seq and limit.
    let for_other = store.events(Some(&other.id), 0, 100).unwrap();
    assert_eq!(
        for_other.iter().map(Event::kind_name).collect::<Vec<_>>(),
        ["plan_created", "current_plan_set"]
    );
    let page = store.events(Some(&id), seqs[2], 2).unwrap();
    assert_eq!(
        page.iter().map(Event::kind_name).collect::<Vec<_>>(),
        ["task_moved", "dependencies_set"]
    );
}

#[test]
fn a_refused_change_appends_no_event_and_changes_nothing() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let mut b = ai_task("b");
    b.dependencies = vec!["a".into()];
    let plan = store
        .create_plan(draft("goal", vec![ai_task("a"), b, ai_task("c")]), 100)
        .unwrap();
    let id = plan.id.clone();
    let before = store.plan(&id).unwrap();
    let events_before = all_events(&store);
    assert_eq!(events_before.len(), 1);

    let refused: Vec<(&str, Edit)> = vec![
        (
            "a dependency on a later task",
            Edit::SetDependencies {
                task: "a".into(),
                dependencies: vec!["c".into()],
            },
        ),
        (
            "an unknown task reference",
            Edit::Remove {
                task: "ghost".into(),
            },
        ),
        (
            "an unknown dependency reference",
            Edit::Add {
                task: NewTask {
                    dependencies: vec!["ghost".into()],
                    ..new_task("d")
                },
                at: None,
            },
        ),
        (
            "a move before a dependency",
            Edit::Move {
                task: "b".into(),
                to: 1,
            },
        ),
        (
            "a position outside the plan",
            Edit::Move {
                task: "a".into(),
                to: 9,
            },
        ),
        (
            "a duplicate id",
            Edit::Add {
                task: new_task("a"),
                at: Some(1),
            },
        ),
        (
            "an empty change",
            Edit::Update {
                task: "a".into(),
                changes: TaskChanges::default(),
            },
        ),
    ];
    for (what, edit) in refused {
        let err = store
            .apply_edit(&id, &edit, &any_runner, 500)
            .expect_err(what);
        assert!(matches!(err, StoreError::Edit(_)), "{what}: {err:?}");
        assert_eq!(store.plan(&id).unwrap(), before, "{what} changed the plan");
        assert_eq!(
            all_events(&store),
            events_before,
            "{what} appended an event"
        );
    }

    // A refusal from the caller's own change is rolled back the same way.
    let err = store
        .update_plan(&id, 500, |_| -> Result<(Plan, Event, ()), _> {
            Err(StoreError::Edit(EditError::NoChanges))
        })
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Edit(EditError::NoChanges)),
        "{err:?}"
    );

    // Unknown plans are refused without an event too.
    let err = store
        .apply_edit("0000", &add("d"), &any_runner, 500)
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownPlan { .. }), "{err:?}");
    let err = store.set_current_plan("0000", 500).unwrap_err();
    assert!(matches!(err, StoreError::UnknownPlan { .. }), "{err:?}");
    let err = store.delete_plan("0000", 500).unwrap_err();
    assert!(matches!(err, StoreError::UnknownPlan { .. }), "{err:?}");

    assert_eq!(store.plan(&id).unwrap(), before);
    assert_eq!(store.plan(&id).unwrap().revision, 1);
    assert_eq!(all_events(&store), events_before);
    assert_eq!(
        store.current_plan_id().unwrap().as_deref(),
        Some(id.as_str())
    );
}

// ---------------------------------------------------------------------------------------
// 4. Round trip
// ---------------------------------------------------------------------------------------

fn full_tasks() -> Vec<Task> {
    let mut setup = Task::new("setup", "Set up the «limiter»");
    setup.description = Some("A description\nover two lines, with \"quotes\" and ünïcode".into());
    setup.prompt = "Do the thing.\n\n- carefully\n- with 'quotes' \\ backslashes".into();
    setup.runner = Some("claude".into());
    setup.model = Some("opus".into());
    setup.effort = Some("high".into());
    setup.mode = Some("plan".into());
    setup.checks = vec!["cargo test".into(), "cargo clippy -- -D warnings".into()];

    let mut deploy = Task::new("deploy", "Deploy");
    deploy.kind = TaskKind::Ops;
    deploy.command = Some("make deploy ENV=staging".into());
    deploy.checks = vec![
        "curl -f https://staging.invalid/health".into(),
        "say \"ok\" \\ done".into(),
    ];
    deploy.limits = weft_core::TaskLimits {
        timeout: Some(Duration::from_secs(600)),
        idle_timeout: None,
        budget_usd: Some(0.25),
        budget_tokens: Some(1000),
    };
    deploy.hold = true;
    deploy.dependencies = vec!["setup".into()];

    let mut verify = Task::new("verify", "Verify by hand");
    verify.kind = TaskKind::Manual;
    verify.steps = vec!["open the page".into(), "click «go»".into()];
    verify.dependencies = vec!["deploy".into(), "setup".into()];

    // Dependencies in neither alphabetical nor task order (nor their reverses).
    let mut report = Task::new("report", "Report");
    report.prompt = "summarise".into();
    report.dependencies = vec!["deploy".into(), "verify".into(), "setup".into()];
    report.runner = Some("codex".into());

    numbered(vec![setup, deploy, verify, report])
}

#[test]
fn a_plan_with_every_field_set_round_trips() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let tasks = full_tasks();
    let created = store
        .create_plan(
            PlanDraft {
                goal: "Ship the «limiter» — safely".into(),
                runner: Some("claude".into()),
                status: PlanStatus::Draft,
                tasks: tasks.clone(),
                source: "plan.toml".into(),
            },
            1_700_000_000_123,
        )
        .unwrap();
    assert_eq!(created.id.len(), 32);
    assert!(
        created
            .id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{}",
        created.id
    );
    assert_eq!(created.created_at, 1_700_000_000_123);
    assert_eq!(created.updated_at, 1_700_000_000_123);
    assert_eq!(created.revision, 1);
    assert_eq!(created.goal, "Ship the «limiter» — safely");
    assert_eq!(created.runner.as_deref(), Some("claude"));
    assert_eq!(created.status, PlanStatus::Draft);
    assert_eq!(created.tasks, tasks);

    let loaded = store.plan(&created.id).unwrap();
    assert_eq!(loaded, created);
    assert_eq!(
        loaded.task("report").unwrap().dependencies,
        ["deploy", "verify", "setup"]
    );
    assert_eq!(
        loaded.task("verify").unwrap().dependencies,
        ["deploy", "setup"]
    );
    // Another handle reads the same from the file.
    assert_eq!(existing(&dir).plan(&created.id).unwrap(), created);

    // Status, verdict and output through update_plan.
    let verdict = Verdict {
        outcome: VerdictOutcome::Fail,
        reason: "exit code 2".into(),
        checks: vec![
            Check {
                name: "exit_code".into(),
                passed: false,
                skipped: false,
                detail: "2".into(),
                exit_code: None,
                duration_ms: None,
            },
            Check {
                name: "check:curl -f https://staging.invalid/health".into(),
                passed: true,
                skipped: true,
                detail: "not reached".into(),
                exit_code: None,
                duration_ms: None,
            },
        ],
        decided_at: 1_700_000_000_500,
    };
    let output = OutputSummary {
        review_reason: "the deploy failed".into(),
        log_tail: "error: \u{1b}[31mboom\u{1b}[0m\nline two".into(),
        captured_at: 1_700_000_000_400,
    };
    let (updated, value) = store
        .update_plan(&created.id, 1_700_000_001_000, |plan| {
            assert_eq!(plan, &created);
            let mut next = plan.clone();
            next.status = PlanStatus::Running;
            next.tasks[0].status = TaskStatus::Completed;
            next.tasks[1].status = TaskStatus::Failed;
            next.tasks[1].verdict = Some(verdict.clone());
            next.tasks[1].output = Some(output.clone());
            // Fields the store owns are overwritten whatever the change says.
            next.id = "not-the-id".into();
            next.revision = 99;
            next.created_at = 0;
            let note = EventKind::Notice {
                text: "deploy finished".into(),
            };
            Ok((next, Event::new(note).task("deploy"), 42))
        })
        .unwrap();
    assert_eq!(value, 42);
    assert_eq!(updated.id, created.id);
    assert_eq!(updated.revision, 2);
    assert_eq!(updated.created_at, created.created_at);
    assert_eq!(updated.updated_at, 1_700_000_001_000);

    let reloaded = store.plan(&created.id).unwrap();
    assert_eq!(reloaded, updated);
    assert_eq!(reloaded.status, PlanStatus::Running);
    assert_eq!(reloaded.tasks[0].status, TaskStatus::Completed);
    assert_eq!(reloaded.tasks[1].status, TaskStatus::Failed);
    assert_eq!(reloaded.tasks[1].verdict.as_ref(), Some(&verdict));
    assert_eq!(reloaded.tasks[1].output.as_ref(), Some(&output));
    let mut expected_tasks = tasks;
    expected_tasks[0].status = TaskStatus::Completed;
    expected_tasks[1].status = TaskStatus::Failed;
    expected_tasks[1].verdict = Some(verdict);
    expected_tasks[1].output = Some(output);
    assert_eq!(reloaded.tasks, expected_tasks);

    // The outline is the plan without what only running a task needs, and nothing else.
    let mut outline_tasks = expected_tasks.clone();
    for task in &mut outline_tasks {
        task.prompt = String::new();
        task.description = None;
        task.command = None;
        task.steps = Vec::new();
        task.steps_done = Vec::new();
        task.output = None;
    }
    let outline = store.plan_outline(&created.id).unwrap();
    assert_eq!(outline.tasks, outline_tasks);
    // Read without a `Task` per row, each task shows exactly what the outline's does.
    let rows = store.outline(&created.id).unwrap();
    assert_eq!(
        rows.plan,
        Plan {
            tasks: Vec::new(),
            ..outline.clone()
        }
    );
    assert_eq!(rows.len(), outline.tasks.len());
    let views: Vec<weft_core::TaskView<'_>> = rows.tasks().collect();
    let expected: Vec<weft_core::TaskView<'_>> = outline.tasks.iter().map(Task::view).collect();
    assert_eq!(views, expected);
    assert!(rows.any_limits());
    assert!(!rows.any_status(TaskStatus::InProgress));
    assert_eq!(
        Plan {
            tasks: expected_tasks.clone(),
            ..outline
        },
        reloaded
    );

    let last = all_events(&store).pop().unwrap();
    assert_eq!(last.kind_name(), "notice");
    assert_eq!(last.task.as_deref(), Some("deploy"));

    // A clock that went backwards never moves updated_at back.
    let (same_time, ()) = store
        .update_plan(&created.id, 5, |plan| {
            let note = EventKind::Notice {
                text: "noop".into(),
            };
            Ok((plan.clone(), Event::new(note), ()))
        })
        .unwrap();
    assert_eq!(same_time.updated_at, 1_700_000_001_000);
    assert_eq!(same_time.revision, 3);

    let summary = store.plans().unwrap();
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0].task_count, 4);
    assert_eq!(summary[0].status, PlanStatus::Running);
    assert_eq!(summary[0].goal, "Ship the «limiter» — safely");
}

#[test]
fn an_outline_read_by_two_readers_at_once_is_the_outline_read_whole() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let mut tasks: Vec<Task> = (1..=9).map(|n| ai_task(&format!("t{n}"))).collect();
    tasks[1].runner = Some("codex".into());
    tasks[2].checks = vec!["cargo test".into(), "say \"hi\"".into()];
    tasks[3].dependencies = vec!["t1".into(), "t3".into()];
    tasks[5].limits.timeout = Some(Duration::from_secs(60));
    tasks[6].title = "ünïcode \u{1b}[31m title".into();
    tasks[7].dependencies = vec!["t7".into()];
    tasks[8].model = Some("m".into());
    // The last task, which the second reader reads first.
    tasks[8].status = TaskStatus::Failed;
    let created = store.create_plan(draft("goal", tasks), 100).unwrap();
    let outline = store.plan_outline(&created.id).unwrap();
    let expected: Vec<weft_core::TaskView<'_>> = outline.tasks.iter().map(Task::view).collect();
    // Split after every count of tasks (1: one task; 9: halves of 5 and 4) and never.
    for split_from in [1, 2, 5, 9, 10, i64::MAX] {
        let read = store.outline_split_from(&created.id, split_from).unwrap();
        let views: Vec<weft_core::TaskView<'_>> = read.tasks().collect();
        assert_eq!(views, expected, "split from {split_from}");
        // Counted and searched across both readers' parts, each task once.
        assert_eq!(read.len(), 9, "split from {split_from}");
        assert_eq!(read.tasks().len(), 9, "split from {split_from}");
        assert!(
            read.any_status(TaskStatus::Pending),
            "split from {split_from}"
        );
        assert!(
            read.any_status(TaskStatus::Failed),
            "split from {split_from}"
        );
        assert!(
            !read.any_status(TaskStatus::Blocked),
            "split from {split_from}"
        );
    }
    let split = store.outline_split_from(&created.id, 1).unwrap();
    assert!(split.any_limits());
    assert_eq!(split.plan.goal, "goal");

    // Where the two readers meet depends on how fast each runs: read a larger plan again
    // and again, every read whole and in order.
    let tasks: Vec<Task> = (1..=400).map(|n| ai_task(&format!("u{n}"))).collect();
    let large = store.create_plan(draft("large", tasks), 200).unwrap();
    let outline = store.plan_outline(&large.id).unwrap();
    let expected: Vec<weft_core::TaskView<'_>> = outline.tasks.iter().map(Task::view).collect();
    for _ in 0..40 {
        let read = store.outline_split_from(&large.id, 1).unwrap();
        let views: Vec<weft_core::TaskView<'_>> = read.tasks().collect();
        assert_eq!(views, expected);
    }
}

#[test]
fn a_damaged_row_is_refused_by_a_split_read_as_by_a_whole_one_the_first_by_position_first() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let tasks: Vec<Task> = (1..=8).map(|n| ai_task(&format!("t{n}"))).collect();
    let created = store.create_plan(draft("goal", tasks), 100).unwrap();
    let db = dir.join(DATABASE_FILE);
    let damage = |id: &str, status: &str| {
        let conn = Connection::open(&db).unwrap();
        conn.execute(
            "UPDATE tasks SET status = ?2 WHERE id = ?1",
            params![id, status],
        )
        .unwrap();
    };
    let refusal = |split_from: i64| match store.outline_split_from(&created.id, split_from) {
        Err(StoreError::Damaged { detail, .. }) => detail,
        other => panic!("expected damage, got {other:?}"),
    };
    // In the later half only, then in both: the first by position is the one told.
    damage("t7", "bogus-late");
    assert_eq!(refusal(1), refusal(i64::MAX));
    assert!(refusal(1).contains("bogus-late"), "{}", refusal(1));
    damage("t2", "bogus-early");
    assert_eq!(refusal(1), refusal(i64::MAX));
    assert!(refusal(1).contains("bogus-early"), "{}", refusal(1));
    // The refusal names the task, as the full load's does.
    assert!(refusal(1).starts_with("task \"t2\": "), "{}", refusal(1));
    match store.plan(&created.id) {
        Err(StoreError::Damaged { detail, .. }) => {
            assert!(detail.starts_with("task \"t2\": "), "{detail}")
        }
        other => panic!("expected damage, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// 5. A newer schema is refused and left untouched
// ---------------------------------------------------------------------------------------

#[test]
fn a_database_from_a_newer_weft_is_refused_and_left_untouched() {
    for wal in [false, true] {
        let (_tmp, dir) = workspace();
        fs::create_dir(&dir).unwrap();
        let db = dir.join(DATABASE_FILE);
        {
            let conn = Connection::open(&db).unwrap();
            if wal {
                conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                    .unwrap();
            }
            conn.execute_batch(&format!(
                "CREATE TABLE future (x TEXT); INSERT INTO future VALUES ('hi');
                 PRAGMA user_version = {};",
                SCHEMA_VERSION + 1
            ))
            .unwrap();
        }
        let original = bytes(&db);

        let attempts = [
            Store::open_existing(&dir, OpenOptions::default()).map(|_| ()),
            Store::open_or_create(&dir, OpenOptions::default()).map(|_| ()),
        ];
        for attempt in attempts {
            let err = attempt.expect_err("a newer schema must be refused");
            match &err {
                StoreError::TooNew { path, found, known } => {
                    assert_eq!(path, &db);
                    assert_eq!(*found, SCHEMA_VERSION + 1);
                    assert_eq!(*known, SCHEMA_VERSION);
                }
                other => panic!("wal={wal}: expected TooNew, got {other:?}"),
            }
            let message = err.to_string();
            assert!(message.contains(&db.display().to_string()), "{message}");
            assert!(
                message.contains(&format!("schema version {}", SCHEMA_VERSION + 1)),
                "{message}"
            );
            assert!(
                message.contains(&format!("knows up to {SCHEMA_VERSION}")),
                "{message}"
            );
            assert_eq!(bytes(&db), original, "wal={wal}: the file changed");
        }
        let conn = Connection::open(&db).unwrap();
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION + 1);
        let plans: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'plans'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(plans, 0, "no migration ran");
    }
}

// ---------------------------------------------------------------------------------------
// 6. A corrupt database is refused and never replaced
// ---------------------------------------------------------------------------------------

#[track_caller]
fn assert_corrupt(result: Result<(), StoreError>, db: &Path) {
    let err = result.expect_err("a corrupt database must be refused");
    match &err {
        StoreError::Corrupt { path, .. } => assert_eq!(path, db),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&db.display().to_string()), "{message}");
}

#[test]
fn a_corrupt_database_is_refused_and_never_replaced() {
    let (_tmp, dir) = workspace();
    fs::create_dir(&dir).unwrap();
    let db = dir.join(DATABASE_FILE);
    let garbage: Vec<u8> = "this is not a database, just some text.\n"
        .bytes()
        .cycle()
        .take(4096)
        .collect();
    fs::write(&db, &garbage).unwrap();

    assert_corrupt(
        Store::open_existing(&dir, OpenOptions::default()).map(|_| ()),
        &db,
    );
    assert_eq!(bytes(&db), garbage);
    assert_corrupt(
        Store::open_or_create(&dir, OpenOptions::default()).map(|_| ()),
        &db,
    );
    assert_eq!(bytes(&db), garbage);
    // Nothing was created beside it but the .gitignore of open_or_create.
    assert_eq!(listing(&dir), [".gitignore", DATABASE_FILE]);
}

#[test]
fn a_database_that_is_a_directory_is_refused() {
    let (_tmp, dir) = workspace();
    let db = dir.join(DATABASE_FILE);
    fs::create_dir_all(&db).unwrap();
    fs::write(db.join("keep"), "mine").unwrap();

    assert_corrupt(
        Store::open_existing(&dir, OpenOptions::default()).map(|_| ()),
        &db,
    );
    assert_corrupt(
        Store::open_or_create(&dir, OpenOptions::default()).map(|_| ()),
        &db,
    );
    assert!(db.is_dir());
    assert_eq!(listing(&db), ["keep"]);
    assert_eq!(fs::read_to_string(db.join("keep")).unwrap(), "mine");
}

// ---------------------------------------------------------------------------------------
// 7. A file where the state folder should be
// ---------------------------------------------------------------------------------------

#[test]
fn a_file_where_the_state_folder_should_be_is_refused_and_left_alone() {
    let (_tmp, dir) = workspace();
    fs::write(&dir, "not a folder\n").unwrap();

    let err = Store::open_or_create(&dir, OpenOptions::default()).unwrap_err();
    match &err {
        StoreError::StateDirBlocked { path } => assert_eq!(path, &dir),
        other => panic!("expected StateDirBlocked, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&dir.display().to_string()), "{message}");
    assert!(err.hint().is_some());
    assert!(dir.is_file());
    assert_eq!(fs::read_to_string(&dir).unwrap(), "not a folder\n");

    // Reading does not open anything there either.
    let read = Store::open_existing(&dir, OpenOptions::default());
    assert!(!matches!(read, Ok(Some(_))), "{read:?}");
    assert_eq!(fs::read_to_string(&dir).unwrap(), "not a folder\n");
}

// ---------------------------------------------------------------------------------------
// 8. Locked database
// ---------------------------------------------------------------------------------------

#[test]
fn a_held_write_lock_gives_busy_after_the_timeout_and_reads_still_work() {
    let (_tmp, dir) = workspace();
    let db = dir.join(DATABASE_FILE);
    let id = {
        let mut store = create(&dir);
        store
            .create_plan(draft("goal", vec![ai_task("a")]), 100)
            .unwrap()
            .id
    };

    let locker = Connection::open(&db).unwrap();
    locker
        .execute_batch(
            "BEGIN IMMEDIATE;
             INSERT INTO events (plan_id, kind, payload, at) VALUES (NULL, 'uncommitted', '{}', 1);",
        )
        .unwrap();

    let options = OpenOptions {
        busy_timeout: Duration::from_millis(200),
    };
    let mut store = Store::open_existing(&dir, options).unwrap().unwrap();
    let before = store.plan(&id).unwrap();
    assert_eq!(ids(&before), ["a"]);
    assert_eq!(store.plans().unwrap().len(), 1);
    assert_eq!(store.resolve_plan(&id[..8]).unwrap(), id);
    let events_before = all_events(&store);
    assert_eq!(events_before.len(), 1, "the locker's row is not visible");

    let started = Instant::now();
    let err = store
        .apply_edit(&id, &add("b"), &any_runner, 200)
        .unwrap_err();
    let waited = started.elapsed();
    match &err {
        StoreError::Busy { path, waited_ms } => {
            assert_eq!(path, &db);
            assert_eq!(*waited_ms, 200);
        }
        other => panic!("expected Busy, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&db.display().to_string()), "{message}");
    assert!(message.contains("200 ms"), "{message}");
    assert!(
        waited >= Duration::from_millis(150),
        "gave up after {waited:?}, before the busy timeout"
    );

    // Other writes wait and give up the same way.
    let err = store.create_plan(draft("second", vec![]), 201).unwrap_err();
    assert!(matches!(err, StoreError::Busy { .. }), "{err:?}");
    let err = store.delete_plan(&id, 201).unwrap_err();
    assert!(matches!(err, StoreError::Busy { .. }), "{err:?}");
    assert_eq!(store.plan(&id).unwrap(), before);

    locker.execute_batch("ROLLBACK").unwrap();

    let (edited, _) = store.apply_edit(&id, &add("b"), &any_runner, 300).unwrap();
    assert_eq!(ids(&edited), ["a", "b"]);
    assert_eq!(edited.revision, before.revision + 1);
    assert_eq!(store.plan(&id).unwrap(), edited);
    let events = all_events(&store);
    assert_eq!(
        events.iter().map(Event::kind_name).collect::<Vec<_>>(),
        ["plan_created", "task_added"]
    );
}

// ---------------------------------------------------------------------------------------
// 9. References, listing, current plan, deletion
// ---------------------------------------------------------------------------------------

#[test]
fn plan_references_resolve_by_id_or_unambiguous_prefix() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);

    let err = store.resolve_plan("abc").unwrap_err();
    match &err {
        StoreError::UnknownPlan { reference, known } => {
            assert_eq!(reference, "abc");
            assert_eq!(known, "none");
        }
        other => panic!("expected UnknownPlan, got {other:?}"),
    }

    // Create plans until two share a first character (at most 17 by pigeonhole), and at
    // least 12, more than an error lists.
    let sharing = |plans: &[Plan]| {
        plans
            .iter()
            .map(|p| p.id[..1].to_owned())
            .find(|first| plans.iter().filter(|p| p.id.starts_with(first)).count() > 1)
    };
    let mut plans: Vec<Plan> = Vec::new();
    while plans.len() < 12 || sharing(&plans).is_none() {
        let now = 1_000 + i64::try_from(plans.len()).unwrap();
        let plan = store
            .create_plan(draft(&format!("goal {}", plans.len()), vec![]), now)
            .unwrap();
        plans.push(plan);
    }
    let shared = sharing(&plans).unwrap();
    assert!(plans.len() <= 17);

    let target = &plans[0];
    // The shortest prefix only `target` has.
    let unique = (1..=32)
        .map(|n| &target.id[..n])
        .find(|prefix| plans.iter().filter(|p| p.id.starts_with(prefix)).count() == 1)
        .unwrap();
    assert_eq!(store.resolve_plan(&target.id).unwrap(), target.id);
    assert_eq!(
        store.resolve_plan(&target.id.to_ascii_uppercase()).unwrap(),
        target.id
    );
    assert_eq!(store.resolve_plan(target.short_id()).unwrap(), target.id);
    assert_eq!(store.resolve_plan(unique).unwrap(), target.id);
    assert_eq!(
        store.resolve_plan(&unique.to_ascii_uppercase()).unwrap(),
        target.id
    );
    assert_eq!(
        store.resolve_plan(&format!("  {unique}\n")).unwrap(),
        target.id
    );
    // Mixed case in a longer prefix too.
    let mixed: String = target.id[..12]
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    assert_eq!(store.resolve_plan(&mixed).unwrap(), target.id);

    for reference in [shared.clone(), shared.to_ascii_uppercase()] {
        let err = store.resolve_plan(&reference).unwrap_err();
        match &err {
            StoreError::AmbiguousPlan {
                reference: named,
                candidates,
            } => {
                assert_eq!(named, &reference);
                for plan in plans.iter().filter(|p| p.id.starts_with(&shared)) {
                    assert!(candidates.contains(plan.short_id()), "{candidates}");
                }
                for plan in plans.iter().filter(|p| !p.id.starts_with(&shared)) {
                    assert!(!candidates.contains(plan.short_id()), "{candidates}");
                }
            }
            other => panic!("expected AmbiguousPlan for {reference:?}, got {other:?}"),
        }
        assert!(err.to_string().contains(&reference), "{err}");
    }

    // A reference no plan starts with; lists the ten most recently updated plans and
    // counts the rest.
    let newest_first: Vec<&Plan> = plans.iter().rev().collect();
    let absent = (0..16)
        .map(|d| format!("{d:x}"))
        .find(|c| !plans.iter().any(|p| p.id.starts_with(c.as_str())))
        .map(|c| format!("{c}0"))
        .unwrap_or_else(|| "zz".into());
    for reference in [absent.as_str(), "not-a-plan"] {
        let err = store.resolve_plan(reference).unwrap_err();
        match &err {
            StoreError::UnknownPlan {
                reference: named,
                known,
            } => {
                assert_eq!(named, reference);
                let (listed, rest) = newest_first.split_at(10);
                let expected: Vec<String> = listed
                    .iter()
                    .map(|p| format!("{} ({})", p.short_id(), p.goal))
                    .chain([format!("and {} more", rest.len())])
                    .collect();
                assert_eq!(known, &expected.join(", "));
            }
            other => panic!("expected UnknownPlan for {reference:?}, got {other:?}"),
        }
    }
}

#[test]
fn plans_are_listed_most_recently_updated_first_with_the_current_one_flagged() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let p1 = store
        .create_plan(draft("first", vec![ai_task("a")]), 1_000)
        .unwrap();
    let p2 = store
        .create_plan(draft("second", vec![ai_task("a"), ai_task("b")]), 2_000)
        .unwrap();
    let p3 = store.create_plan(draft("third", vec![]), 3_000).unwrap();

    let listed = |store: &Store| -> Vec<(String, bool)> {
        store
            .plans()
            .unwrap()
            .into_iter()
            .map(|p| (p.id, p.current))
            .collect()
    };
    let entry = |plan: &Plan, current: bool| (plan.id.clone(), current);

    // The newest plan is current.
    assert_eq!(
        store.current_plan_id().unwrap().as_deref(),
        Some(p3.id.as_str())
    );
    assert_eq!(
        listed(&store),
        [entry(&p3, true), entry(&p2, false), entry(&p1, false)]
    );
    let summaries = store.plans().unwrap();
    let second = summaries.iter().find(|s| s.id == p2.id).unwrap();
    assert_eq!(second.short_id, p2.short_id());
    assert_eq!(second.goal, "second");
    assert_eq!(second.status, PlanStatus::Approved);
    assert_eq!(second.task_count, 2);
    assert_eq!(second.created_at, 2_000);
    assert_eq!(second.updated_at, 2_000);

    // Editing the oldest plan moves it to the top.
    store
        .apply_edit(&p1.id, &add("b"), &any_runner, 4_000)
        .unwrap();
    assert_eq!(
        listed(&store),
        [entry(&p1, false), entry(&p3, true), entry(&p2, false)]
    );

    store.set_current_plan(&p2.id, 5_000).unwrap();
    let flags: Vec<bool> = store.plans().unwrap().iter().map(|p| p.current).collect();
    assert_eq!(flags.iter().filter(|c| **c).count(), 1);
    assert!(
        store
            .plans()
            .unwrap()
            .iter()
            .any(|p| p.id == p2.id && p.current)
    );
    assert_eq!(
        store.current_plan_id().unwrap().as_deref(),
        Some(p2.id.as_str())
    );

    // Deleting another plan keeps the pointer.
    store.delete_plan(&p3.id, 6_000).unwrap();
    assert_eq!(
        store.current_plan_id().unwrap().as_deref(),
        Some(p2.id.as_str())
    );
    assert_eq!(listed(&store), [entry(&p1, false), entry(&p2, true)]);
    let err = store.plan(&p3.id).unwrap_err();
    assert!(matches!(err, StoreError::UnknownPlan { .. }), "{err:?}");

    // Deleting the current plan clears the pointer.
    store.delete_plan(&p2.id, 7_000).unwrap();
    assert_eq!(store.current_plan_id().unwrap(), None);
    assert_eq!(listed(&store), [entry(&p1, false)]);

    // Tasks and dependencies went with the plans.
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    for table in ["tasks", "task_dependencies"] {
        let orphans: i64 = conn
            .query_row(
                &format!(
                    "SELECT COUNT(*) FROM {table}
                      WHERE plan_key <> (SELECT key FROM plan_keys WHERE plan_id = ?1)"
                ),
                [&p1.id],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(orphans, 0, "{table} kept rows of deleted plans");
    }

    // Deleting an unknown or already deleted plan.
    let events_before = all_events(&store);
    for unknown in [p2.id.as_str(), "0123456789abcdef0123456789abcdef"] {
        let err = store.delete_plan(unknown, 8_000).unwrap_err();
        match &err {
            StoreError::UnknownPlan { reference, .. } => assert_eq!(reference, unknown),
            other => panic!("expected UnknownPlan, got {other:?}"),
        }
    }
    assert_eq!(all_events(&store), events_before);
    assert_eq!(listed(&store), [entry(&p1, false)]);
}

// ---------------------------------------------------------------------------------------
// 10. Concurrent writers
// ---------------------------------------------------------------------------------------

#[test]
fn interleaved_edits_from_two_handles_are_both_kept() {
    let (_tmp, dir) = workspace();
    let mut a = create(&dir);
    let id = a
        .create_plan(draft("goal", vec![ai_task("root")]), 100)
        .unwrap()
        .id;
    let mut b = existing(&dir);

    let stale = a.plan(&id).unwrap();
    assert_eq!(stale.revision, 1);
    b.apply_edit(&id, &add("from-b"), &any_runner, 200).unwrap();

    // A's change sees B's edit, although A last read the plan before it.
    let (edited, seen_by_a) = a
        .update_plan(&id, 300, |current| {
            let (next, report) = weft_core::edit::apply(current, &add("from-a"), &any_runner)?;
            Ok((next, report.to_event(), ids(current).join(",")))
        })
        .unwrap();
    assert_eq!(seen_by_a, "root,from-b");
    assert_eq!(ids(&edited), ["root", "from-b", "from-a"]);
    assert_eq!(edited.revision, 3);

    let (edited, _) = b
        .apply_edit(&id, &add("from-b-2"), &any_runner, 400)
        .unwrap();
    assert_eq!(ids(&edited), ["root", "from-b", "from-a", "from-b-2"]);
    assert_eq!(a.plan(&id).unwrap(), edited);
    assert_eq!(b.plan(&id).unwrap(), edited);
    assert_eq!(all_events(&a).len(), 4);
    assert_eq!(all_events(&a), all_events(&b));
}

#[test]
fn concurrent_writers_in_threads_never_lose_an_edit() {
    const THREADS: usize = 2;
    const EDITS: usize = 25;
    let (_tmp, dir) = workspace();
    let id = create(&dir)
        .create_plan(draft("goal", vec![]), 100)
        .unwrap()
        .id;

    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let dir = &dir;
            let id = &id;
            scope.spawn(move || {
                let mut store = existing(dir);
                for edit in 0..EDITS {
                    let now = 1_000 + i64::try_from(edit).unwrap();
                    store
                        .apply_edit(id, &add(&format!("t{thread}-{edit}")), &any_runner, now)
                        .unwrap_or_else(|e| panic!("thread {thread}, edit {edit}: {e}"));
                }
            });
        }
    });

    let store = existing(&dir);
    let plan = store.plan(&id).unwrap();
    assert_eq!(plan.tasks.len(), THREADS * EDITS);
    assert_eq!(plan.revision, u64::try_from(THREADS * EDITS + 1).unwrap());
    for thread in 0..THREADS {
        let mine: Vec<&str> = ids(&plan)
            .into_iter()
            .filter(|t| t.starts_with(&format!("t{thread}-")))
            .collect();
        let expected: Vec<String> = (0..EDITS).map(|e| format!("t{thread}-{e}")).collect();
        assert_eq!(mine, expected, "thread {thread}'s tasks, in its order");
    }
    for (index, task) in plan.tasks.iter().enumerate() {
        assert_eq!(usize::try_from(task.order).unwrap(), index + 1);
    }
    let events = store.events(Some(&id), 0, 1_000).unwrap();
    assert_eq!(events.len(), THREADS * EDITS + 1);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.kind_name() == "task_added")
            .count(),
        THREADS * EDITS
    );
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
}

/// A database written by every older schema version opens, migrates and keeps its plans.
#[test]
fn older_databases_migrate_and_keep_their_data() {
    for old_version in 1..SCHEMA_VERSION {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join(".weft");
        fs::create_dir_all(&state).unwrap();
        {
            let conn = Connection::open(state.join(DATABASE_FILE)).unwrap();
            for sql in &weft_store::migration_sql()[..old_version as usize] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute_batch(&format!(
                "PRAGMA user_version = {old_version};
                 INSERT INTO plans (id, goal, status, runner, created_at, updated_at, revision)
                 VALUES ('0123456789abcdef0123456789abcdef', 'old goal', 'approved', NULL, 1, 1, 1);
                 INSERT INTO tasks (plan_id, id, position, title, description, prompt, runner, model,
                   effort, mode, kind, command, steps, checks, status, hold, verdict, output)
                 VALUES ('0123456789abcdef0123456789abcdef', 'a', 1, 'A', NULL, 'do a', NULL, NULL,
                   NULL, NULL, 'ai', NULL, '[]', '[]', 'pending', 0, NULL, NULL),
                        ('0123456789abcdef0123456789abcdef', 'b', 2, 'B', NULL, 'do b', NULL, NULL,
                   NULL, NULL, 'ai', NULL, '[]', '[]', 'pending', 0, NULL, NULL),
                        ('0123456789abcdef0123456789abcdef', 'c', 3, 'C', NULL, 'do c', NULL, NULL,
                   NULL, NULL, 'ai', NULL, '[]', '[]', 'pending', 0, NULL, NULL);
                 INSERT INTO task_dependencies (plan_id, task_id, depends_on, position)
                 VALUES ('0123456789abcdef0123456789abcdef', 'c', 'b', 0),
                        ('0123456789abcdef0123456789abcdef', 'c', 'a', 1),
                        ('0123456789abcdef0123456789abcdef', 'b', 'a', 0);"
            ))
            .unwrap();
            if old_version >= 6 {
                // From 6 on, a writer also keeps each task's dependencies in its own row.
                conn.execute_batch(
                    "UPDATE tasks SET dependencies = (
                         SELECT json_group_array(d.depends_on ORDER BY d.position)
                         FROM task_dependencies d
                         WHERE d.plan_id = tasks.plan_id AND d.task_id = tasks.id)
                     WHERE EXISTS (SELECT 1 FROM task_dependencies d
                         WHERE d.plan_id = tasks.plan_id AND d.task_id = tasks.id);",
                )
                .unwrap();
            }
        }
        let store = Store::open_existing(&state, OpenOptions::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            store.schema_version().unwrap(),
            SCHEMA_VERSION,
            "from {old_version}"
        );
        let plan = store.plan("0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(plan.goal, "old goal");
        assert_eq!(plan.tasks[0].prompt, "do a");
        // Dependencies keep their order (by position, not by name) across the migration
        // that copies them into each task's row.
        let dependencies: Vec<&[String]> = plan
            .tasks
            .iter()
            .map(|t| t.dependencies.as_slice())
            .collect();
        assert_eq!(
            dependencies,
            [
                &[][..],
                &["a".to_owned()][..],
                &["b".to_owned(), "a".to_owned()][..]
            ],
            "from {old_version}"
        );
        // The outline (from 9 on, read from its own index) is computed for the rows the
        // migration found.
        let outline = store.outline(&plan.id).unwrap();
        let views: Vec<weft_core::TaskView<'_>> = outline.tasks().collect();
        let loaded = store.plan_outline(&plan.id).unwrap();
        let expected: Vec<weft_core::TaskView<'_>> = loaded.tasks.iter().map(Task::view).collect();
        assert_eq!(views, expected, "from {old_version}");
        assert_eq!(views[2].title, "C", "from {old_version}");
        assert!(store.attempts_of_plan(&plan.id).unwrap().is_empty());
        drop(store);
        // The kind's check (changed in place by 10) holds for every connection, and the
        // store is whole.
        let conn = Connection::open(state.join(DATABASE_FILE)).unwrap();
        assert_kind_checked_without_a_scratch_table(&conn, &format!("from {old_version}"));
        assert_dependency_rows_moved(&conn, &format!("from {old_version}"));
    }
}

/// The dependency rows (schema 11: in a table without a rowid) are all there, and still
/// cascade from the task they point at; the tasks (schema 12) cascade from their plan.
fn assert_dependency_rows_moved(conn: &Connection, context: &str) {
    let sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'task_dependencies'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(sql.ends_with("STRICT, WITHOUT ROWID"), "{context}: {sql}");
    let rows = |conn: &Connection| -> Vec<(String, String, i64)> {
        conn.prepare("SELECT task_id, depends_on, position FROM task_dependencies ORDER BY task_id, position")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let row = |t: &str, d: &str, p| (t.to_owned(), d.to_owned(), p);
    assert_eq!(
        rows(conn),
        [row("b", "a", 0), row("c", "b", 0), row("c", "a", 1)],
        "{context}"
    );
    conn.execute_batch("PRAGMA foreign_keys = ON; BEGIN; DELETE FROM tasks WHERE id = 'b';")
        .unwrap();
    assert_eq!(rows(conn), [row("c", "a", 1)], "{context}");
    conn.execute_batch("ROLLBACK").unwrap();
    // Schema 12: the rows name the plan by its key, and a plan's deletion still takes
    // its tasks and their dependencies with it (plan → key → tasks → dependencies).
    let keyed: i64 = conn
        .query_row(
            "SELECT count(*) FROM tasks t JOIN plan_keys k ON k.key = t.plan_key
              WHERE k.plan_id = '0123456789abcdef0123456789abcdef' AND t.id IN ('a', 'b', 'c')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(keyed, 3, "{context}");
    conn.execute_batch("BEGIN; DELETE FROM plans;").unwrap();
    let left: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM task_dependencies)
                  + (SELECT count(*) FROM plan_keys)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0, "{context}");
    conn.execute_batch("ROLLBACK").unwrap();
}

/// The connection that changes the kind's check in place (schema 10) uses the new one at
/// once, and one already open on the store reads it on its next statement.
#[test]
fn the_kind_check_changed_in_place_holds_on_the_migrating_connection_and_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(DATABASE_FILE);
    let conn = Connection::open(&db).unwrap();
    let migrations = weft_store::migration_sql();
    for sql in &migrations[..9] {
        conn.execute_batch(sql).unwrap();
    }
    conn.execute_batch(
        "INSERT INTO plans (id, goal, status, runner, created_at, updated_at, revision)
         VALUES ('0123456789abcdef0123456789abcdef', 'g', 'approved', NULL, 1, 1, 1)",
    )
    .unwrap();
    let other = Connection::open(&db).unwrap();
    let _: i64 = other
        .query_row("SELECT count(*) FROM tasks", [], |r| r.get(0))
        .unwrap();
    conn.execute_batch(&format!("BEGIN; {} COMMIT;", migrations[9]))
        .unwrap();
    assert_kind_checked_without_a_scratch_table(&conn, "the migrating connection");
    assert_kind_checked_without_a_scratch_table(&other, "a connection open before");
}

/// Schema 10: a task's kind is checked by comparisons, a bad one still refused, and
/// writing a row builds no ephemeral table (an `IN` list of three did, for every row).
fn assert_kind_checked_without_a_scratch_table(conn: &Connection, context: &str) {
    // Rows of their own on every call (ids and positions no other call uses).
    let base: i64 = conn
        .query_row(
            "SELECT coalesce(max(position), 0) + 100 FROM tasks",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok", "{context}");
    let table: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'tasks'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        table.contains("CHECK (kind = 'ai' OR kind = 'manual' OR kind = 'ops')"),
        "{context}: {table}"
    );
    // From schema 12 on, the tasks name their plan by its key.
    let keyed: bool = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('tasks') WHERE name = 'plan_key'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let (column, plan) = if keyed {
        (
            "plan_key",
            "(SELECT key FROM plan_keys WHERE plan_id = '0123456789abcdef0123456789abcdef')",
        )
    } else {
        ("plan_id", "'0123456789abcdef0123456789abcdef'")
    };
    let insert = &format!(
        "INSERT INTO tasks ({column}, id, position, title, prompt, kind, steps, checks, status,
                            hold)
         VALUES ({plan}, ?1, ?2, 'T', 'p', ?3, '[]', '[]', 'pending', 0)"
    );
    let opcodes: Vec<String> = conn
        .prepare(&format!("EXPLAIN {insert}"))
        .unwrap()
        .query_map(params!["x", base, "ai"], |r| r.get(1))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        !opcodes.iter().any(|op| op == "OpenEphemeral"),
        "{context}: {opcodes:?}"
    );
    let refused = conn
        .execute(insert, params![format!("bogus-{base}"), base + 1, "wizard"])
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("CHECK constraint failed"),
        "{context}: {refused}"
    );
    for (index, kind) in ["ai", "manual", "ops"].iter().enumerate() {
        conn.execute(
            insert,
            params![format!("k{base}-{index}"), base + 2 + index as i64, kind],
        )
        .unwrap();
    }
}

/// A new plan is stored without SQLite's per-row foreign key checks only when the store has
/// seen every dependency resolve; a dangling one is still refused by them, and the checks
/// are on again for every later write.
#[test]
fn creating_a_plan_keeps_its_dependencies_whole_and_the_foreign_keys_on_afterwards() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let mut b = ai_task("b");
    b.dependencies = vec!["a".into()];
    let mut c = ai_task("c.2_x");
    c.dependencies = vec!["b".into(), "a".into()];
    let plan = store
        .create_plan(draft("g", vec![ai_task("a"), b, c]), 1)
        .unwrap();
    let mut dangling = ai_task("c");
    dangling.dependencies = vec!["ghost".into()];
    let refused = store.create_plan(draft("g", vec![dangling]), 2);
    assert!(refused.is_err(), "a dependency on no task is refused");
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let rows: Vec<(String, String, i64)> = conn
        .prepare(
            "SELECT task_id, depends_on, position FROM task_dependencies
              WHERE plan_key = (SELECT key FROM plan_keys WHERE plan_id = ?1)
              ORDER BY task_id, position",
        )
        .unwrap()
        .query_map([&plan.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let row = |t: &str, d: &str, p| (t.to_owned(), d.to_owned(), p);
    assert_eq!(
        rows,
        [row("b", "a", 0), row("c.2_x", "b", 0), row("c.2_x", "a", 1)]
    );
    let plans: i64 = conn
        .query_row("SELECT COUNT(*) FROM plans", [], |r| r.get(0))
        .unwrap();
    assert_eq!(plans, 1, "the refused plan stored nothing");
    // The handle's own later writes have their foreign keys again: deleting the plan
    // removes its tasks and dependencies only through `ON DELETE CASCADE`.
    drop(conn);
    store.delete_plan(&plan.id, 3).unwrap();
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    for table in ["tasks", "task_dependencies"] {
        let left: i64 = conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0, "{table} of the deleted plan");
    }
}

/// Schema 12: a plan's tasks live under its key, so a plan whose key is gone (a store
/// edited by hand: deleting the key takes its tasks with it) reads as a plan without
/// tasks, and its next write gives it a key again and stores its tasks.
#[test]
fn a_plan_whose_key_was_deleted_gets_one_again_on_its_next_write() {
    let (_tmp, dir) = workspace();
    let mut store = create(&dir);
    let plan = store
        .create_plan(draft("g", vec![ai_task("a"), ai_task("b")]), 1)
        .unwrap();
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = ON; DELETE FROM plan_keys;")
        .unwrap();
    assert!(store.plan(&plan.id).unwrap().tasks.is_empty());

    let (written, ()) = store
        .update_plan(&plan.id, 2, |stored| {
            let mut next = stored.clone();
            next.tasks = plan.tasks.clone();
            let note = EventKind::Notice {
                text: "restored".into(),
            };
            Ok((next, Event::new(note), ()))
        })
        .unwrap();
    assert_eq!(written.tasks.len(), 2);
    let ids: Vec<String> = store
        .plan(&plan.id)
        .unwrap()
        .tasks
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, ["a", "b"]);
}
