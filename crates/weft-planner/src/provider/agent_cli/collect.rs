//! What one turn gathers while its stream is read (reply text, steps, session, usage), and
//! the bounded text helpers the readers share. Everything kept here has a cap: a CLI that
//! prints without end cannot grow weft's memory.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::chat::{AgentReply, AgentStep, StreamEvent, Usage};
use crate::log::StepOutcome;

/// Longest reply text kept, in bytes; the rest is cut and the reply marked truncated.
pub(super) const MAX_REPLY_BYTES: usize = 1024 * 1024;
/// Longest step detail (a tool's result or error), in characters.
pub(super) const MAX_DETAIL_CHARS: usize = 10_000;
/// Longest step input summary, in characters.
pub(super) const MAX_INPUT_CHARS: usize = 500;
/// Longest tool name or id, in characters.
pub(super) const MAX_NAME_CHARS: usize = 200;
/// Steps kept per turn; later ones are dropped.
pub(super) const MAX_STEPS: usize = 1_000;
/// Longest error text quoted from a CLI, in characters.
pub(super) const MAX_MESSAGE_CHARS: usize = 2_000;

/// The turn being read.
#[derive(Debug, Default)]
pub(super) struct Collector {
    text: String,
    /// The message (or item) the last text came from: parts of one message are joined by a
    /// newline, messages by a blank line.
    text_group: Option<String>,
    text_full: bool,
    steps: Vec<AgentStep>,
    /// Call id → index in `steps`, and whether that call has its result.
    ids: HashMap<String, usize>,
    answered: Vec<bool>,
    pub session_id: Option<String>,
    pub usage: Option<Usage>,
    /// The CLI said the output hit a length limit (or the text was cut here).
    pub truncated: bool,
    /// At least one JSON event arrived.
    pub saw_event: bool,
}

impl Collector {
    /// Records the session id the first time the stream names one.
    pub(super) fn note_session(&mut self, id: Option<&str>) {
        if self.session_id.is_none()
            && let Some(id) = id.map(str::trim).filter(|id| !id.is_empty())
        {
            self.session_id = Some(cap_chars(id, MAX_NAME_CHARS));
        }
    }

    pub(super) fn has_text(&self) -> bool {
        !self.text.is_empty()
    }

    /// Appends assistant text and streams exactly what was appended (separator included),
    /// so the `Text` events concatenate to the reply text.
    pub(super) fn push_text(
        &mut self,
        group: Option<&str>,
        text: &str,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        if text.is_empty() || self.text_full {
            return;
        }
        let mut chunk = String::new();
        if !self.text.is_empty() {
            let same = matches!((group, &self.text_group), (Some(g), Some(last)) if g == last);
            chunk.push_str(if same { "\n" } else { "\n\n" });
        }
        chunk.push_str(text);
        self.text_group = group.map(str::to_owned);
        let room = MAX_REPLY_BYTES.saturating_sub(self.text.len());
        if chunk.len() > room {
            let mut end = room;
            while !chunk.is_char_boundary(end) {
                end -= 1;
            }
            chunk.truncate(end);
            self.text_full = true;
            self.truncated = true;
        }
        if chunk.is_empty() {
            return;
        }
        self.text.push_str(&chunk);
        on_event(StreamEvent::Text(chunk));
    }

    /// A tool call began; its outcome stays `NotExecuted` until its result arrives.
    pub(super) fn start_step(
        &mut self,
        id: Option<&str>,
        tool: &str,
        input: String,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        if let Some(id) = id
            && self.ids.contains_key(id)
        {
            return;
        }
        if self.steps.len() >= MAX_STEPS {
            return;
        }
        let tool = one_line(tool, MAX_NAME_CHARS);
        on_event(StreamEvent::ToolCallStarted { name: tool.clone() });
        if let Some(id) = id {
            self.ids
                .insert(cap_chars(id, MAX_NAME_CHARS), self.steps.len());
        }
        self.steps.push(AgentStep {
            tool,
            input,
            outcome: StepOutcome::NotExecuted,
            detail: String::new(),
        });
        self.answered.push(false);
    }

    /// The result of a started call; unknown ids are ignored.
    pub(super) fn finish_step(&mut self, id: &str, outcome: StepOutcome, detail: &str) {
        if let Some(&index) = self.ids.get(id) {
            let step = &mut self.steps[index];
            step.outcome = outcome;
            step.detail = cap_chars(detail, MAX_DETAIL_CHARS);
            self.answered[index] = true;
        }
    }

    /// A call reported once, already finished.
    pub(super) fn add_step(
        &mut self,
        id: Option<&str>,
        tool: &str,
        input: String,
        outcome: StepOutcome,
        detail: &str,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        self.start_step(id, tool, input, on_event);
        match id {
            Some(id) => self.finish_step(id, outcome, detail),
            None => {
                if let (Some(step), Some(done)) = (self.steps.last_mut(), self.answered.last_mut())
                    && !*done
                {
                    step.outcome = outcome;
                    step.detail = cap_chars(detail, MAX_DETAIL_CHARS);
                    *done = true;
                }
            }
        }
    }

    pub(super) fn has_step(&self, id: &str) -> bool {
        self.ids.contains_key(id)
    }

    /// Overrides a call's outcome (e.g. Claude lists it in `permission_denials`).
    pub(super) fn set_outcome(&mut self, id: &str, outcome: StepOutcome, detail_if_empty: &str) {
        if let Some(&index) = self.ids.get(id) {
            let step = &mut self.steps[index];
            step.outcome = outcome;
            if step.detail.is_empty() {
                step.detail = cap_chars(detail_if_empty, MAX_DETAIL_CHARS);
            }
            self.answered[index] = true;
        }
    }

    /// Calls that never got a result keep `NotExecuted`, with a word on why.
    pub(super) fn close_unanswered(&mut self, detail: &str) {
        for (step, done) in self.steps.iter_mut().zip(&self.answered) {
            if !done && step.detail.is_empty() {
                step.detail = detail.to_owned();
            }
        }
    }

    pub(super) fn into_reply(self) -> AgentReply {
        AgentReply {
            text: self.text,
            steps: self.steps,
            session_id: self.session_id,
            truncated: self.truncated,
            usage: self.usage,
        }
    }
}

/// The last non-JSON stdout lines, for error messages.
#[derive(Debug, Default)]
pub(super) struct JunkTail {
    lines: std::collections::VecDeque<String>,
    bytes: usize,
}

impl JunkTail {
    const MAX_BYTES: usize = 16 * 1024;

    pub(super) fn push(&mut self, line: &str) {
        let line = cap_chars(line, MAX_MESSAGE_CHARS);
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.bytes > Self::MAX_BYTES
            && let Some(old) = self.lines.pop_front()
        {
            self.bytes -= old.len();
        }
    }

    pub(super) fn text(&self) -> String {
        self.lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `s` cut to at most `max` characters; a cut string ends with `…`.
pub(super) fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some(_) => {
            let end = s
                .char_indices()
                .nth(max.saturating_sub(1))
                .map_or(s.len(), |(i, _)| i);
            format!("{}…", &s[..end])
        }
    }
}

pub(super) use weft_agents::stream::one_line;

/// A CLI's error text, bounded, its line breaks kept (they are the CLI's own layout).
pub(super) fn message_text(text: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|l| one_line(l, MAX_MESSAGE_CHARS))
        .filter(|l| !l.is_empty())
        .collect();
    cap_chars(&lines.join("\n"), MAX_MESSAGE_CHARS)
}

/// A one-line summary of a tool's input for the log (shared with the task runners' view).
pub(super) fn summarize_input(input: Option<&Value>) -> String {
    weft_agents::stream::summarize_tool_input(input, MAX_INPUT_CHARS)
}

/// The text of a tool result's `content`: a string, or the `text` of its blocks.
pub(super) fn content_text(content: Option<&Value>) -> String {
    match content {
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
        Some(other) => cap_chars(&other.to_string(), MAX_DETAIL_CHARS),
    }
}

/// The last lines of a CLI's stderr (ANSI colours removed), at most
/// [`MAX_MESSAGE_CHARS`]. An `Error: …` line that scrolled out of that window (e.g. above a
/// Rust backtrace) is put first, since it is the line that says what went wrong.
pub(super) fn excerpt(raw: &str) -> String {
    static ANSI: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)")
            .expect("valid ANSI regex")
    });
    let clean = ANSI.replace_all(raw, "");
    let lines: Vec<&str> = clean
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0usize;
    let mut first_kept = lines.len();
    for (index, line) in lines.iter().enumerate().rev() {
        let len = line.chars().count() + 1;
        if used + len > MAX_MESSAGE_CHARS {
            if kept.is_empty() {
                // One huge line: keep its end.
                let chars: Vec<char> = line.chars().collect();
                let tail: String = chars[chars.len().saturating_sub(MAX_MESSAGE_CHARS - 1)..]
                    .iter()
                    .collect();
                kept.push(format!("…{tail}"));
                first_kept = index;
            }
            break;
        }
        used += len;
        kept.push((*line).to_owned());
        first_kept = index;
    }
    kept.reverse();
    if let Some(error_line) = lines[..first_kept]
        .iter()
        .rev()
        .find(|l| l.trim_start().starts_with("Error"))
    {
        kept.insert(0, cap_chars(error_line.trim(), MAX_MESSAGE_CHARS / 2));
        kept.insert(1, "…".to_owned());
    }
    kept.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_events_concatenate_to_the_reply_text() {
        let mut turn = Collector::default();
        let mut streamed = String::new();
        let mut on_event = |e: StreamEvent| {
            if let StreamEvent::Text(t) = e {
                streamed.push_str(&t);
            }
        };
        turn.push_text(Some("m1"), "one", &mut on_event);
        turn.push_text(Some("m1"), "two", &mut on_event);
        turn.push_text(Some("m2"), "three", &mut on_event);
        turn.push_text(None, "four", &mut on_event);
        let reply = turn.into_reply();
        assert_eq!(reply.text, "one\ntwo\n\nthree\n\nfour");
        assert_eq!(streamed, reply.text);
    }

    #[test]
    fn reply_text_is_capped_on_a_char_boundary() {
        let mut turn = Collector::default();
        let big = "é".repeat(MAX_REPLY_BYTES);
        turn.push_text(None, &big, &mut |_| {});
        turn.push_text(None, "more", &mut |_| {});
        assert!(turn.truncated);
        let reply = turn.into_reply();
        assert!(reply.text.len() <= MAX_REPLY_BYTES);
        assert!(reply.text.ends_with('é'));
    }

    #[test]
    fn excerpt_keeps_the_last_lines_and_the_error_line() {
        let mut raw = String::from("\x1b[91mError: \x1b[0mSession not found\n");
        for i in 0..500 {
            raw.push_str(&format!("  {i}: backtrace frame\n"));
        }
        let text = excerpt(&raw);
        assert!(text.starts_with("Error: Session not found\n…\n"), "{text}");
        assert!(text.ends_with("499: backtrace frame"));
        assert!(text.chars().count() <= MAX_MESSAGE_CHARS + MAX_MESSAGE_CHARS / 2 + 4);
        assert_eq!(excerpt("fatal: broke\n"), "fatal: broke");
        assert_eq!(excerpt(""), "");
    }

    #[test]
    fn summaries_pick_the_telling_field() {
        let v: Value = serde_json::json!({"file_path": "/a/b", "limit": 3});
        assert_eq!(summarize_input(Some(&v)), "/a/b");
        let v: Value = serde_json::json!({"pattern": "fn main", "path": "src"});
        assert_eq!(summarize_input(Some(&v)), "fn main in src");
        let v: Value = serde_json::json!({"command": "ls\n  -la"});
        assert_eq!(summarize_input(Some(&v)), "ls -la");
        let v: Value = serde_json::json!({"x": 1});
        assert_eq!(summarize_input(Some(&v)), "{\"x\":1}");
    }
}
