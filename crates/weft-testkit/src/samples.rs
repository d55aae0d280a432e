//! The recorded agent-CLI output the tests read: `crates/weft-testkit/data/agent-output/`
//! (its README lists every file, where it came from and what it shows).
//!
//! The data lives in the repository, so a fresh clone passes its own tests; `.ci/run`
//! proves it by running the suite from a copy of the repository with nothing beside it.

use std::path::{Path, PathBuf};

/// The folder of agent-CLI samples: `claude/`, `codex/`, `opencode/` and `cli-help/`.
pub fn agent_output() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/agent-output")
}

/// One sample file's path under [`agent_output`], e.g. `claude/failure-401.stdout.jsonl`.
/// Panics naming the path when there is no such file, so a renamed sample fails loudly
/// instead of as an empty read.
pub fn agent_output_file(relative: &str) -> PathBuf {
    let path = agent_output().join(relative);
    assert!(
        path.is_file(),
        "no agent-output sample {relative} (looked for {}); the samples are listed in \
         crates/weft-testkit/data/agent-output/README.md",
        path.display()
    );
    path
}
