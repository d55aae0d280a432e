//! weft's runners: how an agent CLI is described (manifests), checked (preflight), started
//! and watched (supervision), and how its output is read (stream parsers) and judged
//! (marker evidence).
//!
//! Every agent process weft runs goes through here: the engine's task attempts and the
//! planner's turns (the agent-CLI planner launches its CLI's built-in manifest in
//! [`manifest::PLAN_MODE`], under [`supervise::Attempt`], and reads the same
//! [`AgentEvent`]s). Nothing here knows about plans or the store; callers pass in what to
//! run.

pub mod contain;
pub mod event;
pub mod evidence;
pub mod manifest;
pub mod preflight;
pub mod stream;
pub mod supervise;
pub mod template;
pub mod transcript;

pub use event::{AgentEvent, StreamKind, ToolOutcome};
