//! `claude -p --output-format stream-json --verbose` (Claude Code 2.1.x).
//!
//! | line | events |
//! | --- | --- |
//! | first line carrying `session_id` (normally `system/init`) | `Session` |
//! | `system/api_retry` | `Error` ("API retry n/m: ...") |
//! | `assistant`, `text` block | `AssistantText` |
//! | `assistant`, `tool_use` / `server_tool_use` / `mcp_tool_use` block | `ToolUse` |
//! | `assistant` made by the CLI itself (`message.model == "<synthetic>"` or a top-level `error`) | `Error`, never `AssistantText` |
//! | `assistant` with a non-null `parent_tool_use_id` (sub-agent traffic) | nothing |
//! | `user` (tool results, synthetic nudges), `stream_event`, `control_request`, other `system` | nothing |
//! | `result` | one `PermissionDenied` per `permission_denials` entry, then `Usage`, then `Final` |
//!
//! `Final::is_error` is the CLI's `is_error` (absent: `subtype != "success"`); `Final::text`
//! is `result` (absent for the `error_*` subtypes); `Final::detail`, only when failed, joins
//! the non-`success` subtype, `errors[]`, the result text and `api_error_status`. Usage
//! figures are the run totals of the `result` line (`usage.input_tokens` excludes cache
//! reads and writes) and `total_cost_usd`. A stream without a `result` line (hang, kill)
//! produces no `Final`.

use serde_json::{Map, Value};

use super::{
    ID_MAX, MESSAGE_MAX, NAME_MAX, StreamParser, bounded, json_object, one_line, str_field,
    summarize_input,
};
use crate::event::AgentEvent;

/// Parser state for Claude Code's stream-json.
#[derive(Debug, Default)]
pub struct ClaudeParser {
    session_sent: bool,
}

impl StreamParser for ClaudeParser {
    fn line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(obj) = json_object(line) else {
            return Vec::new();
        };
        let mut events = Vec::new();
        if !self.session_sent
            && let Some(id) = str_field(&obj, "session_id").filter(|id| !id.is_empty())
        {
            self.session_sent = true;
            events.push(AgentEvent::Session {
                id: bounded(id, ID_MAX),
            });
        }
        match str_field(&obj, "type") {
            Some("system") => system(&obj, &mut events),
            Some("assistant") => assistant(&obj, &mut events),
            Some("result") => result(&obj, &mut events),
            _ => {}
        }
        events
    }
}

fn system(obj: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
    if str_field(obj, "subtype") != Some("api_retry") {
        return;
    }
    let attempt = obj.get("attempt").and_then(Value::as_u64);
    let max = obj.get("max_retries").and_then(Value::as_u64);
    let mut message = String::from("API retry");
    if let Some(attempt) = attempt {
        message.push_str(&format!(" {attempt}"));
        if let Some(max) = max {
            message.push_str(&format!("/{max}"));
        }
    }
    if let Some(error) = str_field(obj, "error") {
        message.push_str(": ");
        message.push_str(error);
    }
    if let Some(status) = obj.get("error_status").and_then(Value::as_u64) {
        message.push_str(&format!(" (HTTP {status})"));
    }
    events.push(AgentEvent::Error {
        message: bounded(&message, MESSAGE_MAX),
    });
}

fn assistant(obj: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
    // Sub-agent (Task) traffic: not the agent's own answer.
    if obj.get("parent_tool_use_id").is_some_and(|v| !v.is_null()) {
        return;
    }
    let Some(message) = obj.get("message").and_then(Value::as_object) else {
        return;
    };
    let blocks: &[Value] = message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);

    let synthetic = str_field(message, "model") == Some("<synthetic>");
    let error_code = str_field(obj, "error");
    if synthetic || error_code.is_some() || obj.get("isApiErrorMessage") == Some(&Value::Bool(true))
    {
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        let mut message = String::new();
        if let Some(code) = error_code {
            message.push_str(code);
        }
        if !text.is_empty() {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&text.join("\n"));
        }
        if message.is_empty() {
            message.push_str("synthetic assistant message");
        }
        events.push(AgentEvent::Error {
            message: bounded(&message, MESSAGE_MAX),
        });
        return;
    }

    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    events.push(AgentEvent::AssistantText {
                        text: text.to_owned(),
                    });
                }
            }
            Some("tool_use" | "server_tool_use" | "mcp_tool_use") => {
                let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                events.push(AgentEvent::ToolUse {
                    name: one_line(name, NAME_MAX),
                    summary: summarize_input(block.get("input")),
                });
            }
            _ => {}
        }
    }
}

fn result(obj: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
    if let Some(denials) = obj.get("permission_denials").and_then(Value::as_array) {
        for denial in denials {
            let tool = denial
                .get("tool_name")
                .and_then(Value::as_str)
                .unwrap_or("tool");
            events.push(AgentEvent::PermissionDenied {
                tool: one_line(tool, NAME_MAX),
                detail: summarize_input(denial.get("tool_input")),
            });
        }
    }

    let usage = obj.get("usage").and_then(Value::as_object);
    let tokens = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64);
    let cost = obj.get("total_cost_usd").and_then(Value::as_f64);
    let (input_tokens, output_tokens) = (tokens("input_tokens"), tokens("output_tokens"));
    if input_tokens.is_some() || output_tokens.is_some() || cost.is_some() {
        events.push(AgentEvent::Usage {
            input_tokens,
            output_tokens,
            cost_usd: cost,
        });
    }

    let subtype = str_field(obj, "subtype");
    let is_error = obj
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(subtype != Some("success"));
    let text = str_field(obj, "result").map(str::to_owned);
    let detail = is_error.then(|| {
        let mut parts: Vec<String> = Vec::new();
        if let Some(subtype) = subtype.filter(|s| *s != "success") {
            parts.push(subtype.to_owned());
        }
        if let Some(errors) = obj.get("errors").and_then(Value::as_array) {
            parts.extend(errors.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        if let Some(text) = &text
            && !text.is_empty()
        {
            parts.push(text.clone());
        }
        if let Some(status) = obj.get("api_error_status").and_then(Value::as_u64) {
            parts.push(format!("api_error_status {status}"));
        }
        if parts.is_empty() {
            parts.push("is_error".to_owned());
        }
        bounded(&parts.join("; "), MESSAGE_MAX)
    });
    events.push(AgentEvent::Final {
        text,
        is_error,
        detail,
    });
}
