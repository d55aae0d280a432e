//! The OpenAI-compatible chat-completions provider (streaming, tool calls).
