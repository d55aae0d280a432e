//! weft's planner (DESIGN §10): model providers, the read-only research envelope, the
//! planning conversation and plan repair.

pub mod chat;
pub mod command_policy;
pub mod conversation;
pub mod emit;
pub mod error;
pub mod log;
pub mod prompt;
pub mod provider;
pub mod tools;

pub use chat::{
    AgentPlanner, AgentReply, AgentStep, ChatModel, FinishReason, Message, Reply, Role,
    StreamEvent, ToolCall, ToolSpec, Usage,
};
pub use command_policy::{
    AccessKind, Class, Classification, Envelope, PathAccess, classify, classify_with,
};
pub use error::ProviderError;
pub use log::StepOutcome;
