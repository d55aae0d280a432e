//! weft's runners: how an agent CLI is described (manifests), checked (preflight), started
//! and watched (supervision), and how its output is read (stream parsers) and judged
//! (marker evidence).
//!
//! Nothing here knows about plans or the store; the engine passes in what to run.

pub mod event;
pub mod evidence;
pub mod manifest;
pub mod preflight;
pub mod stream;
pub mod supervise;
pub mod template;
pub mod transcript;

pub use event::{AgentEvent, StreamKind, ToolOutcome};
