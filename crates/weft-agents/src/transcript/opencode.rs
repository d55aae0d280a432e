//! OpenCode transcripts.
//!
//! OpenCode keeps its sessions under its data directory (`$XDG_DATA_HOME/opencode`, else
//! `~/.local/share/opencode`) in two layouts:
//!
//! - **SQLite** (1.2 and later): `opencode.db` (or a channel database `opencode-<channel>.db`
//!   beside it) with the tables `session(id, directory, parent_id, time_updated, …)`,
//!   `message(id, session_id, time_created, data)` and `part(id, message_id, session_id,
//!   data)`, where `data` is the JSON of the message or part without its ids. The database
//!   runs in WAL mode and recent rows may live only in `opencode.db-wal`; it is opened
//!   **read-only** through SQLite (which reads the WAL), with a short busy timeout, and is
//!   never checkpointed or written. When `OPENCODE_DB` is set
//!   ([`Locator::opencode_db`](super::Locator::opencode_db)) it replaces those files: the
//!   one it names (absolute, or relative to the data directory) is the only database read,
//!   and `:memory:` means none ever reaches the disk, so none is read.
//! - **Legacy JSON files** (1.1.x and older): `storage/session/<project>/<session>.json`,
//!   `storage/message/<session>/<message>.json`, `storage/part/<message>/<part>.json`.
//!   Ids are taken from the file names, as OpenCode's own importer does. These versions
//!   predate `OPENCODE_DB`, so the JSON files are read whatever it says.
//!
//! Discovery: the session announced in the stream (`sessionID`) first, whatever its
//! directory or age; then sessions of the attempt's directory (sub-agent sessions, which
//! have a parent, are left out) last updated at or after the attempt's start, newest first,
//! the database before the JSON files on a tie. The first whose assistant `text` parts
//! hold the marker is the attempt's; without one, the first readable candidate is returned
//! as a weak match. User parts, tool parts, reasoning and synthetic (injected) text are
//! never evidence.
//!
//! Extraction: the final answer is the text parts of the last assistant message, joined
//! with newlines and clamped; token counts are the sums of `tokens.input` and
//! `tokens.output` over the session's assistant messages created since the attempt started
//! (over all of them when none was).
//!
//! Everything is lenient: a missing directory, a locked or corrupt database, missing tables
//! or columns, bad JSON in a `data` column, unknown part types and truncated or oversized
//! JSON files yield less (or `None`), never an error or a panic.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value as Json;

use super::{Found, Locator, Query, Store, clamp};
use crate::evidence::text_contains_marker;

/// How long a read waits for a writer's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_millis(250);
/// Legacy session and message files larger than this are skipped.
const SMALL_FILE_MAX: u64 = 1 << 20;
/// Legacy part files larger than this are skipped (tool output can be huge).
const PART_FILE_MAX: u64 = 16 << 20;

/// OpenCode's data directory: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`.
pub fn data_dir(locator: &Locator) -> Option<PathBuf> {
    if let Some(xdg) = &locator.xdg_data_home
        && xdg.is_absolute()
    {
        return Some(xdg.join("opencode"));
    }
    locator
        .home
        .as_ref()
        .map(|home| home.join(".local").join("share").join("opencode"))
}

/// Which SQLite databases OpenCode uses, by `OPENCODE_DB` and the data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Databases {
    /// `OPENCODE_DB=:memory:`: sessions never reach the disk, so there is no store to read.
    InMemory,
    /// `OPENCODE_DB` names this file (resolved against the data directory when relative).
    File(PathBuf),
    /// `OPENCODE_DB` unset: `opencode.db` and any `opencode-<channel>.db` in this directory.
    DataDir(PathBuf),
    /// No data directory is known, so a relative `OPENCODE_DB` or the default cannot be
    /// placed.
    Unknown,
}

/// Where OpenCode's databases are for `locator`; a front end uses it to explain an empty
/// result (`Databases::InMemory`).
pub fn databases(locator: &Locator) -> Databases {
    let data = data_dir(locator);
    match locator.opencode_db.as_deref() {
        Some(db) if db.as_os_str() == ":memory:" => Databases::InMemory,
        Some(db) if db.is_absolute() => Databases::File(db.to_path_buf()),
        Some(db) => data.map_or(Databases::Unknown, |data| Databases::File(data.join(db))),
        None => data.map_or(Databases::Unknown, Databases::DataDir),
    }
}

/// Find the attempt's OpenCode session (see the module documentation).
pub fn find(locator: &Locator, query: &Query<'_>) -> Option<Found> {
    let mut how = Vec::new();
    let data = match data_dir(locator) {
        Some(data) if data.is_dir() => {
            how.push(format!("data dir {}", data.display()));
            Some(data)
        }
        Some(data) => {
            how.push(format!("data dir {} missing", data.display()));
            None
        }
        None => {
            how.push("no data dir known".to_owned());
            None
        }
    };
    let files = match databases(locator) {
        Databases::InMemory => {
            how.push("OPENCODE_DB is \":memory:\": no database on disk to read".to_owned());
            Vec::new()
        }
        Databases::File(path) if path.is_file() => {
            how.push(format!("OPENCODE_DB names {}", path.display()));
            vec![path]
        }
        Databases::File(path) => {
            how.push(format!(
                "OPENCODE_DB names {}: no such file",
                path.display()
            ));
            Vec::new()
        }
        Databases::DataDir(dir) => database_files(&dir),
        Databases::Unknown => Vec::new(),
    };
    let started_ms = millis(query.started_at);
    let directories = directory_forms(query.cwd);
    let announced = query.session_id.filter(|id| !id.is_empty());
    let marker = query.marker.filter(|m| !m.is_empty());

    let mut dbs: Vec<(PathBuf, Connection)> = Vec::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    for path in files {
        match open_db(&path) {
            Ok(conn) => {
                let index = dbs.len();
                match db_candidates(&conn, index, &directories, started_ms, announced) {
                    Ok((found, step)) => {
                        how.push(format!("database {}: {step}", path.display()));
                        candidates.extend(found);
                        dbs.push((path, conn));
                    }
                    Err(err) => {
                        how.push(format!("database {}: unreadable ({err})", path.display()))
                    }
                }
            }
            Err(err) => how.push(format!("database {}: cannot open ({err})", path.display())),
        }
    }
    // Legacy storage needs the data directory; an absolute `OPENCODE_DB` does not.
    let storage = data
        .map(|data| data.join("storage"))
        .filter(|storage| storage.join("session").is_dir());
    if let Some(storage) = &storage {
        let (found, step) = legacy_candidates(storage, &directories, started_ms, announced);
        how.push(format!("legacy storage {}: {step}", storage.display()));
        candidates.extend(found);
    }

    // Announced session first, then newest first, the database before the JSON files.
    candidates.sort_by(|a, b| {
        b.announced
            .cmp(&a.announced)
            .then(b.updated_ms.cmp(&a.updated_ms))
            .then(a.source.rank().cmp(&b.source.rank()))
            .then(a.id.cmp(&b.id))
    });
    let mut seen = HashSet::new();
    candidates.retain(|c| seen.insert(c.id.clone()));
    if let Some(id) = announced {
        match candidates.iter().find(|c| c.announced) {
            Some(c) => how.push(format!(
                "session id {id} announced: found in {}",
                c.source.name()
            )),
            None => how.push(format!("session id {id} announced: not found")),
        }
    }
    if candidates.is_empty() {
        how.push("no candidate session".to_owned());
        return None;
    }
    how.push(format!(
        "{} candidate sessions, newest first",
        candidates.len()
    ));

    let mut weak: Option<(usize, Transcript)> = None;
    for (i, candidate) in candidates.iter().enumerate() {
        let transcript = match &candidate.source {
            Source::Db(index) => dbs
                .get(*index)
                .and_then(|(_, conn)| load_db(conn, &candidate.id)),
            Source::Legacy(_) => storage
                .as_deref()
                .map(|storage| load_legacy(storage, &candidate.id)),
        };
        let Some(transcript) = transcript else {
            how.push(format!("session {}: unreadable, skipped", candidate.id));
            continue;
        };
        if let Some(marker) = marker {
            if transcript.has_marker(marker) {
                how.push(format!(
                    "session {}: marker found in assistant text",
                    candidate.id
                ));
                return Some(found(
                    candidate, &dbs, transcript, true, how, query, started_ms,
                ));
            }
            how.push(format!(
                "session {}: marker not in assistant text",
                candidate.id
            ));
        }
        if weak.is_none() {
            weak = Some((i, transcript));
            if marker.is_none() {
                break;
            }
        }
    }
    let (i, transcript) = weak?;
    let candidate = &candidates[i];
    how.push(match marker {
        Some(_) => format!("no marker match: newest candidate {} (weak)", candidate.id),
        None => format!("no marker given: newest candidate {} (weak)", candidate.id),
    });
    Some(found(
        candidate, &dbs, transcript, false, how, query, started_ms,
    ))
}

fn found(
    candidate: &Candidate,
    dbs: &[(PathBuf, Connection)],
    transcript: Transcript,
    marker_found: bool,
    how: Vec<String>,
    query: &Query<'_>,
    started_ms: i64,
) -> Found {
    let path = match &candidate.source {
        Source::Db(index) => dbs.get(*index).map(|(p, _)| p.clone()).unwrap_or_default(),
        Source::Legacy(path) => path.clone(),
    };
    let (input_tokens, output_tokens) = transcript.tokens(started_ms);
    Found {
        store: Store::Opencode,
        path,
        session_id: Some(candidate.id.clone()),
        marker_found,
        weak: !marker_found,
        how,
        final_answer: transcript.final_answer(query.answer_chars),
        input_tokens,
        output_tokens,
    }
}

// ---------------------------------------------------------------------------------------
// Candidates and transcripts

#[derive(Debug)]
enum Source {
    /// Index into the opened databases.
    Db(usize),
    /// The legacy session file.
    Legacy(PathBuf),
}

impl Source {
    fn rank(&self) -> u8 {
        match self {
            Source::Db(_) => 0,
            Source::Legacy(_) => 1,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Source::Db(_) => "the database",
            Source::Legacy(_) => "legacy storage",
        }
    }
}

#[derive(Debug)]
struct Candidate {
    id: String,
    updated_ms: i64,
    announced: bool,
    source: Source,
}

#[derive(Debug, Default)]
struct Message {
    id: String,
    created_ms: i64,
    assistant: bool,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// Assistant-authored text parts, in order.
    texts: Vec<String>,
}

#[derive(Debug, Default)]
struct Transcript {
    /// Chronological.
    messages: Vec<Message>,
}

impl Transcript {
    fn sort(&mut self) {
        self.messages.sort_by(|a, b| {
            a.created_ms
                .cmp(&b.created_ms)
                .then_with(|| a.id.cmp(&b.id))
        });
    }

    fn has_marker(&self, marker: &str) -> bool {
        self.messages
            .iter()
            .filter(|m| m.assistant)
            .flat_map(|m| &m.texts)
            .any(|text| text_contains_marker(text, marker).is_some())
    }

    fn final_answer(&self, max: usize) -> Option<String> {
        let last = self.messages.iter().rev().find(|m| m.assistant)?;
        let joined = last.texts.join("\n");
        let answer = clamp(&joined, max);
        (!answer.is_empty()).then_some(answer)
    }

    fn tokens(&self, started_ms: i64) -> (Option<u64>, Option<u64>) {
        let since: Vec<&Message> = self
            .messages
            .iter()
            .filter(|m| m.assistant && m.created_ms >= started_ms)
            .collect();
        let messages: Vec<&Message> = if since.is_empty() {
            self.messages.iter().filter(|m| m.assistant).collect()
        } else {
            since
        };
        let sum = |get: fn(&Message) -> Option<u64>| {
            messages
                .iter()
                .filter_map(|m| get(m))
                .fold(None, |acc: Option<u64>, n| {
                    Some(acc.unwrap_or(0).saturating_add(n))
                })
        };
        (sum(|m| m.input_tokens), sum(|m| m.output_tokens))
    }
}

/// Role and token counts of a message's JSON (`data` column or legacy file).
fn message_info(info: &Json, message: &mut Message) {
    message.assistant = info.get("role").and_then(Json::as_str) == Some("assistant");
    if let Some(tokens) = info.get("tokens") {
        message.input_tokens = tokens.get("input").and_then(as_count);
        message.output_tokens = tokens.get("output").and_then(as_count);
    }
}

/// The text of an assistant-authored text part, if `part` is one.
fn part_text(part: &Json) -> Option<String> {
    if part.get("type").and_then(Json::as_str) != Some("text") {
        return None;
    }
    if part.get("synthetic").and_then(Json::as_bool) == Some(true)
        || part.get("ignored").and_then(Json::as_bool) == Some(true)
    {
        return None;
    }
    part.get("text").and_then(Json::as_str).map(str::to_owned)
}

fn as_count(value: &Json) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

// ---------------------------------------------------------------------------------------
// SQLite

/// `opencode.db` first, then channel databases (`opencode-<channel>.db`), by name.
fn database_files(data: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let main = data.join("opencode.db");
    if main.is_file() {
        files.push(main);
    }
    let mut channels: Vec<PathBuf> = fs_err::read_dir(data)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let name = name.to_str()?;
            (name.starts_with("opencode-") && name.ends_with(".db")).then(|| entry.path())
        })
        .filter(|path| path.is_file())
        .collect();
    channels.sort();
    files.extend(channels);
    files
}

/// Read-only, never creating the file, with a short busy timeout.
fn open_db(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Belt and braces: a read-only connection cannot checkpoint anyway.
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<HashSet<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt
        .query_map([table], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<HashSet<String>>>()?;
    Ok(names)
}

/// The sessions of one database that may be the attempt's, and a line for `how`.
fn db_candidates(
    conn: &Connection,
    index: usize,
    directories: &[String],
    started_ms: i64,
    announced: Option<&str>,
) -> rusqlite::Result<(Vec<Candidate>, String)> {
    let cols = columns(conn, "session")?;
    if !cols.contains("id") || !cols.contains("directory") {
        return Err(rusqlite::Error::InvalidColumnName(
            "session table without id or directory".to_owned(),
        ));
    }
    let time = ["time_updated", "time_created"]
        .into_iter()
        .find(|c| cols.contains(*c))
        .ok_or_else(|| {
            rusqlite::Error::InvalidColumnName("session table without time".to_owned())
        })?;
    let parent = if cols.contains("parent_id") {
        "parent_id"
    } else {
        "NULL"
    };
    let select = format!("SELECT id, {time}, {parent} FROM session");

    let total: i64 = conn.query_row("SELECT count(*) FROM session", [], |row| row.get(0))?;
    let mut candidates = Vec::new();

    if let Some(id) = announced {
        let mut stmt = conn.prepare(&format!("{select} WHERE id = ?1"))?;
        let mut rows = stmt.query([id])?;
        if let Ok(Some(row)) = rows.next()
            && let Some((id, updated_ms, _)) = session_row(row)
        {
            candidates.push(Candidate {
                id,
                updated_ms,
                announced: true,
                source: Source::Db(index),
            });
        }
    }

    let placeholders = (1..=directories.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut stmt = conn.prepare(&format!("{select} WHERE directory IN ({placeholders})"))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(directories.iter()))?;
    let (mut in_dir, mut recent) = (0usize, 0usize);
    // A row error part-way (a damaged page) ends the listing: less, not nothing.
    while let Ok(Some(row)) = rows.next() {
        let Some((id, updated_ms, has_parent)) = session_row(row) else {
            continue;
        };
        in_dir += 1;
        if updated_ms < started_ms {
            continue;
        }
        recent += 1;
        if has_parent || Some(id.as_str()) == announced {
            continue;
        }
        candidates.push(Candidate {
            id,
            updated_ms,
            announced: false,
            source: Source::Db(index),
        });
    }
    let step =
        format!("{total} sessions, {in_dir} in the directory, {recent} updated since the start");
    Ok((candidates, step))
}

/// `(id, updated_ms, has_parent)` of a `SELECT id, time, parent` row.
fn session_row(row: &rusqlite::Row<'_>) -> Option<(String, i64, bool)> {
    let id = text(row.get::<_, Value>(0).ok()?)?;
    let updated_ms = match row.get::<_, Value>(1).ok()? {
        Value::Integer(n) => n,
        Value::Real(f) if f.is_finite() => f as i64,
        Value::Text(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    let has_parent = match row.get::<_, Value>(2).ok()? {
        Value::Null => false,
        Value::Text(s) => !s.is_empty(),
        _ => true,
    };
    Some((id, updated_ms, has_parent))
}

fn text(value: Value) -> Option<String> {
    match value {
        Value::Text(s) => Some(s),
        Value::Blob(b) => String::from_utf8(b).ok(),
        Value::Integer(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The messages and assistant text parts of one session, or `None` when the tables cannot
/// be read.
fn load_db(conn: &Connection, session_id: &str) -> Option<Transcript> {
    let mut transcript = Transcript::default();
    let mut stmt = conn
        .prepare("SELECT id, time_created, data FROM message WHERE session_id = ?1")
        .ok()?;
    let mut rows = stmt.query([session_id]).ok()?;
    while let Ok(Some(row)) = rows.next() {
        let Some(id) = row.get::<_, Value>(0).ok().and_then(text) else {
            continue;
        };
        let created_ms = match row.get::<_, Value>(1) {
            Ok(Value::Integer(n)) => n,
            Ok(Value::Real(f)) if f.is_finite() => f as i64,
            _ => 0,
        };
        let mut message = Message {
            id,
            created_ms,
            ..Message::default()
        };
        if let Some(info) = row
            .get::<_, Value>(2)
            .ok()
            .and_then(text)
            .and_then(|data| serde_json::from_str::<Json>(&data).ok())
        {
            message_info(&info, &mut message);
        }
        transcript.messages.push(message);
    }
    drop(rows);
    drop(stmt);
    transcript.sort();

    // Text parts only: tool parts (whose output can be large) stay in the database. Bad
    // JSON yields NULL from the CASE, so one bad row cannot fail the query.
    const FILTERED: &str = "SELECT p.id, p.message_id, p.data FROM part p \
         JOIN message m ON m.id = p.message_id WHERE m.session_id = ?1 \
         AND (CASE WHEN json_valid(p.data) THEN json_extract(p.data, '$.type') END) = 'text' \
         ORDER BY p.message_id, p.id";
    const ALL: &str = "SELECT p.id, p.message_id, p.data FROM part p \
         JOIN message m ON m.id = p.message_id WHERE m.session_id = ?1 \
         ORDER BY p.message_id, p.id";
    let mut stmt = conn.prepare(FILTERED).or_else(|_| conn.prepare(ALL)).ok()?;
    let mut rows = stmt.query([session_id]).ok()?;
    let mut parts: Vec<(String, String, String)> = Vec::new();
    while let Ok(Some(row)) = rows.next() {
        let values = (
            row.get::<_, Value>(0).ok().and_then(text),
            row.get::<_, Value>(1).ok().and_then(text),
            row.get::<_, Value>(2).ok().and_then(text),
        );
        if let (Some(id), Some(message_id), Some(data)) = values {
            parts.push((message_id, id, data));
        }
    }
    parts.sort();
    let assistant: HashMap<String, usize> = transcript
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.assistant)
        .map(|(i, m)| (m.id.clone(), i))
        .collect();
    for (message_id, _, data) in parts {
        let Some(message) = assistant
            .get(&message_id)
            .and_then(|&i| transcript.messages.get_mut(i))
        else {
            continue;
        };
        if let Some(text) = serde_json::from_str::<Json>(&data)
            .ok()
            .as_ref()
            .and_then(part_text)
        {
            message.texts.push(text);
        }
    }
    Some(transcript)
}

// ---------------------------------------------------------------------------------------
// Legacy JSON storage

fn legacy_candidates(
    storage: &Path,
    directories: &[String],
    started_ms: i64,
    announced: Option<&str>,
) -> (Vec<Candidate>, String) {
    let sessions = storage.join("session");
    let mut candidates = Vec::new();
    let (mut files, mut in_dir, mut recent) = (0usize, 0usize, 0usize);
    let announced = announced.filter(|id| is_plain_id(id));
    for project in read_dir_paths(&sessions) {
        if !project.is_dir() {
            continue;
        }
        for file in read_dir_paths(&project) {
            if file.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let Some(id) = file.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
                continue;
            };
            files += 1;
            let Some(info) = read_json(&file, SMALL_FILE_MAX) else {
                continue;
            };
            let directory = info.get("directory").and_then(Json::as_str).unwrap_or("");
            let time = info.get("time");
            let Some(updated_ms) = time
                .and_then(|t| t.get("updated").or_else(|| t.get("created")))
                .and_then(as_millis)
            else {
                continue;
            };
            let is_announced = Some(id.as_str()) == announced;
            let in_directory = directories.iter().any(|d| d == directory);
            if in_directory {
                in_dir += 1;
                if updated_ms >= started_ms {
                    recent += 1;
                }
            }
            let has_parent = info
                .get("parentID")
                .and_then(Json::as_str)
                .is_some_and(|p| !p.is_empty());
            if is_announced || (in_directory && updated_ms >= started_ms && !has_parent) {
                candidates.push(Candidate {
                    id,
                    updated_ms,
                    announced: is_announced,
                    source: Source::Legacy(file),
                });
            }
        }
    }
    let step = format!(
        "{files} session files, {in_dir} in the directory, {recent} updated since the start"
    );
    (candidates, step)
}

/// Messages of one legacy session, with their assistant text parts. A missing folder is an
/// empty transcript; unreadable files are skipped.
fn load_legacy(storage: &Path, session_id: &str) -> Transcript {
    let mut transcript = Transcript::default();
    if !is_plain_id(session_id) {
        return transcript;
    }
    for file in read_dir_paths(&storage.join("message").join(session_id)) {
        if file.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Some(id) = file.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let Some(info) = read_json(&file, SMALL_FILE_MAX) else {
            continue;
        };
        let created_ms = info
            .get("time")
            .and_then(|t| t.get("created"))
            .and_then(as_millis)
            .unwrap_or(0);
        let mut message = Message {
            id,
            created_ms,
            ..Message::default()
        };
        message_info(&info, &mut message);
        if message.assistant && is_plain_id(&message.id) {
            let mut parts = read_dir_paths(&storage.join("part").join(&message.id));
            parts.retain(|p| p.extension().and_then(|e| e.to_str()) == Some("json"));
            parts.sort();
            message.texts = parts
                .iter()
                .filter_map(|p| read_json(p, PART_FILE_MAX))
                .filter_map(|part| part_text(&part))
                .collect();
        }
        transcript.messages.push(message);
    }
    transcript.sort();
    transcript
}

/// Ids become path components: only `[A-Za-z0-9_-]`.
fn is_plain_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn read_dir_paths(dir: &Path) -> Vec<PathBuf> {
    fs_err::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .collect()
}

/// A JSON file of at most `max` bytes; `None` when missing, too large, truncated or bad.
fn read_json(path: &Path, max: u64) -> Option<Json> {
    let file = fs_err::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > max {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

fn as_millis(value: &Json) -> Option<i64> {
    value
        .as_i64()
        .or_else(|| value.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

// ---------------------------------------------------------------------------------------
// Helpers

/// Milliseconds since the epoch (OpenCode's timestamps), 0 before it.
fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The spellings of `cwd` a session's `directory` may use: as given, without a trailing
/// slash, and canonicalized.
fn directory_forms(cwd: &Path) -> Vec<String> {
    let mut forms = Vec::new();
    let mut push = |path: &Path| {
        let s = path.to_string_lossy();
        let trimmed = if s.len() > 1 {
            s.trim_end_matches('/')
        } else {
            &s
        };
        for form in [s.as_ref(), trimmed] {
            if !form.is_empty() && !forms.iter().any(|f| f == form) {
                forms.push(form.to_owned());
            }
        }
    };
    push(cwd);
    if let Ok(canonical) = fs_err::canonicalize(cwd) {
        push(&canonical);
    }
    forms
}
