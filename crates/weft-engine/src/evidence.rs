//! Evidence travels with the commits: every landing merge commit carries weft's trailers
//! in its message and its evidence as a git note under [`NOTES_REF`] (the JSON of
//! [`weft_core::note::EvidenceNote`], schema `schemas/evidence.schema.json`).
//!
//! Contract:
//!
//! - **Who writes.** Only weft, never an attempt: a confined agent's git writes objects
//!   into its private object folder only and cannot write `refs/` (so not
//!   `refs/notes/weft`); weft writes notes from the engine after a landing is recorded
//!   (`attach`), and from the commands that re-create landings ([`carry`], after a
//!   rebuild) or verify them ([`record_verification`]). The notes ref is no integration
//!   ref: the integration guard neither checks nor moves it.
//! - **Crash safety.** The landing is journaled and recorded in the store first; the note
//!   comes after. Killed in between, the next `weft run` (`repair`, called where the
//!   landing journal is recovered) walks the run's integration branch from its base, and
//!   writes the note of every landing that has none (its trailers name the attempt, whose
//!   record is in the store) and re-creates the note of a landing whose note names another
//!   tree (a rebuild whose [`carry`] was cut short). A note weft cannot write is a notice,
//!   never a failed landing: the work landed, and the next start writes the note.
//! - **Cost.** A landing's note is written over the repository handle's long-lived git
//!   processes (`weft_git`'s `notes` module: no git process of its own at a landing, one
//!   `git notes add` when those fail): the merge's tree and trailers come from the
//!   repository handle that wrote the merge (`Repo::commit_objects` answers from the
//!   commits it wrote; elsewhere, as in `repair`, one `cat-file --batch` reads them).
//!   `cargo bench -p weft-git --bench notes` prints both figures.
//! - **Bounds.** A range walked is at most [`MAX_LANDINGS`] commits.
//! - **Handoff.** The notes are keyed by commit: after `weft handoff merge` the landings are
//!   ancestors of the user's branch and keep their notes (`git push origin
//!   refs/notes/weft` publishes them). A discarded run's notes are left as they are: its
//!   tip is kept under `refs/weft/discarded/<run>`, so the commits they describe still
//!   exist.

use std::collections::HashMap;

use weft_core::event::EventKind;
use weft_core::note::{EvidenceNote, Trailers, TranscriptSeen};
use weft_core::{Attempt, Landing, Plan, Task};
use weft_git::{CommitObject, Oid, Repo};
use weft_store::Store;

pub use weft_core::note::{VerificationRecord, VerificationResult};

use crate::error::EngineError;
use crate::isolation::{Isolation, decode, git_error};

/// Where weft keeps its notes.
pub const NOTES_REF: &str = "refs/notes/weft";

/// The most commits one range walk reads.
pub const MAX_LANDINGS: usize = 10_000;

/// The subject every landing merge commit starts with.
pub const LANDING_SUBJECT: &str = "weft: land task ";

/// The message of the merge commit that lands `attempt` of `task`.
pub(crate) fn landing_message(attempt: &Attempt, task: &Task) -> String {
    weft_core::note::landing_message(&attempt.plan_id, task, &attempt.id)
}

/// Attach the evidence of `attempt` (whose landing is recorded) to its merge commit in
/// every repository it landed in. Returns how many notes were written.
pub(crate) fn attach(
    iso: &Isolation,
    plan: &Plan,
    task: &Task,
    attempt: &Attempt,
    transcript: &TranscriptSeen,
) -> Result<usize, EngineError> {
    let Some(Landing::Landed { merge }) = &attempt.landing else {
        return Ok(0);
    };
    let Some(commits) = decode(&iso.slots, merge) else {
        return Ok(0);
    };
    let mut written = 0;
    for (slot, commit) in iso.slots.iter().zip(commits) {
        let objects = slot
            .repo
            .commit_objects(std::slice::from_ref(&commit))
            .map_err(git_error)?;
        // In a group, a repository the task did not change records the tip it found:
        // another landing's commit, whose note is not this attempt's.
        let Some(object) = objects.first().filter(|o| names_attempt(o, &attempt.id)) else {
            continue;
        };
        let note = EvidenceNote::of_landing(object.tree.as_str(), plan, task, attempt, transcript);
        slot.repo
            .set_note(NOTES_REF, &commit, &note.to_json())
            .map_err(git_error)?;
        written += 1;
    }
    Ok(written)
}

fn names_attempt(object: &CommitObject, attempt_id: &str) -> bool {
    Trailers::parse(&object.message).attempt.as_deref() == Some(attempt_id)
}

/// Re-create the notes of landings a rebuild re-created: for each `(old, new)` (as
/// [`weft_git::Rebuild::Rebuilt`] lists them), `new` gets `old`'s evidence with `new`'s
/// tree. A commit without a (readable) note is passed over. Returns how many notes were
/// written.
pub fn carry(repo: &Repo, reapplied: &[(Oid, Oid)]) -> Result<usize, EngineError> {
    if reapplied.is_empty() {
        return Ok(0);
    }
    let old: Vec<Oid> = reapplied.iter().map(|(o, _)| o.clone()).collect();
    let new: Vec<Oid> = reapplied.iter().map(|(_, n)| n.clone()).collect();
    let notes = repo.notes_of(NOTES_REF, &old).map_err(git_error)?;
    let objects = repo.commit_objects(&new).map_err(git_error)?;
    let mut written = 0;
    for (note, object) in notes.iter().zip(&objects) {
        let Some(Ok(note)) = note.as_deref().map(EvidenceNote::parse) else {
            continue;
        };
        let carried = note.carried(object.tree.as_str());
        repo.set_note(NOTES_REF, &object.commit, &carried.to_json())
            .map_err(git_error)?;
        written += 1;
    }
    Ok(written)
}

/// Record `record` in the notes of the landing commits a verification covered (each
/// keeps only the latest verification). A landing without a (readable) note is passed
/// over; `repair` (at the next start) writes it later, without the verification. Returns how many notes were
/// written.
pub fn record_verification(
    repo: &Repo,
    landings: &[Oid],
    record: &VerificationRecord,
) -> Result<usize, EngineError> {
    let notes = repo.notes_of(NOTES_REF, landings).map_err(git_error)?;
    let mut written = 0;
    for (commit, note) in landings.iter().zip(&notes) {
        let Some(Ok(mut note)) = note.as_deref().map(EvidenceNote::parse) else {
            continue;
        };
        note.verification = Some(record.clone());
        repo.set_note(NOTES_REF, commit, &note.to_json())
            .map_err(git_error)?;
        written += 1;
    }
    Ok(written)
}

/// A commit of a range with what its note says.
#[derive(Debug, Clone)]
pub struct Landed {
    pub commit: Oid,
    pub tree: Oid,
    pub subject: String,
    pub trailers: Trailers,
    pub note: NoteState,
}

/// A commit's note.
#[derive(Debug, Clone)]
pub enum NoteState {
    Present(Box<EvidenceNote>),
    Missing,
    /// There is a note, but it is not weft evidence this weft can read.
    Unreadable(String),
}

/// What is wrong with a landing's evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// No note.
    Missing,
    /// The note records another tree than the commit's: copied from another commit, or
    /// left behind by a rebuild that did not carry it.
    WrongTree { recorded: String },
    /// The note does not parse as weft evidence.
    Unreadable(String),
}

impl Landed {
    /// Whether the commit is a landing: weft's trailers, or (landed before trailers
    /// existed) weft's subject.
    pub fn is_landing(&self) -> bool {
        self.trailers.is_landing() || self.subject.starts_with(LANDING_SUBJECT)
    }

    /// What is wrong with its evidence, if anything.
    pub fn finding(&self) -> Option<Finding> {
        match &self.note {
            NoteState::Missing => Some(Finding::Missing),
            NoteState::Unreadable(why) => Some(Finding::Unreadable(why.clone())),
            NoteState::Present(note) if note.tree != self.tree.as_str() => {
                Some(Finding::WrongTree {
                    recorded: note.tree.clone(),
                })
            }
            NoteState::Present(_) => None,
        }
    }
}

/// Each of `commits` with its tree, subject, trailers and note: three git processes for
/// all of them.
pub fn read(repo: &Repo, commits: &[Oid]) -> Result<Vec<Landed>, EngineError> {
    let objects = repo.commit_objects(commits).map_err(git_error)?;
    let notes = repo.notes_of(NOTES_REF, commits).map_err(git_error)?;
    Ok(objects
        .into_iter()
        .zip(notes)
        .map(|(object, note)| Landed {
            subject: object.message.lines().next().unwrap_or_default().to_owned(),
            trailers: Trailers::parse(&object.message),
            note: match note.as_deref().map(EvidenceNote::parse) {
                None => NoteState::Missing,
                Some(Ok(note)) => NoteState::Present(Box::new(note)),
                Some(Err(e)) => NoteState::Unreadable(e.to_string()),
            },
            commit: object.commit,
            tree: object.tree,
        })
        .collect())
}

/// The landings on `tip`'s first-parent history down to `stop` (excluded), newest
/// first, at most [`MAX_LANDINGS`] commits read; `true` when the walk was cut there.
pub fn landings_between(
    repo: &Repo,
    tip: &Oid,
    stop: Option<&Oid>,
) -> Result<(Vec<Landed>, bool), EngineError> {
    let commits = repo
        .first_parents(tip, stop, MAX_LANDINGS + 1)
        .map_err(git_error)?;
    let cut = commits.len() > MAX_LANDINGS;
    let commits = &commits[..commits.len().min(MAX_LANDINGS)];
    let landed = read(repo, commits)?;
    Ok((landed.into_iter().filter(Landed::is_landing).collect(), cut))
}

/// Write what a crash left out: the note of every landing of the run's integration
/// branch (since the run's base) that has none, and the carried note of one whose note
/// names another tree. Returns how many notes were written.
pub(crate) fn repair(
    iso: &Isolation,
    store: &Store,
    plan: &Plan,
    base: Option<&str>,
) -> Result<usize, EngineError> {
    let bases = base.and_then(|b| decode(&iso.slots, b));
    let tips = iso.recorded_tips()?;
    let mut written = 0;
    let mut transcripts: Option<HashMap<String, TranscriptSeen>> = None;
    for (index, slot) in iso.slots.iter().enumerate() {
        let stop = bases.as_ref().map(|b| &b[index]);
        let (landed, _) = landings_between(&slot.repo, &tips[index], stop)?;
        for landing in landed {
            if !landing.trailers.is_landing()
                || landing.trailers.plan.as_deref() != Some(plan.id.as_str())
            {
                continue;
            }
            match landing.finding() {
                None | Some(Finding::Unreadable(_)) => continue,
                Some(Finding::WrongTree { .. }) => {
                    let NoteState::Present(note) = &landing.note else {
                        continue;
                    };
                    let carried = note.carried(landing.tree.as_str());
                    slot.repo
                        .set_note(NOTES_REF, &landing.commit, &carried.to_json())
                        .map_err(git_error)?;
                    written += 1;
                }
                Some(Finding::Missing) => {
                    let attempt_id = landing.trailers.attempt.as_deref().unwrap_or_default();
                    let Some(attempt) = store.attempt(attempt_id)? else {
                        continue;
                    };
                    let Some(task) = plan.task(&attempt.task_id) else {
                        continue;
                    };
                    let seen = transcripts
                        .get_or_insert_with(|| transcripts_of(store, &plan.id))
                        .get(attempt_id)
                        .cloned()
                        .unwrap_or_default();
                    let note = EvidenceNote::of_landing(
                        landing.tree.as_str(),
                        plan,
                        task,
                        &attempt,
                        &seen,
                    );
                    slot.repo
                        .set_note(NOTES_REF, &landing.commit, &note.to_json())
                        .map_err(git_error)?;
                    written += 1;
                }
            }
        }
    }
    Ok(written)
}

/// The transcripts the plan's `attempt_finished` events recorded, by attempt. Reads the
/// plan's event log once, in pages (only when a note has to be re-created).
fn transcripts_of(store: &Store, plan_id: &str) -> HashMap<String, TranscriptSeen> {
    const PAGE: u32 = 500;
    let mut found = HashMap::new();
    let mut after = 0;
    while let Ok(page) = store.events(Some(plan_id), after, PAGE) {
        let full = page.len() == PAGE as usize;
        for event in page {
            after = event.seq;
            if let (Some(attempt), EventKind::AttemptFinished { transcript, .. }) =
                (event.attempt, event.event)
            {
                let seen = transcript
                    .filter(|t| !t.weak)
                    .map(|t| TranscriptSeen {
                        path: Some(t.path),
                        marker_found: t.marker_found,
                    })
                    .unwrap_or_default();
                found.insert(attempt, seen);
            }
        }
        if !full {
            break;
        }
    }
    found
}

/// Where the evidence commands look: the workspace's repositories and the plan's current
/// run.
#[derive(Debug)]
pub struct Scope {
    /// Each repository: its folder name inside a group ("" for a single repository).
    pub repos: Vec<(String, Repo)>,
    /// The plan's open run, else its latest, when it has an integration branch.
    pub run: Option<RunScope>,
}

/// A run's integration branch in each repository of a [`Scope`].
#[derive(Debug)]
pub struct RunScope {
    pub id: String,
    /// `weft/<run>/integration`.
    pub branch: String,
    /// Per repository (in [`Scope::repos`] order): the integration tip (`None`: the
    /// branch is gone) and the run's base.
    pub tips: Vec<Option<Oid>>,
    pub bases: Vec<Option<Oid>>,
}

/// The [`Scope`] of `plan_id` (if there is a store and a plan) in `workspace`.
pub fn scope(
    store: Option<&Store>,
    plan_id: Option<&str>,
    workspace: &std::path::Path,
    state_dir: &std::path::Path,
    repos: &[String],
) -> Result<Scope, EngineError> {
    let iso = Isolation::existing(workspace, state_dir, repos, "-")?;
    let run = match (store, plan_id) {
        (Some(store), Some(plan_id)) => current_run(store, plan_id)?,
        _ => None,
    };
    let run = match run {
        Some(run) => {
            let branch = format!("weft/{}/integration", run.id);
            let reference = weft_git::branch_ref(&branch);
            let mut tips = Vec::new();
            for slot in &iso.slots {
                tips.push(slot.repo.ref_target(&reference).map_err(git_error)?);
            }
            let bases = run
                .base_ref
                .as_deref()
                .and_then(|b| decode(&iso.slots, b))
                .map(|b| b.into_iter().map(Some).collect())
                .unwrap_or_else(|| vec![None; iso.slots.len()]);
            Some(RunScope {
                id: run.id,
                branch,
                tips,
                bases,
            })
        }
        None => None,
    };
    Ok(Scope {
        repos: iso.slots.into_iter().map(|s| (s.name, s.repo)).collect(),
        run,
    })
}

/// The plan's open run, else the run of its latest attempt, if it was isolated.
fn current_run(store: &Store, plan_id: &str) -> Result<Option<weft_core::Run>, EngineError> {
    let run = match store.open_run(plan_id)? {
        Some(run) => Some(run),
        None => match store.attempts_of_plan(plan_id)?.last() {
            Some(attempt) => store.run(&attempt.run_id)?,
            None => None,
        },
    };
    Ok(run.filter(|r| r.integration_branch.is_some()))
}

/// One walk of a check: a repository of a [`Scope`] (its index), a tip and where the walk
/// stops.
#[derive(Debug, Clone)]
pub struct Walk {
    pub repo: usize,
    pub tip: Oid,
    pub stop: Option<Oid>,
}

impl Scope {
    /// The first repository `rev` names a commit in, and the commit.
    pub fn resolve(&self, rev: &str) -> Result<Option<(usize, Oid)>, EngineError> {
        for (index, (_, repo)) in self.repos.iter().enumerate() {
            if let Some(commit) = repo.rev_parse(rev).map_err(git_error)? {
                return Ok(Some((index, commit)));
            }
        }
        Ok(None)
    }

    /// The tip of the run's integration branch in the first repository that has it.
    pub fn run_tip(&self) -> Option<(usize, Oid)> {
        let run = self.run.as_ref()?;
        run.tips
            .iter()
            .enumerate()
            .find_map(|(index, tip)| tip.clone().map(|t| (index, t)))
    }

    /// The run's integration branch since its base, in each repository that has it.
    pub fn run_walks(&self) -> Vec<Walk> {
        let Some(run) = &self.run else {
            return Vec::new();
        };
        run.tips
            .iter()
            .zip(&run.bases)
            .enumerate()
            .filter_map(|(repo, (tip, base))| {
                tip.clone().map(|tip| Walk {
                    repo,
                    tip,
                    stop: base.clone(),
                })
            })
            .collect()
    }

    /// `commit` of repository `repo` with its note.
    pub fn read(&self, repo: usize, commit: &Oid) -> Result<Landed, EngineError> {
        let mut read = read(&self.repos[repo].1, std::slice::from_ref(commit))?;
        Ok(read.pop().expect("one commit read"))
    }

    /// The landings of `walk` ([`landings_between`]).
    pub fn landings(&self, walk: &Walk) -> Result<(Vec<Landed>, bool), EngineError> {
        landings_between(&self.repos[walk.repo].1, &walk.tip, walk.stop.as_ref())
    }
}
