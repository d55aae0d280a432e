//! `claude -p --output-format stream-json --verbose` (Claude Code 2.1.x).
//!
//! | line | what the turn keeps |
//! | --- | --- |
//! | any line's `session_id` (first: `system/init`) | the session id |
//! | top-level `assistant`, `text` block | reply text (blocks of one `message.id` joined by a newline, messages by a blank line) |
//! | top-level `assistant`, `thinking` block | a `Reasoning` event only |
//! | `assistant`, `tool_use` block (also sub-agent ones) | a step, by `id`; `ExitPlanMode`'s `plan` is also reply text |
//! | `assistant` made by the CLI (`model: "<synthetic>"` or a top-level `error`) | not reply text; kept to explain a failure |
//! | `user`, `tool_result` block | the step's outcome: `is_error` → Failure, or Denied for a permission refusal |
//! | `result` | usage; `permission_denials` → Denied steps; `is_error` → the failure, with the CLI's text |
//!
//! `is_error` decides, not `subtype`: auth and API failures come as `subtype: "success"` with
//! `is_error: true`, and the `error_*` subtypes have no `result` text but `errors[]`.

use serde_json::{Map, Value};

use super::collect::{Collector, content_text, message_text, summarize_input};
use super::{StreamParser, Verdict};
use crate::chat::{StreamEvent, Usage};
use crate::log::StepOutcome;

/// How Claude Code words a refused tool call (headless `default` mode, the working
/// directory guard, an interactive no, older "not granted" texts). A call listed in
/// `result.permission_denials` is Denied whatever its text.
const REFUSALS: &[&str] = &[
    "requires approval",
    "haven't granted it yet",
    "was blocked. for security",
    "tool use was rejected",
    "doesn't want to proceed",
    "permission to use",
    "denied by",
];

#[derive(Debug, Default)]
pub(super) struct ClaudeStream {
    verdict: Option<Verdict>,
    /// Text of the CLI's own (synthetic) error message, if one came.
    synthetic: Option<String>,
}

impl StreamParser for ClaudeStream {
    fn line(
        &mut self,
        obj: &Map<String, Value>,
        turn: &mut Collector,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        turn.note_session(obj.get("session_id").and_then(Value::as_str));
        match obj.get("type").and_then(Value::as_str) {
            Some("assistant") => self.assistant(obj, turn, on_event),
            Some("user") => user(obj, turn),
            Some("result") => self.result(obj, turn, on_event),
            _ => {}
        }
    }

    fn verdict(&mut self, turn: &mut Collector, _exit_ok: bool) -> Verdict {
        turn.close_unanswered("no result was reported for this call");
        self.verdict.take().unwrap_or_else(|| Verdict::Undecided {
            note: self.synthetic.take(),
        })
    }
}

impl ClaudeStream {
    fn assistant(
        &mut self,
        obj: &Map<String, Value>,
        turn: &mut Collector,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        // Sub-agent (Task) traffic: its research is logged, its words are not the reply.
        let top_level = obj.get("parent_tool_use_id").is_none_or(Value::is_null);
        let Some(message) = obj.get("message").and_then(Value::as_object) else {
            return;
        };
        let blocks: &[Value] = message
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let synthetic = message.get("model").and_then(Value::as_str) == Some("<synthetic>")
            || obj.get("error").is_some_and(|e| !e.is_null());
        if synthetic {
            if top_level {
                let text = block_texts(blocks);
                if !text.is_empty() {
                    self.synthetic = Some(text);
                }
            }
            return;
        }
        if top_level && message.get("stop_reason").and_then(Value::as_str) == Some("max_tokens") {
            turn.truncated = true;
        }
        let group = message.get("id").and_then(Value::as_str);
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") if top_level => {
                    if let Some(text) = block.get("text").and_then(Value::as_str) {
                        turn.push_text(group, text, on_event);
                    }
                }
                Some("thinking") if top_level => {
                    if let Some(text) = block.get("thinking").and_then(Value::as_str)
                        && !text.is_empty()
                    {
                        on_event(StreamEvent::Reasoning(text.to_owned()));
                    }
                }
                Some("tool_use" | "server_tool_use" | "mcp_tool_use") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let input = block.get("input");
                    let summary = if name == "ExitPlanMode" {
                        "plan".to_owned()
                    } else {
                        summarize_input(input)
                    };
                    let id = block.get("id").and_then(Value::as_str);
                    turn.start_step(id, name, summary, on_event);
                    // Plan mode may hand the answer over as the plan of ExitPlanMode.
                    if top_level
                        && name == "ExitPlanMode"
                        && let Some(plan) =
                            input.and_then(|i| i.get("plan")).and_then(Value::as_str)
                    {
                        turn.push_text(group, plan, on_event);
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
                        let outcome = if failed {
                            StepOutcome::Failure
                        } else {
                            StepOutcome::Success
                        };
                        turn.finish_step(id, outcome, &content_text(content));
                    }
                }
                _ => {}
            }
        }
    }

    fn result(
        &mut self,
        obj: &Map<String, Value>,
        turn: &mut Collector,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        if obj.get("stop_reason").and_then(Value::as_str) == Some("max_tokens") {
            turn.truncated = true;
        }
        if let Some(usage) = obj.get("usage").and_then(Value::as_object) {
            let get = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            // Input counts what the model read, cached or not.
            turn.usage = Some(Usage {
                input_tokens: get("input_tokens")
                    + get("cache_creation_input_tokens")
                    + get("cache_read_input_tokens"),
                output_tokens: get("output_tokens"),
            });
        }
        for denial in obj
            .get("permission_denials")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
        {
            const WHY: &str = "refused by Claude Code's permission mode";
            let id = denial.get("tool_use_id").and_then(Value::as_str);
            match id {
                Some(id) if turn.has_step(id) => turn.set_outcome(id, StepOutcome::Denied, WHY),
                _ => {
                    let tool = denial
                        .get("tool_name")
                        .and_then(Value::as_str)
                        .unwrap_or("tool");
                    let input = summarize_input(denial.get("tool_input"));
                    turn.add_step(id, tool, input, StepOutcome::Denied, WHY, on_event);
                }
            }
        }

        let subtype = obj.get("subtype").and_then(Value::as_str);
        let is_error = obj
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(subtype != Some("success"));
        let text = obj
            .get("result")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty());
        if !is_error {
            // Older streams may carry the answer only in `result`.
            if !turn.has_text()
                && let Some(text) = text
            {
                turn.push_text(None, text, on_event);
            }
            self.verdict = Some(Verdict::Success);
            return;
        }
        let mut message = match text {
            Some(text) => text.to_owned(),
            None => {
                let errors: Vec<&str> = obj
                    .get("errors")
                    .and_then(Value::as_array)
                    .map(|e| e.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut message = errors.join("; ");
                if message.is_empty() {
                    message = self.synthetic.take().unwrap_or_default();
                }
                match subtype.filter(|s| *s != "success") {
                    Some(subtype) if message.is_empty() => subtype.to_owned(),
                    Some(subtype) => format!("{subtype}: {message}"),
                    None if message.is_empty() => "the turn failed".to_owned(),
                    None => message,
                }
            }
        };
        if let Some(status) = obj.get("api_error_status").and_then(Value::as_u64) {
            message.push_str(&format!(" (HTTP {status})"));
        }
        self.verdict = Some(Verdict::Failed(message_text(&message)));
    }
}

fn user(obj: &Map<String, Value>, turn: &mut Collector) {
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
        let outcome = if block.get("is_error").and_then(Value::as_bool) == Some(true) {
            if is_refusal(&detail) {
                StepOutcome::Denied
            } else {
                StepOutcome::Failure
            }
        } else {
            StepOutcome::Success
        };
        turn.finish_step(id, outcome, &detail);
    }
}

fn is_refusal(text: &str) -> bool {
    let lower = text.to_lowercase();
    REFUSALS.iter().any(|phrase| lower.contains(phrase))
}

fn block_texts(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}
