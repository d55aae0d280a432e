//! weft's planner (DESIGN §10): model providers, the read-only research envelope, the
//! planning conversation and plan repair.
//!
//! For now this crate holds only the envelope's [`command_policy`]: the pure classifier that
//! decides, before anything runs, whether a `run_command` line is read-only, must be refused,
//! or needs the approval policy. Providers, the research tools and the conversation come
//! later.

pub mod command_policy;

pub use command_policy::{
    AccessKind, Class, Classification, Envelope, PathAccess, classify, classify_with,
};
