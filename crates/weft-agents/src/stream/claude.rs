//! `claude -p --output-format stream-json --verbose` (Claude Code 2.1.x).
//!
//! | line | events |
//! | --- | --- |
//! | first line carrying `session_id` (normally `system/init`) | `Session` |
//! | `system/api_retry` | `Error` ("API retry n/m: ...") |
//! | `assistant`, `text` block | `AssistantText` (`message`: `message.id`) |
//! | `assistant`, `thinking` block | `Reasoning` |
//! | `assistant`, `tool_use` / `server_tool_use` / `mcp_tool_use` block | `ToolUse` (by `id`; `ExitPlanMode`'s summary is `plan`), and for `ExitPlanMode` its `plan` as `PlanText` |
//! | `assistant`, `*_tool_result` block (server tools answer inside the message) | `ToolResult` (an error `content.type` is a Failure) |
//! | `assistant` with `stop_reason: "max_tokens"` | `Truncated` |
//! | `assistant` made by the CLI itself (`message.model == "<synthetic>"`, `isApiErrorMessage`, or a top-level `error`) | `Error`, never `AssistantText` |
//! | `assistant` with a non-null `parent_tool_use_id` (sub-agent traffic) | only its tool calls: `ToolUse{subagent: true}`, `ToolResult` |
//! | `user`, `tool_result` block (the agent's and its sub-agents') | `ToolResult`: `is_error` is a Failure, or Denied when the text is a permission refusal |
//! | `stream_event`, `control_request`, other `system`, other `user` content | nothing |
//! | `assistant` with `message.usage` (a sub-agent's too; not the CLI's synthetic ones) | `Spend{total: false}` (`message`: `message.id`, `model`: `message.model`) |
//! | `result` | `Truncated` on `max_tokens`, one `PermissionDenied` (with `tool_use_id`) per `permission_denials` entry, then `Spend{total: true}` (its `usage` and `total_cost_usd`), `Usage`, then `Final` |
//!
//! `Final::is_error` is the CLI's `is_error` (absent: `subtype != "success"`); `Final::text`
//! is `result` (absent for the `error_*` subtypes); `Final::detail`, only when failed, joins
//! the non-`success` subtype, `errors[]` and the result text, then `(HTTP n)` for an
//! `api_error_status`. Usage figures are the run totals of the `result` line:
//! `usage.input_tokens` (which excludes the cache), the cache reads and writes as
//! `cache_tokens`, and `total_cost_usd`. (An `assistant` line's `message.usage` is the
//! figure at the message's start: its `output_tokens` is not final, so the live estimate
//! runs low on output until `result` replaces it.) A stream without a `result` line (hang, kill)
//! produces no `Final`.

use serde_json::{Map, Value};

use super::{
    ID_MAX, MESSAGE_MAX, NAME_MAX, StreamParser, bounded, content_text, json_object, mentions,
    one_line, str_field, summarize_input, tool_summary,
};
use weft_core::spend::Tokens;

use crate::event::{AgentEvent, ToolOutcome};

/// How Claude Code words a refused tool call (headless `default` mode, the working
/// directory guard, an interactive no, older "not granted" texts). A call listed in
/// `result.permission_denials` is refused whatever its text.
const REFUSALS: &[&str] = &[
    "requires approval",
    "haven't granted it yet",
    "was blocked. for security",
    "tool use was rejected",
    "doesn't want to proceed",
    "permission to use",
    "denied by",
];

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
            Some("user") => user(&obj, &mut events),
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
    // Sub-agent (Task) traffic: its tool calls are reported, its words are not the answer.
    let subagent = obj.get("parent_tool_use_id").is_some_and(|v| !v.is_null());
    let Some(message) = obj.get("message").and_then(Value::as_object) else {
        return;
    };
    let blocks: &[Value] = message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);

    let synthetic = str_field(message, "model") == Some("<synthetic>");
    let error_code = str_field(obj, "error");
    let api_error = obj.get("isApiErrorMessage") == Some(&Value::Bool(true));
    if synthetic || error_code.is_some() || api_error {
        if !subagent {
            events.push(AgentEvent::Error {
                message: synthetic_message(error_code, blocks),
            });
        }
        return;
    }
    if !subagent && str_field(message, "stop_reason") == Some("max_tokens") {
        events.push(AgentEvent::Truncated);
    }
    // Every message costs, a sub-agent's too.
    if let Some(usage) = message.get("usage").and_then(Value::as_object) {
        events.push(AgentEvent::Spend {
            total: false,
            message: str_field(message, "id").map(|id| bounded(id, ID_MAX)),
            model: str_field(message, "model").map(|m| bounded(m, NAME_MAX)),
            tokens: tokens(usage),
            cost_usd: None,
        });
    }

    let message_id = str_field(message, "id").map(|id| bounded(id, ID_MAX));
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") if !subagent => {
                if let Some(text) = block.get("text").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    events.push(AgentEvent::AssistantText {
                        text: text.to_owned(),
                        message: message_id.clone(),
                    });
                }
            }
            Some("thinking") if !subagent => {
                if let Some(text) = block.get("thinking").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    events.push(AgentEvent::Reasoning {
                        text: text.to_owned(),
                    });
                }
            }
            Some("tool_use" | "server_tool_use" | "mcp_tool_use") => {
                let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                let input = block.get("input");
                let plan_tool = name == "ExitPlanMode";
                events.push(AgentEvent::ToolUse {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .map(|id| bounded(id, ID_MAX)),
                    name: one_line(name, NAME_MAX),
                    summary: if plan_tool {
                        "plan".to_owned()
                    } else {
                        tool_summary(input)
                    },
                    subagent,
                });
                // Plan mode may hand the answer over as the plan of ExitPlanMode.
                if plan_tool
                    && !subagent
                    && let Some(plan) = input.and_then(|i| i.get("plan")).and_then(Value::as_str)
                {
                    events.push(AgentEvent::PlanText {
                        text: plan.to_owned(),
                        message: message_id.clone(),
                    });
                }
            }
            // Server tools (web search, fetch) answer inside the assistant message.
            Some(kind) if kind.ends_with("_tool_result") => {
                if let Some(id) = block.get("tool_use_id").and_then(Value::as_str) {
                    let content = block.get("content");
                    let failed = content
                        .and_then(|c| c.get("type"))
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.contains("error"));
                    events.push(AgentEvent::ToolResult {
                        id: Some(bounded(id, ID_MAX)),
                        outcome: if failed {
                            ToolOutcome::Failure
                        } else {
                            ToolOutcome::Success
                        },
                        detail: content_text(content),
                    });
                }
            }
            _ => {}
        }
    }
}

/// `code: text` of a message the CLI made itself.
fn synthetic_message(error_code: Option<&str>, blocks: &[Value]) -> String {
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
    bounded(&message, MESSAGE_MAX)
}

/// Tool results, the agent's and its sub-agents'.
fn user(obj: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
    let Some(blocks) = obj
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
    else {
        return;
    };
    for block in blocks {
        if block.get("type").and_then(Value::as_str) != Some("tool_result") {
            continue;
        }
        let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
            continue;
        };
        let detail = content_text(block.get("content"));
        let outcome = match block.get("is_error").and_then(Value::as_bool) {
            Some(true) if mentions(&detail, REFUSALS) => ToolOutcome::Denied,
            Some(true) => ToolOutcome::Failure,
            _ => ToolOutcome::Success,
        };
        events.push(AgentEvent::ToolResult {
            id: Some(bounded(id, ID_MAX)),
            outcome,
            detail,
        });
    }
}

/// The tokens of a `usage` object (a message's or the result's).
fn tokens(usage: &Map<String, Value>) -> Tokens {
    let get = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Tokens {
        input: get("input_tokens"),
        output: get("output_tokens"),
        cache_read: get("cache_read_input_tokens"),
        cache_write: get("cache_creation_input_tokens"),
    }
}

fn result(obj: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
    if str_field(obj, "stop_reason") == Some("max_tokens") {
        events.push(AgentEvent::Truncated);
    }
    if let Some(denials) = obj.get("permission_denials").and_then(Value::as_array) {
        for denial in denials {
            let tool = denial
                .get("tool_name")
                .and_then(Value::as_str)
                .unwrap_or("tool");
            events.push(AgentEvent::PermissionDenied {
                id: denial
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .map(|id| bounded(id, ID_MAX)),
                tool: one_line(tool, NAME_MAX),
                detail: summarize_input(denial.get("tool_input")),
            });
        }
    }

    let usage = obj.get("usage").and_then(Value::as_object);
    let tokens = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64);
    let cost = obj.get("total_cost_usd").and_then(Value::as_f64);
    let (input_tokens, output_tokens) = (tokens("input_tokens"), tokens("output_tokens"));
    let cache_tokens = match (
        tokens("cache_creation_input_tokens"),
        tokens("cache_read_input_tokens"),
    ) {
        (None, None) => None,
        (write, read) => Some(write.unwrap_or(0).saturating_add(read.unwrap_or(0))),
    };
    if input_tokens.is_some() || output_tokens.is_some() || cost.is_some() {
        events.push(AgentEvent::Spend {
            total: true,
            message: None,
            model: None,
            tokens: usage.map(self::tokens).unwrap_or_default(),
            cost_usd: cost,
        });
        events.push(AgentEvent::Usage {
            input_tokens,
            output_tokens,
            cost_usd: cost,
            cache_tokens,
            reasoning_tokens: None,
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
        if parts.is_empty() {
            parts.push("is_error".to_owned());
        }
        let mut detail = parts.join("; ");
        if let Some(status) = obj.get("api_error_status").and_then(Value::as_u64) {
            detail.push_str(&format!(" (HTTP {status})"));
        }
        bounded(&detail, MESSAGE_MAX)
    });
    events.push(AgentEvent::Final {
        text,
        is_error,
        detail,
    });
}
