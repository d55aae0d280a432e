//! Handoff: review diffs, the merge preflight, and merges into a checkout.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::land::MergeTree;
use crate::repo::{lossy, nul_records};
use crate::{GitError, Head, Oid, Repo};

/// Default cap on [`Repo::diff`]'s text: 8 MiB.
pub const DEFAULT_DIFF_LIMIT: usize = 8 * 1024 * 1024;

/// Operations that leave a file in the git folder while in progress.
const IN_PROGRESS: [(&str, &str); 6] = [
    ("MERGE_HEAD", "a merge is in progress"),
    ("rebase-merge", "a rebase is in progress"),
    ("rebase-apply", "a rebase or `git am` is in progress"),
    ("CHERRY_PICK_HEAD", "a cherry-pick is in progress"),
    ("REVERT_HEAD", "a revert is in progress"),
    ("BISECT_LOG", "a bisect is in progress"),
];

/// The result of [`Repo::merge_preflight`]: whether merging a branch into what is checked
/// out is safe, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preflight {
    /// No problem found: the merge can go ahead.
    pub ok: bool,
    /// One sentence per problem, naming files where there are some.
    pub problems: Vec<String>,
    /// The branch checked out (when HEAD is on one).
    pub head_branch: Option<String>,
    /// The commit checked out.
    pub head: Option<Oid>,
    /// The tip of the branch to merge, as checked.
    pub tip: Option<Oid>,
    /// The branch is already contained in HEAD: merging would do nothing.
    pub up_to_date: bool,
    /// Files the merge would change in the checkout.
    pub changes: Vec<String>,
}

/// What [`Repo::merge_into_checked_out`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum MergeOutcome {
    /// A merge commit was made; HEAD moved from `previous` to `commit`.
    Merged { commit: Oid, previous: Oid },
    /// The branch was already contained in HEAD; nothing changed.
    UpToDate { head: Oid },
}

/// What [`Repo::merge_in_worktree`] left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WorktreeMerge {
    /// Merged cleanly and committed.
    Clean { commit: Oid },
    /// The merge stopped on conflicts: the files hold conflict markers, the merge is in
    /// progress (a later [`Repo::commit_all`] concludes it).
    Conflicted { files: Vec<String> },
}

/// Lines added and removed in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    pub path: String,
    /// `None` for a binary file.
    pub insertions: Option<u64>,
    /// `None` for a binary file.
    pub deletions: Option<u64>,
}

/// `git diff --numstat` between two commits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffStat {
    pub files: Vec<FileStat>,
    pub insertions: u64,
    pub deletions: u64,
}

impl DiffStat {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// A diff's text, capped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffText {
    /// The text, cut at the last whole line below the limit when `truncated`.
    pub text: String,
    /// The diff was longer than `limit` bytes and was cut.
    pub truncated: bool,
    /// The cap that applied, in bytes.
    pub limit: usize,
}

impl DiffText {
    /// A sentence saying the diff was cut, when it was.
    pub fn notice(&self) -> Option<String> {
        self.truncated.then(|| {
            format!(
                "the diff is longer than {} KiB and was cut; use git diff to see all of it",
                self.limit / 1024
            )
        })
    }
}

impl Repo {
    /// Check that `branch` (any revision) can be merged into what this working tree has
    /// checked out, changing nothing:
    ///
    /// - no merge, rebase, cherry-pick, revert or bisect in progress, no unresolved
    ///   conflict in the index;
    /// - HEAD on a branch (not detached, not unborn);
    /// - the branch exists;
    /// - the merge, computed with `git merge-tree` (no checkout touched), has no conflict;
    /// - no uncommitted change to a file the merge would change, and no untracked file
    ///   where the merge would write one.
    ///
    /// A branch already contained in HEAD passes with `up_to_date`.
    pub fn merge_preflight(&self, branch: &str) -> Result<Preflight, GitError> {
        let mut problems = Vec::new();

        let names: Vec<&str> = IN_PROGRESS.iter().map(|(name, _)| *name).collect();
        let mut call = self.read().args(["rev-parse", "--path-format=absolute"]);
        for name in &names {
            call = call.args(["--git-path", name]);
        }
        let text = call.text()?;
        for (line, (name, what)) in text.lines().zip(IN_PROGRESS) {
            if std::path::Path::new(line).exists() {
                problems.push(format!("{what} ({name} exists); finish or abort it first"));
            }
        }

        let (head_branch, head) = match self.head()? {
            Head::Branch { name, commit } => (Some(name), Some(commit)),
            Head::Detached { commit } => {
                problems.push(format!(
                    "HEAD is detached at {}; check out the branch to merge into",
                    commit.short()
                ));
                (None, Some(commit))
            }
            Head::Unborn { branch } => {
                problems.push(format!("branch {branch} has no commit yet"));
                (Some(branch), None)
            }
        };

        let tip = self.rev_parse(branch)?;
        if tip.is_none() {
            problems.push(format!("there is no branch {branch}"));
        }

        let status = self.status(true)?;
        let unmerged: Vec<&str> = status
            .iter()
            .filter(|entry| entry.unmerged())
            .map(|entry| entry.path.as_str())
            .collect();
        if !unmerged.is_empty() {
            problems.push(format!(
                "unresolved conflicts in {}; resolve them first",
                unmerged.join(", ")
            ));
        }

        let mut up_to_date = false;
        let mut changes = Vec::new();
        if let (Some(head), Some(tip)) = (&head, &tip) {
            if self.is_ancestor(tip.as_str(), head.as_str())? {
                up_to_date = true;
            } else {
                match self.merge_tree(head, tip)? {
                    MergeTree::Conflicted { files, .. } => problems.push(format!(
                        "merging {branch} into what is checked out conflicts in {}",
                        files.join(", ")
                    )),
                    MergeTree::Clean { tree } => {
                        changes = self.changed_files(head.as_str(), tree.as_str())?;
                    }
                }
            }
        }

        let local: HashMap<&str, bool> = status
            .iter()
            .map(|entry| (entry.path.as_str(), entry.untracked()))
            .collect();
        for path in &changes {
            match local.get(path.as_str()) {
                Some(false) => problems.push(format!(
                    "{path} has uncommitted changes and the merge would change it; commit or stash them"
                )),
                Some(true) => problems.push(format!(
                    "untracked {path} is in the way of a file the merge would write; move it away"
                )),
                None => {}
            }
        }

        Ok(Preflight {
            ok: problems.is_empty(),
            problems,
            head_branch,
            head,
            tip,
            up_to_date,
            changes,
        })
    }

    /// Merge `branch` into the branch checked out here (`git merge --no-ff --no-edit -m
    /// <message>`), only after [`Repo::merge_preflight`] passes
    /// ([`GitError::PreflightFailed`], with nothing changed, otherwise). The commit checked
    /// by the preflight is the one merged. Uses the repository's identity (or weft's) and
    /// runs the repository's hooks; if the merge fails anyway (a hook refused it) it is
    /// aborted so the checkout is left as it was, and the error is returned.
    pub fn merge_into_checked_out(
        &self,
        branch: &str,
        message: &str,
    ) -> Result<MergeOutcome, GitError> {
        let preflight = self.merge_preflight(branch)?;
        let (Some(head), Some(tip), true) = (&preflight.head, &preflight.tip, preflight.ok) else {
            return Err(GitError::PreflightFailed {
                repo: self.root().to_owned(),
                branch: branch.to_owned(),
                problems: preflight.problems,
            });
        };
        if preflight.up_to_date {
            return Ok(MergeOutcome::UpToDate { head: head.clone() });
        }
        let identity = self.identity_config()?.to_vec();
        let call = self.call().config(&identity).args([
            "merge",
            "--no-ff",
            "--no-edit",
            "--quiet",
            "-m",
            message,
            tip.as_str(),
        ]);
        let out = call.output()?;
        if !out.status.success() {
            let error = call.failed(&out);
            if self.git_path_exists("MERGE_HEAD")? {
                self.call().args(["merge", "--abort"]).run()?;
            }
            return Err(error);
        }
        Ok(MergeOutcome::Merged {
            commit: self.resolve("HEAD")?,
            previous: head.clone(),
        })
    }

    /// Merge `branch` into this working tree's branch, leaving conflicts in place (for a
    /// repair attempt: the agent then resolves the marked files). Clean merges are
    /// committed with `message`; conflicted ones stay in progress.
    pub fn merge_in_worktree(
        &self,
        branch: &str,
        message: &str,
    ) -> Result<WorktreeMerge, GitError> {
        let tip = self.resolve(branch)?;
        let identity = self.identity_config()?.to_vec();
        let call = self.call().config(&identity).args([
            "merge",
            "--no-ff",
            "--no-edit",
            "--quiet",
            "-m",
            message,
            tip.as_str(),
        ]);
        let out = call.output()?;
        if out.status.success() {
            return Ok(WorktreeMerge::Clean {
                commit: self.resolve("HEAD")?,
            });
        }
        let files: Vec<String> = self
            .status(false)?
            .into_iter()
            .filter(|entry| entry.unmerged())
            .map(|entry| entry.path)
            .collect();
        if files.is_empty() || !self.git_path_exists("MERGE_HEAD")? {
            return Err(call.failed(&out));
        }
        Ok(WorktreeMerge::Conflicted { files })
    }

    /// Paths that differ between two commits (or trees), repository-relative, renames
    /// shown as a deletion and an addition.
    pub fn changed_files(&self, base: &str, tip: &str) -> Result<Vec<String>, GitError> {
        self.check_revs(&[base, tip])?;
        let out = self
            .read()
            .args([
                "diff-tree",
                "-r",
                "-z",
                "--name-only",
                "--no-renames",
                "--no-commit-id",
                base,
                tip,
            ])
            .run()?;
        Ok(nul_records(&out.stdout).map(lossy).collect())
    }

    /// Lines added and removed per file between `base` and `tip`
    /// (`git diff --numstat -z --no-renames`), for `weft handoff review --stat`.
    pub fn diff_stat(&self, base: &str, tip: &str) -> Result<DiffStat, GitError> {
        self.check_revs(&[base, tip])?;
        let call = self.read().args([
            "diff",
            "--numstat",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            "--no-color",
            base,
            tip,
            "--",
        ]);
        let out = call.run()?;
        let mut stat = DiffStat::default();
        for record in nul_records(&out.stdout) {
            let mut parts = record.splitn(3, |&b| b == b'\t');
            let (Some(added), Some(deleted), Some(path)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(call.unexpected(format!("numstat record {:?}", lossy(record))));
            };
            let number = |field: &[u8]| lossy(field).parse::<u64>().ok();
            let insertions = number(added);
            let deletions = number(deleted);
            stat.insertions += insertions.unwrap_or(0);
            stat.deletions += deletions.unwrap_or(0);
            stat.files.push(FileStat {
                path: lossy(path),
                insertions,
                deletions,
            });
        }
        Ok(stat)
    }

    /// The patch from `base` to `tip`, capped at [`DEFAULT_DIFF_LIMIT`].
    pub fn diff(&self, base: &str, tip: &str) -> Result<DiffText, GitError> {
        self.diff_limited(base, tip, DEFAULT_DIFF_LIMIT)
    }

    /// The patch from `base` to `tip`, capped at `limit` bytes (cut at a line end;
    /// `truncated` says so). Git stops as soon as the cap is reached.
    pub fn diff_limited(&self, base: &str, tip: &str, limit: usize) -> Result<DiffText, GitError> {
        self.check_revs(&[base, tip])?;
        let (mut bytes, truncated) = self
            .read()
            .args(["diff", "--no-color", "--no-ext-diff", base, tip, "--"])
            .run_capped(limit)?;
        if truncated {
            let end = memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1);
            bytes.truncate(end);
        }
        Ok(DiffText {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            truncated,
            limit,
        })
    }
}
