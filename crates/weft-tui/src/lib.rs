//! weft's terminal UI (`weft tui`): the plan, the live agents and every control in one
//! terminal, built on the store, the typed events and the engine's operations.
//!
//! Contract:
//! - It keeps no plan state of its own: what it shows is the last reading of the store,
//!   read again whenever the plan's typed events move past the last sequence number seen;
//!   so it works beside a `weft run` in another terminal exactly as with its own run.
//! - Every action is the engine operation the CLI command of the same name calls.
//! - [`state`] (the reducer) and [`view`] (drawing) are pure and tested without a
//!   terminal; [`app`] owns the terminal and the effects, and always gives the terminal
//!   back (panic and signals included).

pub mod app;
pub mod edit;
pub mod source;
pub mod state;
pub mod view;

pub use app::{EngineFactory, Options, TuiError, run};
