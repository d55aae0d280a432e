//! What one attempt changed, for a front end's diff pane (`weft tui`'s `d`): the merge it
//! landed (against its first parent), else its branch against the tip it was cut from.
//! Bounded by the caller's byte limit; a multi-repo workspace's attempts are not shown
//! here (the run's handoff review shows every repository).

use std::path::Path;

use weft_core::{Attempt, Landing};

use crate::error::EngineError;
use crate::isolation::git_error;

/// The attempt's patch as text (with a last line saying so when it was cut).
pub fn attempt_diff(
    workspace: &Path,
    attempt: &Attempt,
    limit: usize,
) -> Result<String, EngineError> {
    let (base, tip) = match (&attempt.landing, &attempt.cut_from, &attempt.branch) {
        (Some(Landing::Landed { merge }), _, _) => (format!("{merge}^1"), merge.clone()),
        (Some(Landing::NoChanges), _, _) => {
            return Ok(format!("attempt {} changed nothing\n", attempt.number));
        }
        (_, Some(cut), Some(branch)) => (cut.clone(), branch.clone()),
        _ => {
            return Ok(format!(
                "attempt {} did not run in a worktree of its own: its work is in {} \
                 (`git diff` there)\n",
                attempt.number, attempt.cwd
            ));
        }
    };
    let repo = weft_git::Repo::open(workspace).map_err(git_error)?;
    let diff = repo.diff_limited(&base, &tip, limit).map_err(git_error)?;
    let mut text = diff.text;
    if text.is_empty() {
        text = format!(
            "attempt {} changed nothing ({base}..{tip})\n",
            attempt.number
        );
    }
    if diff.truncated {
        text.push_str(&format!("… cut at {} bytes\n", diff.limit));
    }
    Ok(text)
}
