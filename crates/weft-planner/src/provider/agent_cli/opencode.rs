//! `opencode run --format json` (OpenCode 1.18). Each line is
//! `{type, timestamp, sessionID, part | error}`.
//!
//! | line | what the turn keeps |
//! | --- | --- |
//! | any line's `sessionID` | the session id |
//! | `text` (a complete text part; `synthetic`/`ignored` parts skipped) | reply text (parts of one message joined by a newline, messages by a blank line) |
//! | `reasoning` | a `Reasoning` event only |
//! | `tool_use` (emitted once, `completed` or `error`) | a finished step; a permission rejection is Denied |
//! | `step_finish` | usage, summed over the turn's steps; reason `length` marks the reply truncated |
//! | `error` | the failure: `data.message`, the error's name, HTTP status, log ref |
//!
//! There is no end record: the run succeeded when it exits 0 without an `error` event.

use serde_json::{Map, Value};

use super::collect::{Collector, message_text, summarize_input};
use super::{StreamParser, Verdict};
use crate::chat::{StreamEvent, Usage};
use crate::log::StepOutcome;

/// OpenCode's permission errors in a tool part's `state.error` (`run` auto-rejects every
/// `ask` unless `--auto`; a `deny` rule refuses outright).
const REFUSALS: &[&str] = &[
    "rejected permission to use this specific tool call",
    "specified a rule which prevents you from using this specific tool call",
];

#[derive(Debug, Default)]
pub(super) struct OpencodeStream {
    error: Option<String>,
}

impl StreamParser for OpencodeStream {
    fn line(
        &mut self,
        obj: &Map<String, Value>,
        turn: &mut Collector,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        turn.note_session(obj.get("sessionID").and_then(Value::as_str));
        let part = obj.get("part").and_then(Value::as_object);
        match (obj.get("type").and_then(Value::as_str), part) {
            (Some("text"), Some(part)) => {
                let skipped = ["synthetic", "ignored"]
                    .iter()
                    .any(|k| part.get(*k).and_then(Value::as_bool) == Some(true));
                if !skipped && let Some(text) = part.get("text").and_then(Value::as_str) {
                    let group = part.get("messageID").and_then(Value::as_str);
                    turn.push_text(group, text, on_event);
                }
            }
            (Some("reasoning"), Some(part)) => {
                if let Some(text) = part.get("text").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    on_event(StreamEvent::Reasoning(text.to_owned()));
                }
            }
            (Some("tool_use"), Some(part)) => tool_use(part, turn, on_event),
            (Some("step_finish"), Some(part)) => {
                if part.get("reason").and_then(Value::as_str) == Some("length") {
                    turn.truncated = true;
                }
                if let Some(tokens) = part.get("tokens").and_then(Value::as_object) {
                    let get = |key: &str| tokens.get(key).and_then(Value::as_u64).unwrap_or(0);
                    let cache = |key: &str| {
                        tokens
                            .get("cache")
                            .and_then(|c| c.get(key))
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                    };
                    let usage = turn.usage.get_or_insert_with(Usage::default);
                    usage.input_tokens += get("input") + cache("read") + cache("write");
                    usage.output_tokens += get("output") + get("reasoning");
                }
            }
            // The first error is the cause; later ones follow from it.
            (Some("error"), _) if self.error.is_none() => {
                self.error = Some(error_message(obj.get("error")));
            }
            _ => {}
        }
    }

    fn verdict(&mut self, turn: &mut Collector, exit_ok: bool) -> Verdict {
        match self.error.take() {
            Some(message) => Verdict::Failed(message),
            None if exit_ok && turn.saw_event => Verdict::Success,
            None => Verdict::Undecided { note: None },
        }
    }
}

fn tool_use(
    part: &Map<String, Value>,
    turn: &mut Collector,
    on_event: &mut dyn FnMut(StreamEvent),
) {
    let tool = part.get("tool").and_then(Value::as_str).unwrap_or("tool");
    let id = part.get("callID").and_then(Value::as_str);
    let state = part.get("state").and_then(Value::as_object);
    let field = |key: &str| state.and_then(|s| s.get(key));
    let input = summarize_input(field("input"));
    let (outcome, detail) = match field("status").and_then(Value::as_str) {
        Some("completed") => (
            StepOutcome::Success,
            field("output").and_then(Value::as_str).unwrap_or(""),
        ),
        Some("error") => {
            let error = field("error").and_then(Value::as_str).unwrap_or("error");
            let lower = error.to_lowercase();
            if REFUSALS.iter().any(|r| lower.contains(r)) {
                (StepOutcome::Denied, error)
            } else {
                (StepOutcome::Failure, error)
            }
        }
        // `run` only prints finished calls; anything else did not run to an end.
        _ => (StepOutcome::NotExecuted, ""),
    };
    turn.add_step(id, tool, input, outcome, detail, on_event);
}

/// `{name, data: {message, statusCode?, ref?, providerID?}}` as one line for the user.
fn error_message(error: Option<&Value>) -> String {
    let Some(error) = error else {
        return "opencode reported an error".to_owned();
    };
    let name = error.get("name").and_then(Value::as_str);
    let data = error.get("data");
    let message = data
        .and_then(|d| d.get("message"))
        .and_then(Value::as_str)
        .or_else(|| error.get("message").and_then(Value::as_str))
        .filter(|m| !m.trim().is_empty());
    let mut facts: Vec<String> = Vec::new();
    if let Some(name) = name {
        facts.push(name.to_owned());
    }
    if let Some(provider) = data
        .and_then(|d| d.get("providerID"))
        .and_then(Value::as_str)
    {
        facts.push(format!("provider {provider}"));
    }
    if let Some(status) = data
        .and_then(|d| d.get("statusCode"))
        .and_then(Value::as_u64)
    {
        facts.push(format!("HTTP {status}"));
    }
    if let Some(reference) = data.and_then(|d| d.get("ref")).and_then(Value::as_str) {
        facts.push(format!("ref {reference}"));
    }
    let text = match (message, facts.is_empty()) {
        (Some(message), true) => message.to_owned(),
        (Some(message), false) => format!("{message} ({})", facts.join(", ")),
        (None, false) => facts.join(", "),
        (None, true) => error.to_string(),
    };
    message_text(&text)
}
