//! The chat vocabulary every planner backend speaks: messages, tool calls, replies, and the
//! two backend traits (an API model that weft drives tool by tool, and an agent CLI that does
//! its own read-only research).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of an API conversation (OpenAI chat-completions shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Tool calls an assistant message made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message::plain(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message::plain(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
        }
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }

    fn plain(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call as the model emitted it; `arguments` is the raw JSON text (it may be invalid).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool offered to an API model: name, description and JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    /// The reply hit the output limit: it is truncated.
    Length,
    Other(String),
}

/// Token counts a provider reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// One whole model reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish: FinishReason,
    pub usage: Option<Usage>,
}

/// Live progress while a reply streams in, for front ends to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    Text(String),
    Reasoning(String),
    /// A tool call's name became known (its arguments may still be streaming).
    ToolCallStarted {
        name: String,
    },
}

/// An OpenAI-compatible model: weft sends the whole conversation and runs the tools itself.
pub trait ChatModel: fmt::Debug + Send {
    /// The model's name as shown to the user (e.g. `openai:gpt-5.4`).
    fn label(&self) -> String;

    /// One completion over `messages`, offering `tools`. Streams through `on_event`.
    fn complete(
        &mut self,
        messages: &[Message],
        tools: &[ToolSpec],
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Reply, crate::ProviderError>;
}

/// A step an agent CLI took on its own during a turn, for the research log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentStep {
    /// The tool as the CLI names it (`Read`, `Bash`, `command_execution`, `read`, …).
    pub tool: String,
    /// What it was called with, summarised (a path, a command line).
    pub input: String,
    pub outcome: crate::log::StepOutcome,
    /// The result or error text, as reported (uncapped here; the log caps it).
    pub detail: String,
}

/// What an agent CLI answered in one turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentReply {
    /// The assistant's final text for the turn.
    pub text: String,
    pub steps: Vec<AgentStep>,
    /// The CLI's own session id, kept to resume the conversation on the next turn.
    pub session_id: Option<String>,
    /// The reply was cut by an output limit.
    pub truncated: bool,
    pub usage: Option<Usage>,
}

/// An agent CLI in its read-only mode (Claude Code plan mode, Codex read-only sandbox,
/// OpenCode's plan agent), spoken to turn by turn with the user's existing login.
pub trait AgentPlanner: fmt::Debug + Send {
    /// The runner's name (`claude-code`, `codex`, `opencode`).
    fn label(&self) -> String;

    /// Send one user message. `system` is the planner's instructions; a transport sends it
    /// with the first turn (or on every turn if the CLI cannot remember it).
    fn send(
        &mut self,
        system: &str,
        message: &str,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<AgentReply, crate::ProviderError>;
}
