//! weft-git against real git in temporary repositories (hermetic: fixed HOME, no user or
//! system git config).

mod batch;
mod commit;
mod guard;
mod handoff;
mod land;
mod notes;
mod rebuild;
mod refs;
mod repo;
mod support;
mod worktrees;
