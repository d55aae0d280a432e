//! Live output by byte offset: a reader in another process fetches history from any offset
//! and then follows what the attempt appends, until it ends.

use std::io::Write;
use std::path::Path;

use weft_core::event::EventKind;
use weft_core::{Attempt, AttemptStatus};
use weft_store::{OUTPUT_CHUNK_MAX, OpenOptions, Store};

mod support;
use support::store_with_attempt;

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

#[test]
fn a_reader_from_an_offset_mid_file_gets_exactly_the_rest_then_follows_to_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("attempt.log");
    let (mut writer, attempt) = store_with_attempt(tmp.path(), &log);
    // Another process: its own store handle.
    let reader = Store::open_existing(&tmp.path().join(".weft"), OpenOptions::default())
        .unwrap()
        .unwrap();

    // Not written yet: nothing, still live.
    let chunk = reader.read_output(&attempt.id, 0, 100).unwrap().unwrap();
    assert!(
        chunk.bytes.is_empty() && chunk.live && !chunk.finished,
        "{chunk:?}"
    );

    append(&log, "line one\nline two\n");
    let chunk = reader.read_output(&attempt.id, 5, 1000).unwrap().unwrap();
    assert_eq!(chunk.bytes, b"one\nline two\n");
    assert_eq!((chunk.offset, chunk.next), (5, 18));
    assert!(chunk.live && !chunk.finished);

    // At most `max` bytes; the rest from `next`.
    let first = reader.read_output(&attempt.id, 0, 4).unwrap().unwrap();
    assert_eq!((first.bytes.as_slice(), first.next), (&b"line"[..], 4));
    let rest = reader
        .read_output(&attempt.id, first.next, 1000)
        .unwrap()
        .unwrap();
    assert_eq!(rest.bytes, b" one\nline two\n");

    // Following: appended output comes from where the reader stopped.
    append(&log, "line three\n");
    let more = reader
        .read_output(&attempt.id, rest.next, 1000)
        .unwrap()
        .unwrap();
    assert_eq!(more.bytes, b"line three\n");
    assert!(!more.finished);
    let none_yet = reader
        .read_output(&attempt.id, more.next, 1000)
        .unwrap()
        .unwrap();
    assert!(none_yet.bytes.is_empty() && none_yet.live && !none_yet.finished);

    // The attempt ends: the next read from the end says nothing more will come.
    append(&log, "done\n");
    let ended = Attempt {
        status: AttemptStatus::Passed,
        ended_at: Some(3),
        ..attempt.clone()
    };
    writer
        .save_attempt(&ended, EventKind::LandingStarted { branch: "b".into() }, 3)
        .unwrap();
    let last = reader
        .read_output(&attempt.id, more.next, 1000)
        .unwrap()
        .unwrap();
    assert_eq!(last.bytes, b"done\n");
    assert!(!last.live && last.finished, "{last:?}");

    // A short chunk of an ended attempt that does not reach the end is not finished.
    let partial = reader.read_output(&attempt.id, 0, 3).unwrap().unwrap();
    assert!(!partial.live && !partial.finished);

    // A stale offset past the end is not refused: no bytes, next is the end.
    let past = reader
        .read_output(&attempt.id, 10_000, 10)
        .unwrap()
        .unwrap();
    assert!(past.bytes.is_empty() && past.finished);
    assert_eq!(past.next, last.next);
}

#[test]
fn reads_are_bounded_and_unknown_attempts_are_none() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("attempt.log");
    let (store, attempt) = store_with_attempt(tmp.path(), &log);
    append(&log, &"x".repeat(OUTPUT_CHUNK_MAX + 10));
    let chunk = store
        .read_output(&attempt.id, 0, usize::MAX)
        .unwrap()
        .unwrap();
    assert_eq!(chunk.bytes.len(), OUTPUT_CHUNK_MAX);
    assert!(
        store
            .read_output("no-such-attempt", 0, 10)
            .unwrap()
            .is_none()
    );
}

/// An attempt's row and its task's new status are one write: when the task update is
/// refused, the attempt row is not changed either, and no event is appended.
#[test]
fn an_attempt_and_its_task_are_stored_together_or_not_at_all() {
    use weft_core::TaskStatus;
    use weft_core::event::Event;
    use weft_store::TaskUpdate;
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("a.log");
    let (mut store, attempt) = store_with_attempt(tmp.path(), &log);
    let events_before = store.events(None, 0, 1000).unwrap().len();
    let ended = Attempt {
        status: AttemptStatus::Passed,
        ended_at: Some(3),
        task_id: "no-such-task".into(),
        ..attempt.clone()
    };
    let update = TaskUpdate::status(TaskStatus::Completed);
    let finished = EventKind::LandingStarted { branch: "b".into() };
    let refused = store.save_attempt_and_task(
        &ended,
        finished.clone(),
        &update,
        Event::new(EventKind::Notice { text: "t".into() }),
        3,
    );
    assert!(refused.is_err(), "{refused:?}");
    let stored = store.attempt(&attempt.id).unwrap().unwrap();
    assert_eq!(stored.status, AttemptStatus::Running);
    assert_eq!(stored.task_id, "a");
    assert_eq!(store.events(None, 0, 1000).unwrap().len(), events_before);

    let ended = Attempt {
        task_id: "a".into(),
        ..ended
    };
    store
        .save_attempt_and_task(
            &ended,
            finished,
            &update,
            Event::new(EventKind::Notice { text: "t".into() }),
            3,
        )
        .unwrap();
    assert_eq!(
        store.attempt(&attempt.id).unwrap().unwrap().status,
        AttemptStatus::Passed
    );
    let plan = store.plan(&attempt.plan_id).unwrap();
    assert_eq!(plan.tasks[0].status, TaskStatus::Completed);
    assert_eq!(
        store.events(None, 0, 1000).unwrap().len(),
        events_before + 2
    );
}
