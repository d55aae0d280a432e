//! Codex rollout files: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local ts>-<thread id>.jsonl`
//! (`$CODEX_HOME` else `~/.codex`; early versions wrote `sessions/rollout-*.jsonl` flat).
//! `codex archive` moves a rollout, keeping its name, to `$CODEX_HOME/archived_sessions/`
//! (flat; dated folders there are read too, in case a version keeps them).
//!
//! Discovery, in order:
//!
//! 1. with a thread id (announced by `thread.started`), the rollout the thread index
//!    `state_5.sqlite` (`threads.rollout_path`) names, else the rollout under `sessions/`
//!    whose file name contains the id;
//! 2. every `rollout-*.jsonl` under `sessions/`, less those last modified before the start
//!    (with [`MTIME_SLACK`](super::claude::MTIME_SLACK));
//! 3. unless step 1 found the thread's rollout under `sessions/`, the same for
//!    `archived_sessions/`: the rollout named after the thread id, and the files modified
//!    after the start join the candidates (an archived rollout was moved, not rewritten,
//!    so its modification time is still the attempt's);
//! 4. candidates of both places opened newest first, at most
//!    [`MAX_OPENED`](super::claude::MAX_OPENED) in all, each kept only if its
//!    `session_meta` record's `cwd` is the attempt's directory; the first whose assistant
//!    text holds the marker wins.
//!
//! Without a marker match, the rollout of the thread id (if any) is returned as is, else
//! the newest plausible candidate as a weak match.
//!
//! Assistant-authored text is: `response_item` messages with `role:"assistant"`,
//! `event_msg` `agent_message`, `item_completed` items of type `AgentMessage` and
//! `task_complete.last_agent_message`. Developer and user messages (which hold the
//! prompt, and so the marker's halves) and tool output are never searched. The final
//! answer is the last turn's `task_complete.last_agent_message`, else its last assistant
//! message (one with `phase:"final_answer"` preferred); token usage is the last
//! `token_count`'s `total_token_usage`.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use memchr::memmem::Finder;
use serde::Deserialize;

use super::claude::{
    Candidate, Content, Str, after_start, choose, cwd_forms, for_each_line, is_file,
};
use super::{Found, Locator, Query, Store};
use crate::evidence::text_contains_marker;

/// Find the attempt's Codex rollout. See the module documentation.
pub fn find(locator: &Locator, query: &Query<'_>) -> Option<Found> {
    let root = locator
        .codex_home
        .clone()
        .or_else(|| locator.home.as_ref().map(|home| home.join(".codex")))?;
    let sessions = root.join("sessions");
    let archived = root.join("archived_sessions");
    let mut how = vec![format!("sessions root {}", sessions.display())];
    if !sessions.is_dir() && !archived.is_dir() {
        return None;
    }
    let cwds = cwd_forms(query.cwd);
    let id = query.session_id.filter(|id| safe_id(id));

    let mut expected = None;
    if let Some(id) = id
        && let Some(path) = index_lookup(&root, id)
    {
        how.push(format!(
            "thread index state_5.sqlite names {}",
            path.display()
        ));
        expected = Some(path);
    }
    let (listed, mut candidates, by_name) = walk(&sessions, query.started_at, id);
    if expected.is_none()
        && let Some(id) = id
        && let Some(path) = by_name
    {
        how.push(format!("rollout named after thread id {id}"));
        expected = Some(path);
    }
    how.push(format!(
        "{listed} rollout files, {} modified after the start",
        candidates.len()
    ));
    // Archived rollouts only matter when the thread's own file was not found above.
    if expected.is_none() && archived.is_dir() {
        let (listed, found, by_name) = walk(&archived, query.started_at, id);
        if let Some(id) = id
            && let Some(path) = by_name
        {
            how.push(format!("archived rollout named after thread id {id}"));
            expected = Some(path);
        }
        how.push(format!(
            "archived_sessions: {listed} rollout files, {} modified after the start",
            found.len()
        ));
        candidates.extend(found);
    }
    if expected.is_none()
        && let Some(id) = id
    {
        how.push(format!("no rollout for thread id {id}"));
    }
    choose(
        Store::Codex,
        query,
        how,
        expected,
        candidates,
        |path, expect| scan(path, query.marker, Some(expect)),
        &cwds,
    )
}

fn safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `threads.rollout_path` for the thread id in `$CODEX_HOME/state_5.sqlite`, opened read
/// only; any failure (no file, locked, another schema) is `None`.
pub(super) fn index_lookup(root: &Path, id: &str) -> Option<PathBuf> {
    use rusqlite::{Connection, OpenFlags};
    let db = root.join("state_5.sqlite");
    if !is_file(&db) {
        return None;
    }
    let conn = Connection::open_with_flags(
        &db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    conn.busy_timeout(Duration::from_millis(200)).ok()?;
    let path: String = conn
        .query_row(
            "SELECT rollout_path FROM threads WHERE id = ?1",
            [id],
            |row| row.get(0),
        )
        .ok()?;
    let path = PathBuf::from(path);
    let path = if path.is_relative() {
        root.join(path)
    } else {
        path
    };
    is_file(&path).then_some(path)
}

/// Every `rollout-*.jsonl` under `root` (`sessions/` or `archived_sessions/`; flat, or up to
/// `YYYY/MM/DD` deep): the number listed, those modified after the start, and one whose
/// name holds `id`. A missing or unreadable folder lists nothing.
fn walk(
    root: &Path,
    started_at: SystemTime,
    id: Option<&str>,
) -> (usize, Vec<Candidate>, Option<PathBuf>) {
    let mut listed = 0;
    let mut out = Vec::new();
    let mut by_name = None;
    let mut dirs = vec![(root.to_path_buf(), 0u8)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = fs_err::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("rollout-") && name.ends_with(".jsonl") {
                listed += 1;
                let Ok(meta) = fs_err::metadata(&path) else {
                    continue;
                };
                if !meta.is_file() {
                    continue;
                }
                if by_name.is_none() && id.is_some_and(|id| name.contains(id)) {
                    by_name = Some(path.clone());
                }
                if let Ok(modified) = meta.modified()
                    && after_start(modified, started_at)
                {
                    out.push(Candidate {
                        path,
                        modified,
                        needs_cwd: true,
                    });
                }
            } else if depth < 3 && entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push((path, depth + 1));
            }
        }
    }
    (listed, out, by_name)
}

pub use super::Scan;

/// Streams one rollout file, line by line. `None` when it cannot be opened.
pub fn scan_file(path: &Path, marker: Option<&str>) -> Option<Scan> {
    scan(path, marker, None)
}

fn scan(path: &Path, marker: Option<&str>, expect_cwd: Option<&[PathBuf]>) -> Option<Scan> {
    let file = fs_err::File::open(path).ok()?;
    let needles = [
        "\"assistant\"",
        "\"agent_message\"",
        "\"AgentMessage\"",
        "\"task_complete\"",
        "\"task_started\"",
        "\"session_meta\"",
        "\"token_count\"",
    ]
    .map(Finder::new);
    let mut st = State {
        scan: Scan::default(),
        marker: marker.filter(|m| !m.is_empty()),
        expect_cwd,
        needles,
        final_answer: None,
        locked: false,
        meta_seen: false,
    };
    let stats = for_each_line(file, |line| st.line(line));
    let mut scan = st.scan;
    scan.lines = stats.lines;
    scan.skipped_lines += stats.overlong;
    scan.final_answer = st.final_answer.filter(|a| !a.trim().is_empty());
    Some(scan)
}

struct State<'m> {
    scan: Scan,
    marker: Option<&'m str>,
    expect_cwd: Option<&'m [PathBuf]>,
    needles: [Finder<'static>; 7],
    final_answer: Option<String>,
    /// The answer came from `task_complete` or a `final_answer` message: later commentary
    /// in the same turn does not replace it.
    locked: bool,
    meta_seen: bool,
}

impl State<'_> {
    fn line(&mut self, line: &[u8]) -> ControlFlow<()> {
        if !self.needles.iter().any(|n| n.find(line).is_some()) {
            return ControlFlow::Continue(());
        }
        let Ok(rec) = serde_json::from_slice::<Line<'_>>(line) else {
            self.scan.skipped_lines += 1;
            return ControlFlow::Continue(());
        };
        let (Some(kind), Some(p)) = (rec.kind, rec.payload) else {
            return ControlFlow::Continue(());
        };
        let ptype = p.kind.as_ref().map(|k| k.0.as_ref());
        match (kind.0.as_ref(), ptype) {
            ("session_meta", _) if !self.meta_seen => {
                self.meta_seen = true;
                self.scan.session_id = p.id.map(|i| i.0.into_owned());
                if let Some(cwd) = p.cwd {
                    let cwd = PathBuf::from(cwd.0.as_ref());
                    let mismatch = self
                        .expect_cwd
                        .is_some_and(|expect| !expect.iter().any(|e| e == &cwd));
                    self.scan.cwd = Some(cwd);
                    if mismatch {
                        self.scan.cwd_mismatch = true;
                        return ControlFlow::Break(());
                    }
                }
            }
            ("response_item", Some("message"))
                if p.role.as_ref().is_some_and(|r| r.0 == "assistant") =>
            {
                let text = match &p.content {
                    Some(Content::Blocks(blocks)) => blocks
                        .iter()
                        .filter(|b| b.is("output_text") || b.is("text"))
                        .filter_map(|b| b.text.as_ref().map(|t| t.0.as_ref()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    Some(Content::Text(text)) => text.0.clone().into_owned(),
                    _ => String::new(),
                };
                self.check(&text);
                let final_phase = p.phase.as_ref().is_some_and(|ph| ph.0 == "final_answer");
                if !text.trim().is_empty() && (final_phase || !self.locked) {
                    self.final_answer = Some(text);
                    self.locked = final_phase;
                }
            }
            ("event_msg", Some("agent_message")) => {
                if let Some(Content::Text(text)) = &p.message {
                    self.check(&text.0);
                }
            }
            ("event_msg", Some("item_completed")) => {
                if let Some(item) = &p.item
                    && item.kind.as_ref().is_some_and(|k| k.0 == "AgentMessage")
                    && let Some(Content::Blocks(blocks)) = &item.content
                {
                    for block in blocks {
                        if let Some(text) = &block.text {
                            self.check(&text.0);
                        }
                    }
                }
            }
            ("event_msg", Some("task_started")) => {
                self.final_answer = None;
                self.locked = false;
            }
            ("event_msg", Some("task_complete")) => {
                if let Some(text) = p.last_agent_message {
                    self.check(&text.0);
                    self.final_answer = Some(text.0.into_owned());
                    self.locked = true;
                }
            }
            ("event_msg", Some("token_count")) => {
                if let Some(total) = p.info.and_then(|i| i.total_token_usage) {
                    self.scan.input_tokens = total.input_tokens.or(self.scan.input_tokens);
                    self.scan.output_tokens = total.output_tokens.or(self.scan.output_tokens);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn check(&mut self, text: &str) {
        if !self.scan.marker_found
            && let Some(marker) = self.marker
            && text_contains_marker(text, marker).is_some()
        {
            self.scan.marker_found = true;
        }
    }
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Str<'a>>,
    #[serde(borrow)]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Str<'a>>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    cwd: Option<Str<'a>>,
    #[serde(borrow)]
    role: Option<Str<'a>>,
    #[serde(borrow)]
    phase: Option<Str<'a>>,
    #[serde(borrow)]
    content: Option<Content<'a>>,
    #[serde(borrow)]
    message: Option<Content<'a>>,
    #[serde(borrow)]
    last_agent_message: Option<Str<'a>>,
    info: Option<Info>,
    #[serde(borrow)]
    item: Option<Item<'a>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Str<'a>>,
    #[serde(borrow)]
    content: Option<Content<'a>>,
}

#[derive(Deserialize)]
struct Info {
    total_token_usage: Option<Tokens>,
}

#[derive(Deserialize)]
struct Tokens {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}
