//! Rebuilding a branch without some of its commits: no checkout, no revert commits.
//!
//! Contract of [`Repo::rebuild_without`] (used by `weft uncomplete --revert`) and of
//! [`Repo::rebuild_without_recorded`] (the same, moving weft's record of the tip in the
//! same atomic transaction; used to quarantine a landing that broke verification):
//!
//! - **Input**: a full ref (`refs/heads/...`) and the commits to drop, each on the ref's
//!   first-parent history (an integration branch's landings are).
//! - **What it computes**: the commit before the oldest dropped one is the new starting
//!   point; every later first-parent commit that is not dropped is re-applied onto it, in
//!   order, with `git merge-tree --write-tree --merge-base=<its first parent>` (the change
//!   that commit made, and only that, whatever it was: a landing's merge or an ops
//!   task's own commit). Each re-applied commit keeps its message; a merge keeps its other
//!   parents unless one of them contains a dropped commit (a task cut after the dropped
//!   landing), so no dropped work stays reachable from the result.
//! - **Writes**: only objects, then one compare-and-swap of the ref
//!   (`git update-ref <ref> <new> <old>`; with a record, both refs in one `update-ref
//!   --stdin` transaction). [`Repo::compose_without`] computes the same from any tip and
//!   moves nothing. A crash leaves the ref at the old tip or the
//!   new one; nothing else changes, no checkout or index is read or written.
//! - **Outcomes**: [`Rebuild::Rebuilt`] (old and new tip, and each re-applied commit's
//!   new id, oldest first); [`Rebuild::NoLongerApplies`] (a re-applied commit conflicts
//!   without the dropped ones: which, and the files; the ref is untouched);
//!   [`Rebuild::NotOnBranch`] (a commit to drop is not on the first-parent history, say
//!   because an earlier rebuild already dropped it; the ref is untouched). A ref moved
//!   by someone else meanwhile is [`GitError::RefMoved`].
//!
//! Needs git 2.40 or newer (`merge-tree --merge-base`).

use serde::{Deserialize, Serialize};

use crate::land::{MergeTree, parse_merge_tree};
use crate::repo::parse_oid;
use crate::{GitError, Oid, Repo};

/// What [`Repo::rebuild_without`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Rebuild {
    /// The ref moved from `old_tip` to `new_tip`, built on `base` (the commit before the
    /// oldest dropped one).
    Rebuilt {
        old_tip: Oid,
        new_tip: Oid,
        base: Oid,
        /// Each re-applied commit and its new id, oldest first.
        reapplied: Vec<(Oid, Oid)>,
    },
    /// `commit` (its subject given) conflicts in `files` once the dropped commits are
    /// gone; nothing was changed.
    NoLongerApplies {
        commit: Oid,
        subject: String,
        files: Vec<String>,
    },
    /// These commits to drop are not on the ref's first-parent history; nothing changed.
    NotOnBranch { commits: Vec<Oid> },
}

impl Repo {
    /// Rebuild `reference` without the first-parent commits `drop`; see the module's
    /// contract.
    pub fn rebuild_without(&self, reference: &str, drop: &[Oid]) -> Result<Rebuild, GitError> {
        self.rebuild_moving(reference, None, drop)
    }

    /// [`Repo::rebuild_without`] for a ref whose tip weft also records in `record` (the
    /// integration guard's `refs/weft/<run>/tip`): both move in one atomic transaction,
    /// and only if both are at the old tip, so a crash never separates them.
    pub fn rebuild_without_recorded(
        &self,
        reference: &str,
        record: &str,
        drop: &[Oid],
    ) -> Result<Rebuild, GitError> {
        self.check_full_ref(record)?;
        self.rebuild_moving(reference, Some(record), drop)
    }

    /// What [`Repo::rebuild_without`] would build from `tip`, as objects only: no ref
    /// moves (the outcome's `old_tip` is `tip`). For a tip to verify that no landing made,
    /// say one landing alone on the commit before it.
    pub fn compose_without(&self, tip: &Oid, drop: &[Oid]) -> Result<Rebuild, GitError> {
        self.rebuilt(tip, drop)
    }

    /// The first-parent commits after `from` up to `to`, oldest first (`to` descends from
    /// `from`): the landings between two integration tips.
    pub fn first_parents_between(&self, from: &Oid, to: &Oid) -> Result<Vec<Oid>, GitError> {
        let call = self.read().args([
            "rev-list",
            "--first-parent",
            "--reverse",
            &format!("{}..{}", from.as_str(), to.as_str()),
        ]);
        let text = call.text()?;
        text.lines()
            .filter(|l| !l.is_empty())
            .map(|id| parse_oid(&call, id))
            .collect()
    }

    fn rebuild_moving(
        &self,
        reference: &str,
        record: Option<&str>,
        drop: &[Oid],
    ) -> Result<Rebuild, GitError> {
        self.check_full_ref(reference)?;
        let tip = self
            .ref_target(reference)?
            .ok_or_else(|| GitError::UnknownRevision {
                repo: self.root().to_owned(),
                rev: reference.to_owned(),
            })?;
        let outcome = self.rebuilt(&tip, drop)?;
        if let Rebuild::Rebuilt { new_tip, .. } = &outcome {
            let reflog = format!("weft: rebuild without {} commit(s)", drop.len());
            match record {
                None => self.update_ref_with(reference, new_tip, Some(&tip), &reflog)?,
                Some(record) => self.update_refs_cas(
                    &[
                        (reference, new_tip, Some(&tip)),
                        (record, new_tip, Some(&tip)),
                    ],
                    &reflog,
                )?,
            }
        }
        Ok(outcome)
    }

    /// The rebuild of `tip` without `drop`, as objects (no ref moves).
    fn rebuilt(&self, tip: &Oid, drop: &[Oid]) -> Result<Rebuild, GitError> {
        if drop.is_empty() {
            return Ok(Rebuild::NotOnBranch {
                commits: Vec::new(),
            });
        }
        // The first-parent history from the tip down to each commit to drop: the
        // oldest one to drop is the one farthest from the tip.
        let chain = self.first_parent_chain(tip, drop)?;
        let missing: Vec<Oid> = drop
            .iter()
            .filter(|d| !chain.iter().any(|(c, _)| c == *d))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Ok(Rebuild::NotOnBranch { commits: missing });
        }
        let Some(base) = chain
            .first()
            .and_then(|(_, parents)| parents.first())
            .cloned()
        else {
            return Ok(Rebuild::NotOnBranch {
                commits: drop.to_vec(),
            });
        };
        let mut new_tip = base.clone();
        let mut reapplied = Vec::new();
        for (commit, parents) in &chain {
            if drop.contains(commit) {
                continue;
            }
            let first = &parents[0];
            let call = self.call().args([
                "merge-tree",
                "--write-tree",
                "-z",
                "--name-only",
                "--messages",
            ]);
            let call = call
                .arg(format!("--merge-base={}", first.as_str()))
                .args([new_tip.as_str(), commit.as_str()]);
            let out = call.run_accepting(&[0, 1])?;
            let tree = match parse_merge_tree(&call, &out.stdout, out.code() == Some(1))? {
                MergeTree::Clean { tree } => tree,
                MergeTree::Conflicted { files, .. } => {
                    return Ok(Rebuild::NoLongerApplies {
                        commit: commit.clone(),
                        subject: self.subject(commit)?,
                        files,
                    });
                }
            };
            let mut keep: Vec<&Oid> = vec![&new_tip];
            for other in &parents[1..] {
                let mut holds_dropped = false;
                for dropped in drop {
                    if self.is_ancestor(dropped.as_str(), other.as_str())? {
                        holds_dropped = true;
                        break;
                    }
                }
                if !holds_dropped {
                    keep.push(other);
                }
            }
            let message = self.message(commit)?;
            let rebuilt = self.commit_tree(&tree, &keep, &message)?;
            reapplied.push((commit.clone(), rebuilt.clone()));
            new_tip = rebuilt;
        }
        Ok(Rebuild::Rebuilt {
            old_tip: tip.clone(),
            new_tip,
            base,
            reapplied,
        })
    }

    /// The first-parent history from `tip` back to (and including) the oldest of `drop`
    /// found on it, oldest first, each commit with its parents. Without any of `drop` on
    /// it, empty.
    fn first_parent_chain(
        &self,
        tip: &Oid,
        drop: &[Oid],
    ) -> Result<Vec<(Oid, Vec<Oid>)>, GitError> {
        // Commits to drop that are ancestors of the tip; the one with the longest
        // first-parent distance from the tip is the oldest.
        let mut oldest: Option<(usize, &Oid)> = None;
        for commit in drop {
            if !self.is_ancestor(commit.as_str(), tip.as_str())? {
                continue;
            }
            let call = self.read().args([
                "rev-list",
                "--count",
                "--first-parent",
                &format!("{}..{}", commit.as_str(), tip.as_str()),
            ]);
            let text = call.text()?;
            let distance: usize = text
                .trim()
                .parse()
                .map_err(|_| call.unexpected(format!("count {text:?}")))?;
            if oldest.is_none_or(|(d, _)| distance > d) {
                oldest = Some((distance, commit));
            }
        }
        let Some((_, oldest)) = oldest else {
            return Ok(Vec::new());
        };
        let mut call = self.read().args([
            "rev-list",
            "--first-parent",
            "--parents",
            "--reverse",
            tip.as_str(),
        ]);
        let parents_of_oldest = self.parents(oldest)?;
        if let Some(first) = parents_of_oldest.first() {
            call = call.arg(format!("^{}", first.as_str()));
        }
        let text = call.text()?;
        let mut chain = Vec::new();
        for line in text.lines() {
            let mut ids = line.split(' ');
            let commit = parse_oid(&call, ids.next().unwrap_or_default())?;
            let parents = ids
                .map(|id| parse_oid(&call, id))
                .collect::<Result<Vec<_>, _>>()?;
            if parents.is_empty() {
                // A root commit cannot be re-applied onto anything; it is the base.
                continue;
            }
            chain.push((commit, parents));
        }
        Ok(chain)
    }

    fn parents(&self, commit: &Oid) -> Result<Vec<Oid>, GitError> {
        let call = self
            .read()
            .args(["rev-list", "--parents", "-n", "1", commit.as_str()]);
        let text = call.text()?;
        text.split(' ')
            .skip(1)
            .map(|id| parse_oid(&call, id))
            .collect()
    }

    fn message(&self, commit: &Oid) -> Result<String, GitError> {
        let text = self
            .read()
            .args(["log", "-1", "--format=%B", commit.as_str()])
            .text()?;
        Ok(text.trim_end().to_owned())
    }

    /// A commit's subject line.
    pub fn subject(&self, commit: &Oid) -> Result<String, GitError> {
        self.read()
            .args(["log", "-1", "--format=%s", commit.as_str()])
            .text()
    }
}
