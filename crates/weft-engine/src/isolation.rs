//! Isolated runs: a worktree and branch per AI attempt, cut from the run's integration
//! branch, and landing passed work back onto it one task at a time without any checkout.

use std::path::{Path, PathBuf};

use weft_core::slug::slugify;
use weft_core::{Landing, Task};
use weft_git::{Git, Head, Oid, Repo, branch_ref};

use crate::error::EngineError;

/// The git side of one isolated run.
#[derive(Debug)]
pub(crate) struct Isolation {
    pub repo: Repo,
    pub run_id: String,
    /// `weft/<run>/integration`.
    pub integration_branch: String,
    /// `.weft/worktrees/<run>`.
    pub worktrees: PathBuf,
}

/// Where an attempt works.
#[derive(Debug, Clone)]
pub(crate) struct Cut {
    pub path: PathBuf,
    pub branch: String,
    pub cut_from: Oid,
    /// Links to the main checkout's ignored artifacts, relative to the worktree; never
    /// committed.
    pub links: Vec<PathBuf>,
}

/// How a fresh worktree is made runnable.
#[derive(Debug, Clone)]
pub enum Runnable {
    /// Link these entries of the main checkout in, if they exist there (`name*` matches a
    /// prefix, e.g. `.env*`).
    Link(Vec<String>),
    /// Run this shell command in the worktree instead.
    Setup(String),
}

/// Entries of `root` that `patterns` name; `.git` and `.weft` never.
fn linkable(root: &Path, patterns: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    let entries: Vec<String> = fs_err::read_dir(root)
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for pattern in patterns {
        let pattern = pattern.trim();
        if pattern.is_empty() {
            continue;
        }
        for name in &entries {
            let matches = match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == pattern,
            };
            if matches && name != ".git" && name != ".weft" && !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names.sort();
    names
}

/// Why `workspace` cannot run isolated (not a git repository, or no commits yet), if it
/// cannot.
pub fn isolation_unavailable(workspace: &Path) -> Option<String> {
    match Git::new().open(workspace) {
        Err(e) => Some(format!(
            "{} is not a git repository ({e})",
            workspace.display()
        )),
        Ok(repo) => match repo.head() {
            Ok(Head::Unborn { branch }) => Some(format!(
                "the repository has no commits yet (branch {branch} is unborn)"
            )),
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        },
    }
}

pub(crate) fn git_error(error: weft_git::GitError) -> EngineError {
    EngineError::Git(Box::new(error))
}

impl Isolation {
    /// Open the workspace's repository for a run; create its integration branch at HEAD when
    /// the run is new (`base` is None), or reuse the recorded one.
    pub fn prepare(
        workspace: &Path,
        state_dir: &Path,
        run_id: &str,
        existing_branch: Option<&str>,
        stash: bool,
    ) -> Result<(Isolation, Option<Oid>, Option<Oid>), EngineError> {
        let repo = Git::new().open(workspace).map_err(git_error)?;
        let integration_branch = format!("weft/{run_id}/integration");
        let worktrees = state_dir.join("worktrees").join(run_id);
        let isolation = Isolation {
            repo,
            run_id: run_id.to_owned(),
            integration_branch: integration_branch.clone(),
            worktrees,
        };
        let base = match isolation.repo.head().map_err(git_error)? {
            Head::Branch { commit, .. } | Head::Detached { commit } => commit,
            Head::Unborn { branch } => {
                return Err(EngineError::Isolation {
                    detail: format!(
                        "the repository has no commits yet (branch {branch} is unborn)"
                    ),
                    hint: "commit something first, or run with --without-isolation".into(),
                });
            }
        };
        let dirty = isolation.repo.tracked_changes().map_err(git_error)?;
        let mut stashed = None;
        if !dirty.is_empty() && stash {
            stashed = isolation
                .repo
                .stash_push(&format!("weft: stashed for run {run_id}"))
                .map_err(git_error)?;
        } else if !dirty.is_empty() {
            let shown: Vec<&str> = dirty.iter().take(10).map(String::as_str).collect();
            let more = dirty.len().saturating_sub(10);
            return Err(EngineError::Isolation {
                detail: format!(
                    "the workspace has uncommitted changes to tracked files: {}{}",
                    shown.join(", "),
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                ),
                hint: "commit them, or run with --stash (they are restored when the run ends) or --without-isolation (tasks then share your checkout)".into(),
            });
        }
        if existing_branch.is_some()
            && isolation
                .repo
                .branch_exists(&integration_branch)
                .map_err(git_error)?
        {
            return Ok((isolation, None, stashed));
        }
        isolation
            .repo
            .create_branch(&integration_branch, &base)
            .map_err(git_error)?;
        Ok((isolation, Some(base), stashed))
    }

    /// The isolation of a run that already has its integration branch (for commands that
    /// run outside the engine, like `weft manual`).
    pub fn existing(
        workspace: &Path,
        state_dir: &Path,
        run_id: &str,
    ) -> Result<Isolation, EngineError> {
        let repo = Git::new().open(workspace).map_err(git_error)?;
        Ok(Isolation {
            repo,
            run_id: run_id.to_owned(),
            integration_branch: format!("weft/{run_id}/integration"),
            worktrees: state_dir.join("worktrees").join(run_id),
        })
    }

    pub fn integration_ref(&self) -> String {
        branch_ref(&self.integration_branch)
    }

    pub fn tip(&self) -> Result<Oid, EngineError> {
        self.repo
            .resolve(&self.integration_ref())
            .map_err(git_error)
    }

    /// A fresh worktree for attempt `number` of `task`, cut from the integration tip, made
    /// runnable by linking the main checkout's ignored artifacts in (or a setup command).
    pub fn cut(&self, task: &Task, number: u32, runnable: &Runnable) -> Result<Cut, EngineError> {
        let mut name = format!("{}-{}", task.order, slugify(&task.title));
        if number > 1 {
            name.push_str(&format!("-{number}"));
        }
        let path = self.worktrees.join(&name);
        let branch = format!("weft/{}/{name}", self.run_id);
        let cut_from = self.tip()?;
        self.repo
            .add_worktree(&path, &branch, &cut_from)
            .map_err(git_error)?;
        let mut links = Vec::new();
        match runnable {
            Runnable::Link(patterns) => {
                for name in linkable(self.repo.root(), patterns) {
                    let target = path.join(&name);
                    // Tracked content is already there; only missing entries are linked.
                    if target.symlink_metadata().is_ok() {
                        continue;
                    }
                    std::os::unix::fs::symlink(self.repo.root().join(&name), &target).map_err(
                        |source| EngineError::Io {
                            path: target.display().to_string(),
                            source,
                        },
                    )?;
                    links.push(PathBuf::from(name));
                }
            }
            Runnable::Setup(command) => {
                let output = std::process::Command::new("sh")
                    .args(["-c", command])
                    .current_dir(&path)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .map_err(|source| EngineError::Io {
                        path: path.display().to_string(),
                        source,
                    })?;
                if !output.status.success() {
                    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
                    text.push_str(&String::from_utf8_lossy(&output.stderr));
                    let tail = weft_core::prompt::tail_chars(&text, 2000);
                    return Err(EngineError::Isolation {
                        detail: format!(
                            "the setup command `{command}` failed in {} ({}): {tail}",
                            path.display(),
                            output.status
                        ),
                        hint: "fix `setup` in weft.toml, or remove it to link artifacts instead"
                            .into(),
                    });
                }
            }
        }
        Ok(Cut {
            path,
            branch,
            cut_from,
            links,
        })
    }

    /// The run's integration checkout (detached at the current tip), for ops tasks.
    pub fn integration_checkout(&self) -> Result<PathBuf, EngineError> {
        let path = self.worktrees.join("integration");
        let tip = self.tip()?;
        if path.exists() {
            self.repo
                .open_worktree(&path)
                .and_then(|wt| wt.force_checkout_detached(&tip))
                .map_err(git_error)?;
        } else {
            self.repo
                .add_worktree_detached(&path, &tip)
                .map_err(git_error)?;
        }
        Ok(path)
    }

    /// Commit what the agent left uncommitted, then land its branch on the integration branch.
    pub fn land(&self, cut: &Cut, task: &Task) -> Result<Landing, EngineError> {
        // After a crash the worktree may already be gone; its branch holds the work then.
        if cut.path.exists() {
            let worktree = self.repo.open_worktree(&cut.path).map_err(git_error)?;
            worktree
                .commit_all(
                    &format!("weft: task {}: {}", task.order, task.title),
                    &cut.links,
                )
                .map_err(git_error)?;
        }
        let message = format!("weft: land task {}: {}", task.order, task.title);
        let landing = self
            .repo
            .land(
                &self.integration_ref(),
                &cut.branch,
                &cut.cut_from,
                &message,
            )
            .map_err(git_error)?;
        Ok(match landing {
            weft_git::Landing::Landed { merge, .. } => Landing::Landed {
                merge: merge.as_str().to_owned(),
            },
            weft_git::Landing::AlreadyIntegrated { previous, .. } => Landing::Landed {
                merge: previous.as_str().to_owned(),
            },
            weft_git::Landing::NoChanges { .. } => Landing::NoChanges,
            weft_git::Landing::Conflicted { files, detail, .. } => {
                Landing::Conflicted { files, detail }
            }
            weft_git::Landing::Rewritten { reason } => Landing::Conflicted {
                files: Vec::new(),
                detail: format!(
                    "the task branch no longer contains the tip it was cut from: {reason}"
                ),
            },
        })
    }

    /// Merge a conflicted attempt's branch into a fresh cut, leaving conflict markers for
    /// the repair agent; returns the files it must resolve (none when it merged cleanly).
    pub fn merge_for_repair(&self, cut: &Cut, branch: &str) -> Result<Vec<String>, EngineError> {
        let worktree = self.repo.open_worktree(&cut.path).map_err(git_error)?;
        let merged = worktree
            .merge_in_worktree(branch, &format!("weft: merge {branch} for repair"))
            .map_err(git_error)?;
        Ok(match merged {
            weft_git::WorktreeMerge::Clean { .. } => Vec::new(),
            weft_git::WorktreeMerge::Conflicted { files } => files,
        })
    }

    /// Files among `files` in the attempt's worktree that still hold conflict markers.
    pub fn markers_left(&self, cut: &Cut, files: &[String]) -> Result<Vec<String>, EngineError> {
        let worktree = self.repo.open_worktree(&cut.path).map_err(git_error)?;
        worktree.conflict_markers_in(files).map_err(git_error)
    }

    /// Put back what `--stash` set aside; a conflict keeps the stash and says so.
    pub fn restore_stash(&self, stash: &Oid) -> String {
        match self.repo.stash_restore(stash) {
            Ok(weft_git::StashRestore::Restored) => "your stashed changes are restored".to_owned(),
            Ok(weft_git::StashRestore::Conflicted { files }) => format!(
                "restoring your stashed changes conflicted in {}; the stash {} is kept (`git stash list`)",
                files.join(", "),
                stash.short()
            ),
            Err(e) => format!(
                "could not restore your stashed changes ({e}); they are kept in `git stash list` as {}",
                stash.short()
            ),
        }
    }

    /// Remove a landed attempt's worktree (its branch stays until handoff).
    pub fn drop_worktree(&self, path: &Path) {
        let _ = self.repo.remove_worktree(path, true);
    }
}
