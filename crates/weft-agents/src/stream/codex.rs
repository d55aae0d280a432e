//! `codex exec --json` (Codex CLI 0.171; `ThreadEvent`s, one per line).
//!
//! | line | events |
//! | --- | --- |
//! | `thread.started` | `Session{thread_id}` |
//! | `item.completed` `agent_message` | `AssistantText` (`message`: the item id; remembered as the turn's last message) |
//! | `item.completed` `reasoning` | `Reasoning` |
//! | `item.started` of a tool item (`command_execution`, `file_change`, `mcp_tool_call`, `web_search`, `collab_tool_call`, `todo_list`, unknown types) | `ToolUse` (by item id; named by its type, `server.tool` for MCP) |
//! | `item.completed` of a tool item never seen started | `ToolUse` |
//! | any tool item completed | `ToolResult`: `declined` is Denied; a failed command (status `failed` or a non-zero `exit_code`, its output and exit code the detail) is a Failure, or Refused when the read-only sandbox stopped it; an `error` is a Failure |
//! | any tool item completed with `status: "declined"` | `PermissionDenied` |
//! | `item.completed` `error` (non-fatal warning) | `Error` |
//! | `error` (stream level, e.g. "Reconnecting... 2/5") | `Error` |
//! | `turn.completed` | `Spend{total: true}` (input without its cached part, which is the cache read), `Usage`, then `Final{is_error: false, text: last agent message of the turn}` |
//! | `turn.failed` | `Final{is_error: true, detail: error.message}` |
//! | `turn.started` | nothing (forgets the previous turn's last message) |
//! | `item.updated`, anything else | nothing |
//!
//! Usage is what `turn.completed` reports: `input_tokens` (includes cached input, as in the
//! OpenAI API) and `output_tokens`; Codex reports no cost, so weft prices the tokens by
//! the task's model. The stream says nothing of usage before `turn.completed`: the live
//! figures are the `token_count` records of Codex's rollout file
//! ([`crate::transcript::codex_tail`]). On `codex exec resume` the
//! figures are the thread's cumulative totals. A stream without `turn.completed` or
//! `turn.failed` (hang, kill) produces no `Final`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{
    DETAIL_MAX, ID_MAX, MESSAGE_MAX, NAME_MAX, StreamParser, bounded, compact_json, content_text,
    json_object, mentions, one_line, str_field, tool_summary,
};
use weft_core::spend::Tokens;

use crate::event::{AgentEvent, ToolOutcome};

/// Output of a command the read-only sandbox stopped (bubblewrap mounts the tree
/// read-only; Landlock answers EPERM): the envelope refused it, the command did not fail
/// on its own.
const SANDBOX_REFUSALS: &[&str] = &["read-only file system", "operation not permitted"];

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
                    let id = str_field(item, "id").map(|id| bounded(id, ID_MAX));
                    if let Some(id) = &id
                        && self.open_items.len() < MAX_OPEN_ITEMS
                    {
                        self.open_items.insert(id.clone());
                    }
                    events.push(AgentEvent::ToolUse {
                        id,
                        name,
                        summary,
                        subagent: false,
                    });
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
                    // OpenAI's input includes its cached part; weft counts them apart.
                    let cached = tokens("cached_input_tokens").unwrap_or(0);
                    events.push(AgentEvent::Spend {
                        total: true,
                        message: None,
                        model: None,
                        tokens: Tokens {
                            input: input_tokens.unwrap_or(0).saturating_sub(cached),
                            output: output_tokens.unwrap_or(0),
                            cache_read: cached,
                            cache_write: tokens("cache_write_input_tokens").unwrap_or(0),
                        },
                        cost_usd: None,
                    });
                    events.push(AgentEvent::Usage {
                        input_tokens,
                        output_tokens,
                        cost_usd: None,
                        cache_tokens: None,
                        reasoning_tokens: None,
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
                            message: str_field(item, "id").map(|id| bounded(id, ID_MAX)),
                        });
                    }
                    self.last_message = Some(text.to_owned());
                }
            }
            Some("reasoning") => {
                if let Some(text) = str_field(item, "text").filter(|t| !t.is_empty()) {
                    events.push(AgentEvent::Reasoning {
                        text: text.to_owned(),
                    });
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
                let id = str_field(item, "id").map(|id| bounded(id, ID_MAX));
                let started = id.as_ref().is_some_and(|id| self.open_items.remove(id));
                if !started {
                    events.push(AgentEvent::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        summary: summary.clone(),
                        subagent: false,
                    });
                }
                let (outcome, detail) = tool_outcome(item);
                events.push(AgentEvent::ToolResult {
                    id: id.clone(),
                    outcome,
                    detail,
                });
                if str_field(item, "status") == Some("declined") {
                    events.push(AgentEvent::PermissionDenied {
                        id,
                        tool: name,
                        detail: one_line(&summary, super::SUMMARY_MAX),
                    });
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
        "command_execution" => (kind.to_owned(), tool_summary(item.get("command"))),
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
                one_line(&changes.join(", "), super::TOOL_SUMMARY_MAX),
            )
        }
        "mcp_tool_call" => {
            let server = str_field(item, "server").unwrap_or("mcp");
            let tool = str_field(item, "tool").unwrap_or("tool");
            (
                format!("{server}.{tool}"),
                tool_summary(item.get("arguments")),
            )
        }
        "web_search" => ("web_search".to_owned(), tool_summary(item.get("query"))),
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

/// How a completed tool item ended, and its result or error text.
fn tool_outcome(item: &Map<String, Value>) -> (ToolOutcome, String) {
    let status = str_field(item, "status").unwrap_or("");
    let error = item
        .get("error")
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(Value::as_str)
        .map(|e| bounded(e, DETAIL_MAX));
    if status == "declined" {
        let why = error.unwrap_or_else(|| "declined by Codex's approval policy".to_owned());
        return (ToolOutcome::Denied, why);
    }
    match str_field(item, "type").unwrap_or("") {
        "command_execution" => {
            let mut detail = str_field(item, "aggregated_output")
                .unwrap_or("")
                .to_owned();
            let code = item.get("exit_code").and_then(Value::as_i64);
            if status != "failed" && code.is_none_or(|c| c == 0) {
                return (ToolOutcome::Success, bounded(&detail, DETAIL_MAX));
            }
            if let Some(code) = code {
                if !detail.is_empty() && !detail.ends_with('\n') {
                    detail.push('\n');
                }
                detail.push_str(&format!("exit code {code}"));
            }
            let outcome = if mentions(&detail, SANDBOX_REFUSALS) {
                ToolOutcome::Refused
            } else {
                ToolOutcome::Failure
            };
            // The exit code is the end of the text: keep the end.
            let skip = detail.chars().count().saturating_sub(DETAIL_MAX);
            (outcome, detail.chars().skip(skip).collect())
        }
        "mcp_tool_call" => match error {
            Some(error) => (ToolOutcome::Failure, error),
            None if status == "failed" => (ToolOutcome::Failure, "failed".to_owned()),
            None => {
                let content = item.get("result").and_then(|r| r.get("content"));
                (ToolOutcome::Success, content_text(content))
            }
        },
        "file_change" if status != "failed" => (ToolOutcome::Success, bounded(status, MESSAGE_MAX)),
        _ => match (status, error) {
            (_, Some(error)) => (ToolOutcome::Failure, error),
            ("failed", None) => (ToolOutcome::Failure, "failed".to_owned()),
            _ => (ToolOutcome::Success, bounded(status, MESSAGE_MAX)),
        },
    }
}
