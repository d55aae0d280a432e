//! End-to-end tests of the `weft` binary in a hermetic environment: fixed HOME, git config
//! from /dev/null, no colour, UTC. Output is checked with snapshots.

mod harness;

mod attach;
mod budgets;
mod concurrency;
mod config;
mod contain;
mod demo;
mod engine;
mod environment;
mod events;
mod evidence;
mod guards;
mod help;
mod isolation;
mod json;
mod layering;
mod limits;
mod links;
mod masking;
mod notify;
mod plan;
mod planner;
mod runner_approvals;
mod serve;
mod sessions;
mod store_errors;
mod task;
mod terminal;
mod tui;
mod verify;
