//! A fault-injection seam for crash tests: named points on the engine's multi-step changes
//! where a test can have the engine die by SIGKILL, exactly as a user's `kill -9` would.
//!
//! It exists only in builds with the `failpoints` cargo feature, which weft's own test
//! targets turn on through a dev-dependency; a release build compiles every [`hit`] to
//! nothing and never reads the environment for it.
//!
//! `WEFT_FAILPOINT=<point>` kills the engine the first time it reaches `<point>`;
//! `WEFT_FAILPOINT=<point>:<n>` the n-th time (1-based, counted per process). The points:
//!
//! | point | reached |
//! |---|---|
//! | `run_refs_recorded` | the run's base and integration branch are recorded, the branch is not cut yet |
//! | `integration_branch_cut` | the integration branch exists in git |
//! | `worktree_added` | an attempt's worktree exists, its attempt is not recorded yet |
//! | `attempt_recorded` | an attempt is recorded running with its process |
//! | `landing_journaled` | a passed attempt's `landing_started` is stored, nothing landed yet |
//! | `landing_ref_moved` | the integration ref moved (or the work was found merged), the landing is not recorded yet |
//! | `landing_recorded` | the landing and the task's new status are stored |
//! | `bisect_step` | a verification failed twice; the bisect is about to verify an earlier tip (`:<n>`: the n-th step) |
//! | `quarantine_journaled` | the culprit is found and the quarantine journaled, the integration ref not moved yet |
//! | `quarantine_rebuilt` | the integration ref (and its record) moved to the rebuilt tip, no task's status changed yet |
//! | `quarantine_failed` | the culprit is stored failed; the tasks it taints and the journal are not settled yet |
//! | `handoff_journaled` | `weft handoff merge` journaled its merge, no checkout touched yet |
//! | `handoff_indexed` | a checkout's deleted files are gone and its index holds the merge's entries |
//! | `handoff_wrote` | a chunk of a checkout's files is written (`:<n>`: the n-th chunk) |
//! | `handoff_moved` | a checkout's branch moved to the merge, the journal is still there |
//! | `handoff_journal_removed` | every checkout is merged and the journal removed; worktrees and the run not yet cleaned up |

/// Die here if the test asked for it (a no-op without the `failpoints` feature).
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn hit(_point: &str) {}

/// Die here if the test asked for it.
#[cfg(feature = "failpoints")]
pub(crate) fn hit(point: &str) {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static HITS: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

    let Ok(wanted) = std::env::var("WEFT_FAILPOINT") else {
        return;
    };
    let (name, nth) = match wanted.split_once(':') {
        Some((name, n)) => (name, n.parse::<u32>().unwrap_or(1)),
        None => (wanted.as_str(), 1),
    };
    if name != point {
        return;
    }
    let count = {
        let mut hits = HITS.lock().unwrap_or_else(|e| e.into_inner());
        let entry = hits
            .get_or_insert_with(HashMap::new)
            .entry(point.to_owned())
            .or_insert(0);
        *entry += 1;
        *entry
    };
    if count == nth {
        let _ = nix::sys::signal::kill(nix::unistd::getpid(), nix::sys::signal::Signal::SIGKILL);
        // SIGKILL cannot be caught; nothing after this runs.
        loop {
            std::thread::park();
        }
    }
}
