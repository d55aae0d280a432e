//! The end of an isolated run: review what it changed, merge it into the checked-out
//! branch, discard it (keeping the tip under `refs/weft/discarded/<run>`), or clean up.

use std::path::{Path, PathBuf};

use serde_json::json;
use weft_core::{Run, RunStatus};
use weft_git::{Git, Oid, Repo, branch_ref};
use weft_store::Store;

use crate::engine::now;
use crate::error::EngineError;
use crate::isolation::git_error;

/// The run a handoff acts on and its repository.
#[derive(Debug)]
pub struct Handoff {
    pub run: Run,
    pub repo: Repo,
    pub base: Oid,
    pub tip: Oid,
    pub integration_branch: String,
    worktrees: PathBuf,
    /// The task branches the run's attempts worked on.
    task_branches: Vec<String>,
}

fn refuse(detail: impl Into<String>, hint: impl Into<String>) -> EngineError {
    EngineError::Isolation {
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
    ) -> Result<Handoff, EngineError> {
        let run = store.open_run(plan_id)?.ok_or_else(|| {
            refuse(
                "this plan has no run to hand off",
                "run it first with `weft run --isolated`",
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
        let repo = Git::new().open(workspace).map_err(git_error)?;
        let base = Oid::parse(&base).ok_or_else(|| {
            refuse(
                format!("run {} records a bad base {base:?}", run.id),
                "discard the run",
            )
        })?;
        let tip = repo.resolve(&branch_ref(&branch)).map_err(git_error)?;
        let mut task_branches: Vec<String> = store
            .attempts_of_plan(plan_id)?
            .into_iter()
            .filter(|a| a.run_id == run.id)
            .filter_map(|a| a.branch)
            .collect();
        task_branches.sort();
        task_branches.dedup();
        Ok(Handoff {
            task_branches,
            worktrees: state_dir.join("worktrees").join(&run.id),
            run,
            repo,
            base,
            tip,
            integration_branch: branch,
        })
    }

    /// Whether the run landed anything.
    pub fn is_empty(&self) -> bool {
        self.base == self.tip
    }

    /// The diff of the run branch against its base (bounded), or its stat.
    pub fn review(&self, stat: bool) -> Result<String, EngineError> {
        if self.is_empty() {
            return Ok(format!(
                "run {} landed nothing: {} is still at its base {}\n",
                self.run.id,
                self.integration_branch,
                self.base.short()
            ));
        }
        if stat {
            let stat = self
                .repo
                .diff_stat(self.base.as_str(), self.tip.as_str())
                .map_err(git_error)?;
            let mut text = String::new();
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
            return Ok(text);
        }
        let diff = self
            .repo
            .diff(self.base.as_str(), self.tip.as_str())
            .map_err(git_error)?;
        let mut text = diff.text.clone();
        if let Some(notice) = diff.notice() {
            text.push_str(&format!("\n{notice}\n"));
        }
        Ok(text)
    }

    /// Merge the run branch into the checked-out branch after a preflight; nothing is
    /// merged when the preflight finds a problem.
    pub fn merge(self, store: &mut Store, plan_id: &str) -> Result<Vec<String>, EngineError> {
        if self.is_empty() {
            return Err(refuse(
                format!(
                    "run {} landed nothing, so there is nothing to merge",
                    self.run.id
                ),
                "`weft handoff discard` or `weft handoff cleanup` ends it",
            ));
        }
        let preflight = self
            .repo
            .merge_preflight(&self.integration_branch)
            .map_err(git_error)?;
        if !preflight.ok {
            return Err(refuse(
                format!(
                    "merging {} is refused: {}",
                    self.integration_branch,
                    preflight.problems.join("; ")
                ),
                "fix what it names (commit or stash your edits, finish the merge in progress), then run `weft handoff merge` again",
            ));
        }
        let message = format!(
            "weft: merge run {} ({})",
            self.run.id, self.integration_branch
        );
        let outcome = self
            .repo
            .merge_into_checked_out(&self.integration_branch, &message)
            .map_err(git_error)?;
        let head = preflight
            .head_branch
            .clone()
            .unwrap_or_else(|| "your branch".into());
        let mut lines = vec![match outcome {
            weft_git::MergeOutcome::Merged { commit, .. } => format!(
                "merged {} into {head} as {}",
                self.integration_branch,
                commit.short()
            ),
            weft_git::MergeOutcome::UpToDate { .. } => {
                format!("{head} already contains {}", self.integration_branch)
            }
        }];
        lines.extend(self.remove_everything(false)?);
        store.release_run(&self.run.id, plan_id, RunStatus::HandedOff, now())?;
        store.record_event(
            Some(plan_id),
            "handoff_merged",
            json!({ "run": self.run.id }),
            now(),
        )?;
        Ok(lines)
    }

    /// Throw the run away; its tip stays under `refs/weft/discarded/<run>`.
    pub fn discard(self, store: &mut Store, plan_id: &str) -> Result<Vec<String>, EngineError> {
        let kept = format!("refs/weft/discarded/{}", self.run.id);
        self.repo
            .update_ref_cas(&kept, &self.tip, None)
            .map_err(git_error)?;
        let mut lines = vec![format!(
            "discarded run {}; its tip {} is kept as {kept} (recover with `git branch NAME {kept}`)",
            self.run.id,
            self.tip.as_str()
        )];
        lines.extend(self.remove_everything(true)?);
        store.release_run(&self.run.id, plan_id, RunStatus::HandedOff, now())?;
        store.record_event(
            Some(plan_id),
            "handoff_discarded",
            json!({ "run": self.run.id, "kept": kept }),
            now(),
        )?;
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
        for worktree in self.repo.list_worktrees().map_err(git_error)? {
            if worktree.path.starts_with(&self.worktrees) {
                self.repo
                    .remove_worktree(&worktree.path, true)
                    .map_err(git_error)?;
                removed += 1;
            }
        }
        let _ = self.repo.prune_worktrees();
        let _ = fs_err::remove_dir_all(&self.worktrees);
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
        for branch in doomed {
            if self.repo.branch_exists(branch).map_err(git_error)? {
                self.repo.delete_branch(branch, true).map_err(git_error)?;
                branches += 1;
            }
        }
        Ok(vec![format!(
            "removed {removed} worktree(s) and {branches} branch(es)"
        )])
    }
}
