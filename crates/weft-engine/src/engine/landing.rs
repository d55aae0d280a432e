//! The landing queue: every landing of a run goes through it, one at a time, lowest plan
//! order first.
//!
//! A passing isolated attempt is journaled (`landing_started`) and queued; so is, at the
//! start of a run, every attempt a dead engine journaled but never finished landing. The
//! loop drains the queue after each batch of messages (not while a verification of the
//! tip is in progress: it holds the tip still), so among the attempts that are
//! waiting the lowest plan order lands first, and nothing else happens in between: a
//! landing reads the integration tip, merges without any checkout and moves the branch
//! with a compare-and-swap. A repair attempt lands on the same path; it is refused (as a
//! conflict) while a conflict marker is left in the files it had to resolve.
//!
//! Threads: owned by the loop's thread; landings never overlap. Bounds: at most one entry
//! per live attempt (plus those recovered at the start). Crash safety: an entry exists only
//! after its journal entry is stored, and landing is idempotent (work already merged is
//! recognised), so a landing cut short by a crash is finished by the next run.

use std::collections::BTreeMap;

use weft_core::{Attempt, Landing, Task};

use super::settle::Ended;
use crate::error::EngineError;
use crate::executor::Executor;
use crate::guards::Foreign;
use crate::isolation::{Collected, Cut, Isolation};

/// What happens once an attempt's work has landed.
pub(crate) enum Then {
    /// Record the attempt's end (it finished in this run).
    Finish(Box<Ended>),
    /// Record the landing of an attempt journaled by an engine that is gone.
    Recovered(Box<Attempt>),
}

impl Then {
    /// The attempt that lands.
    pub fn attempt(&self) -> &Attempt {
        match self {
            Then::Finish(ended) => &ended.live.attempt,
            Then::Recovered(attempt) => attempt,
        }
    }
}

/// One attempt waiting to land.
pub(crate) struct Waiting {
    pub task: Task,
    pub cut: Cut,
    /// For a repair: the files that held conflict markers.
    pub repair_files: Option<Vec<String>>,
    pub then: Then,
}

#[derive(Default)]
pub(crate) struct LandingQueue {
    /// By plan order, then arrival.
    waiting: BTreeMap<(u32, u64), Waiting>,
    arrivals: u64,
    /// The integration ref was found moved by something else: nothing more lands in
    /// this run (what waits stays journaled for the next), and the run ends refused.
    pub refused: Option<Foreign>,
}

impl LandingQueue {
    pub fn push(&mut self, waiting: Waiting) {
        self.arrivals += 1;
        self.waiting
            .insert((waiting.task.order, self.arrivals), waiting);
    }

    /// The waiting attempt with the lowest plan order.
    pub fn pop(&mut self) -> Option<Waiting> {
        self.waiting.pop_first().map(|(_, waiting)| waiting)
    }
}

/// How one landing went.
pub(crate) enum Outcome {
    /// Landed, changed nothing, or conflicted.
    Landing(Landing),
    /// A guard refused the attempt's work (its worktree was tampered with, or it adds
    /// symlinks pointing outside): the attempt fails with this reason, nothing landed.
    Failed(String),
    /// The integration ref is not where weft recorded it: nothing lands until it is put
    /// back; the attempt stays journaled, so the next run lands it.
    Foreign(Foreign),
    /// The attempt was cut from a tip the integration branch no longer holds (a
    /// verification's quarantine rebuilt it without a landing that tip held): it is not
    /// landed as is, its task runs again from the rebuilt tip.
    Stale(String),
}

/// Land one attempt's work: the integration ref must be at the tip weft recorded; its
/// executor commits what it left (after the worktree guard), its changes must add no
/// symlink pointing outside (unless `allow_links`), then it is merged onto the
/// integration branch. A landed (or empty) attempt's folder is removed unless `keep`.
/// With `stale_check` (a run that verifies), an attempt cut from a tip the branch no
/// longer holds is [`Outcome::Stale`].
pub(crate) fn land(
    iso: &Isolation,
    executor: &dyn Executor,
    waiting: &Waiting,
    keep: bool,
    allow_links: bool,
    stale_check: bool,
) -> Outcome {
    let Waiting {
        task,
        cut,
        repair_files,
        ..
    } = waiting;
    let expected = match iso.check_integration() {
        Ok(expected) => expected,
        Err(foreign) => return Outcome::Foreign(foreign),
    };
    if stale_check {
        for part in &cut.parts {
            let repo = &iso.slots[part.slot].repo;
            let held = repo
                .is_ancestor(part.cut_from.as_str(), expected[part.slot].as_str())
                .unwrap_or(true);
            if !held {
                executor.discard(cut);
                return Outcome::Stale(format!(
                    "Discarded: its attempt started from {}, a tip that held a landing since quarantined for breaking verification; it runs again from the rebuilt integration tip {}.",
                    part.cut_from.short(),
                    expected[part.slot].short()
                ));
            }
        }
    }
    // A repair lands only when no conflict marker is left in the files it had to resolve.
    let markers_left = match repair_files {
        Some(files) => iso
            .markers_left(cut, files)
            .unwrap_or_else(|_| files.clone()),
        None => Vec::new(),
    };
    if !markers_left.is_empty() {
        return Outcome::Landing(Landing::Conflicted {
            detail: format!("conflict markers are still in {}", markers_left.join(", ")),
            files: markers_left,
        });
    }
    let (tips, from_cut) = match executor.collect(cut, task) {
        Ok(Collected::Committed { tips, from_cut, .. }) => (tips, from_cut),
        Ok(Collected::Refused(reason)) => return Outcome::Failed(reason),
        Err(e) => return Outcome::Landing(failed(&e)),
    };
    if !allow_links {
        match iso.outside_symlinks(cut, &tips) {
            Ok(links) if links.is_empty() => {}
            Ok(links) => {
                return Outcome::Failed(format!(
                    "its changes add symlinks pointing outside its worktree: {}; nothing was landed (its branch {} keeps them; `outside_symlinks = \"allow\"` lands such links)",
                    links.join(", "),
                    cut.branch
                ));
            }
            Err(e) => return Outcome::Landing(failed(&e)),
        }
    }
    let message = crate::evidence::landing_message(waiting.then.attempt(), task);
    // The tips weft just set the task branches to: landing needs not read them again.
    let known: Vec<Option<weft_git::KnownTask>> = tips
        .iter()
        .zip(&from_cut)
        .map(|(tip, from_cut)| {
            tip.clone().map(|tip| weft_git::KnownTask {
                tip,
                descends_from_cut: *from_cut,
            })
        })
        .collect();
    let landing = iso
        .land(cut, &message, &expected, &known)
        .unwrap_or_else(|e| failed(&e));
    if landing.is_landed() && !keep {
        executor.discard(cut);
    }
    Outcome::Landing(landing)
}

/// A landing that failed with an error is a conflict whose detail says so.
fn failed(error: &EngineError) -> Landing {
    Landing::Conflicted {
        files: Vec::new(),
        detail: format!("landing failed: {error}"),
    }
}
