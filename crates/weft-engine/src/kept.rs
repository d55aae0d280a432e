//! What `weft status` tells about a run's worktrees and attempts when the state on disk
//! and the state in the store must be read together: the worktrees weft keeps, and the
//! attempts recorded running whose engine is gone.
//!
//! The contract (issue 12): every worktree weft registered is an attempt that is running,
//! the run's integration checkout, or listed by [`kept_worktrees`] with why it is kept.
//! Reads only: nothing here changes the store or git.

use std::collections::BTreeMap;
use std::path::Path;

use weft_core::{Attempt, AttemptStatus, Landing};

/// A worktree weft keeps on disk, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeptWorktree {
    pub path: String,
    /// The task's id.
    pub task: String,
    pub reason: String,
}

/// What `weft status` shows for a task recorded running when no engine runs the plan.
pub const NO_ENGINE: &str = "no engine is running";

/// The plan's attempts' (`attempts`, in the order they started) worktrees still on disk that no running attempt uses, newest attempt
/// per folder, in the order the attempts started. `engine_alive`: whether an engine runs
/// the plan now (without one, an attempt recorded running is an interrupted one).
pub fn kept_worktrees(attempts: &[Attempt], engine_alive: bool) -> Vec<KeptWorktree> {
    let mut by_path: BTreeMap<String, (i64, KeptWorktree)> = BTreeMap::new();
    for attempt in attempts {
        let Some(path) = &attempt.worktree else {
            continue;
        };
        if !Path::new(path).exists() {
            by_path.remove(path);
            continue;
        }
        let reason = match attempt.status {
            AttemptStatus::Running if engine_alive => {
                by_path.remove(path);
                continue;
            }
            AttemptStatus::Running => format!("interrupted: {NO_ENGINE}"),
            AttemptStatus::Interrupted => "interrupted with work that did not land".to_owned(),
            AttemptStatus::Passed => match &attempt.landing {
                None => "passed; its landing is finished by the next `weft run`".to_owned(),
                Some(Landing::Conflicted { .. }) => {
                    "its work conflicted with the integration branch (`weft repair N`)".to_owned()
                }
                Some(_) => "landed; kept by the keep_worktrees setting".to_owned(),
            },
            AttemptStatus::Failed => "failed; kept for inspection".to_owned(),
            AttemptStatus::Cancelled => "cancelled; kept for inspection".to_owned(),
        };
        by_path.insert(
            path.clone(),
            (
                attempt.started_at,
                KeptWorktree {
                    path: path.clone(),
                    task: attempt.task_id.clone(),
                    reason,
                },
            ),
        );
    }
    let mut kept: Vec<(i64, KeptWorktree)> = by_path.into_values().collect();
    kept.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.path.cmp(&b.1.path)));
    kept.into_iter().map(|(_, k)| k).collect()
}
