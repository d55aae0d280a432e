use std::time::{Duration, Instant};

use crate::harness::{Weft, read};
use crate::snapshot;

#[test]
fn a_file_where_weft_wants_its_folder() {
    let weft = Weft::new();
    weft.write(".weft", "not a folder\n");
    weft.write("plan.toml", crate::harness::SAMPLE_TOML);
    let run = weft.fails(&["plan", "--file", "plan.toml"], 1);
    let read_only = weft.fails(&["status"], 1);
    assert_eq!(read(&weft.work().join(".weft")), "not a folder\n");
    snapshot!(weft, run, read_only);
}

#[test]
fn a_locked_database_waits_then_says_so() {
    let weft = Weft::new();
    weft.import_sample();
    let holder = rusqlite::Connection::open(weft.db_path()).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();

    let started = Instant::now();
    let run = weft.fails(
        &[
            "-c",
            "busy_timeout_ms=300",
            "task",
            "add",
            "--title",
            "Late",
            "--prompt",
            "p",
        ],
        75,
    );
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "gave up before waiting"
    );
    // Readers are not blocked by a writer.
    assert_eq!(
        weft.status_json()["plan"]["tasks"]
            .as_array()
            .unwrap()
            .len(),
        4
    );

    holder.execute_batch("COMMIT").unwrap();
    weft.ok(&["task", "add", "--title", "Late", "--prompt", "p"]);
    assert_eq!(
        weft.status_json()["plan"]["tasks"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    snapshot!(weft, run);
}

#[test]
fn a_database_from_a_newer_weft_is_refused_untouched() {
    let weft = Weft::new();
    weft.import_sample();
    rusqlite::Connection::open(weft.db_path())
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let before = std::fs::read(weft.db_path()).unwrap();
    let run = weft.fails(&["status"], 1);
    assert_eq!(std::fs::read(weft.db_path()).unwrap(), before);
    snapshot!(weft, run);
}

#[test]
fn a_corrupt_database_is_reported_and_never_recreated() {
    let weft = Weft::new();
    weft.import_sample();
    let garbage = "this is not a database\n".repeat(300);
    std::fs::write(weft.db_path(), &garbage).unwrap();
    for name in ["weft.db-wal", "weft.db-shm"] {
        let _ = std::fs::remove_file(weft.work().join(".weft").join(name));
    }
    let status = weft.fails(&["status"], 1);
    let write = weft.fails(&["plan", "--file", "plan.toml"], 1);
    assert_eq!(
        read(&weft.db_path()),
        garbage,
        "the corrupt file was changed"
    );
    snapshot!(weft, status, write);
}

/// An OS error under a store error is printed once, as its cause (it used to be in the
/// message and again as `caused by:`), in text and in JSON.
#[test]
fn a_chained_error_prints_each_cause_exactly_once() {
    let weft = Weft::new();
    std::fs::create_dir_all(weft.work().join(".weft")).unwrap();
    // A symlink to itself: the database's metadata cannot be read.
    std::os::unix::fs::symlink("weft.db", weft.db_path()).unwrap();
    let run = weft.fails(&["status"], 1);
    let os = "Too many levels of symbolic links";
    assert_eq!(run.stderr.matches(os).count(), 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("caused by:").count(),
        1,
        "{}",
        run.stderr
    );
    let json = weft.fails(&["status", "--json"], 1);
    let error: serde_json::Value = serde_json::from_str(json.stderr.trim()).unwrap();
    let causes = error["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "{error}");
    assert!(causes[0].as_str().unwrap().contains(os), "{error}");
    assert!(!error["error"].as_str().unwrap().contains(os), "{error}");
    snapshot!(weft, run);
}
