//! What one attempt of a task changed, as a diff by file, for every front end that shows
//! a task's work (the dashboard's diff and review comments, `weft tui`'s `d` pane).
//!
//! - A landed attempt: the landing's merge against its first parent, i.e. exactly what
//!   the task brought onto the integration branch (not what other tasks landed since it
//!   was cut).
//! - An attempt whose work did not land (conflicted, failed with commits, kept): its
//!   branch against the tip it was cut from.
//! - Anything else (a shared run, a task that changed nothing): `None`.
//!
//! Bounded: the patch text is capped by weft-git's diff limit (`truncated` says so).
//! Reads only; the repository is the attempt's worktree while it exists, else the
//! workspace (their objects are shared).

use std::path::Path;

use weft_core::{Attempt, Landing};
use weft_git::Repo;

use crate::error::EngineError;
use crate::isolation::git_error;

/// One file's part of a diff.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileDiff {
    pub path: String,
    /// `added`, `deleted` or `modified`.
    pub status: &'static str,
    /// Its part of the unified diff, from its `diff --git` line.
    pub patch: String,
}

/// What an attempt changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskDiff {
    pub task: String,
    pub attempt: String,
    pub base: String,
    pub tip: String,
    /// Whether the work landed on the integration branch.
    pub landed: bool,
    /// The patch was longer than the cap and was cut (the last files are missing).
    pub truncated: bool,
    pub files: Vec<FileDiff>,
}

/// The diff of `attempt` (see the module docs), its patch capped at weft-git's default
/// diff limit.
pub fn of_attempt(workspace: &Path, attempt: &Attempt) -> Result<Option<TaskDiff>, EngineError> {
    of_attempt_limited(workspace, attempt, weft_git::DEFAULT_DIFF_LIMIT)
}

/// [`of_attempt`] with the patch capped at `limit` bytes.
pub fn of_attempt_limited(
    workspace: &Path,
    attempt: &Attempt,
    limit: usize,
) -> Result<Option<TaskDiff>, EngineError> {
    let folder = attempt
        .worktree
        .as_deref()
        .map(Path::new)
        .filter(|p| p.is_dir())
        .unwrap_or(workspace);
    let Ok(repo) = Repo::open(folder) else {
        return Ok(None);
    };
    let (base, tip, landed) = match &attempt.landing {
        Some(Landing::Landed { merge }) => {
            let parent = repo
                .resolve(&format!("{merge}^1"))
                .map_err(git_error)?
                .to_string();
            (parent, merge.clone(), true)
        }
        _ => {
            let (Some(cut_from), Some(branch)) = (&attempt.cut_from, &attempt.branch) else {
                return Ok(None);
            };
            let Some(tip) = repo
                .rev_parse(&weft_git::branch_ref(branch))
                .map_err(git_error)?
            else {
                return Ok(None);
            };
            (cut_from.clone(), tip.to_string(), false)
        }
    };
    let diff = repo.diff_limited(&base, &tip, limit).map_err(git_error)?;
    Ok(Some(TaskDiff {
        task: attempt.task_id.clone(),
        attempt: attempt.id.clone(),
        base,
        tip,
        landed,
        truncated: diff.truncated,
        files: split(&diff.text),
    }))
}

/// A unified diff split at its `diff --git` lines.
fn split(text: &str) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest
                .trim_end()
                .rsplit_once(" b/")
                .map_or_else(|| rest.trim_end().to_owned(), |(_, b)| b.to_owned());
            files.push(FileDiff {
                path,
                status: "modified",
                patch: String::new(),
            });
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if file.patch.lines().count() < 4 {
            if line.starts_with("new file mode") {
                file.status = "added";
            } else if line.starts_with("deleted file mode") {
                file.status = "deleted";
            }
        }
        file.patch.push_str(line);
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unified_diff_splits_into_files_with_their_status() {
        let text = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0..3\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\ndiff --git a/old b/old\ndeleted file mode 100644\n";
        let files = split(text);
        let summary: Vec<(&str, &str)> =
            files.iter().map(|f| (f.path.as_str(), f.status)).collect();
        assert_eq!(
            summary,
            vec![
                ("src/a.rs", "modified"),
                ("new.txt", "added"),
                ("old", "deleted")
            ]
        );
        assert!(files[0].patch.ends_with("+y\n"));
        assert_eq!(
            files.iter().map(|f| f.patch.len()).sum::<usize>(),
            text.len()
        );
    }
}
