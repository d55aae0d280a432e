//! Stashing tracked changes for `weft run --stash`, and restoring them.

use serde::{Deserialize, Serialize};

use crate::{GitError, Oid, Repo};

/// The ref git keeps the stash list under.
const STASH_REF: &str = "refs/stash";

/// What [`Repo::stash_restore`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum StashRestore {
    /// The changes are back in the working tree and the stash entry was dropped.
    Restored,
    /// Restoring conflicted with what is checked out now: the conflicting files hold
    /// conflict markers, and the stash entry is kept so nothing is lost.
    Conflicted { files: Vec<String> },
}

impl Repo {
    /// Stash the uncommitted changes to tracked files (staged or not) with `message`
    /// (`git stash push`); untracked files stay where they are. Returns the stash commit,
    /// or `None` when there was nothing to stash. Uses the identity rule, as a stash is a
    /// commit.
    pub fn stash_push(&self, message: &str) -> Result<Option<Oid>, GitError> {
        let before = self.ref_target(STASH_REF)?;
        let identity = self.identity_config()?.to_vec();
        self.call()
            .config(&identity)
            .args(["stash", "push", "--quiet", "-m", message])
            .run()?;
        let after = self.ref_target(STASH_REF)?;
        Ok(if after != before { after } else { None })
    }

    /// Re-apply the stash `stash` (as returned by [`Repo::stash_push`]), restoring what was
    /// staged as staged when possible (unstaged otherwise), then drop it from the stash
    /// list. A conflict leaves the markers
    /// in the files and keeps the entry ([`StashRestore::Conflicted`]). A stash that is no
    /// longer in the stash list is [`GitError::UnknownRevision`].
    pub fn stash_restore(&self, stash: &Oid) -> Result<StashRestore, GitError> {
        let list = self.read().args(["stash", "list", "--format=%H"]).text()?;
        let Some(index) = list.lines().position(|line| line.trim() == stash.as_str()) else {
            return Err(GitError::UnknownRevision {
                repo: self.root().to_owned(),
                rev: format!("stash {stash}"),
            });
        };
        let entry = format!("stash@{{{index}}}");
        // With the index first; if git cannot restore the index (a staged change no longer
        // applies) it changes nothing, and the changes come back unstaged instead.
        for options in [&["--index"][..], &[][..]] {
            let call = self
                .call()
                .args(["stash", "apply", "--quiet"])
                .args(options)
                .arg(&entry);
            let out = call.output()?;
            if out.status.success() {
                break;
            }
            let files: Vec<String> = self
                .status(false)?
                .into_iter()
                .filter(|entry| entry.unmerged())
                .map(|entry| entry.path)
                .collect();
            if !files.is_empty() {
                return Ok(StashRestore::Conflicted { files });
            }
            if options.is_empty() {
                return Err(call.failed(&out));
            }
        }
        self.call()
            .args(["stash", "drop", "--quiet", &entry])
            .run()?;
        Ok(StashRestore::Restored)
    }
}
