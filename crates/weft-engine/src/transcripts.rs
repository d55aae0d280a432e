//! An attempt's transcript after the fact (`weft transcript N`): the same lookup the
//! engine makes when the attempt ends, from what the store kept about it.
//!
//! The front end fills the [`Locator`] from its environment (the engine never reads
//! `$HOME`) and renders the [`TranscriptLookup`]; every outcome is data, the English is
//! the front end's. Reading is defensive (see weft-agents' transcript readers): a missing
//! or unreadable store is [`TranscriptLookup::Missing`], never an error.

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use weft_agents::transcript::Store;
use weft_agents::transcript::opencode::{self, Databases};
use weft_core::Attempt;

pub use weft_agents::transcript::{Found, Locator};

use crate::attempt::TranscriptPlan;
use crate::runners::Registry;

/// Slack before an attempt's start: file times and the clock that stamped the attempt
/// need not agree to the millisecond (the engine allows the same when an attempt ends).
const START_SLACK: Duration = Duration::from_secs(2);

/// What looking for an attempt's transcript found.
#[derive(Debug, Clone, PartialEq)]
pub enum TranscriptLookup {
    /// The attempt's runner keeps no transcript weft can read (no `transcript` key in
    /// its manifest, or no manifest of that name any more).
    NotKept {
        runner: String,
    },
    /// The runner's store holds nothing that plausibly belongs to the attempt.
    Missing {
        /// The store looked in: `claude-code`, `codex` or `opencode`.
        store: &'static str,
        /// OpenCode was told to keep its sessions in memory (`OPENCODE_DB=:memory:`), so
        /// there never was a transcript on disk.
        in_memory: bool,
    },
    Found(Found),
}

/// Look for `attempt`'s transcript in the store its runner names, as the engine does when
/// an attempt ends: by the session id (weft's own for Claude Code, else the one the agent
/// announced), the attempt's folder, its start and its marker.
pub fn of_attempt(
    registry: &Registry,
    locator: &Locator,
    attempt: &Attempt,
    answer_chars: usize,
) -> TranscriptLookup {
    let Some(store) = registry
        .get(&attempt.runner)
        .and_then(|m| m.manifest.transcript())
    else {
        return TranscriptLookup::NotKept {
            runner: attempt.runner.clone(),
        };
    };
    let started_at = UNIX_EPOCH
        + Duration::from_millis(u64::try_from(attempt.started_at).unwrap_or(0))
        - START_SLACK;
    let plan = TranscriptPlan {
        store,
        locator: locator.clone(),
        cwd: PathBuf::from(&attempt.cwd),
        started_at,
        marker: attempt.marker.clone(),
        session_id: match store {
            Store::ClaudeCode => attempt.session_id.clone(),
            Store::Codex | Store::Opencode => None,
        },
        answer_chars,
    };
    match plan.find(attempt.agent_session_id.as_deref()) {
        Some(found) => TranscriptLookup::Found(found),
        None => TranscriptLookup::Missing {
            store: store.as_str(),
            in_memory: store == Store::Opencode
                && opencode::databases(locator) == Databases::InMemory,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn attempt(runner: &str, cwd: &Path) -> Attempt {
        Attempt {
            status: weft_core::AttemptStatus::Passed,
            cwd: cwd.display().to_string(),
            marker: Some("WEFT_DONE_0123456789abcdef".into()),
            agent_session_id: Some("ses_1".into()),
            exit_code: Some(0),
            ..Attempt::new(
                "a".repeat(32),
                "run".into(),
                "plan".into(),
                "task".into(),
                1,
                runner.into(),
                0,
            )
        }
    }

    fn registry() -> Registry {
        crate::runners::load(Path::new("/nonexistent/weft-runners"), None).0
    }

    #[test]
    fn a_runner_without_a_transcript_store_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let lookup = of_attempt(
            &registry(),
            &Locator::default(),
            &attempt("exec", dir.path()),
            100,
        );
        assert_eq!(
            lookup,
            TranscriptLookup::NotKept {
                runner: "exec".into()
            }
        );
    }

    #[test]
    fn opencode_kept_in_memory_is_missing_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let locator = Locator {
            home: Some(dir.path().to_owned()),
            opencode_db: Some(":memory:".into()),
            ..Locator::default()
        };
        let lookup = of_attempt(&registry(), &locator, &attempt("opencode", dir.path()), 100);
        assert_eq!(
            lookup,
            TranscriptLookup::Missing {
                store: "opencode",
                in_memory: true
            }
        );
        let on_disk = Locator {
            opencode_db: None,
            ..locator
        };
        let lookup = of_attempt(&registry(), &on_disk, &attempt("opencode", dir.path()), 100);
        assert_eq!(
            lookup,
            TranscriptLookup::Missing {
                store: "opencode",
                in_memory: false
            }
        );
    }
}
