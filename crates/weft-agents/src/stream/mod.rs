//! Stream parsers: one per [`StreamKind`], turning a runner's stdout, one line at a time, into
//! [`AgentEvent`]s.
//!
//! Contract, for every parser:
//!
//! - Lines arrive one at a time, without the newline; a trailing `\r` (and surrounding
//!   whitespace) is ignored. The caller decodes bytes lossily, so a line is always `&str`.
//! - A line that is not a JSON object, an unknown `type`, a missing or mistyped field: no
//!   event. Never an error, never a panic.
//! - Every string an event keeps is bounded ([`SUMMARY_MAX`], [`TOOL_SUMMARY_MAX`],
//!   [`DETAIL_MAX`], [`NAME_MAX`], [`ID_MAX`], [`MESSAGE_MAX`] characters), except the
//!   assistant's own words (`AssistantText::text`, `Reasoning::text`, `PlanText::text`,
//!   `Final::text`), kept as they are: the engine searches them for the marker and stores
//!   their tail, the planner bounds its reply itself.
//! - Tool calls are reported for every consumer: `ToolUse` when a call starts (with the
//!   CLI's call id), `ToolResult` when it ends (same id), so the engine can show activity
//!   and the planner can log each step and how it ended from the same events.
//! - In structured streams only text the assistant wrote becomes `AssistantText`: tool
//!   output, the prompt, synthetic error messages and sub-agent traffic never do.
//! - [`StreamParser::finish`] is called once, after the last line (also after a kill). Only
//!   OpenCode uses it (see [`opencode`]); calling it twice yields nothing the second time.
//! - [`StreamParser::stderr_line`] takes the runner's stderr lines. Only OpenCode reports
//!   anything there (`Error: Session not found` and similar, with nothing on stdout); the
//!   supervisor should feed stderr lines to it for every runner, it costs nothing elsewhere.
//!
//! Per-CLI details are in the submodules.

use serde_json::Value;

use crate::event::{AgentEvent, StreamKind};

pub mod claude;
pub mod codex;
pub mod opencode;
pub mod plain;

/// Longest `PermissionDenied::detail` summary, in characters.
pub const SUMMARY_MAX: usize = 200;
/// Longest `ToolUse::summary`, in characters (the planner's research log keeps it whole;
/// live displays cut it shorter).
pub const TOOL_SUMMARY_MAX: usize = 500;
/// Longest `ToolResult::detail`, in characters.
pub const DETAIL_MAX: usize = 10_000;
/// Longest tool name, in characters.
pub const NAME_MAX: usize = 100;
/// Longest session id, in characters.
pub const ID_MAX: usize = 200;
/// Longest `Error::message` and `Final::detail`, in characters.
pub const MESSAGE_MAX: usize = 2000;

/// Whether `text` contains one of `phrases` (lower-case), ignoring case.
pub(crate) fn mentions(text: &str, phrases: &[&str]) -> bool {
    let lower = text.to_lowercase();
    phrases.iter().any(|phrase| lower.contains(phrase))
}

/// Reads one runner's output, line by line.
pub trait StreamParser: Send {
    /// One stdout line (no newline). Returns the events it holds, often none.
    fn line(&mut self, line: &str) -> Vec<AgentEvent>;

    /// One stderr line. Only OpenCode reports anything from stderr; the default ignores it.
    fn stderr_line(&mut self, _line: &str) -> Vec<AgentEvent> {
        Vec::new()
    }

    /// The stream ended (the process exited or was killed). Only parsers whose CLI has no
    /// explicit end record emit anything here.
    fn finish(&mut self) -> Vec<AgentEvent> {
        Vec::new()
    }
}

/// The parser for a runner's stream kind.
pub fn parser(kind: StreamKind) -> Box<dyn StreamParser> {
    match kind {
        StreamKind::Plain => Box::new(plain::PlainParser),
        StreamKind::ClaudeStreamJson => Box::new(claude::ClaudeParser::default()),
        StreamKind::CodexJson => Box::new(codex::CodexParser::default()),
        StreamKind::OpencodeJson => Box::new(opencode::OpencodeParser::default()),
    }
}

/// The line as a JSON object, or `None` for anything else (blank, text, truncated JSON,
/// arrays, scalars). Cheap rejection before any parsing: the line must start with `{`.
pub(crate) fn json_object(line: &str) -> Option<serde_json::Map<String, Value>> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// `s` cut to at most `max` characters; a cut string ends with `…` (counted in `max`).
pub(crate) fn bounded(s: &str, max: usize) -> String {
    if max == 0 {
        return String::new();
    }
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some(_) => {
            let end = s.char_indices().nth(max - 1).map_or(s.len(), |(i, _)| i);
            let mut out = String::with_capacity(end + 3);
            out.push_str(&s[..end]);
            out.push('…');
            out
        }
    }
}

/// Whitespace runs collapsed to one space, trimmed, then bounded.
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4 + 4));
    let mut chars = 0usize;
    let mut pending_space = false;
    for c in s.chars() {
        if c.is_whitespace() || c.is_control() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            chars += 1;
            pending_space = false;
        }
        out.push(c);
        chars += 1;
        // Stop early on huge inputs: one extra character tells `bounded` to cut.
        if chars > max {
            break;
        }
    }
    bounded(&out, max)
}

/// A short, single-line description of a tool's input, for display.
pub(crate) fn summarize_input(input: Option<&Value>) -> String {
    summarize_tool_input(input, SUMMARY_MAX)
}

/// A tool call's input for `ToolUse::summary`.
pub(crate) fn tool_summary(input: Option<&Value>) -> String {
    summarize_tool_input(input, TOOL_SUMMARY_MAX)
}

/// The text of a tool result's `content` (a string, or the `text` of its blocks), bounded
/// to [`DETAIL_MAX`].
pub(crate) fn content_text(content: Option<&Value>) -> String {
    let text = match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => o.get("text").and_then(Value::as_str),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    bounded(&text, DETAIL_MAX)
}

/// A single-line description of a tool's input of at most `max` characters. Picks the most
/// telling field when there is one (a command, a path, a search pattern and where, a URL, a
/// query), else the compact JSON of the whole input.
pub fn summarize_tool_input(input: Option<&Value>, max: usize) -> String {
    const KEYS: &[&str] = &[
        "command",
        "cmd",
        "file_path",
        "filePath",
        "notebook_path",
        "path",
        "url",
        "query",
        "description",
        "prompt",
    ];
    let Some(input) = input else {
        return String::new();
    };
    let map = match input {
        Value::Null => return String::new(),
        Value::String(s) => return one_line(s, max),
        Value::Object(map) => map,
        other => return one_line(&other.to_string(), max),
    };
    // Searches: the pattern, and where.
    if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
        let place = ["path", "glob", "include"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str));
        let text = match place {
            Some(place) => format!("{pattern} in {place}"),
            None => pattern.to_owned(),
        };
        return one_line(&text, max);
    }
    for key in KEYS {
        match map.get(*key) {
            Some(Value::String(s)) if !s.trim().is_empty() => {
                return one_line(s, max);
            }
            Some(Value::Array(items)) if !items.is_empty() => {
                // e.g. Codex's `command: ["bash", "-lc", "..."]`
                let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                if words.len() == items.len() {
                    return one_line(&words.join(" "), max);
                }
            }
            _ => {}
        }
    }
    one_line(&input.to_string(), max)
}

/// Compact JSON of a value, bounded to [`SUMMARY_MAX`] characters.
pub(crate) fn compact_json(value: &Value) -> String {
    one_line(&value.to_string(), SUMMARY_MAX)
}

/// A string field of a JSON object.
pub(crate) fn str_field<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

/// `line` without ANSI escape sequences (CSI, OSC, two-byte ESC sequences).
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_ansi;

    #[test]
    fn strips_colours() {
        assert_eq!(
            strip_ansi("\u{1b}[91m\u{1b}[1mError: \u{1b}[0mSession not found"),
            "Error: Session not found"
        );
        assert_eq!(strip_ansi("a\u{1b}]0;title\u{7}b"), "ab");
    }
}
