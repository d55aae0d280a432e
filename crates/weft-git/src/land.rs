//! Landing a task branch onto an integration ref without touching any checkout.

use serde::{Deserialize, Serialize};

use crate::cmd::Call;
use crate::repo::{lossy, parse_oid};
use crate::{GitError, Oid, Repo};

/// How much of merge-tree's conflict messages a [`Landing::Conflicted`] keeps.
const DETAIL_LIMIT: usize = 8 * 1024;

/// What [`Repo::land`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Landing {
    /// A merge commit `merge` (parents: `previous`, then `task`) was written and the
    /// integration ref moved from `previous` to it.
    Landed {
        merge: Oid,
        previous: Oid,
        task: Oid,
    },
    /// The task branch is still at the commit it was cut from: nothing to land, nothing
    /// written, the ref did not move.
    NoChanges { previous: Oid },
    /// Merging the task would not change the integration tree (its work is already
    /// there, e.g. landed before a crash): nothing written, the ref did not move.
    AlreadyIntegrated { previous: Oid, task: Oid },
    /// The merge conflicts: nothing written but unreferenced objects, the ref did not
    /// move. `files` are the conflicting paths; `detail` is git's conflict messages.
    Conflicted {
        files: Vec<String>,
        detail: String,
        onto: Oid,
        task: Oid,
    },
    /// The task branch no longer contains the commit it was cut from (its history was
    /// rewritten): refused, the ref did not move.
    Rewritten { reason: String },
}

/// A task tip [`Repo::land_known`] lands without resolving it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownTask {
    /// The commit the task branch is at.
    pub tip: Oid,
    /// `tip` is known to contain the commit the task was cut from (weft made it on top of
    /// the untouched cut, or it is the cut itself): the ancestry check is not needed.
    pub descends_from_cut: bool,
}

impl KnownTask {
    /// A tip just resolved, whose ancestry is still to be checked.
    fn resolved(tip: Oid) -> KnownTask {
        KnownTask {
            tip,
            descends_from_cut: false,
        }
    }
}

/// What a merge computed by `git merge-tree --write-tree` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MergeTree {
    Clean { tree: Oid },
    Conflicted { files: Vec<String>, detail: String },
}

impl Repo {
    /// Land `task` (a branch name or any revision) onto `integration_ref` (a full ref
    /// name, `refs/heads/...`), without any checkout (DESIGN §8):
    ///
    /// 1. [`Landing::NoChanges`] when the task tip is `cut_from`;
    /// 2. [`Landing::Rewritten`] when `cut_from` is not an ancestor of the task tip;
    /// 3. `git merge-tree --write-tree` of the integration tip and the task tip:
    ///    conflicts give [`Landing::Conflicted`]; a result equal to the integration tree
    ///    gives [`Landing::AlreadyIntegrated`];
    /// 4. `git commit-tree` writes the merge commit (parents: integration tip, task tip;
    ///    the repository's identity or `weft <weft@localhost>`);
    /// 5. `git update-ref <ref> <merge> <integration tip>` moves the ref only if it is
    ///    still where step 3 read it; otherwise [`GitError::RefMoved`] and the ref is
    ///    left alone.
    ///
    /// The only writes are objects (harmless if orphaned by a crash) and the atomic
    /// compare-and-swap in step 5, so a crash leaves the ref either at the old tip or at
    /// the merge, and running `land` again is safe: a task already merged comes back as
    /// [`Landing::AlreadyIntegrated`].
    pub fn land(
        &self,
        integration_ref: &str,
        task: &str,
        cut_from: &Oid,
        message: &str,
    ) -> Result<Landing, GitError> {
        self.check_full_ref(integration_ref)?;
        let integration_commit = format!("{integration_ref}^{{commit}}");
        let task_commit = format!("{task}^{{commit}}");
        let integration_tree = format!("{integration_ref}^{{tree}}");
        let oids = self.resolve_many(&[&integration_commit, &task_commit, &integration_tree])?;
        let [onto, task_tip, onto_tree] = <[Oid; 3]>::try_from(oids).expect("three revisions");
        self.land_resolved(
            integration_ref,
            None,
            &onto,
            &onto_tree,
            &KnownTask::resolved(task_tip),
            cut_from,
            message,
        )
    }

    /// [`Repo::land`] onto the integration tip the caller expects (`expected_tip`, e.g.
    /// the tip journaled before the landing started) instead of the one the ref has now.
    /// The merge is computed against `expected_tip`; if the ref is elsewhere when it is
    /// updated, the result is [`GitError::RefMoved`] and nothing moves.
    pub fn land_onto(
        &self,
        integration_ref: &str,
        expected_tip: &Oid,
        task: &str,
        cut_from: &Oid,
        message: &str,
    ) -> Result<Landing, GitError> {
        self.check_full_ref(integration_ref)?;
        let task_commit = format!("{task}^{{commit}}");
        let onto_tree = format!("{expected_tip}^{{tree}}");
        let oids = self.resolve_many(&[&task_commit, &onto_tree])?;
        let [task_tip, onto_tree] = <[Oid; 2]>::try_from(oids).expect("two revisions");
        self.land_resolved(
            integration_ref,
            None,
            expected_tip,
            &onto_tree,
            &KnownTask::resolved(task_tip),
            cut_from,
            message,
        )
    }

    /// [`Repo::land_onto`] that also moves `record_ref` (weft's record of the integration
    /// tip, which must be at `expected_tip` too) to the merge, in the same atomic
    /// transaction as the integration ref: either both move or neither does.
    pub fn land_recorded(
        &self,
        integration_ref: &str,
        record_ref: &str,
        expected_tip: &Oid,
        task: &str,
        cut_from: &Oid,
        message: &str,
    ) -> Result<Landing, GitError> {
        let task_commit = format!("{task}^{{commit}}");
        let task_tip = self.resolve_many(&[&task_commit])?.remove(0);
        self.land_known(
            integration_ref,
            record_ref,
            expected_tip,
            &KnownTask {
                tip: task_tip,
                descends_from_cut: false,
            },
            cut_from,
            message,
        )
    }

    /// [`Repo::land_recorded`] of a task tip the caller already knows (it set the task
    /// branch there), so no revision is resolved for it: when `task.descends_from_cut`
    /// (weft committed on top of the untouched cut), the ancestry check is skipped too;
    /// the integration tip's tree comes from the commits this handle wrote (the previous
    /// landing's merge) when it remembers it. In the common case the landing is then
    /// three git processes: `merge-tree`, `commit-tree`, `update-ref --stdin`.
    pub fn land_known(
        &self,
        integration_ref: &str,
        record_ref: &str,
        expected_tip: &Oid,
        task: &KnownTask,
        cut_from: &Oid,
        message: &str,
    ) -> Result<Landing, GitError> {
        self.check_full_ref(integration_ref)?;
        self.check_full_ref(record_ref)?;
        let onto_tree = match self.written(expected_tip) {
            Some(object) => object.tree,
            None => self
                .resolve_many(&[&format!("{expected_tip}^{{tree}}")])?
                .remove(0),
        };
        self.land_resolved(
            integration_ref,
            Some(record_ref),
            expected_tip,
            &onto_tree,
            task,
            cut_from,
            message,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn land_resolved(
        &self,
        integration_ref: &str,
        record_ref: Option<&str>,
        onto: &Oid,
        onto_tree: &Oid,
        task: &KnownTask,
        cut_from: &Oid,
        message: &str,
    ) -> Result<Landing, GitError> {
        let task_tip = &task.tip;
        if task_tip == cut_from {
            return Ok(Landing::NoChanges {
                previous: onto.clone(),
            });
        }
        if !task.descends_from_cut && !self.is_ancestor(cut_from.as_str(), task_tip.as_str())? {
            return Ok(Landing::Rewritten {
                reason: format!(
                    "the task branch (at {}) no longer contains {}, the commit it was cut \
                     from: its history was rewritten",
                    task_tip.short(),
                    cut_from.short()
                ),
            });
        }
        let tree = match self.merge_tree(onto, task_tip)? {
            MergeTree::Clean { tree } => tree,
            MergeTree::Conflicted { files, detail } => {
                return Ok(Landing::Conflicted {
                    files,
                    detail,
                    onto: onto.clone(),
                    task: task_tip.clone(),
                });
            }
        };
        if &tree == onto_tree {
            return Ok(Landing::AlreadyIntegrated {
                previous: onto.clone(),
                task: task_tip.clone(),
            });
        }
        let merge = self.commit_tree(&tree, &[onto, task_tip], message)?;
        let reflog = format!("weft: land {}", task_tip.short());
        match record_ref {
            Some(record) => self.update_refs_cas(
                &[
                    (integration_ref, &merge, Some(onto)),
                    (record, &merge, Some(onto)),
                ],
                &reflog,
            )?,
            None => self.update_ref_with(integration_ref, &merge, Some(onto), &reflog)?,
        }
        Ok(Landing::Landed {
            merge,
            previous: onto.clone(),
            task: task_tip.clone(),
        })
    }

    /// `git merge-tree --write-tree -z --name-only --messages ours theirs`.
    pub(crate) fn merge_tree(&self, ours: &Oid, theirs: &Oid) -> Result<MergeTree, GitError> {
        let call = self.call().args([
            "merge-tree",
            "--write-tree",
            "-z",
            "--name-only",
            "--messages",
            ours.as_str(),
            theirs.as_str(),
        ]);
        let out = call.run_accepting(&[0, 1])?;
        parse_merge_tree(&call, &out.stdout, out.code() == Some(1))
    }

    /// `git commit-tree <tree> -p <parent>... -m <message>` with the identity rule.
    pub(crate) fn commit_tree(
        &self,
        tree: &Oid,
        parents: &[&Oid],
        message: &str,
    ) -> Result<Oid, GitError> {
        let commit = match self.commit_tree_piped(tree, parents, message) {
            Some(commit) => commit,
            None => {
                let identity = self.identity_config()?.to_vec();
                let mut call = self
                    .call()
                    .config(&identity)
                    .args(["commit-tree", tree.as_str()]);
                for parent in parents {
                    call = call.args(["-p", parent.as_str()]);
                }
                let call = call.args(["-m", message]);
                let text = call.text()?;
                parse_oid(&call, &text)?
            }
        };
        // What git stored: `-m` completes the last line (as `cat-file` would show it,
        // cut where `commit_objects` cuts).
        let mut stored = message.as_bytes().to_vec();
        if !stored.is_empty() && !stored.ends_with(b"\n") {
            stored.push(b'\n');
        }
        stored.truncate(crate::notes::MESSAGE_LIMIT);
        self.remember_written(crate::CommitObject {
            commit: commit.clone(),
            tree: tree.clone(),
            parents: parents.iter().map(|p| (*p).clone()).collect(),
            message: lossy(&stored),
        });
        Ok(commit)
    }
}

impl Repo {
    /// The commit `git commit-tree <tree> -p <parent>... -m <message>` writes, written
    /// through the long-lived object writer (see `batch`): the same object but for the
    /// second it is stamped with. `None` when git must write it itself: a writer failed,
    /// the dates are fixed by the environment, the configuration could sign or re-encode
    /// it, or the message holds a NUL (which no `-m` can).
    fn commit_tree_piped(&self, tree: &Oid, parents: &[&Oid], message: &str) -> Option<Oid> {
        if message.contains('\0') {
            return None;
        }
        let processes = self.processes();
        let idents = processes.idents(self).filter(|i| !i.commit_tree_only)?;
        let mut object = format!("tree {tree}\n");
        for parent in parents {
            object.push_str(&format!("parent {parent}\n"));
        }
        object.push_str(&idents.lines());
        object.push('\n');
        object.push_str(message);
        if !message.is_empty() && !message.ends_with('\n') {
            object.push('\n');
        }
        processes.write_object(self, crate::batch::Kind::Commit, object.as_bytes())
    }
}

/// Parse `merge-tree --write-tree -z --name-only --messages` output:
/// `<tree>\0` then, when conflicted, `<path>\0...` `\0`, then messages
/// (`<count>\0<path>\0...<type>\0<message>\0`).
pub(crate) fn parse_merge_tree(
    call: &Call<'_>,
    stdout: &[u8],
    conflicted: bool,
) -> Result<MergeTree, GitError> {
    let mut fields = stdout.split(|&b| b == 0);
    let tree_field = fields.next().unwrap_or_default();
    let tree = Oid::parse(&lossy(tree_field))
        .ok_or_else(|| call.unexpected(format!("no tree id in {:?}", lossy(tree_field))))?;
    if !conflicted {
        return Ok(MergeTree::Clean { tree });
    }
    let mut files: Vec<String> = Vec::new();
    for field in fields.by_ref() {
        if field.is_empty() {
            break;
        }
        let path = lossy(field);
        if !files.contains(&path) {
            files.push(path);
        }
    }
    // Messages: conflicts first; informational ones ("Auto-merging") only if no conflict
    // message was given.
    let mut conflicts = Vec::new();
    let mut others = Vec::new();
    while let Some(count) = fields.next() {
        let Ok(count) = lossy(count).parse::<usize>() else {
            break;
        };
        for _ in 0..count {
            fields.next();
        }
        let kind = lossy(fields.next().unwrap_or_default());
        let message = lossy(fields.next().unwrap_or_default());
        let message = message.trim_end().to_owned();
        if kind.starts_with("CONFLICT") {
            conflicts.push(message);
        } else {
            others.push(message);
        }
    }
    let mut detail = if conflicts.is_empty() {
        others.join("\n")
    } else {
        conflicts.join("\n")
    };
    if detail.len() > DETAIL_LIMIT {
        let mut cut = DETAIL_LIMIT;
        while !detail.is_char_boundary(cut) {
            cut -= 1;
        }
        detail.truncate(cut);
        detail.push_str("\n[... cut]");
    }
    Ok(MergeTree::Conflicted { files, detail })
}
