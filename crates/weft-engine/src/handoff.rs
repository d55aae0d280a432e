//! The end of an isolated run: review what it changed, merge it into the checked-out
//! branch of every repository (all or nothing), discard it (keeping each tip under
//! `refs/weft/discarded/<run>`), or clean up.

use std::path::{Path, PathBuf};

use weft_core::event::{Event, EventKind};
use weft_core::{Run, RunStatus};
use weft_git::Oid;
use weft_store::Store;

use crate::engine::now;
use crate::error::EngineError;
use crate::isolation::{Isolation, decode, git_error};

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
        let run = store.open_run(plan_id)?.ok_or_else(|| {
            refuse(
                "this plan has no run to hand off",
                "run it first with `weft run`",
            )
        })?;
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

    /// Merge the run branch into the checked-out branch of every repository after a
    /// preflight of all of them; nothing is merged anywhere when one finds a problem.
    pub fn merge(self, store: &mut Store, plan_id: &str) -> Result<Vec<String>, EngineError> {
        (self.isolation.check_integration()).map_err(|f| f.into_error("merging the run"))?;
        if self.is_empty() {
            return Err(refuse(
                format!(
                    "run {} landed nothing, so there is nothing to merge",
                    self.run.id
                ),
                "`weft handoff discard` or `weft handoff cleanup` ends it",
            ));
        }
        let mut preflights = Vec::new();
        let mut problems = Vec::new();
        for (index, slot) in self.isolation.slots.iter().enumerate() {
            let preflight = slot
                .repo
                .merge_preflight(&self.integration_branch)
                .map_err(git_error)?;
            if !preflight.ok {
                problems.push(format!(
                    "{}{}",
                    self.label(index),
                    preflight.problems.join("; ")
                ));
            }
            preflights.push(preflight);
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
        let message = format!(
            "weft: merge run {} ({})",
            self.run.id, self.integration_branch
        );
        let mut lines = Vec::new();
        for (index, (slot, preflight)) in self.isolation.slots.iter().zip(&preflights).enumerate() {
            let head = preflight
                .head_branch
                .clone()
                .unwrap_or_else(|| "your branch".into());
            let outcome = slot
                .repo
                .merge_into_checked_out(&self.integration_branch, &message)
                .map_err(git_error)?;
            lines.push(match outcome {
                weft_git::MergeOutcome::Merged { commit, .. } => format!(
                    "{}merged {} into {head} as {}",
                    self.label(index),
                    self.integration_branch,
                    commit.short()
                ),
                weft_git::MergeOutcome::UpToDate { .. } => format!(
                    "{}{head} already contains {}",
                    self.label(index),
                    self.integration_branch
                ),
            });
        }
        lines.extend(self.remove_everything(false)?);
        store.release_run(&self.run.id, plan_id, RunStatus::HandedOff, None, now())?;
        let merged = Event::new(EventKind::HandoffMerged).run(&self.run.id);
        store.record_event(Some(plan_id), merged, now())?;
        Ok(lines)
    }

    /// Throw the run away; each repository's tip stays under `refs/weft/discarded/<run>`.
    pub fn discard(self, store: &mut Store, plan_id: &str) -> Result<Vec<String>, EngineError> {
        (self.isolation.check_integration()).map_err(|f| f.into_error("discarding the run"))?;
        let kept = format!("refs/weft/discarded/{}", self.run.id);
        let mut lines = Vec::new();
        for (index, (slot, (_, tip))) in self.isolation.slots.iter().zip(&self.ends).enumerate() {
            slot.repo
                .update_ref_cas(&kept, tip, None)
                .map_err(git_error)?;
            lines.push(format!(
                "{}discarded run {}; its tip {} is kept as {kept} (recover with `git branch NAME {kept}`)",
                self.label(index),
                self.run.id,
                tip.as_str()
            ));
        }
        lines.extend(self.remove_everything(true)?);
        store.release_run(&self.run.id, plan_id, RunStatus::HandedOff, None, now())?;
        let discarded = Event::new(EventKind::HandoffDiscarded { kept }).run(&self.run.id);
        store.record_event(Some(plan_id), discarded, now())?;
        Ok(lines)
    }

    /// Remove the run's worktrees; keep every branch.
    pub fn cleanup(&self) -> Result<Vec<String>, EngineError> {
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
    fn remove_everything(&self, all: bool) -> Result<Vec<String>, EngineError> {
        let removed = self.remove_worktrees()?;
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
        Ok(vec![format!(
            "removed {removed} worktree(s) and {branches} branch(es)"
        )])
    }
}
