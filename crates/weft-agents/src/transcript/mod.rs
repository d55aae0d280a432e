//! Transcript capture: find the session file an agent CLI wrote for one attempt, use it as
//! evidence, and extract the agent's final answer.
//!
//! Every reader is defensive: a missing folder, an unreadable file, a bad or truncated
//! line, an unknown shape or a file growing while it is read yields "nothing found" (or
//! less), never an error; weft then falls back to the captured output.

pub mod claude;
pub mod codex;
pub mod codex_tail;
pub mod opencode;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

/// Default bound on the extracted final answer, in characters.
pub const DEFAULT_ANSWER_CHARS: usize = 4_000;

/// Which CLI's private store holds the transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Store {
    ClaudeCode,
    Codex,
    Opencode,
}

impl Store {
    pub fn parse(name: &str) -> Option<Store> {
        match name {
            "claude-code" => Some(Store::ClaudeCode),
            "codex" => Some(Store::Codex),
            "opencode" => Some(Store::Opencode),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Store::ClaudeCode => "claude-code",
            Store::Codex => "codex",
            Store::Opencode => "opencode",
        }
    }
}

/// Where the stores live. The front end fills this from the environment (weft's engine
/// never reads `$HOME` itself); a field left `None` falls back to the next rule.
#[derive(Debug, Clone, Default)]
pub struct Locator {
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR` (else `~/.claude`).
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME` (else `~/.codex`).
    pub codex_home: Option<PathBuf>,
    /// `$XDG_DATA_HOME` (else `~/.local/share`); OpenCode keeps `opencode/` there.
    pub xdg_data_home: Option<PathBuf>,
    /// `$OPENCODE_DB` as set: `:memory:` (OpenCode writes no database, so there is none to
    /// read), an absolute path, or a path relative to OpenCode's data directory. When set it
    /// replaces `opencode.db` and the channel databases, as it does for OpenCode itself.
    pub opencode_db: Option<PathBuf>,
}

/// What is known about the attempt whose transcript is wanted.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The attempt's working directory (the agent's cwd).
    pub cwd: &'a Path,
    /// Files last modified before this are not the attempt's.
    pub started_at: SystemTime,
    /// The attempt's completion token, when it has one.
    pub marker: Option<&'a str>,
    /// The session id, when known: chosen by weft (Claude Code `--session-id`) or announced
    /// by the CLI in its stream (Codex `thread.started`, OpenCode `sessionID`).
    pub session_id: Option<&'a str>,
    /// Bound on the extracted final answer, in characters.
    pub answer_chars: usize,
}

/// The transcript found for an attempt, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub store: Store,
    /// The file (or database) it came from.
    pub path: PathBuf,
    pub session_id: Option<String>,
    /// The attempt's marker appears in assistant-authored text of this transcript.
    pub marker_found: bool,
    /// No marker match: the newest candidate, which never counts as evidence.
    pub weak: bool,
    /// How it was chosen, one step per line (e.g. "expected file for session id X",
    /// "12 files under `DIR`", "3 modified after the start", "marker found").
    pub how: Vec<String>,
    /// The text blocks of the last assistant turn, joined, clamped to `answer_chars`.
    pub final_answer: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// Find the attempt's transcript in `store`, or `None` when nothing plausible exists.
pub fn find(store: Store, locator: &Locator, query: &Query<'_>) -> Option<Found> {
    match store {
        Store::ClaudeCode => claude::find(locator, query),
        Store::Codex => codex::find(locator, query),
        Store::Opencode => opencode::find(locator, query),
    }
}

/// What a reader learnt from streaming one transcript file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// The first working directory its records carry.
    pub cwd: Option<PathBuf>,
    /// The session (thread) id its records carry.
    pub session_id: Option<String>,
    /// The marker appears in assistant-authored text.
    pub marker_found: bool,
    /// The last assistant turn's text (not clamped).
    pub final_answer: Option<String>,
    /// Input tokens, when the records carry them.
    pub input_tokens: Option<u64>,
    /// Output tokens, when the records carry them.
    pub output_tokens: Option<u64>,
    /// Lines read.
    pub lines: u64,
    /// Lines skipped: not JSON, an unexpected shape, or too long.
    pub skipped_lines: u64,
    /// Reading stopped early: the records name another cwd than expected.
    pub cwd_mismatch: bool,
}

/// The last `max` characters of `text` (whole characters), trimmed.
pub fn clamp(text: &str, max: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    text.chars().skip(count - max).collect()
}
