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

impl StreamKind {
    /// Whether the CLI ends its stream with a record of how the run ended (Claude's
    /// `result`, Codex's `turn.completed` / `turn.failed`). Without one (OpenCode, plain
    /// text) a clean exit after some output is the end of the run.
    pub fn has_end_record(self) -> bool {
        matches!(self, StreamKind::ClaudeStreamJson | StreamKind::CodexJson)
    }
}

/// How a tool call ended, as the CLI reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutcome {
    /// The tool ran and answered.
    Success,
    /// The tool ran (or tried to) and failed: a missing file, a non-zero exit.
    Failure,
    /// The CLI's permission rules refused the call (a refusal, an auto-rejected ask).
    Denied,
    /// The CLI's sandbox stopped it (Codex's read-only sandbox): not the tool's own failure.
    Refused,
}

/// One thing an agent's structured stream said. Unknown lines become nothing, never an
/// error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The agent's own session id (for transcripts and resume).
    Session { id: String },
    /// Text the assistant wrote: the only text searched for the marker in structured
    /// streams, together with `Final::text`. `message` is the id of the message it is part
    /// of, when the CLI names one (parts of one message belong together).
    AssistantText {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The model's visible reasoning (Claude `thinking`, Codex and OpenCode `reasoning`).
    /// Never evidence.
    Reasoning { text: String },
    /// A plan the agent handed over through its plan-mode tool (Claude's `ExitPlanMode`),
    /// in full. Its own words, but not evidence: a task's answer is its text.
    PlanText {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The agent started a tool; `summary` is short (bounded) and for display. `id` pairs
    /// it with its [`AgentEvent::ToolResult`]; `subagent` marks a call a sub-agent made
    /// (Claude's Task tool), which is not the agent's own activity.
    ToolUse {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        name: String,
        summary: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        subagent: bool,
    },
    /// How a tool call ended; `detail` is its result or error text (bounded). `id: None`
    /// is the call of the `ToolUse` just before (a CLI that reports a call once, finished).
    ToolResult {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        outcome: ToolOutcome,
        detail: String,
    },
    /// A tool call the agent was refused (Claude `permission_denials`, OpenCode
    /// auto-rejected permissions, Codex declined commands). `id` names the call, when the
    /// CLI says.
    PermissionDenied {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        tool: String,
        detail: String,
    },
    /// Token and cost figures, when the stream reports them (cumulative for the attempt
    /// when the CLI reports totals). `input_tokens` is what the CLI calls input;
    /// `cache_tokens` (cache reads and writes) and `reasoning_tokens` are what it counts
    /// apart from input and output.
    Usage {
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        cost_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_tokens: Option<u64>,
    },
    /// Spend figures for weft's live count ([`weft_core::spend::Meter`]). `total: false`:
    /// one model message's (or step's) usage so far, `message` grouping the repeats of one
    /// message (Claude Code repeats `message.usage` on each of its lines), `model` the model
    /// that answered when the stream names it, `cost_usd` the CLI's own cost of it
    /// (OpenCode's per step). `total: true`: the CLI's own total for the attempt at its end
    /// (Claude's `result`, Codex's `turn.completed`), which replaces the estimate.
    Spend {
        #[serde(default)]
        total: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        tokens: weft_core::spend::Tokens,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The model's output hit its length limit (Claude `max_tokens`, OpenCode `length`).
    Truncated,
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
