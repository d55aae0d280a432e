//! `codex exec --json` (Codex CLI 0.171; `ThreadEvent`s, one per line).
//!
//! | line | what the turn keeps |
//! | --- | --- |
//! | `thread.started` | the session (thread) id |
//! | `item.completed` `agent_message` | reply text (one paragraph per message) |
//! | `item.completed` `reasoning` | a `Reasoning` event only |
//! | `item.started` / `item.completed` of a tool item (`command_execution`, `file_change`, `mcp_tool_call`, `web_search`, …) | a step, by item id, finished on completion |
//! | `item.completed` `error` (a warning such as model metadata), `error` events | notes: "Reconnecting..." is a retry, never a failure by itself |
//! | `turn.completed` | usage; the turn succeeded |
//! | `turn.failed` | the failure, with its `error.message` |
//!
//! Codex may retry for ever without a network; only the turn timeout ends that. Usage is as
//! reported: on `resume` Codex reports the thread's running totals.

use serde_json::{Map, Value};

use super::collect::{Collector, MAX_MESSAGE_CHARS, cap_chars, message_text, summarize_input};
use super::{StreamParser, Verdict};
use crate::chat::{StreamEvent, Usage};
use crate::log::StepOutcome;

/// Output of a command the read-only sandbox stopped (bubblewrap mounts the tree
/// read-only; Landlock answers EPERM): the envelope refused it, the command did not fail
/// on its own.
const SANDBOX_REFUSALS: &[&str] = &["read-only file system", "operation not permitted"];

#[derive(Debug, Default)]
pub(super) struct CodexStream {
    verdict: Option<Verdict>,
    /// The last stream error (a retry or a warning), to explain a turn that never ended.
    last_error: Option<String>,
}

impl StreamParser for CodexStream {
    fn line(
        &mut self,
        obj: &Map<String, Value>,
        turn: &mut Collector,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        match obj.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                turn.note_session(obj.get("thread_id").and_then(Value::as_str));
            }
            Some("item.started") => {
                if let Some(item) = obj.get("item").and_then(Value::as_object)
                    && let Some(kind) = tool_kind(item)
                {
                    let id = item.get("id").and_then(Value::as_str);
                    turn.start_step(id, kind, tool_input(kind, item), on_event);
                }
            }
            Some("item.completed") => {
                if let Some(item) = obj.get("item").and_then(Value::as_object) {
                    self.item_completed(item, turn, on_event);
                }
            }
            Some("turn.completed") => {
                if let Some(usage) = obj.get("usage").and_then(Value::as_object) {
                    let get = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                    turn.usage = Some(Usage {
                        input_tokens: get("input_tokens"),
                        output_tokens: get("output_tokens"),
                    });
                }
                self.verdict = Some(Verdict::Success);
            }
            Some("turn.failed") => {
                let message = obj
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .filter(|m| !m.trim().is_empty())
                    .map(message_text)
                    .or_else(|| self.last_error.clone())
                    .unwrap_or_else(|| "the turn failed".to_owned());
                self.verdict = Some(Verdict::Failed(message));
            }
            Some("error") => {
                if let Some(message) = obj.get("message").and_then(Value::as_str) {
                    self.last_error = Some(message_text(message));
                }
            }
            _ => {}
        }
    }

    fn verdict(&mut self, turn: &mut Collector, _exit_ok: bool) -> Verdict {
        turn.close_unanswered("the item never completed");
        self.verdict.take().unwrap_or_else(|| Verdict::Undecided {
            note: self.last_error.take(),
        })
    }
}

impl CodexStream {
    fn item_completed(
        &mut self,
        item: &Map<String, Value>,
        turn: &mut Collector,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        let id = item.get("id").and_then(Value::as_str);
        match item.get("type").and_then(Value::as_str) {
            Some("agent_message") => {
                if let Some(text) = item.get("text").and_then(Value::as_str) {
                    // Each message is its own paragraph, whatever its id.
                    turn.push_text(None, text, on_event);
                }
            }
            Some("reasoning") => {
                if let Some(text) = item.get("text").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    on_event(StreamEvent::Reasoning(text.to_owned()));
                }
            }
            Some("error") => {
                if let Some(message) = item.get("message").and_then(Value::as_str) {
                    self.last_error = Some(message_text(message));
                }
            }
            _ => {
                let Some(kind) = tool_kind(item) else {
                    return;
                };
                let (outcome, detail) = tool_outcome(kind, item);
                let input = tool_input(kind, item);
                match id {
                    Some(id) if turn.has_step(id) => turn.finish_step(id, outcome, &detail),
                    _ => turn.add_step(id, kind, input, outcome, &detail, on_event),
                }
            }
        }
    }
}

/// The item's type when it is a tool the agent used (not its words, thoughts or todo list).
fn tool_kind(item: &Map<String, Value>) -> Option<&str> {
    match item.get("type").and_then(Value::as_str)? {
        "agent_message" | "reasoning" | "error" | "todo_list" | "user_message" => None,
        kind => Some(kind),
    }
}

fn tool_input(kind: &str, item: &Map<String, Value>) -> String {
    match kind {
        "file_change" => item
            .get("changes")
            .and_then(Value::as_array)
            .map(|changes| {
                let list: Vec<String> = changes
                    .iter()
                    .map(|c| {
                        let kind = c.get("kind").and_then(Value::as_str).unwrap_or("change");
                        let path = c.get("path").and_then(Value::as_str).unwrap_or("?");
                        format!("{kind} {path}")
                    })
                    .collect();
                summarize_input(Some(&Value::String(list.join(", "))))
            })
            .unwrap_or_default(),
        "mcp_tool_call" => {
            let server = item.get("server").and_then(Value::as_str).unwrap_or("?");
            let tool = item.get("tool").and_then(Value::as_str).unwrap_or("?");
            let args = summarize_input(item.get("arguments"));
            let text = if args.is_empty() {
                format!("{server}.{tool}")
            } else {
                format!("{server}.{tool} {args}")
            };
            summarize_input(Some(&Value::String(text)))
        }
        _ => {
            let mut only = Map::new();
            if let Some((key, value)) = ["command", "query", "path", "url"]
                .iter()
                .find_map(|key| item.get(*key).map(|v| (*key, v)))
            {
                only.insert(key.to_owned(), value.clone());
                summarize_input(Some(&Value::Object(only)))
            } else {
                String::new()
            }
        }
    }
}

fn tool_outcome(kind: &str, item: &Map<String, Value>) -> (StepOutcome, String) {
    let status = item.get("status").and_then(Value::as_str).unwrap_or("");
    let error = item
        .get("error")
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if status == "declined" {
        return (
            StepOutcome::Denied,
            error.unwrap_or_else(|| "declined by Codex's approval policy".to_owned()),
        );
    }
    match kind {
        "command_execution" => {
            let output = item
                .get("aggregated_output")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let code = item.get("exit_code").and_then(Value::as_i64);
            let failed = status == "failed" || code.is_some_and(|c| c != 0);
            if !failed {
                return (StepOutcome::Success, output);
            }
            let mut detail = output;
            if let Some(code) = code {
                if !detail.is_empty() && !detail.ends_with('\n') {
                    detail.push('\n');
                }
                detail.push_str(&format!("exit code {code}"));
            }
            let lower = detail.to_lowercase();
            if SANDBOX_REFUSALS.iter().any(|p| lower.contains(p)) {
                (StepOutcome::Refused, detail)
            } else {
                (StepOutcome::Failure, detail)
            }
        }
        "mcp_tool_call" => match error {
            Some(error) => (StepOutcome::Failure, error),
            None if status == "failed" => (StepOutcome::Failure, "failed".to_owned()),
            None => {
                let result = item
                    .get("result")
                    .and_then(|r| r.get("content"))
                    .map(|c| super::collect::content_text(Some(c)))
                    .unwrap_or_default();
                (StepOutcome::Success, result)
            }
        },
        "file_change" if status != "failed" => (StepOutcome::Success, status.to_owned()),
        _ => match (status, error) {
            (_, Some(error)) => (StepOutcome::Failure, error),
            ("failed", None) => (StepOutcome::Failure, "failed".to_owned()),
            _ => (StepOutcome::Success, cap_chars(status, MAX_MESSAGE_CHARS)),
        },
    }
}
