//! OpenCode transcript reader against a real `opencode.db` rebuilt from the recorded dump
//! (weft-testkit's `data/agent-output/opencode/oc1.18.33-opencode-db-dump.sql`), the legacy
//! JSON storage tree of OpenCode 1.1.53, and mutated copies of both.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use tempfile::TempDir;
use weft_agents::transcript::{DEFAULT_ANSWER_CHARS, Found, Locator, Query, Store, opencode};
use weft_testkit::samples::agent_output;

const MARKER: &str = "ORCH-DONE-MARKER-7f3a9c";
const FINAL: &str = "All done. ORCH-DONE-MARKER-7f3a9c";
const DIR: &str = "/tmp/mockproj-oc";
const LEGACY_DIR: &str = "/tmp/mockproj-ocold";
/// Tool-read session, continued once: the marker is in both of its final messages.
const SES_A: &str = "ses_dd6b17eedffeyGcEh8RWkIGo0T";
/// Permission-rejected session: only "I will use a tool first.".
const SES_B: &str = "ses_dd6b14109ffejeZdyUREY6O3hg";
/// 401 session: an assistant message with an error and no text.
const SES_C: &str = "ses_dd6b11c97ffeY304k3nSazl9Df";
const LEGACY_SES: &str = "ses_dd6af4c1effeWKfDgp3qnQe9my";
/// Before every fixture session was created.
const START: u64 = 1_795_989_340_000;
const LEGACY_START: u64 = 1_795_989_484_000;

fn fixtures() -> PathBuf {
    agent_output().join("opencode")
}

fn dump() -> String {
    fs::read_to_string(fixtures().join("oc1.18.33-opencode-db-dump.sql")).expect("fixture dump")
}

fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

struct Env {
    _tmp: TempDir,
    xdg: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().expect("tempdir");
        let xdg = tmp.path().join("xdg");
        fs::create_dir_all(xdg.join("opencode")).expect("data dir");
        Env { _tmp: tmp, xdg }
    }

    fn data(&self) -> PathBuf {
        self.xdg.join("opencode")
    }

    fn db_path(&self) -> PathBuf {
        self.data().join("opencode.db")
    }

    /// `opencode.db` rebuilt from the fixture dump (rollback journal, connection closed).
    fn with_fixture_db(self) -> Env {
        let conn = Connection::open(self.db_path()).expect("create db");
        conn.execute_batch(&dump()).expect("load dump");
        drop(conn);
        self
    }

    /// The legacy `storage/` tree copied from the fixtures.
    fn with_legacy(self) -> Env {
        copy_tree(&fixtures().join("oc1.1.53-legacy-storage"), &self.storage());
        self
    }

    fn storage(&self) -> PathBuf {
        self.data().join("storage")
    }

    fn writer(&self) -> Connection {
        Connection::open(self.db_path()).expect("open db")
    }

    fn locator(&self) -> Locator {
        Locator {
            xdg_data_home: Some(self.xdg.clone()),
            ..Locator::default()
        }
    }

    fn find(&self, query: &Query<'_>) -> Option<Found> {
        opencode::find(&self.locator(), query)
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn query<'a>(cwd: &'a str, started_ms: u64, marker: Option<&'a str>) -> Query<'a> {
    Query {
        cwd: Path::new(cwd),
        started_at: at(started_ms),
        marker,
        session_id: None,
        answer_chars: DEFAULT_ANSWER_CHARS,
    }
}

fn add_session(conn: &Connection, id: &str, dir: &str, updated: u64, parent: Option<&str>) {
    conn.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, \
         time_created, time_updated) VALUES (?1, 'global', ?2, 'slug', ?3, 't', '1.18.33', ?4, ?4)",
        rusqlite::params![id, parent, dir, updated as i64],
    )
    .expect("insert session");
}

fn add_message(conn: &Connection, id: &str, session: &str, created: u64, data: &str) {
    conn.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) \
         VALUES (?1, ?2, ?3, ?3, ?4)",
        rusqlite::params![id, session, created as i64, data],
    )
    .expect("insert message");
}

fn add_part(conn: &Connection, id: &str, message: &str, session: &str, data: &str) {
    conn.execute(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
         VALUES (?1, ?2, ?3, 0, 0, ?4)",
        rusqlite::params![id, message, session, data],
    )
    .expect("insert part");
}

fn user(created: u64) -> String {
    format!(r#"{{"role":"user","time":{{"created":{created}}},"agent":"build"}}"#)
}

fn assistant(created: u64) -> String {
    format!(
        r#"{{"role":"assistant","mode":"build","time":{{"created":{created},"completed":{created}}},"tokens":{{"total":15,"input":10,"output":5,"reasoning":0,"cache":{{"read":0,"write":0}}}},"finish":"stop"}}"#
    )
}

fn text_part(text: &str) -> String {
    serde_json::json!({"type": "text", "text": text}).to_string()
}

/// A one-turn session: a user prompt and an assistant answer.
fn add_turn(conn: &Connection, id: &str, dir: &str, updated: u64, answer: &str) {
    add_session(conn, id, dir, updated, None);
    let (u, a) = (format!("msg_{id}_1"), format!("msg_{id}_2"));
    add_message(conn, &u, id, updated - 2, &user(updated - 2));
    add_part(conn, &format!("prt_{id}_1"), &u, id, &text_part("Do it."));
    add_message(conn, &a, id, updated - 1, &assistant(updated - 1));
    add_part(conn, &format!("prt_{id}_2"), &a, id, &text_part(answer));
}

fn how(found: &Found) -> String {
    found.how.join("\n")
}

// ---------------------------------------------------------------------------------------
// SQLite store

#[test]
fn fixture_db_marker_found_with_final_answer_and_tokens() {
    let env = Env::new().with_fixture_db();
    let found = env.find(&query(DIR, START, Some(MARKER))).expect("found");
    assert_eq!(found.store, Store::Opencode);
    assert_eq!(found.path, env.db_path());
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    assert!(found.marker_found && !found.weak, "{}", how(&found));
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    // Three assistant messages of 900/20 since the start.
    assert_eq!(found.input_tokens, Some(2700));
    assert_eq!(found.output_tokens, Some(60));
    let how = how(&found);
    assert!(
        how.contains("3 sessions, 3 in the directory, 3 updated since the start"),
        "{how}"
    );
    assert!(how.contains("marker found"), "{how}");
}

#[test]
fn marker_absent_gives_newest_candidate_as_weak_match() {
    let env = Env::new().with_fixture_db();
    let found = env
        .find(&query(DIR, START, Some("WEFT_DONE_ffffffffffffffff")))
        .expect("weak");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    assert!(!found.marker_found && found.weak);
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    assert!(how(&found).contains("(weak)"), "{}", how(&found));

    // No marker at all: also weak.
    let found = env.find(&query(DIR, START, None)).expect("weak");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    assert!(found.weak && !found.marker_found);
}

#[test]
fn announced_session_id_is_checked_first() {
    let env = Env::new().with_fixture_db();
    let conn = env.writer();
    // A newer session in the same directory that also holds the marker.
    add_turn(&conn, "ses_newer", DIR, 1_795_989_400_000, FINAL);
    // A session elsewhere, announced by the stream.
    add_turn(
        &conn,
        "ses_elsewhere",
        "/tmp/other",
        1_795_989_400_000,
        "Other. ORCH-DONE-MARKER-7f3a9c",
    );
    drop(conn);

    let found = env.find(&query(DIR, START, Some(MARKER))).expect("found");
    assert_eq!(found.session_id.as_deref(), Some("ses_newer"));

    let mut q = query(DIR, START, Some(MARKER));
    q.session_id = Some(SES_A);
    let found = env.find(&q).expect("found");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    assert!(found.marker_found);
    assert!(how(&found).contains(&format!(
        "session id {SES_A} announced: found in the database"
    )));

    // The announced session lacks the marker: the scan goes on and finds it elsewhere.
    q.session_id = Some(SES_B);
    let found = env.find(&q).expect("found");
    assert_eq!(found.session_id.as_deref(), Some("ses_newer"));
    assert!(how(&found).contains(&format!("session {SES_B}: marker not in assistant text")));

    // No marker: the announced session is the weak match, even though others are newer.
    let mut q = query(DIR, START, None);
    q.session_id = Some(SES_C);
    let found = env.find(&q).expect("weak");
    assert_eq!(found.session_id.as_deref(), Some(SES_C));
    assert!(found.weak);
    assert_eq!(found.final_answer, None, "the 401 turn has no text");

    // The announced id is authoritative even outside the directory and before the start.
    let mut q = query(DIR, 1_795_989_500_000, Some(MARKER));
    q.session_id = Some("ses_elsewhere");
    let found = env.find(&q).expect("found");
    assert_eq!(found.session_id.as_deref(), Some("ses_elsewhere"));
    assert!(found.marker_found);

    // An unknown announced id falls back to the scan.
    let mut q = query(DIR, START, Some(MARKER));
    q.session_id = Some("ses_doesnotexist");
    let found = env.find(&q).expect("found");
    assert_eq!(found.session_id.as_deref(), Some("ses_newer"));
    assert!(how(&found).contains("announced: not found"));
}

#[test]
fn directory_filter() {
    let env = Env::new().with_fixture_db();
    let conn = env.writer();
    add_turn(
        &conn,
        "ses_other",
        "/tmp/other",
        1_795_989_400_000,
        "Other. ORCH-DONE-MARKER-7f3a9c",
    );
    drop(conn);

    assert_eq!(env.find(&query("/tmp/nowhere", START, Some(MARKER))), None);
    let found = env.find(&query(DIR, START, Some(MARKER))).expect("found");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    let found = env.find(&query("/tmp/other", START, None)).expect("weak");
    assert_eq!(found.session_id.as_deref(), Some("ses_other"));
    // A trailing slash on the attempt's directory still matches.
    let found = env
        .find(&query("/tmp/mockproj-oc/", START, Some(MARKER)))
        .expect("found");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
}

#[test]
fn time_filter_drops_sessions_updated_before_the_start() {
    let env = Env::new().with_fixture_db();
    // Only A (updated …376764) is left; C (…366546) and B (…358131) are older.
    let found = env
        .find(&query(
            DIR,
            1_795_989_370_000,
            Some("WEFT_DONE_ffffffffffffffff"),
        ))
        .expect("weak");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    assert!(
        how(&found).contains("1 updated since the start"),
        "{}",
        how(&found)
    );
    // Tokens count only the assistant messages created since the start.
    assert_eq!(found.input_tokens, Some(900));
    assert_eq!(found.output_tokens, Some(20));

    let found = env
        .find(&query(DIR, 1_795_989_360_000, None))
        .expect("weak");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    assert!(how(&found).contains("2 updated since the start"));

    assert_eq!(env.find(&query(DIR, 1_795_989_400_000, Some(MARKER))), None);
}

#[test]
fn marker_only_in_user_tool_reasoning_or_synthetic_parts_is_not_evidence() {
    let env = Env::new().with_fixture_db();
    let marker = "WEFT_DONE_0123456789abcdef";
    let (dir, sid) = ("/tmp/proj-e", "ses_e");
    let conn = env.writer();
    add_session(&conn, sid, dir, 1_795_989_400_000, None);
    add_message(
        &conn,
        "msg_e1",
        sid,
        1_795_989_390_000,
        &user(1_795_989_390_000),
    );
    add_part(
        &conn,
        "prt_e1",
        "msg_e1",
        sid,
        &text_part(&format!("End with {marker}.")),
    );
    add_message(
        &conn,
        "msg_e2",
        sid,
        1_795_989_391_000,
        &assistant(1_795_989_391_000),
    );
    let tool = serde_json::json!({"type": "tool", "tool": "read", "callID": "c1",
        "state": {"status": "completed", "input": {}, "output": marker, "title": marker}});
    add_part(&conn, "prt_e2", "msg_e2", sid, &tool.to_string());
    let reasoning = serde_json::json!({"type": "reasoning", "text": marker});
    add_part(&conn, "prt_e3", "msg_e2", sid, &reasoning.to_string());
    let synthetic = serde_json::json!({"type": "text", "text": marker, "synthetic": true});
    add_part(&conn, "prt_e4", "msg_e2", sid, &synthetic.to_string());
    add_part(&conn, "prt_e5", "msg_e2", sid, &text_part("Working on it."));
    drop(conn);

    let found = env.find(&query(dir, START, Some(marker))).expect("weak");
    assert_eq!(found.session_id.as_deref(), Some(sid));
    assert!(!found.marker_found && found.weak, "{}", how(&found));
    assert_eq!(found.final_answer.as_deref(), Some("Working on it."));

    // The fixture's user prompts ("Read the file please. TOOL_read:…") and tool output
    // ("hello from the fixture file") are not assistant text either.
    for text in [
        "Read the file please",
        "hello from the fixture file",
        "Follow up.",
    ] {
        let found = env.find(&query(DIR, START, Some(text))).expect("weak");
        assert!(!found.marker_found, "{text}");
    }
}

#[test]
fn rows_only_in_the_wal_are_found_and_the_wal_is_left_alone() {
    let env = Env::new().with_fixture_db();
    let marker = "WEFT_DONE_a1b2c3d4e5f60718";
    let writer = env.writer();
    let mode: String = writer
        .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
        .expect("wal");
    assert_eq!(mode, "wal");
    writer
        .execute_batch("PRAGMA wal_autocheckpoint=0;")
        .expect("no autocheckpoint");
    add_turn(
        &writer,
        "ses_wal",
        "/tmp/wal-proj",
        1_795_989_500_000,
        &format!("Done. {marker}"),
    );

    let db = env.db_path();
    let wal = env.data().join("opencode.db-wal");
    let main_before = fs::read(&db).expect("db");
    let wal_before = fs::read(&wal).expect("wal");
    let contains = |hay: &[u8]| hay.windows(marker.len()).any(|w| w == marker.as_bytes());
    assert!(
        !contains(&main_before),
        "the row must not be in the main file yet"
    );
    assert!(contains(&wal_before), "the row must be in the WAL");

    let found = env
        .find(&query("/tmp/wal-proj", START, Some(marker)))
        .expect("found through the WAL");
    assert_eq!(found.session_id.as_deref(), Some("ses_wal"));
    assert!(found.marker_found);
    assert_eq!(found.path, db);
    assert_eq!(found.final_answer, Some(format!("Done. {marker}")));
    assert_eq!(
        (found.input_tokens, found.output_tokens),
        (Some(10), Some(5))
    );

    // Nothing was checkpointed or written.
    assert_eq!(fs::read(&db).expect("db"), main_before);
    assert!(contains(&fs::read(&wal).expect("wal")));
    assert!(fs::metadata(&wal).expect("wal").len() >= wal_before.len() as u64);
    // The writer is not blocked.
    add_turn(
        &writer,
        "ses_wal2",
        "/tmp/wal-proj",
        1_795_989_600_000,
        "More.",
    );
    drop(writer);

    // Writer gone (its close checkpoints and removes the WAL): still readable.
    let found = env
        .find(&query("/tmp/wal-proj", START, Some(marker)))
        .expect("found after the writer closed");
    assert_eq!(found.session_id.as_deref(), Some("ses_wal"));
}

#[test]
fn missing_tables_or_columns_yield_none() {
    // No session table at all.
    let env = Env::new();
    let conn = env.writer();
    conn.execute_batch("CREATE TABLE project (id text PRIMARY KEY, worktree text);")
        .expect("ddl");
    drop(conn);
    assert_eq!(env.find(&query(DIR, START, Some(MARKER))), None);

    // Sessions but no message or part table.
    let env = Env::new();
    let conn = env.writer();
    conn.execute_batch(
        "CREATE TABLE session (id text PRIMARY KEY, directory text, time_updated integer);
         INSERT INTO session VALUES ('ses_x', '/tmp/mockproj-oc', 1795989400000);",
    )
    .expect("ddl");
    drop(conn);
    assert_eq!(env.find(&query(DIR, START, None)), None);

    // A session table without a directory column.
    let env = Env::new();
    let conn = env.writer();
    conn.execute_batch(
        "CREATE TABLE session (id text PRIMARY KEY, cwd text, time_updated integer);
         INSERT INTO session VALUES ('ses_x', '/tmp/mockproj-oc', 1795989400000);",
    )
    .expect("ddl");
    drop(conn);
    assert_eq!(env.find(&query(DIR, START, None)), None);
}

#[test]
fn schema_drift_with_fewer_columns_still_reads() {
    let env = Env::new();
    let conn = env.writer();
    conn.execute_batch(
        "CREATE TABLE session (id text PRIMARY KEY, directory text, time_updated integer);
         CREATE TABLE message (id text PRIMARY KEY, session_id text, time_created integer, data text);
         CREATE TABLE part (id text PRIMARY KEY, message_id text, data blob);",
    )
    .expect("ddl");
    conn.execute(
        "INSERT INTO session VALUES ('ses_d', ?1, 1795989400000)",
        [DIR],
    )
    .expect("session");
    conn.execute(
        "INSERT INTO message VALUES ('msg_d', 'ses_d', 1795989399000, ?1)",
        [assistant(1_795_989_399_000)],
    )
    .expect("message");
    conn.execute(
        "INSERT INTO part VALUES ('prt_d', 'msg_d', ?1)",
        [text_part(FINAL)],
    )
    .expect("part");
    drop(conn);
    let found = env.find(&query(DIR, START, Some(MARKER))).expect("found");
    assert!(found.marker_found);
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
}

#[test]
fn corrupt_database_yields_none_and_is_not_modified() {
    let env = Env::new();
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend((0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    fs::write(env.db_path(), &bytes).expect("write");
    assert_eq!(env.find(&query(DIR, START, Some(MARKER))), None);
    assert_eq!(fs::read(env.db_path()).expect("db"), bytes);

    fs::write(env.db_path(), "this is not a database\n").expect("write");
    assert_eq!(env.find(&query(DIR, START, None)), None);

    // A fixture database cut in half.
    let env = Env::new().with_fixture_db();
    let full = fs::read(env.db_path()).expect("db");
    fs::write(env.db_path(), &full[..full.len() / 2]).expect("truncate");
    let _ = env.find(&query(DIR, START, Some(MARKER))); // less or nothing, no panic
}

#[test]
fn corrupt_database_falls_back_to_legacy_storage() {
    let env = Env::new().with_legacy();
    fs::write(env.db_path(), "garbage").expect("write");
    let found = env
        .find(&query(LEGACY_DIR, LEGACY_START, Some(MARKER)))
        .expect("legacy");
    assert!(found.marker_found);
    assert_eq!(found.session_id.as_deref(), Some(LEGACY_SES));
    assert!(how(&found).contains("cannot open") || how(&found).contains("unreadable"));
}

#[test]
fn locked_database_gives_up_quickly() {
    let env = Env::new().with_fixture_db();
    let writer = env.writer();
    writer
        .execute_batch("BEGIN EXCLUSIVE; UPDATE session SET title = 'x';")
        .expect("lock");
    let started = Instant::now();
    let found = env.find(&query(DIR, START, Some(MARKER)));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(found.is_none_or(|f| f.session_id.is_some()));
    writer.execute_batch("ROLLBACK;").expect("unlock");
}

#[test]
fn bad_json_and_unknown_part_types_are_skipped() {
    let env = Env::new().with_fixture_db();
    let conn = env.writer();
    let last = "msg_2294f0bcb001irwXavX99EBJ8F"; // A's final assistant message
    add_part(
        &conn,
        "prt_2294f0ed2001aaaaaaaaaaaaaa",
        last,
        SES_A,
        r#"{"type":"text","text":"trunc"#,
    );
    add_part(
        &conn,
        "prt_2294f0ed3001aaaaaaaaaaaaaa",
        last,
        SES_A,
        "not json at all",
    );
    add_part(
        &conn,
        "prt_2294f0ed4001aaaaaaaaaaaaaa",
        last,
        SES_A,
        r#"{"type":"hologram","text":"x"}"#,
    );
    add_part(
        &conn,
        "prt_2294f0ed5001aaaaaaaaaaaaaa",
        last,
        SES_A,
        r#"{"type":"text","text":42}"#,
    );
    add_message(
        &conn,
        "msg_2294f0a00001aaaaaaaaaaaaaa",
        SES_A,
        1_795_989_375_500,
        "{{{",
    );
    add_part(
        &conn,
        "prt_2294f0a01001aaaaaaaaaaaaaa",
        "msg_2294f0a00001aaaaaaaaaaaaaa",
        SES_A,
        &text_part("orphan"),
    );
    drop(conn);

    let found = env.find(&query(DIR, START, Some(MARKER))).expect("found");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    assert!(found.marker_found);
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    assert_eq!(found.input_tokens, Some(2700));
}

#[test]
fn sub_agent_sessions_are_not_candidates_unless_announced() {
    let env = Env::new().with_fixture_db();
    let conn = env.writer();
    let marker = "WEFT_DONE_5ab5ab5ab5ab5ab5";
    add_turn(&conn, "ses_child", DIR, 1_795_989_400_000, marker);
    conn.execute(
        "UPDATE session SET parent_id = ?1 WHERE id = 'ses_child'",
        [SES_A],
    )
    .expect("parent");
    drop(conn);
    let found = env.find(&query(DIR, START, Some(marker))).expect("weak");
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    assert!(found.weak);
    let mut q = query(DIR, START, Some(marker));
    q.session_id = Some("ses_child");
    assert!(env.find(&q).expect("found").marker_found);
}

#[test]
fn answer_is_clamped() {
    let env = Env::new().with_fixture_db();
    let mut q = query(DIR, START, Some(MARKER));
    q.answer_chars = 9;
    let found = env.find(&q).expect("found");
    assert_eq!(found.final_answer.as_deref(), Some("ER-7f3a9c"));
}

#[test]
fn missing_data_dir_yields_none_and_home_is_the_fallback() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let q = query(DIR, START, Some(MARKER));
    assert_eq!(opencode::find(&Locator::default(), &q), None);
    let locator = Locator {
        home: Some(tmp.path().to_path_buf()),
        ..Locator::default()
    };
    assert_eq!(opencode::find(&locator, &q), None);
    let locator = Locator {
        xdg_data_home: Some(tmp.path().join("nope")),
        ..Locator::default()
    };
    assert_eq!(opencode::find(&locator, &q), None);

    let data = tmp.path().join(".local/share/opencode");
    fs::create_dir_all(&data).expect("mkdir");
    let conn = Connection::open(data.join("opencode.db")).expect("db");
    conn.execute_batch(&dump()).expect("dump");
    drop(conn);
    let locator = Locator {
        home: Some(tmp.path().to_path_buf()),
        ..Locator::default()
    };
    let found = opencode::find(&locator, &q).expect("found under ~/.local/share");
    assert!(found.marker_found);
    assert_eq!(opencode::data_dir(&locator), Some(data));
}

#[test]
fn channel_database_is_read() {
    let env = Env::new().with_fixture_db();
    fs::rename(env.db_path(), env.data().join("opencode-local.db")).expect("rename");
    let found = env.find(&query(DIR, START, Some(MARKER))).expect("found");
    assert_eq!(found.path, env.data().join("opencode-local.db"));
    assert!(found.marker_found);
}

// ---------------------------------------------------------------------------------------
// OPENCODE_DB

/// The fixture database written at `path`, with one more session of `DIR` whose answer
/// holds `marker`, so that finding it proves which file was read.
fn fixture_db_at(path: &Path, marker: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let conn = Connection::open(path).expect("create db");
    conn.execute_batch(&dump()).expect("load dump");
    add_turn(
        &conn,
        "ses_named",
        DIR,
        START + 500_000,
        &format!("Named. {marker}"),
    );
    drop(conn);
}

fn with_db(locator: Locator, db: impl Into<PathBuf>) -> Locator {
    Locator {
        opencode_db: Some(db.into()),
        ..locator
    }
}

#[test]
fn opencode_db_absolute_path_replaces_the_default_databases() {
    const NAMED: &str = "NAMED-DB-MARKER-1";
    let env = Env::new().with_fixture_db();
    fs::copy(env.db_path(), env.data().join("opencode-local.db")).expect("channel db");
    let named = env._tmp.path().join("elsewhere/custom.db");
    fixture_db_at(&named, NAMED);
    let locator = with_db(env.locator(), &named);
    assert_eq!(
        opencode::databases(&locator),
        opencode::Databases::File(named.clone())
    );

    let found = opencode::find(&locator, &query(DIR, START, Some(NAMED))).expect("found");
    assert_eq!(found.path, named);
    assert_eq!(found.session_id.as_deref(), Some("ses_named"));
    assert!(found.marker_found && !found.weak, "{}", how(&found));
    // The fixture's own session is read from the named file, not from `opencode.db`.
    let found = opencode::find(&locator, &query(DIR, START, Some(MARKER))).expect("found");
    assert_eq!(found.path, named);
    assert_eq!(found.session_id.as_deref(), Some(SES_A));
    let how = how(&found);
    assert!(how.contains("OPENCODE_DB names"), "{how}");
    assert!(!how.contains("opencode.db:"), "{how}");
    assert!(!how.contains("opencode-local.db"), "{how}");

    // No data directory at all: an absolute OPENCODE_DB needs none.
    let bare = Locator {
        opencode_db: Some(named.clone()),
        ..Locator::default()
    };
    let found = opencode::find(&bare, &query(DIR, START, Some(NAMED))).expect("found");
    assert_eq!(found.path, named);
    assert!(found.marker_found);
}

#[test]
fn opencode_db_relative_path_is_resolved_against_the_data_dir() {
    const NAMED: &str = "NAMED-DB-MARKER-2";
    let env = Env::new().with_fixture_db();
    let named = env.data().join("profiles/work.db");
    fixture_db_at(&named, NAMED);
    let locator = with_db(env.locator(), "profiles/work.db");
    assert_eq!(
        opencode::databases(&locator),
        opencode::Databases::File(named.clone())
    );
    let found = opencode::find(&locator, &query(DIR, START, Some(NAMED))).expect("found");
    assert_eq!(found.path, named);
    assert!(found.marker_found && !found.weak, "{}", how(&found));
    // Not resolved against the process's working directory, nor left relative.
    assert!(found.path.is_absolute());

    // A relative OPENCODE_DB with no data directory known cannot be placed.
    let bare = Locator {
        opencode_db: Some("profiles/work.db".into()),
        ..Locator::default()
    };
    assert_eq!(opencode::databases(&bare), opencode::Databases::Unknown);
    assert_eq!(opencode::find(&bare, &query(DIR, START, Some(NAMED))), None);
}

#[test]
fn opencode_db_in_memory_means_no_store() {
    // A real `opencode.db` sits in the data dir, but OpenCode was told not to use it.
    let env = Env::new().with_fixture_db();
    let locator = with_db(env.locator(), ":memory:");
    assert_eq!(opencode::databases(&locator), opencode::Databases::InMemory);
    assert_eq!(
        opencode::find(&locator, &query(DIR, START, Some(MARKER))),
        None
    );
    let mut q = query(DIR, START, None);
    q.session_id = Some(SES_A);
    assert_eq!(opencode::find(&locator, &q), None);
    // No file named ":memory:" was created anywhere.
    assert!(!env.data().join(":memory:").exists());
    // Without a data dir too.
    let bare = with_db(Locator::default(), ":memory:");
    assert_eq!(opencode::databases(&bare), opencode::Databases::InMemory);
    assert_eq!(
        opencode::find(&bare, &query(DIR, START, Some(MARKER))),
        None
    );
}

#[test]
fn opencode_db_in_memory_still_reads_legacy_storage() {
    // JSON storage comes from OpenCode 1.1 and older, which predate OPENCODE_DB.
    let env = Env::new().with_fixture_db().with_legacy();
    let locator = with_db(env.locator(), ":memory:");
    let found =
        opencode::find(&locator, &query(LEGACY_DIR, LEGACY_START, Some(MARKER))).expect("legacy");
    assert_eq!(found.session_id.as_deref(), Some(LEGACY_SES));
    assert!(how(&found).contains(":memory:"), "{}", how(&found));
    assert_eq!(
        opencode::find(&locator, &query(DIR, START, Some(MARKER))),
        None
    );
}

#[test]
fn opencode_db_pointing_nowhere_yields_nothing() {
    let env = Env::new().with_fixture_db();
    let q = query(DIR, START, Some(MARKER));
    let missing_abs = env._tmp.path().join("no/such.db");
    let folder = env.data().join("a-folder.db");
    fs::create_dir_all(&folder).expect("mkdir");
    let garbage = env.data().join("garbage.db");
    fs::write(&garbage, "this is not an SQLite database, not at all").expect("write");
    for db in [
        missing_abs.clone(),
        PathBuf::from("no-such.db"),
        folder,
        garbage.clone(),
    ] {
        let locator = with_db(env.locator(), &db);
        // The default `opencode.db` (which holds the marker) is not read instead.
        assert_eq!(
            opencode::find(&locator, &q),
            None,
            "OPENCODE_DB={}",
            db.display()
        );
    }
    // Nothing was created or changed on the way.
    assert!(!missing_abs.exists());
    assert!(!env.data().join("no-such.db").exists());
    assert_eq!(
        fs::read(&garbage).expect("read"),
        b"this is not an SQLite database, not at all"
    );
}

// ---------------------------------------------------------------------------------------
// Legacy JSON storage

fn legacy_part(env: &Env, message: &str, part: &str) -> PathBuf {
    env.storage()
        .join("part")
        .join(message)
        .join(format!("{part}.json"))
}

#[test]
fn legacy_storage_found() {
    let env = Env::new().with_legacy();
    let found = env
        .find(&query(LEGACY_DIR, LEGACY_START, Some(MARKER)))
        .expect("found");
    assert_eq!(found.store, Store::Opencode);
    assert_eq!(
        found.path,
        env.storage()
            .join("session/global")
            .join(format!("{LEGACY_SES}.json"))
    );
    assert_eq!(found.session_id.as_deref(), Some(LEGACY_SES));
    assert!(found.marker_found && !found.weak, "{}", how(&found));
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    assert_eq!(
        (found.input_tokens, found.output_tokens),
        (Some(1800), Some(40))
    );
    assert!(how(&found).contains("1 session files, 1 in the directory, 1 updated since the start"));

    // Filters apply to the legacy tree too.
    assert_eq!(env.find(&query(DIR, LEGACY_START, Some(MARKER))), None);
    assert_eq!(
        env.find(&query(LEGACY_DIR, 1_795_989_500_000, Some(MARKER))),
        None
    );
    // The prompt ("Read the file please") and the tool output are not evidence.
    let found = env
        .find(&query(
            LEGACY_DIR,
            LEGACY_START,
            Some("hello from the fixture file"),
        ))
        .expect("weak");
    assert!(found.weak);
    // Announced id.
    let mut q = query(DIR, 1_795_989_500_000, Some(MARKER));
    q.session_id = Some(LEGACY_SES);
    assert!(env.find(&q).expect("found").marker_found);
    // A hostile announced id is not a path.
    q.session_id = Some("../../etc/passwd");
    assert_eq!(env.find(&q), None);
}

#[test]
fn database_and_legacy_storage_together() {
    let env = Env::new().with_fixture_db().with_legacy();
    let found = env.find(&query(DIR, START, Some(MARKER))).expect("db");
    assert_eq!(found.path, env.db_path());
    let found = env
        .find(&query(LEGACY_DIR, START, Some(MARKER)))
        .expect("legacy");
    assert_eq!(found.session_id.as_deref(), Some(LEGACY_SES));
    assert!(found.path.ends_with(format!("{LEGACY_SES}.json")));
}

#[test]
fn legacy_truncated_files_are_skipped() {
    // The final text part cut short: no evidence, no final answer, still the weak match.
    let env = Env::new().with_legacy();
    let part = legacy_part(
        &env,
        "msg_22950b4a7001fJ6III5ysUu3m0",
        "prt_22950b4bc001YlyMMh5f3PzUGJ",
    );
    let bytes = fs::read(&part).expect("part");
    fs::write(&part, &bytes[..bytes.len() / 2]).expect("truncate");
    let found = env
        .find(&query(LEGACY_DIR, LEGACY_START, Some(MARKER)))
        .expect("weak");
    assert!(found.weak && !found.marker_found);
    assert_eq!(found.final_answer, None);

    // A truncated message file: that message is skipped, the rest still reads.
    let env = Env::new().with_legacy();
    let msg = env
        .storage()
        .join("message")
        .join(LEGACY_SES)
        .join("msg_22950b441001hydS2YCkotZpqh.json");
    fs::write(&msg, "{\"id\": \"msg_22950b441001hydS2Y").expect("truncate");
    let found = env
        .find(&query(LEGACY_DIR, LEGACY_START, Some(MARKER)))
        .expect("found");
    assert!(found.marker_found);
    assert_eq!(
        (found.input_tokens, found.output_tokens),
        (Some(900), Some(20))
    );

    // A truncated session file: the session is not listed at all.
    let env = Env::new().with_legacy();
    let session = env
        .storage()
        .join("session/global")
        .join(format!("{LEGACY_SES}.json"));
    let bytes = fs::read(&session).expect("session");
    fs::write(&session, &bytes[..bytes.len() - 10]).expect("truncate");
    assert_eq!(
        env.find(&query(LEGACY_DIR, LEGACY_START, Some(MARKER))),
        None
    );
}
