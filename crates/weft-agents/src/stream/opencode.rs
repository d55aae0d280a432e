//! `opencode run --format json` (OpenCode 1.18; 1.1.x has the same fields in another key
//! order). Each line is `{type, timestamp, sessionID, part | error}`.
//!
//! | line | events |
//! | --- | --- |
//! | first line carrying `sessionID` | `Session` |
//! | `text` (complete text part; `synthetic`/`ignored` parts skipped) | `AssistantText` (`message`: `messageID`) |
//! | `reasoning` | `Reasoning` |
//! | `tool_use` (a tool part, `completed` or `error`) | `ToolUse` (by `callID`), then `ToolResult`: `output`, or the error (Denied for a permission refusal, else a Failure) |
//! | `tool_use` whose error is a permission refusal ("The user rejected permission to use this specific tool call", with or without feedback, or "The user has specified a rule which prevents you from using this specific tool call") | `ToolUse` then `PermissionDenied` |
//! | `step_finish` | `Truncated` for reason `length`; `Spend{total: false}` (the step's tokens, reasoning counted as output, and its `cost` unless that is 0 for a step with tokens: a model OpenCode has no price for); `Usage`, the attempt's running totals (sums of every step's `tokens.input`, `tokens.output`, `cost`, `tokens.cache.read` + `write` as `cache_tokens`, `tokens.reasoning`) |
//! | `error` | `Error` ("`name`: `data.message` (HTTP n, ref r)") |
//! | `step_start`, anything else | nothing |
//!
//! **Final.** OpenCode has no end record (the run ends when the session goes idle), and an
//! `error` event can follow the last step, so the `Final` is emitted by
//! [`StreamParser::finish`], once: `is_error` = an `error` event (or an `Error: ` stderr
//! line) was seen; `text` = the text parts of the message whose `step_finish` had reason
//! `"stop"` (the last such message, parts joined by a newline); `detail` = the last error.
//! When neither a `"stop"` step nor an error was seen (a hang, a kill mid-stream),
//! `finish` emits nothing, as Claude and Codex do without their end record.
//!
//! **Permissions and stderr.** In `run` without `--auto`, a permission `ask` is
//! auto-rejected: stderr gets `! permission requested: <perm> (<patterns>); auto-rejecting`
//! and, on stdout, the tool part ends in `status: "error"` with the rejection text. The
//! stdout part is the one counted (it names the tool and its input, and arrives in order
//! with the rest); the stderr line yields nothing, so a refusal is never counted twice.
//! Stderr still matters: `-s <unknown id>` prints only `Error: Session not found` there and
//! nothing on stdout. So the supervisor feeds stderr lines to
//! [`StreamParser::stderr_line`]: `Error: ...` lines (ANSI colour stripped) become `Error`
//! events and count as an error for the `Final`.

use serde_json::{Map, Value};

use super::{
    DETAIL_MAX, ID_MAX, MESSAGE_MAX, NAME_MAX, StreamParser, bounded, json_object, one_line,
    str_field, strip_ansi, tool_summary,
};
use weft_core::spend::Tokens;

use crate::event::{AgentEvent, ToolOutcome};

/// Phrases of OpenCode's permission errors (`RejectedError`, `CorrectedError`,
/// `DeniedError`) as they appear in a tool part's `state.error`.
const REFUSALS: &[&str] = &[
    "rejected permission to use this specific tool call",
    "specified a rule which prevents you from using this specific tool call",
];

/// Most text kept per message (its end).
const MESSAGE_TEXT_MAX: usize = 1024 * 1024;

/// Parser state for OpenCode's run JSON.
#[derive(Debug, Default)]
pub struct OpencodeParser {
    session_sent: bool,
    /// The message whose text parts are being collected, and those texts.
    text_message: Option<String>,
    texts: Vec<String>,
    /// Text of the last message that ended with `step_finish reason:"stop"`.
    final_text: Option<String>,
    stopped: bool,
    last_error: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cost_usd: Option<f64>,
    cache_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    finished: bool,
}

impl StreamParser for OpencodeParser {
    fn line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(obj) = json_object(line) else {
            return Vec::new();
        };
        let mut events = Vec::new();
        if !self.session_sent
            && let Some(id) = str_field(&obj, "sessionID").filter(|id| !id.is_empty())
        {
            self.session_sent = true;
            events.push(AgentEvent::Session {
                id: bounded(id, ID_MAX),
            });
        }
        let part = obj.get("part").and_then(Value::as_object);
        match (str_field(&obj, "type"), part) {
            (Some("text"), Some(part)) => self.text(part, &mut events),
            (Some("reasoning"), Some(part)) => {
                if let Some(text) = str_field(part, "text").filter(|t| !t.is_empty()) {
                    events.push(AgentEvent::Reasoning {
                        text: text.to_owned(),
                    });
                }
            }
            (Some("tool_use"), Some(part)) => tool(part, &mut events),
            (Some("step_finish"), Some(part)) => self.step_finish(part, &mut events),
            (Some("error"), _) => {
                let message = error_message(obj.get("error"));
                self.last_error = Some(message.clone());
                events.push(AgentEvent::Error { message });
            }
            _ => {}
        }
        events
    }

    fn stderr_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let plain = strip_ansi(line);
        let plain = plain.trim();
        match plain.strip_prefix("Error:") {
            Some(rest) => {
                let message = bounded(rest.trim(), MESSAGE_MAX);
                self.last_error = Some(message.clone());
                vec![AgentEvent::Error { message }]
            }
            None => Vec::new(),
        }
    }

    fn finish(&mut self) -> Vec<AgentEvent> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        if !self.stopped && self.last_error.is_none() {
            return Vec::new();
        }
        vec![AgentEvent::Final {
            text: self.final_text.take(),
            is_error: self.last_error.is_some(),
            detail: self.last_error.take(),
        }]
    }
}

impl OpencodeParser {
    fn text(&mut self, part: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
        let flag = |key: &str| part.get(key).and_then(Value::as_bool) == Some(true);
        if flag("synthetic") || flag("ignored") {
            return;
        }
        let Some(text) = str_field(part, "text") else {
            return;
        };
        let message = str_field(part, "messageID");
        if self.text_message.as_deref() != message {
            self.text_message = message.map(|m| bounded(m, ID_MAX));
            self.texts.clear();
        }
        if !text.is_empty() {
            // Bounded: the answer is the message's end, so the oldest parts go first.
            self.texts.push(text.to_owned());
            let mut total: usize = self.texts.iter().map(String::len).sum();
            while total > MESSAGE_TEXT_MAX && self.texts.len() > 1 {
                total -= self.texts.remove(0).len();
            }
            events.push(AgentEvent::AssistantText {
                text: text.to_owned(),
                message: self.text_message.clone(),
            });
        }
    }

    fn step_finish(&mut self, part: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
        if str_field(part, "reason") == Some("length") {
            events.push(AgentEvent::Truncated);
        }
        if let Some(tokens) = part.get("tokens").and_then(Value::as_object) {
            let get = |key: &str| tokens.get(key).and_then(Value::as_u64);
            let cache = |key: &str| {
                tokens
                    .get("cache")
                    .and_then(|c| c.get(key))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            // OpenCode prices a step by its models.dev table; 0 with tokens means it
            // had no price (a custom provider), so weft's table is asked instead.
            let step = Tokens {
                input: get("input").unwrap_or(0),
                output: get("output")
                    .unwrap_or(0)
                    .saturating_add(get("reasoning").unwrap_or(0)),
                cache_read: cache("read"),
                cache_write: cache("write"),
            };
            let cost = part
                .get("cost")
                .and_then(Value::as_f64)
                .filter(|c| *c > 0.0 || step.total() == 0);
            events.push(AgentEvent::Spend {
                total: false,
                message: None,
                model: None,
                tokens: step,
                cost_usd: cost,
            });
            add(&mut self.input_tokens, get("input"));
            add(&mut self.output_tokens, get("output"));
            add(&mut self.reasoning_tokens, get("reasoning"));
            let cache = tokens.get("cache");
            for key in ["read", "write"] {
                let value = cache.and_then(|c| c.get(key)).and_then(Value::as_u64);
                add(&mut self.cache_tokens, value);
            }
        }
        if let Some(cost) = part.get("cost").and_then(Value::as_f64) {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
        if self.input_tokens.is_some() || self.output_tokens.is_some() || self.cost_usd.is_some() {
            events.push(AgentEvent::Usage {
                input_tokens: self.input_tokens,
                output_tokens: self.output_tokens,
                cost_usd: self.cost_usd,
                cache_tokens: self.cache_tokens,
                reasoning_tokens: self.reasoning_tokens,
            });
        }
        if str_field(part, "reason") == Some("stop") {
            self.stopped = true;
            let message = str_field(part, "messageID");
            self.final_text = if message.is_some() && self.text_message.as_deref() == message {
                Some(self.texts.join("\n"))
            } else {
                None
            };
        }
    }
}

fn add(total: &mut Option<u64>, value: Option<u64>) {
    if let Some(value) = value {
        *total = Some(total.unwrap_or(0).saturating_add(value));
    }
}

fn tool(part: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
    let name = one_line(str_field(part, "tool").unwrap_or("tool"), NAME_MAX);
    let id = str_field(part, "callID").map(|id| bounded(id, ID_MAX));
    let state = part.get("state").and_then(Value::as_object);
    let field = |key: &str| state.and_then(|s| s.get(key));
    let summary = tool_summary(field("input"));
    events.push(AgentEvent::ToolUse {
        id: id.clone(),
        name: name.clone(),
        summary: summary.clone(),
        subagent: false,
    });
    match field("status").and_then(Value::as_str) {
        Some("completed") => events.push(AgentEvent::ToolResult {
            id,
            outcome: ToolOutcome::Success,
            detail: bounded(
                field("output").and_then(Value::as_str).unwrap_or(""),
                DETAIL_MAX,
            ),
        }),
        Some("error") => {
            let error = field("error").and_then(Value::as_str).unwrap_or("error");
            let refused = REFUSALS.iter().any(|phrase| error.contains(phrase));
            events.push(AgentEvent::ToolResult {
                id: id.clone(),
                outcome: if refused {
                    ToolOutcome::Denied
                } else {
                    ToolOutcome::Failure
                },
                detail: bounded(error, DETAIL_MAX),
            });
            if refused {
                let summary = one_line(&summary, super::SUMMARY_MAX);
                let detail = if summary.is_empty() {
                    one_line(error, MESSAGE_MAX)
                } else {
                    one_line(&format!("{summary}: {error}"), MESSAGE_MAX)
                };
                events.push(AgentEvent::PermissionDenied {
                    id,
                    tool: name,
                    detail,
                });
            }
        }
        // `run` only prints finished calls; anything else did not run to an end.
        _ => {}
    }
}

/// `name: message (HTTP status, ref r)` of an OpenCode error object.
fn error_message(error: Option<&Value>) -> String {
    let Some(error) = error else {
        return "error".to_owned();
    };
    if let Some(s) = error.as_str() {
        return bounded(s, MESSAGE_MAX);
    }
    let name = error.get("name").and_then(Value::as_str);
    let data = error.get("data");
    let message = data
        .and_then(|d| d.get("message"))
        .and_then(Value::as_str)
        .or_else(|| error.get("message").and_then(Value::as_str));
    let status = data
        .and_then(|d| d.get("statusCode"))
        .and_then(Value::as_u64);
    let mut out = String::new();
    if let Some(name) = name {
        out.push_str(name);
    }
    if let Some(message) = message {
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(message);
    }
    let reference = data.and_then(|d| d.get("ref")).and_then(Value::as_str);
    let facts: Vec<String> = status
        .map(|s| format!("HTTP {s}"))
        .into_iter()
        .chain(reference.map(|r| format!("ref {r}")))
        .collect();
    if !facts.is_empty() {
        out.push_str(&format!(" ({})", facts.join(", ")));
    }
    if out.is_empty() {
        out.push_str("error");
    }
    bounded(&out, MESSAGE_MAX)
}
