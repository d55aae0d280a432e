//! Planner backends: an OpenAI-compatible HTTP endpoint, and the agent CLIs in their
//! read-only modes.

pub mod agent_cli;
pub mod openai;
