//! The end of an isolated run: review what it changed, merge it into the checked-out
//! branch of every repository (all or nothing), discard it (keeping each tip under
//! `refs/weft/discarded/<run>`), or clean up.

use std::path::{Path, PathBuf};

use serde::Serialize;
use weft_core::event::{Event, EventKind};
use weft_core::{AttemptStatus, Run, RunStatus, TaskStatus};
use weft_git::{ApplyStep, Oid, Prepared, PreparedMerge};
use weft_store::Store;

use crate::Interrupt;
use crate::control::{TaskRef, list_tasks};
use crate::engine::now;
use crate::error::EngineError;
use crate::isolation::{Isolation, decode, git_error};

pub mod journal;

pub use weft_git::MergeOutcome;

use journal::{JournalRepo, MergeJournal};

/// The run a handoff acts on and its repositories.
#[derive(Debug)]
pub struct Handoff {
    pub run: Run,
    pub integration_branch: String,
    isolation: Isolation,
    /// Per repository: (base, tip).
    ends: Vec<(Oid, Oid)>,
    /// The task branches the run's attempts worked on.
    task_branches: Vec<String>,
    /// The workspace's `.weft`, where the merge journal lives.
    state_dir: PathBuf,
}

fn refuse(detail: impl Into<String>, hint: impl Into<String>) -> EngineError {
    EngineError::Refused {
        detail: detail.into(),
        hint: hint.into(),
    }
}

impl Handoff {
    /// The plan's open isolated run; refused when it never ran isolated or is still running.
    pub fn open(
        store: &Store,
        plan_id: &str,
        workspace: &Path,
        state_dir: &Path,
        repos: &[String],
    ) -> Result<Handoff, EngineError> {
        let Some(run) = store.open_run(plan_id)? else {
            // Said apart from "never ran": a merge killed after it had finished (its
            // journal gone, the run recorded handed off) is run again by a person who
            // does not know it finished.
            return Err(match store.latest_run(plan_id)? {
                Some(last) => refuse(
                    format!("this plan's last run, {}, was already handed off", last.id),
                    "there is nothing left to hand off; `weft run` starts a new run",
                ),
                None => refuse(
                    "this plan has no run to hand off",
                    "run it first with `weft run`",
                ),
            });
        };
        let (Some(base), Some(branch)) = (run.base_ref.clone(), run.integration_branch.clone())
        else {
            return Err(refuse(
                format!(
                    "run {} was not isolated, so there is no run branch to review or merge",
                    run.id
                ),
                "its work is already in your checkout; review it with git as usual",
            ));
        };
        if let Some(pid) = crate::control::engine_running(store, plan_id)? {
            return Err(refuse(
                format!("run {} is still running (engine pid {pid})", run.id),
                "wait for it to end, or `weft stop` it first",
            ));
        }
        let isolation = Isolation::existing(workspace, state_dir, repos, &run.id)?;
        let bases = decode(&isolation.slots, &base).ok_or_else(|| {
            refuse(
                format!(
                    "run {} records a base {base:?} that does not match the repositories here",
                    run.id
                ),
                "`weft handoff discard` ends it",
            )
        })?;
        let mut ends = Vec::new();
        for (slot, base) in isolation.slots.iter().zip(bases) {
            let tip = slot
                .repo
                .resolve(&isolation.integration_ref())
                .map_err(git_error)?;
            ends.push((base, tip));
        }
        let mut task_branches: Vec<String> = store
            .attempts_of_plan(plan_id)?
            .into_iter()
            .filter(|a| a.run_id == run.id)
            .filter_map(|a| a.branch)
            .collect();
        task_branches.sort();
        task_branches.dedup();
        Ok(Handoff {
            integration_branch: branch,
            run,
            isolation,
            ends,
            task_branches,
            state_dir: state_dir.to_owned(),
        })
    }

    /// Whether the run landed anything, in any repository.
    pub fn is_empty(&self) -> bool {
        self.ends.iter().all(|(base, tip)| base == tip)
    }

    fn label(&self, index: usize) -> String {
        let slot = &self.isolation.slots[index];
        if slot.name.is_empty() {
            String::new()
        } else {
            format!("{}: ", slot.name)
        }
    }

    /// The diff of the run branch against its base (bounded), or its stat, per repository.
    pub fn review(&self, stat: bool) -> Result<String, EngineError> {
        // The integration guard: commits weft did not make are flagged first.
        let flag = self
            .isolation
            .check_integration()
            .err()
            .map(|f| format!("WARNING: {}\nhint: {}\n\n", f.detail, f.hint));
        let text = self.review_text(stat)?;
        Ok(flag.unwrap_or_default() + &text)
    }

    fn review_text(&self, stat: bool) -> Result<String, EngineError> {
        if self.is_empty() {
            return Ok(format!(
                "run {} landed nothing: {} is still at its base\n",
                self.run.id, self.integration_branch
            ));
        }
        let mut text = String::new();
        for (index, (slot, (base, tip))) in self.isolation.slots.iter().zip(&self.ends).enumerate()
        {
            if self.isolation.is_group() {
                text.push_str(&format!("== {} ==\n", slot.name));
            }
            if base == tip {
                text.push_str(&format!("{}nothing landed\n", self.label(index)));
                continue;
            }
            if stat {
                let stat = slot
                    .repo
                    .diff_stat(base.as_str(), tip.as_str())
                    .map_err(git_error)?;
                for file in &stat.files {
                    let counts = match (file.insertions, file.deletions) {
                        (Some(i), Some(d)) => format!("+{i} -{d}"),
                        _ => "binary".into(),
                    };
                    text.push_str(&format!("{counts:>12}  {}\n", file.path));
                }
                text.push_str(&format!(
                    "{} file(s) changed, {} insertion(s), {} deletion(s)\n",
                    stat.files.len(),
                    stat.insertions,
                    stat.deletions
                ));
            } else {
                let diff = slot
                    .repo
                    .diff(base.as_str(), tip.as_str())
                    .map_err(git_error)?;
                text.push_str(&diff.text);
                if let Some(notice) = diff.notice() {
                    text.push_str(&format!("\n{notice}\n"));
                }
            }
        }
        Ok(text)
    }

    /// Merge the run branch into the checked-out branch of every repository: all or
    /// nothing, and safe for the checkouts at every moment.
    ///
    /// 1. Compute: each repository's merge is prepared without touching its checkout
    ///    ([`weft_git::Repo::prepare_merge`]: preflight, `pre-merge-commit` hook,
    ///    merge-tree, the merge commit as an object). One problem anywhere refuses the
    ///    whole merge, naming a screenful of paths at most; nothing is changed.
    /// 2. Journal: the prepared merges go to `.weft/handoff-merge.json`
    ///    ([`journal::MergeJournal`]) before any checkout is touched.
    /// 3. Apply: each checkout is brought to its merge ([`weft_git::Repo::apply_merge`]),
    ///    with git in process groups of its own, so a Ctrl-C at the terminal reaches
    ///    only weft; `interrupt` is looked at before the journal is written (then nothing
    ///    is merged) and not during the apply, which is always finished
    ///    ([`MergeReport::interrupted`] says so).
    /// 4. The journal is removed, then the run's worktrees and task branches, then the run
    ///    is recorded handed off.
    ///
    /// Killed during 3, the journal stays: every command that would touch a checkout
    /// refuses ([`journal::refuse_if_pending`]), calling `merge` again finishes the
    /// journaled merge (preflight skipped: the checkout is expected half-way), and
    /// [`Handoff::abort_merge`] undoes it. Killed after 4's first step, calling `merge`
    /// again finds the branches up to date and finishes the rest.
    pub fn merge(
        self,
        store: &mut Store,
        plan_id: &str,
        interrupt: Option<&Interrupt>,
    ) -> Result<MergeReport, EngineError> {
        let pending = MergeJournal::load(&self.state_dir)?;
        let resumed = pending.is_some();
        let journal = match pending {
            Some(journal) => self.check_journal(journal)?,
            None => {
                // Only weft moves the integration ref: a foreign commit on it refuses the
                // merge before anything is prepared (a resumed merge already passed this).
                (self.isolation.check_integration())
                    .map_err(|f| f.into_error("merging the run"))?;
                let journal = self.prepare(interrupt)?;
                if Interrupt::raised(interrupt) {
                    return Err(refuse(
                        "interrupted before anything was merged",
                        "your checkout is as it was; run `weft handoff merge` again to merge",
                    ));
                }
                journal.save(&self.state_dir)?;
                crate::failpoint::hit("handoff_journaled");
                journal
            }
        };
        let mut repos = Vec::new();
        for (slot, entry) in self.isolation.slots.iter().zip(&journal.repos) {
            let outcome = match &entry.merge {
                None => MergeOutcome::UpToDate {
                    head: slot.repo.resolve("HEAD").map_err(git_error)?,
                },
                Some(merge) => {
                    let repo = self.checkout_repo(slot, merge, &journal)?;
                    repo.apply_merge(merge, &mut |step| match step {
                        ApplyStep::Indexed { .. } => crate::failpoint::hit("handoff_indexed"),
                        ApplyStep::Wrote { .. } => crate::failpoint::hit("handoff_wrote"),
                        ApplyStep::Moved => crate::failpoint::hit("handoff_moved"),
                    })
                    .map_err(git_error)?;
                    MergeOutcome::Merged {
                        commit: merge.commit.clone(),
                        previous: merge.previous.clone(),
                    }
                }
            };
            repos.push(RepoMerge {
                repo: (!slot.name.is_empty()).then(|| slot.name.clone()),
                branch: entry
                    .merge
                    .as_ref()
                    .map(|m| m.branch.clone())
                    .or_else(|| slot.repo.head().ok()?.branch().map(str::to_owned))
                    .unwrap_or_default(),
                outcome,
            });
        }
        MergeJournal::remove(&self.state_dir)?;
        crate::failpoint::hit("handoff_journal_removed");
        let removed = self.remove_everything(false)?;
        store.release_run(&self.run.id, plan_id, RunStatus::HandedOff, None, now())?;
        let merged = Event::new(EventKind::HandoffMerged).run(&self.run.id);
        store.record_event(Some(plan_id), merged, now())?;
        Ok(MergeReport {
            run: self.run.id.clone(),
            integration_branch: self.integration_branch.clone(),
            repos,
            removed,
            resumed,
            interrupted: Interrupt::raised(interrupt),
        })
    }

    /// Step 1 of [`Handoff::merge`]: every repository's merge, computed; refused as a
    /// whole when any repository has a problem.
    fn prepare(&self, interrupt: Option<&Interrupt>) -> Result<MergeJournal, EngineError> {
        if self.is_empty() {
            return Err(refuse(
                format!(
                    "run {} landed nothing, so there is nothing to merge",
                    self.run.id
                ),
                "`weft handoff discard` or `weft handoff cleanup` ends it",
            ));
        }
        let message = format!(
            "weft: merge run {} ({})",
            self.run.id, self.integration_branch
        );
        let mut repos = Vec::new();
        let mut problems = Vec::new();
        for (index, slot) in self.isolation.slots.iter().enumerate() {
            if Interrupt::raised(interrupt) {
                break;
            }
            let merge = match slot.repo.prepare_merge(&self.integration_branch, &message) {
                Ok(Prepared::Ready(merge)) => Some(merge),
                Ok(Prepared::UpToDate { .. }) => None,
                Err(weft_git::GitError::PreflightFailed {
                    problems: found, ..
                }) => {
                    problems.push(format!("{}{}", self.label(index), found.join("; ")));
                    None
                }
                Err(error) => return Err(git_error(error)),
            };
            repos.push(JournalRepo {
                name: slot.name.clone(),
                root: slot.repo.root().to_owned(),
                merge,
            });
        }
        if !problems.is_empty() {
            return Err(refuse(
                format!(
                    "merging {} is refused: {}",
                    self.integration_branch,
                    problems.join("; ")
                ),
                "fix what it names (commit or stash your edits, finish the merge in progress), then run `weft handoff merge` again; nothing was merged",
            ));
        }
        Ok(MergeJournal {
            version: journal::VERSION,
            run: self.run.id.clone(),
            integration_branch: self.integration_branch.clone(),
            started_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            pid: std::process::id(),
            aborting: false,
            repos,
        })
    }

    /// A journal found at the start of `merge` or `abort_merge` must be this run's, for
    /// these repositories.
    fn check_journal(&self, journal: MergeJournal) -> Result<MergeJournal, EngineError> {
        let roots: Vec<&Path> = self.isolation.slots.iter().map(|s| s.repo.root()).collect();
        let journaled: Vec<&Path> = journal.repos.iter().map(|r| r.root.as_path()).collect();
        if journal.run != self.run.id || roots != journaled {
            return Err(refuse(
                format!(
                    "the handoff merge journal {} is for run {} in {}, not run {} here",
                    MergeJournal::path(&self.state_dir).display(),
                    journal.run,
                    journaled
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    self.run.id
                ),
                "finish or abort that merge from the workspace that began it",
            ));
        }
        Ok(journal)
    }

    /// The repository of `slot` for writing its checkout: git in process groups of its
    /// own (a Ctrl-C never stops it half-way), HEAD checked to still be on the merged
    /// branch, and an `index.lock` the merge's own killed git left removed.
    fn checkout_repo(
        &self,
        slot: &crate::isolation::Slot,
        merge: &PreparedMerge,
        journal: &MergeJournal,
    ) -> Result<weft_git::Repo, EngineError> {
        let repo = slot
            .repo
            .git()
            .clone()
            .own_process_group()
            .open(slot.repo.root())
            .map_err(git_error)?;
        let on = repo.head().map_err(git_error)?;
        if on.branch() != Some(merge.branch.as_str()) {
            return Err(refuse(
                format!(
                    "{}the handoff merge of run {} was writing branch {}, but HEAD is not on it now",
                    slot_label(slot),
                    journal.run,
                    merge.branch
                ),
                format!(
                    "`git switch {}` (git may ask you to set local changes aside), then run the command again",
                    merge.branch
                ),
            ));
        }
        let since = std::time::UNIX_EPOCH + std::time::Duration::from_millis(journal.started_ms);
        repo.remove_stale_index_lock(since, STALE_LOCK_PATIENCE)
            .map_err(git_error)?;
        Ok(repo)
    }

    /// Whether a handoff merge of this workspace is journaled (begun, not finished).
    pub fn merge_pending(&self) -> Result<bool, EngineError> {
        Ok(MergeJournal::load(&self.state_dir)?.is_some())
    }

    /// `weft handoff merge --abort`: undo the journaled merge in every repository, so
    /// each checkout and branch is as it was before the merge began, and forget the
    /// journal; the run stays open (merge it later, or discard it). Refused when no merge
    /// is journaled. Marks the journal `aborting` first, so an interrupted abort is only
    /// ever finished by aborting again.
    pub fn abort_merge(&self) -> Result<AbortReport, EngineError> {
        let Some(journal) = MergeJournal::load(&self.state_dir)? else {
            return Err(refuse(
                format!("no handoff merge of run {} is in progress", self.run.id),
                "there is nothing to abort; `weft handoff merge` merges the run",
            ));
        };
        let mut journal = self.check_journal(journal)?;
        if !journal.aborting {
            journal.aborting = true;
            journal.save(&self.state_dir)?;
        }
        let mut repos = Vec::new();
        for (slot, entry) in self.isolation.slots.iter().zip(&journal.repos).rev() {
            let Some(merge) = &entry.merge else { continue };
            let repo = self.checkout_repo(slot, merge, &journal)?;
            repo.unapply_merge(merge, &mut |_| {}).map_err(git_error)?;
            repos.push(RepoRestored {
                repo: (!slot.name.is_empty()).then(|| slot.name.clone()),
                branch: merge.branch.clone(),
                head: merge.previous.clone(),
            });
        }
        repos.reverse();
        MergeJournal::remove(&self.state_dir)?;
        Ok(AbortReport {
            run: self.run.id.clone(),
            repos,
        })
    }

    /// The tasks a discard puts back to pending: those this run completed or left
    /// conflicted (their work is on the branches a discard removes). Tasks completed by
    /// hand or by an earlier run keep their status.
    pub fn discarded_tasks(
        &self,
        store: &Store,
        plan_id: &str,
    ) -> Result<Vec<TaskRef>, EngineError> {
        let plan = store.plan(plan_id)?;
        let ran: std::collections::HashSet<String> = store
            .attempts_of_plan(plan_id)?
            .into_iter()
            .filter(|a| a.run_id == self.run.id && a.status == AttemptStatus::Passed)
            .map(|a| a.task_id)
            .collect();
        Ok(plan
            .tasks
            .iter()
            .filter(|t| matches!(t.status, TaskStatus::Completed | TaskStatus::Conflicted))
            .filter(|t| ran.contains(&t.id))
            .map(|t| TaskRef {
                order: t.order,
                id: t.id.clone(),
                was: t.status,
            })
            .collect())
    }

    /// Throw the run away; each repository's tip stays under `refs/weft/discarded/<run>`,
    /// and the tasks whose work it held are pending again ([`Handoff::discarded_tasks`];
    /// in the same store transaction as the run's end), so the next `weft run` runs them
    /// on a fresh integration branch.
    pub fn discard(self, store: &mut Store, plan_id: &str) -> Result<Vec<String>, EngineError> {
        journal::refuse_if_pending(&self.state_dir, "discard the run")?;
        (self.isolation.check_integration()).map_err(|f| f.into_error("discarding the run"))?;
        let reset = self.discarded_tasks(store, plan_id)?;
        let kept = format!("refs/weft/discarded/{}", self.run.id);
        let mut lines = Vec::new();
        for (index, (slot, (_, tip))) in self.isolation.slots.iter().zip(&self.ends).enumerate() {
            if slot.repo.ref_target(&kept).map_err(git_error)?.as_ref() != Some(tip) {
                slot.repo
                    .update_ref_cas(&kept, tip, None)
                    .map_err(git_error)?;
            }
            lines.push(format!(
                "{}discarded run {}; its tip {} is kept as {kept} (recover with `git branch NAME {kept}`)",
                self.label(index),
                self.run.id,
                tip.as_str()
            ));
        }
        let removed = self.remove_everything(true)?;
        lines.push(removed.sentence());
        let resets: Vec<(&str, TaskStatus)> =
            reset.iter().map(|t| (t.id.as_str(), t.was)).collect();
        store.release_run_resetting(&self.run.id, plan_id, RunStatus::HandedOff, &resets, now())?;
        if !reset.is_empty() {
            lines.push(format!(
                "pending again, to run on a fresh integration branch at the next `weft run`: {}",
                list_tasks(&reset)
            ));
        }
        let discarded = Event::new(EventKind::HandoffDiscarded { kept }).run(&self.run.id);
        store.record_event(Some(plan_id), discarded, now())?;
        Ok(lines)
    }

    /// Remove the run's worktrees; keep every branch.
    pub fn cleanup(&self) -> Result<Vec<String>, EngineError> {
        journal::refuse_if_pending(&self.state_dir, "clean up the run")?;
        let removed = self.remove_worktrees()?;
        Ok(vec![format!(
            "removed {removed} worktree(s) of run {}; its branches are kept",
            self.run.id
        )])
    }

    fn remove_worktrees(&self) -> Result<usize, EngineError> {
        let mut removed = 0;
        let under: PathBuf = self.isolation.worktrees.clone();
        for slot in &self.isolation.slots {
            for worktree in slot.repo.list_worktrees().map_err(git_error)? {
                if worktree.path.starts_with(&under) {
                    slot.repo
                        .remove_worktree(&worktree.path, true)
                        .map_err(git_error)?;
                    removed += 1;
                }
            }
            let _ = slot.repo.prune_worktrees();
        }
        let _ = fs_err::remove_dir_all(&under);
        Ok(removed)
    }

    /// Worktrees and task branches go; the integration branch too when `all`.
    fn remove_everything(&self, all: bool) -> Result<Removed, EngineError> {
        let worktrees = self.remove_worktrees()?;
        let mut branches = 0;
        let mut doomed: Vec<&String> = self.task_branches.iter().collect();
        if all {
            doomed.push(&self.integration_branch);
        }
        for slot in &self.isolation.slots {
            for branch in &doomed {
                if slot.repo.branch_exists(branch).map_err(git_error)? {
                    slot.repo.delete_branch(branch, true).map_err(git_error)?;
                    branches += 1;
                }
            }
        }
        Ok(Removed {
            worktrees,
            branches,
        })
    }
}

fn slot_label(slot: &crate::isolation::Slot) -> String {
    if slot.name.is_empty() {
        String::new()
    } else {
        format!("{}: ", slot.name)
    }
}

/// How long a journaled merge waits for an `index.lock` its own killed git may still be
/// releasing before it removes the lock as stale.
const STALE_LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

/// What [`Handoff::merge`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    pub run: String,
    pub integration_branch: String,
    /// Per repository, in order.
    pub repos: Vec<RepoMerge>,
    /// The run's worktrees and task branches removed afterwards.
    pub removed: Removed,
    /// This call finished a merge an earlier, interrupted one had journaled.
    pub resumed: bool,
    /// The user interrupted while the merge was being applied; it was finished first.
    pub interrupted: bool,
}

/// One repository's part of a [`MergeReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoMerge {
    /// Its name in a multi-repo workspace; `None` for the workspace itself.
    pub repo: Option<String>,
    /// The branch merged into.
    pub branch: String,
    pub outcome: MergeOutcome,
}

/// Worktrees and branches a handoff step removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Removed {
    pub worktrees: usize,
    pub branches: usize,
}

impl Removed {
    /// `removed 3 worktree(s) and 4 branch(es)`.
    pub fn sentence(&self) -> String {
        format!(
            "removed {} worktree(s) and {} branch(es)",
            self.worktrees, self.branches
        )
    }
}

/// What [`Handoff::abort_merge`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AbortReport {
    pub run: String,
    /// Every repository whose checkout was put back, in order.
    pub repos: Vec<RepoRestored>,
}

/// One repository [`Handoff::abort_merge`] put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoRestored {
    pub repo: Option<String>,
    pub branch: String,
    /// Where the branch is again.
    pub head: Oid,
}

/// What deleting a plan leaves in git unless it is cleaned up: each isolated run's
/// worktrees, task branches and integration branch ([`plan_leftovers`]).
#[derive(Debug)]
pub struct Leftovers {
    pub runs: Vec<RunLeftovers>,
}

/// One run's part of [`Leftovers`].
#[derive(Debug)]
pub struct RunLeftovers {
    pub run: String,
    pub integration_branch: String,
    /// Its registered worktrees (every repository's).
    pub worktrees: Vec<PathBuf>,
    /// Its task branches that still exist (the integration branch not included).
    pub branches: Vec<String>,
    isolation: Isolation,
}

impl Leftovers {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    pub fn worktrees(&self) -> usize {
        self.runs.iter().map(|r| r.worktrees.len()).sum()
    }

    /// Every branch that goes, the integration branches included.
    pub fn branches(&self) -> Vec<String> {
        self.runs
            .iter()
            .flat_map(|r| {
                r.branches
                    .iter()
                    .cloned()
                    .chain(std::iter::once(r.integration_branch.clone()))
            })
            .collect()
    }

    /// Remove them: each integration tip is kept first under `refs/weft/deleted/<run>`
    /// (so landed work is never lost outright), then the worktrees and branches go.
    /// Safe to repeat (what is gone already is skipped).
    pub fn remove(&self) -> Result<Removed, EngineError> {
        let mut removed = Removed::default();
        for run in &self.runs {
            let kept = format!("refs/weft/deleted/{}", run.run);
            let integration = run.isolation.integration_ref();
            for slot in &run.isolation.slots {
                if let Some(tip) = slot.repo.ref_target(&integration).map_err(git_error)?
                    && slot.repo.ref_target(&kept).map_err(git_error)?.as_ref() != Some(&tip)
                {
                    let found = slot.repo.ref_target(&kept).map_err(git_error)?;
                    slot.repo
                        .update_ref_cas(&kept, &tip, found.as_ref())
                        .map_err(git_error)?;
                }
                for worktree in slot.repo.list_worktrees().map_err(git_error)? {
                    if worktree.path.starts_with(&run.isolation.worktrees) {
                        slot.repo
                            .remove_worktree(&worktree.path, true)
                            .map_err(git_error)?;
                        removed.worktrees += 1;
                    }
                }
                let _ = slot.repo.prune_worktrees();
                for branch in run
                    .branches
                    .iter()
                    .chain(std::iter::once(&run.integration_branch))
                {
                    if slot.repo.branch_exists(branch).map_err(git_error)? {
                        slot.repo.delete_branch(branch, true).map_err(git_error)?;
                        removed.branches += 1;
                    }
                }
            }
            let _ = fs_err::remove_dir_all(&run.isolation.worktrees);
        }
        Ok(removed)
    }
}

/// The worktrees and branches the plan's isolated runs left in git, for `weft sessions
/// delete` to list and remove. Refused while an engine runs the plan or a handoff merge
/// is journaled.
pub fn plan_leftovers(
    store: &Store,
    plan_id: &str,
    workspace: &Path,
    state_dir: &Path,
    repos: &[String],
) -> Result<Leftovers, EngineError> {
    journal::refuse_if_pending(state_dir, "delete a plan")?;
    if let Some(pid) = crate::control::engine_running(store, plan_id)? {
        return Err(refuse(
            format!("a run of this plan is active (engine pid {pid})"),
            "wait for it to end, or `weft stop` it first",
        ));
    }
    let attempts = store.attempts_of_plan(plan_id)?;
    let mut run_ids: Vec<String> = attempts.iter().map(|a| a.run_id.clone()).collect();
    if let Some(open) = store.open_run(plan_id)? {
        run_ids.push(open.id);
    }
    run_ids.sort();
    run_ids.dedup();
    let mut runs = Vec::new();
    for run_id in run_ids {
        let Some(run) = store.run(&run_id)? else {
            continue;
        };
        let Some(integration_branch) = run.integration_branch.clone() else {
            continue;
        };
        let isolation = Isolation::existing(workspace, state_dir, repos, &run.id)?;
        let mut worktrees = Vec::new();
        let mut branches: Vec<String> = Vec::new();
        let mut integration_exists = false;
        for slot in &isolation.slots {
            for worktree in slot.repo.list_worktrees().map_err(git_error)? {
                if worktree.path.starts_with(&isolation.worktrees) {
                    worktrees.push(worktree.path);
                }
            }
            integration_exists |= slot
                .repo
                .branch_exists(&integration_branch)
                .map_err(git_error)?;
            for attempt in attempts.iter().filter(|a| a.run_id == run.id) {
                if let Some(branch) = &attempt.branch
                    && !branches.contains(branch)
                    && slot.repo.branch_exists(branch).map_err(git_error)?
                {
                    branches.push(branch.clone());
                }
            }
        }
        if worktrees.is_empty() && branches.is_empty() && !integration_exists {
            continue;
        }
        branches.sort();
        runs.push(RunLeftovers {
            run: run.id.clone(),
            integration_branch,
            worktrees,
            branches,
            isolation,
        });
    }
    Ok(Leftovers { runs })
}

fn label(repo: Option<&String>) -> String {
    repo.map(|name| format!("{name}: ")).unwrap_or_default()
}

impl MergeReport {
    /// The person's lines of this report (the CLI and the TUI print them).
    pub fn lines(&self) -> Vec<String> {
        let report = self;
        let mut lines = Vec::new();
        if report.resumed {
            lines.push(format!(
                "finished the handoff merge of run {} that was interrupted",
                report.run
            ));
        }
        for repo in &report.repos {
            let branch = if repo.branch.is_empty() {
                "your branch"
            } else {
                repo.branch.as_str()
            };
            lines.push(match &repo.outcome {
                MergeOutcome::Merged { commit, .. } => format!(
                    "{}merged {} into {branch} as {}",
                    label(repo.repo.as_ref()),
                    report.integration_branch,
                    commit.short()
                ),
                MergeOutcome::UpToDate { .. } => format!(
                    "{}{branch} already contains {}",
                    label(repo.repo.as_ref()),
                    report.integration_branch
                ),
            });
        }
        lines.push(report.removed.sentence());
        lines
    }
}

impl AbortReport {
    /// The person's lines of this report.
    pub fn lines(&self) -> Vec<String> {
        let report = self;
        let mut lines: Vec<String> = report
            .repos
            .iter()
            .map(|repo| {
                format!(
                    "{}put {} and your checkout back at {}",
                    label(repo.repo.as_ref()),
                    repo.branch,
                    repo.head.short()
                )
            })
            .collect();
        lines.push(format!(
        "aborted the handoff merge of run {}; the run is still open (`weft handoff merge` merges it, `weft handoff discard` ends it)",
        report.run
    ));
        lines
    }
}
