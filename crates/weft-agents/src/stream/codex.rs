//! `codex exec --json` (Codex CLI 0.171; `ThreadEvent`s, one per line).
//!
//! | line | events |
//! | --- | --- |
//! | `thread.started` | `Session{thread_id}` |
//! | `item.completed` `agent_message` | `AssistantText` (remembered as the turn's last message) |
//! | `item.started` of a tool item (`command_execution`, `file_change`, `mcp_tool_call`, `web_search`, `collab_tool_call`, `todo_list`, unknown types) | `ToolUse` |
//! | `item.completed` of a tool item never seen started | `ToolUse` |
//! | any tool item completed with `status: "declined"` | `PermissionDenied` |
//! | `item.completed` `error` (non-fatal warning) | `Error` |
//! | `error` (stream level, e.g. "Reconnecting... 2/5") | `Error` |
//! | `turn.completed` | `Usage` then `Final{is_error: false, text: last agent message of the turn}` |
//! | `turn.failed` | `Final{is_error: true, detail: error.message}` |
//! | `turn.started` | nothing (forgets the previous turn's last message) |
//! | `reasoning` items, `item.updated`, anything else | nothing |
//!
//! Usage is what `turn.completed` reports: `input_tokens` (includes cached input, as in the
//! OpenAI API) and `output_tokens`; Codex reports no cost. On `codex exec resume` the
//! figures are the thread's cumulative totals. A stream without `turn.completed` or
//! `turn.failed` (hang, kill) produces no `Final`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{
    ID_MAX, MESSAGE_MAX, NAME_MAX, StreamParser, bounded, compact_json, json_object, one_line,
    str_field, summarize_input,
};
use crate::event::AgentEvent;

/// Items started but not yet completed are remembered to avoid a second `ToolUse` on
/// completion; past this many the memory is dropped (a duplicate `ToolUse` is harmless).
const MAX_OPEN_ITEMS: usize = 1024;

/// Parser state for Codex's exec JSON.
#[derive(Debug, Default)]
pub struct CodexParser {
    last_message: Option<String>,
    open_items: HashSet<String>,
}

impl StreamParser for CodexParser {
    fn line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(obj) = json_object(line) else {
            return Vec::new();
        };
        let mut events = Vec::new();
        match str_field(&obj, "type") {
            Some("thread.started") => {
                if let Some(id) = str_field(&obj, "thread_id").filter(|id| !id.is_empty()) {
                    events.push(AgentEvent::Session {
                        id: bounded(id, ID_MAX),
                    });
                }
            }
            Some("turn.started") => self.last_message = None,
            Some("item.started") => {
                if let Some(item) = obj.get("item").and_then(Value::as_object)
                    && let Some((name, summary)) = tool_use(item)
                {
                    if let Some(id) = str_field(item, "id")
                        && self.open_items.len() < MAX_OPEN_ITEMS
                    {
                        self.open_items.insert(bounded(id, ID_MAX));
                    }
                    events.push(AgentEvent::ToolUse { name, summary });
                }
            }
            Some("item.completed") => {
                if let Some(item) = obj.get("item").and_then(Value::as_object) {
                    self.item_completed(item, &mut events);
                }
            }
            Some("turn.completed") => {
                let usage = obj.get("usage").and_then(Value::as_object);
                let tokens = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64);
                let (input_tokens, output_tokens) =
                    (tokens("input_tokens"), tokens("output_tokens"));
                if input_tokens.is_some() || output_tokens.is_some() {
                    events.push(AgentEvent::Usage {
                        input_tokens,
                        output_tokens,
                        cost_usd: None,
                    });
                }
                events.push(AgentEvent::Final {
                    text: self.last_message.take(),
                    is_error: false,
                    detail: None,
                });
                self.open_items.clear();
            }
            Some("turn.failed") => {
                let message = obj
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("turn failed");
                events.push(AgentEvent::Final {
                    text: None,
                    is_error: true,
                    detail: Some(bounded(message, MESSAGE_MAX)),
                });
                self.last_message = None;
                self.open_items.clear();
            }
            Some("error") => {
                let message = str_field(&obj, "message").unwrap_or("error");
                events.push(AgentEvent::Error {
                    message: bounded(message, MESSAGE_MAX),
                });
            }
            _ => {}
        }
        events
    }
}

impl CodexParser {
    fn item_completed(&mut self, item: &Map<String, Value>, events: &mut Vec<AgentEvent>) {
        match str_field(item, "type") {
            Some("agent_message") => {
                if let Some(text) = str_field(item, "text") {
                    if !text.is_empty() {
                        events.push(AgentEvent::AssistantText {
                            text: text.to_owned(),
                        });
                    }
                    self.last_message = Some(text.to_owned());
                }
            }
            Some("error") => {
                let message = str_field(item, "message").unwrap_or("error");
                events.push(AgentEvent::Error {
                    message: bounded(message, MESSAGE_MAX),
                });
            }
            _ => {
                let Some((name, summary)) = tool_use(item) else {
                    return;
                };
                let started = str_field(item, "id").is_some_and(|id| self.open_items.remove(id));
                let declined = str_field(item, "status") == Some("declined");
                if declined {
                    if !started {
                        events.push(AgentEvent::ToolUse {
                            name: name.clone(),
                            summary: summary.clone(),
                        });
                    }
                    events.push(AgentEvent::PermissionDenied {
                        tool: name,
                        detail: summary,
                    });
                } else if !started {
                    events.push(AgentEvent::ToolUse { name, summary });
                }
            }
        }
    }
}

/// Name and summary of an item that is a tool call; `None` for the agent's own words,
/// reasoning and warnings.
fn tool_use(item: &Map<String, Value>) -> Option<(String, String)> {
    let kind = str_field(item, "type")?;
    let (name, summary) = match kind {
        "agent_message" | "reasoning" | "error" | "user_message" => return None,
        "command_execution" => ("command".to_owned(), summarize_input(item.get("command"))),
        "file_change" => {
            let changes: Vec<String> = item
                .get("changes")
                .and_then(Value::as_array)
                .map(|changes| {
                    changes
                        .iter()
                        .map(|c| {
                            let kind = c.get("kind").and_then(Value::as_str).unwrap_or("change");
                            let path = c.get("path").and_then(Value::as_str).unwrap_or("?");
                            format!("{kind} {path}")
                        })
                        .collect()
                })
                .unwrap_or_default();
            (
                "file_change".to_owned(),
                one_line(&changes.join(", "), super::SUMMARY_MAX),
            )
        }
        "mcp_tool_call" => {
            let server = str_field(item, "server").unwrap_or("mcp");
            let tool = str_field(item, "tool").unwrap_or("tool");
            (
                format!("{server}.{tool}"),
                summarize_input(item.get("arguments")),
            )
        }
        "web_search" => ("web_search".to_owned(), summarize_input(item.get("query"))),
        "todo_list" => {
            let n = item
                .get("items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            ("todo_list".to_owned(), format!("{n} items"))
        }
        other => {
            let mut rest = item.clone();
            rest.remove("id");
            rest.remove("type");
            (other.to_owned(), compact_json(&Value::Object(rest)))
        }
    };
    Some((one_line(&name, NAME_MAX), summary))
}
