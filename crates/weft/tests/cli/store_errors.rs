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

/// A run that must write while another process holds the store's write lock says so
/// while it waits, naming the holder (this test's own pid, from `/proc/locks`), then goes
/// on once the lock is released: the finished attempt's result is kept.
#[test]
fn a_run_waiting_for_a_held_store_names_the_holder_live_and_loses_nothing() {
    use std::io::BufRead;
    use std::process::Stdio;
    let weft = Weft::with_agents();
    let go = weft.env.root().join("go");
    let plan = format!(
        "goal = \"Wait for the store\"\nrunner = \"claude-code\"\n\n[[tasks]]\nid = \"a\"\ntitle = \"Task a\"\nprompt = '''\nDo a.\n@fake write started.txt yes\n@fake hang-unless {}\n@fake say done\n@fake marker\n'''\n",
        go.display()
    );
    weft.write("plan.toml", &plan);
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut run = weft.command(&["-c", "busy_timeout_ms=1000", "run"]);
    run.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut run = run.spawn().unwrap();
    let stderr = run.stderr.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !weft.work().join("started.txt").exists() {
        assert!(Instant::now() < deadline, "the agent never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Hold the write lock, then let the agent finish: the engine must wait to record it.
    let holder = rusqlite::Connection::open(weft.db_path()).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let held = Instant::now();
    std::fs::write(&go, "").unwrap();
    let me = format!("held by pid {}", std::process::id());
    let mut said = Vec::new();
    let notice = loop {
        let wait = Duration::from_secs(6).saturating_sub(held.elapsed());
        match lines.recv_timeout(wait) {
            Ok(line) if line.contains("the store is busy") => break Some(line),
            Ok(line) => said.push(line),
            Err(_) => break None,
        }
    };
    let shown_while_held = held.elapsed();
    holder.execute_batch("COMMIT").unwrap();
    drop(holder);
    let notice = notice.unwrap_or_else(|| panic!("no live notice while held: {said:?}"));
    assert!(notice.contains(&me), "names the holder: {notice}");
    assert!(notice.contains("waiting (up to"), "{notice}");
    assert!(shown_while_held < Duration::from_secs(6));

    let status = run.wait().unwrap();
    reader.join().unwrap();
    assert!(status.success(), "{said:?}");
    let s = weft.status_json();
    assert_eq!(s["plan"]["tasks"][0]["status"], "completed", "{s}");
    let events = weft.ok(&["events", "--all", "--json"]).stdout;
    assert_eq!(
        events.matches("\"attempt_finished\"").count(),
        1,
        "the result is kept once"
    );
}
