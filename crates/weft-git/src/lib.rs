//! weft's git layer: the git CLI behind typed calls.
//!
//! Everything here runs the real `git` program (no library reimplementation), always in a
//! named folder (`git -C <dir>`), never interactively, with machine-readable output
//! (`--porcelain`, `-z`) wherever git has it. What a run asks on every task goes to
//! long-lived git processes a [`Repo`] keeps (the `batch` module: refs and trees read,
//! single refs moved, objects written over pipes), each with the one-shot command as its
//! fallback. Every failure is a [`GitError`] that names
//! the repository and, for a failed command, the full command line, its exit status and
//! its (bounded) standard error.
//!
//! - [`Git`]: which git to run and with which environment. Production code uses
//!   [`Git::new`]; tests pass a hermetic environment (`Git::new().env_clear().envs(..)`).
//!   [`Git::init`] makes a new repository (`weft demo`).
//! - [`Repo`]: one working tree (a main checkout or a linked worktree). Its methods cover:
//!   - state: [`Repo::head`], [`Repo::tracked_changes`], [`Repo::has_submodules`],
//!     [`Repo::stash_push`] / [`Repo::stash_restore`] (`weft run --stash`);
//!   - refs and branches: [`Repo::rev_parse`], [`Repo::create_branch`],
//!     [`Repo::delete_branch`], [`Repo::update_ref_cas`], [`Repo::is_ancestor`];
//!   - worktrees: [`Repo::add_worktree`], [`Repo::remove_worktree`],
//!     [`Repo::list_worktrees`], [`Repo::prune_worktrees`];
//!   - a task's work: [`Repo::commit_all`], [`Repo::conflict_markers_in`],
//!     [`Repo::merge_in_worktree`] (a repair attempt's starting point);
//!   - landing without a checkout: [`Repo::land`], [`Repo::land_onto`];
//!   - taking landings back out without a checkout: [`Repo::rebuild_without`];
//!   - notes and commits in bulk (the `notes` module): [`Repo::set_note`],
//!     [`Repo::notes_of`], [`Repo::commit_objects`], [`Repo::first_parents`];
//!   - handoff: [`Repo::diff_stat`], [`Repo::diff`], [`Repo::merge_preflight`],
//!     [`Repo::merge_into_checked_out`], which is [`Repo::prepare_merge`] (no checkout
//!     touched) then [`Repo::apply_merge`] (idempotent; [`Repo::unapply_merge`] undoes
//!     it), so a caller can journal the merge between the two;
//!   - attempts' worktrees (the `guard` module): [`Repo::add_attempt_worktree`] (detached,
//!     with a private object folder), [`Repo::inspect_worktree`] and [`Repo::admin_head`]
//!     (what the agent did to its worktree's git), [`Repo::import_objects`],
//!     [`Repo::update_refs_cas`] (several refs, atomically), [`Repo::land_recorded`],
//!     [`Repo::outside_symlinks`].
//!
//! Commits weft makes use the repository's configured identity (`git config user.name`
//! and `user.email`), or `weft <weft@localhost>` for whatever is not configured.
//!
//! Journaling belongs to the caller (the engine's store). This crate makes every step
//! observable and safe to repeat: [`Repo::land`] writes only objects (harmless when
//! orphaned) and one atomic compare-and-swap of the integration ref, so after a crash the
//! ref is either at the old tip or at the new merge, and landing again is idempotent.
//!
//! Requires git 2.38 or newer ([`Git::check_version`]); Unix only.

mod batch;
mod cmd;
mod commit;
mod error;
mod guard;
mod handoff;
mod land;
mod notes;
mod oid;
mod rebuild;
mod repo;
mod stash;
mod worktree;

pub use cmd::{DEFAULT_LOCK_WAIT, Git, GitVersion, MIN_GIT_VERSION};
pub use error::GitError;
pub use guard::{AdminHead, AttemptWorktree, PRIVATE_OBJECTS, Tamper, escapes};
pub use handoff::{
    APPLY_CHUNK, ApplyStep, DEFAULT_DIFF_LIMIT, DiffStat, DiffText, FileStat, MergeOutcome,
    PATHS_SHOWN, Preflight, Prepared, PreparedMerge, WorktreeMerge, list_paths,
};
pub use land::{KnownTask, Landing};
pub use notes::{CommitObject, MESSAGE_LIMIT, NOTE_LIMIT};
pub use oid::{InvalidOid, Oid};
pub use rebuild::Rebuild;
pub use repo::{FALLBACK_EMAIL, FALLBACK_NAME, Head, Repo, branch_ref};
pub use stash::StashRestore;
pub use worktree::{Worktree, WorktreeInfo};
