//! Handoff: review diffs, the merge preflight, and merges into a checkout.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::land::MergeTree;
use crate::repo::{lossy, nul_records, parse_oid};
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

/// What [`Repo::prepare_merge`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Prepared {
    /// The merge to apply.
    Ready(PreparedMerge),
    /// The branch is already contained in HEAD; nothing to do.
    UpToDate { head: Oid },
}

/// A merge into the checked-out branch, computed without touching the checkout: what a
/// journal records so a restart can finish ([`Repo::apply_merge`]) or undo
/// ([`Repo::unapply_merge`]) it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreparedMerge {
    /// The branch checked out, which the merge moves.
    pub branch: String,
    /// Where the branch was when the merge was computed.
    pub previous: Oid,
    /// The merge commit (parents `previous` and the merged tip), an object only so far.
    pub commit: Oid,
}

/// A step [`Repo::apply_merge`] (or [`Repo::unapply_merge`]) finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyStep {
    /// The index holds the target entries of every changed file.
    Indexed { files: usize },
    /// `done` of `total` files are written (after each chunk).
    Wrote { done: usize, total: usize },
    /// The branch moved: the apply is complete.
    Moved,
}

/// How many files one `git checkout-index` of an apply writes.
pub const APPLY_CHUNK: usize = 1000;

/// How many paths an error or a refusal names before it counts the rest: a screenful.
pub const PATHS_SHOWN: usize = 20;

/// Name at most [`PATHS_SHOWN`] paths, comma-separated, and count the rest
/// (`a, b, … and 8480 more`), so a message stays readable whatever the tree.
pub fn list_paths<S: AsRef<str>>(paths: &[S]) -> String {
    let mut text = paths
        .iter()
        .take(PATHS_SHOWN)
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > PATHS_SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - PATHS_SHOWN));
    }
    text
}

/// One changed path of a raw diff, and what the target holds there.
struct RawChange {
    path: String,
    /// Mode and blob in the target; `None` when the target deletes the path.
    to: Option<(String, Oid)>,
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
                list_paths(&unmerged)
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
                        list_paths(&files)
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
        let (mut edited, mut in_the_way) = (Vec::new(), Vec::new());
        for path in &changes {
            match local.get(path.as_str()) {
                Some(false) => edited.push(path.as_str()),
                Some(true) => in_the_way.push(path.as_str()),
                None => {}
            }
        }
        match edited.len() {
            0 => {}
            1 => problems.push(format!(
                "{} has uncommitted changes and the merge would change it; commit or stash them",
                edited[0]
            )),
            n => problems.push(format!(
                "{n} files have uncommitted changes and the merge would change them ({}); commit or stash them",
                list_paths(&edited)
            )),
        }
        match in_the_way.len() {
            0 => {}
            1 => problems.push(format!(
                "untracked {} is in the way of a file the merge would write; move it away",
                in_the_way[0]
            )),
            n => problems.push(format!(
                "{n} untracked files are in the way of files the merge would write (untracked {}); move them away",
                list_paths(&in_the_way)
            )),
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

    /// Merge `branch` into the branch checked out here: [`Repo::prepare_merge`], then
    /// [`Repo::apply_merge`]. Nothing is changed when the preflight finds a problem
    /// ([`GitError::PreflightFailed`]) or the `pre-merge-commit` hook refuses.
    pub fn merge_into_checked_out(
        &self,
        branch: &str,
        message: &str,
    ) -> Result<MergeOutcome, GitError> {
        match self.prepare_merge(branch, message)? {
            Prepared::UpToDate { head } => Ok(MergeOutcome::UpToDate { head }),
            Prepared::Ready(merge) => {
                self.apply_merge(&merge, &mut |_| {})?;
                Ok(MergeOutcome::Merged {
                    commit: merge.commit,
                    previous: merge.previous,
                })
            }
        }
    }

    /// Compute the merge of `branch` into the branch checked out here without touching
    /// the checkout: [`Repo::merge_preflight`] (refused with [`GitError::PreflightFailed`]
    /// unless it passes), the repository's `pre-merge-commit` hook (`git hook run`; it
    /// sees the checkout as it is, and a refusal is the error), `git merge-tree`, and the
    /// merge commit (`git commit-tree`, parents HEAD and the branch tip, the identity
    /// rule). Only objects are written, harmless if a crash orphans them; the caller
    /// journals the result, then [`Repo::apply_merge`]s it.
    pub fn prepare_merge(&self, branch: &str, message: &str) -> Result<Prepared, GitError> {
        let preflight = self.merge_preflight(branch)?;
        let refused = |problems: Vec<String>| GitError::PreflightFailed {
            repo: self.root().to_owned(),
            branch: branch.to_owned(),
            problems,
        };
        let (Some(head_branch), Some(head), Some(tip), true) = (
            &preflight.head_branch,
            &preflight.head,
            &preflight.tip,
            preflight.ok,
        ) else {
            return Err(refused(preflight.problems));
        };
        if preflight.up_to_date {
            return Ok(Prepared::UpToDate { head: head.clone() });
        }
        self.call()
            .args(["hook", "run", "--ignore-missing", "pre-merge-commit"])
            .run()?;
        let tree = match self.merge_tree(head, tip)? {
            MergeTree::Clean { tree } => tree,
            MergeTree::Conflicted { files, .. } => {
                return Err(refused(vec![format!(
                    "merging {branch} into what is checked out conflicts in {}",
                    list_paths(&files)
                )]));
            }
        };
        let commit = self.commit_tree(&tree, &[head, tip], message)?;
        Ok(Prepared::Ready(PreparedMerge {
            branch: head_branch.clone(),
            previous: head.clone(),
            commit,
        }))
    }

    /// Bring the checkout from `merge.previous` to `merge.commit` and move the branch.
    ///
    /// Only the files the merge changes are touched (the preflight found none of them
    /// edited), with plumbing that takes every path literally: the files the merge
    /// deletes are removed, `git update-index --index-info` sets every changed path's
    /// index entry in one atomic index write, `git checkout-index -f` writes the files in
    /// chunks of
    /// [`APPLY_CHUNK`] (it takes no index lock), `git update-index --refresh` records
    /// their stat data, and last `git update-ref refs/heads/<branch> <commit> <previous>`
    /// moves the branch (a compare-and-swap). `on_step` hears each step (a journal, a
    /// test's kill point).
    ///
    /// Safe to repeat after a crash at any point: a branch already at `merge.commit` is
    /// done; one at `merge.previous` gets every step again (each is idempotent); one
    /// elsewhere is [`GitError::RefMoved`], nothing touched. Meanwhile the files the merge
    /// adds are already in the index, so a crash leaves no untracked debris. HEAD must
    /// be on `merge.branch` (the caller checks).
    pub fn apply_merge(
        &self,
        merge: &PreparedMerge,
        on_step: &mut dyn FnMut(ApplyStep),
    ) -> Result<(), GitError> {
        let reference = crate::branch_ref(&merge.branch);
        if self.ref_target(&reference)?.as_ref() == Some(&merge.commit) {
            return Ok(());
        }
        self.move_checkout(&merge.branch, &merge.previous, &merge.commit, on_step)
    }

    /// Undo [`Repo::apply_merge`], finished or not: the same steps from `merge.commit`
    /// back to `merge.previous`, so the files the merge touched, the index and the branch
    /// are as they were (a file the merge added is deleted). The files are restored even
    /// when the branch never moved (an apply that died half-way), so once an undo has
    /// begun, only undoing finishes it (an apply would find its branch moved and stop).
    /// Safe to repeat.
    pub fn unapply_merge(
        &self,
        merge: &PreparedMerge,
        on_step: &mut dyn FnMut(ApplyStep),
    ) -> Result<(), GitError> {
        self.move_checkout(&merge.branch, &merge.commit, &merge.previous, on_step)
    }

    fn move_checkout(
        &self,
        branch: &str,
        from: &Oid,
        to: &Oid,
        on_step: &mut dyn FnMut(ApplyStep),
    ) -> Result<(), GitError> {
        let reference = crate::branch_ref(branch);
        let at = self.ref_target(&reference)?;
        if at.as_ref() != Some(from) && at.as_ref() != Some(to) {
            return Err(GitError::RefMoved {
                repo: self.root().to_owned(),
                reference,
                expected: Some(from.clone()),
                found: at,
            });
        }
        let changes = self.raw_changes(from, to)?;
        let mut index_info = Vec::new();
        for change in &changes {
            match &change.to {
                Some((mode, oid)) => {
                    index_info.extend_from_slice(format!("{mode} {}\t", oid.as_str()).as_bytes())
                }
                None => {
                    index_info.extend_from_slice(b"0 0000000000000000000000000000000000000000\t")
                }
            }
            index_info.extend_from_slice(change.path.as_bytes());
            index_info.push(0);
        }
        // Deleted files go first, while the index still tracks them, and the index
        // changes before any file is written: at no moment is a file on disk that the
        // index does not track.
        for change in changes.iter().filter(|c| c.to.is_none()) {
            self.remove_worktree_file(&change.path)?;
        }
        self.call()
            .args(["update-index", "-z", "--index-info"])
            .stdin(index_info)
            .run()?;
        on_step(ApplyStep::Indexed {
            files: changes.len(),
        });
        let written: Vec<&RawChange> = changes.iter().filter(|c| c.to.is_some()).collect();
        let mut done = 0;
        for chunk in written.chunks(APPLY_CHUNK) {
            let mut paths = Vec::new();
            for change in chunk {
                paths.extend_from_slice(change.path.as_bytes());
                paths.push(0);
            }
            self.call()
                .args(["checkout-index", "-f", "-z", "--stdin"])
                .stdin(paths)
                .run()?;
            done += chunk.len();
            on_step(ApplyStep::Wrote {
                done,
                total: written.len(),
            });
        }
        self.call()
            .args(["update-index", "-q", "--refresh"])
            .run_accepting(&[0, 1])?;
        if at.as_ref() == Some(from) {
            self.update_ref_with(&reference, to, Some(from), "weft: handoff merge")?;
        }
        on_step(ApplyStep::Moved);
        Ok(())
    }

    /// Remove one file a merge deletes (a symlink itself, never its target), then the
    /// folders it leaves empty, up to the root.
    fn remove_worktree_file(&self, path: &str) -> Result<(), GitError> {
        let full = self.root().join(path);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if !meta.is_dir() => {
                std::fs::remove_file(&full).map_err(|e| GitError::io(&full, e))?;
            }
            Ok(_) => return Ok(()),
            // Gone already (a repeat: its emptied folders may be left).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            // A file stands where its folder was (a repeat after the swap).
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(()),
            Err(e) => return Err(GitError::io(&full, e)),
        }
        let mut folder = full.parent();
        while let Some(dir) = folder {
            if dir == self.root() || std::fs::remove_dir(dir).is_err() {
                break;
            }
            folder = dir.parent();
        }
        Ok(())
    }

    /// `git diff-tree -r -z --raw --no-renames from to`: each path that differs, with its
    /// mode and blob in `to` (`None`: `to` deletes it).
    fn raw_changes(&self, from: &Oid, to: &Oid) -> Result<Vec<RawChange>, GitError> {
        let call = self.read().args([
            "diff-tree",
            "-r",
            "-z",
            "--raw",
            "--no-renames",
            "--no-commit-id",
            "--abbrev=40",
            from.as_str(),
            to.as_str(),
        ]);
        let out = call.run()?;
        let mut records = nul_records(&out.stdout);
        let mut changes = Vec::new();
        while let Some(header) = records.next() {
            let header = lossy(header);
            let path = records
                .next()
                .map(lossy)
                .ok_or_else(|| call.unexpected(format!("no path after {header:?}")))?;
            // `:<old mode> <new mode> <old oid> <new oid> <status>`
            let fields: Vec<&str> = header.trim_start_matches(':').split(' ').collect();
            let [_, mode, _, oid, status] = fields[..] else {
                return Err(call.unexpected(format!("raw diff record {header:?}")));
            };
            let to = if status.starts_with('D') {
                None
            } else {
                Some((mode.to_owned(), parse_oid(&call, oid)?))
            };
            changes.push(RawChange { path, to });
        }
        Ok(changes)
    }

    /// Remove this checkout's `index.lock` when a git that an earlier weft started (and
    /// that died with it) left it behind: a lock there after `patience` and last written
    /// at or after `since` (when that weft began) is stale and removed (`true`). An older
    /// lock belongs to someone else and is left for git to report.
    pub fn remove_stale_index_lock(
        &self,
        since: std::time::SystemTime,
        patience: std::time::Duration,
    ) -> Result<bool, GitError> {
        let lock = self.git_dir().join("index.lock");
        let deadline = std::time::Instant::now() + patience;
        loop {
            let modified = match std::fs::metadata(&lock) {
                Ok(meta) => meta.modified().map_err(|e| GitError::io(&lock, e))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(GitError::io(&lock, e)),
            };
            if std::time::Instant::now() >= deadline {
                if modified < since {
                    return Ok(false);
                }
                return match std::fs::remove_file(&lock) {
                    Ok(()) => Ok(true),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(GitError::io(&lock, e)),
                };
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
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
