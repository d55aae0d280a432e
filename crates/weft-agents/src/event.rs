//! What weft understands of an agent's output, whatever CLI produced it.

use serde::{Deserialize, Serialize};

/// Which parser reads a runner's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StreamKind {
    /// Unstructured text: every byte is the agent's own output.
    #[default]
    Plain,
    /// `claude -p --output-format stream-json --verbose`.
    ClaudeStreamJson,
    /// `codex exec --json`.
    CodexJson,
    /// `opencode run --format json`.
    OpencodeJson,
}

/// One thing an agent's structured stream said. Unknown lines become nothing, never an
/// error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The agent's own session id (for transcripts and resume).
    Session { id: String },
    /// Text the assistant wrote: the only text searched for the marker in structured
    /// streams, together with `Final::text`.
    AssistantText { text: String },
    /// The agent started a tool; `summary` is short (bounded) and for display only.
    ToolUse { name: String, summary: String },
    /// A tool call the agent was refused (Claude `permission_denials`, OpenCode
    /// auto-rejected permissions, Codex declined commands).
    PermissionDenied { tool: String, detail: String },
    /// Token and cost figures, when the stream reports them (cumulative for the attempt
    /// when the CLI reports totals).
    Usage {
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        cost_usd: Option<f64>,
    },
    /// The CLI's own end-of-run record: Claude `result`, Codex `turn.completed` /
    /// `turn.failed`, OpenCode final step.
    Final {
        /// The final answer text, when the CLI reports one.
        text: Option<String>,
        /// The CLI says the run failed (`is_error`, `turn.failed`, ...).
        is_error: bool,
        /// Why, when it failed.
        detail: Option<String>,
    },
    /// An error event in the stream that is not the final record.
    Error { message: String },
}
