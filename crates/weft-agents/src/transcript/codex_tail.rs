//! Codex's spend while it runs: the `token_count` records of its rollout file, read as the
//! file is written.
//!
//! `codex exec --json` says nothing of usage before `turn.completed`; its rollout file
//! (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local ts>-<thread id>.jsonl`, see
//! [`super::codex`]) gets an `event_msg` `token_count` record after every model response,
//! with the thread's running total (`info.total_token_usage`). A [`RolloutTail`] follows
//! that file and turns each total into an [`AgentEvent::Spend`], as the stream parsers do
//! for Claude Code and OpenCode.
//!
//! **Whose file.** The tail starts from the thread id the attempt's own process announced
//! on its stdout (`thread.started`): the file is the one Codex's thread index
//! (`state_5.sqlite`, `threads.rollout_path`) names for that id, else the one under
//! `sessions/` whose name ends with `-<id>.jsonl`. Its first record must be the
//! `session_meta` of that id (`"id":"<id>"` in its first [`FIRST_LINE_PEEK`] bytes), else
//! the file is dropped and nothing from it is counted. Another attempt's Codex, in the same
//! `$CODEX_HOME`, has another thread id, so it never feeds this attempt's meter.
//!
//! **Bounds.** Nothing is read until the file exists (looked for at most every
//! [`FIND_EVERY`], at most [`FIND_MAX_ENTRIES`] directory entries a look, newest date
//! folders first); then each [`RolloutTail::poll`] reads only what was appended since the
//! last one, at most [`READ_MAX`] bytes (the rest waits for the next poll). A line longer
//! than [`LINE_MAX`] is skipped whole (a `session_meta` holds the full system prompt; a
//! `token_count` is under 1 KiB), so the tail holds at most that much of a partial line.
//! Only lines holding `"token_count"` or `"turn_context"` are parsed. Reading never fails:
//! a file that vanishes, shrinks or cannot be read yields nothing more.
//!
//! **What it reports.** Each total is one `Spend{total: false}` with the same message id
//! ([`MESSAGE_ID`]): the meter treats it as one message whose figures only grow, so a
//! repeated total counts once and the running total is never added to itself. Codex's
//! input includes its cached part, which is counted apart as the cache read (as the stream
//! parser does with `turn.completed`). The model is the last `turn_context`'s, so the
//! figures are priced by the model Codex really used. No cost: Codex reports none.
//!
//! Threads: none of its own; the caller polls (weft's engine, from the attempt's events
//! thread, about once a second and once more after the process ended).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memchr::memmem;
use serde::Deserialize;
use weft_core::spend::Tokens;

use super::Locator;
use crate::event::AgentEvent;
use crate::stream::{NAME_MAX, one_line};

/// Most bytes read from the rollout per poll.
pub const READ_MAX: usize = 512 * 1024;
/// Longest line kept; longer ones are skipped whole.
pub const LINE_MAX: usize = 64 * 1024;
/// How much of the first line is searched for the `session_meta` and the thread id.
pub const FIRST_LINE_PEEK: usize = 4096;
/// The rollout is looked for at most this often until it is found.
pub const FIND_EVERY: Duration = Duration::from_secs(1);
/// Most directory entries listed per look for the rollout.
pub const FIND_MAX_ENTRIES: usize = 20_000;
/// The message id of every live total: one growing message to the meter.
pub const MESSAGE_ID: &str = "codex-rollout-total";

/// Follows one Codex thread's rollout file. See the module documentation.
#[derive(Debug)]
pub struct RolloutTail {
    root: PathBuf,
    thread_id: String,
    state: State,
    last_look: Option<Instant>,
    reader: LineReader,
}

#[derive(Debug)]
enum State {
    /// The file is not found yet.
    Looking,
    /// Reading it, from `offset`.
    Reading { path: PathBuf, offset: u64 },
    /// It is not this thread's, or it shrank: nothing more is read.
    Dropped,
}

impl RolloutTail {
    /// A tail for the rollout of thread `thread_id` under `$CODEX_HOME` (else `~/.codex`).
    /// `None` when the locator names no home or the id could not be a file name's.
    pub fn new(locator: &Locator, thread_id: &str) -> Option<RolloutTail> {
        let root = locator
            .codex_home
            .clone()
            .or_else(|| locator.home.as_ref().map(|home| home.join(".codex")))?;
        let safe = !thread_id.is_empty()
            && thread_id.len() <= 128
            && thread_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        safe.then(|| RolloutTail {
            root,
            thread_id: thread_id.to_owned(),
            state: State::Looking,
            last_look: None,
            reader: LineReader::new(thread_id),
        })
    }

    /// The rollout file, once found.
    pub fn path(&self) -> Option<&Path> {
        match &self.state {
            State::Reading { path, .. } => Some(path),
            _ => None,
        }
    }

    /// What was appended since the last poll, as `Spend` events (often none).
    pub fn poll(&mut self) -> Vec<AgentEvent> {
        if matches!(self.state, State::Looking) {
            if self.last_look.is_some_and(|at| at.elapsed() < FIND_EVERY) {
                return Vec::new();
            }
            self.last_look = Some(Instant::now());
            match self.find() {
                Some(path) => self.state = State::Reading { path, offset: 0 },
                None => return Vec::new(),
            }
        }
        let State::Reading { path, offset } = &mut self.state else {
            return Vec::new();
        };
        let Ok(mut file) = fs_err::File::open(&*path) else {
            return Vec::new();
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < *offset {
            // Rewritten under us: not the file we were reading.
            self.state = State::Dropped;
            return Vec::new();
        }
        if len == *offset || file.seek(SeekFrom::Start(*offset)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::with_capacity(READ_MAX.min((len - *offset) as usize));
        let Ok(read) = file.take(READ_MAX as u64).read_to_end(&mut buf) else {
            return Vec::new();
        };
        *offset += read as u64;
        let events = self.reader.feed(&buf);
        if self.reader.foreign {
            self.state = State::Dropped;
            return Vec::new();
        }
        events
    }

    /// The thread's rollout: the index's, else the one named after the thread id.
    fn find(&self) -> Option<PathBuf> {
        super::codex::index_lookup(&self.root, &self.thread_id)
            .or_else(|| find_by_name(&self.root.join("sessions"), &self.thread_id))
    }
}

/// The `rollout-*-<id>.jsonl` under `sessions` (flat, or in its date folders, newest
/// first), listing at most [`FIND_MAX_ENTRIES`] entries.
fn find_by_name(sessions: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("-{id}.jsonl");
    let mut budget = FIND_MAX_ENTRIES;
    let mut dirs = vec![(sessions.to_path_buf(), 0u8)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = fs_err::read_dir(&dir) else {
            continue;
        };
        let mut subdirs = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            if budget == 0 {
                return None;
            }
            budget -= 1;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("rollout-") && name.ends_with(&suffix) {
                let path = entry.path();
                if super::claude::is_file(&path) {
                    return Some(path);
                }
            } else if depth < 3 && entry.file_type().is_ok_and(|t| t.is_dir()) {
                subdirs.push(name.into_owned());
            }
        }
        // Popped from the end: the largest name (the newest date) is looked at first.
        subdirs.sort();
        dirs.extend(subdirs.into_iter().map(|name| (dir.join(name), depth + 1)));
    }
    None
}

/// Splits appended bytes into lines and reads the records that matter.
#[derive(Debug)]
pub struct LineReader {
    partial: Vec<u8>,
    /// Inside a line longer than [`LINE_MAX`]: its bytes are dropped up to its newline.
    skipping: bool,
    /// No line has ended yet: the next one is the `session_meta`.
    first: bool,
    /// The first line named another thread (or was no `session_meta`).
    pub foreign: bool,
    id_needle: String,
    model: Option<String>,
    /// Lines skipped: too long, or not the JSON expected.
    pub skipped: u64,
}

impl LineReader {
    /// A reader for the rollout of thread `thread_id`.
    pub fn new(thread_id: &str) -> LineReader {
        LineReader {
            partial: Vec::new(),
            skipping: false,
            first: true,
            foreign: false,
            id_needle: format!("\"id\":\"{thread_id}\""),
            model: None,
            skipped: 0,
        }
    }

    /// The events of every line `bytes` completes; a trailing partial line is kept for
    /// the next call.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        while !bytes.is_empty() && !self.foreign {
            let Some(end) = memchr::memchr(b'\n', bytes) else {
                self.keep(bytes);
                break;
            };
            self.keep(&bytes[..end]);
            bytes = &bytes[end + 1..];
            let line = std::mem::take(&mut self.partial);
            let overlong = std::mem::replace(&mut self.skipping, false);
            if self.first {
                self.first = false;
                self.check_first(&line);
                continue;
            }
            if overlong {
                self.skipped += 1;
                continue;
            }
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        events
    }

    /// Keep `bytes` of the line in progress, or drop them once it is too long (the first
    /// line keeps its first [`FIRST_LINE_PEEK`] bytes for its check).
    fn keep(&mut self, bytes: &[u8]) {
        if self.skipping {
            return;
        }
        let max = if self.first {
            FIRST_LINE_PEEK
        } else {
            LINE_MAX
        };
        if self.partial.len() + bytes.len() > max {
            if self.first {
                let room = max - self.partial.len();
                self.partial.extend_from_slice(&bytes[..room]);
            } else {
                self.partial = Vec::new();
            }
            self.skipping = true;
            return;
        }
        self.partial.extend_from_slice(bytes);
    }

    fn check_first(&mut self, line: &[u8]) {
        let meta = memmem::find(line, b"\"session_meta\"").is_some();
        let ours = memmem::find(line, self.id_needle.as_bytes()).is_some();
        self.foreign = !(meta && ours);
    }

    /// One whole line: a `token_count` total as a `Spend`; a `turn_context`'s model kept.
    pub fn line(&mut self, line: &[u8]) -> Option<AgentEvent> {
        let count = memmem::find(line, b"\"token_count\"").is_some();
        if !count && memmem::find(line, b"\"turn_context\"").is_none() {
            return None;
        }
        let Ok(record) = serde_json::from_slice::<Record>(line) else {
            self.skipped += 1;
            return None;
        };
        let payload = record.payload?;
        match (record.kind.as_deref(), payload.kind.as_deref()) {
            (Some("turn_context"), _) => {
                if let Some(model) = payload.model.filter(|m| !m.trim().is_empty()) {
                    self.model = Some(one_line(&model, NAME_MAX));
                }
                None
            }
            (Some("event_msg"), Some("token_count")) => {
                let total = payload.info?.total_token_usage?;
                let cached = total.cached_input_tokens.unwrap_or(0);
                Some(AgentEvent::Spend {
                    total: false,
                    message: Some(MESSAGE_ID.to_owned()),
                    model: self.model.clone(),
                    tokens: Tokens {
                        input: total.input_tokens.unwrap_or(0).saturating_sub(cached),
                        output: total.output_tokens.unwrap_or(0),
                        cache_read: cached,
                        cache_write: total.cache_write_input_tokens.unwrap_or(0),
                    },
                    cost_usd: None,
                })
            }
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct Record {
    #[serde(rename = "type")]
    kind: Option<String>,
    payload: Option<Payload>,
}

#[derive(Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: Option<String>,
    model: Option<String>,
    info: Option<Info>,
}

#[derive(Deserialize)]
struct Info {
    total_token_usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    cached_input_tokens: Option<u64>,
    cache_write_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}
