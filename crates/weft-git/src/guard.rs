//! Guards for the worktrees agents work in: a private object folder per attempt, the
//! checks weft makes before it runs git in a worktree an agent had, importing what the
//! agent committed, and finding symlinks that point out of a tree.
//!
//! The contract: an attempt's worktree is checked out **detached**, and the agent's git
//! writes its objects into a private folder inside the worktree's own admin folder
//! (`<common>/worktrees/<id>/weft-objects`, given to the agent as `GIT_OBJECT_DIRECTORY`,
//! the repository's store as the read-only `GIT_ALTERNATE_OBJECT_DIRECTORIES`). So the
//! agent's own `git add`/`git commit` need nothing of the repository writable but that
//! admin folder (its `HEAD`, `index`, `logs/HEAD` and the private objects), and under
//! Landlock the shared object store, `refs/`, `logs/`, `packed-refs` and the main `index`
//! stay unwritable. After the attempt weft, unconfined, imports the private objects into
//! the repository ([`Repo::import_objects`]: `git unpack-objects`, which names every object
//! by its content, so a forged object file cannot enter the store under a false name) and
//! sets the task branch itself.
//!
//! Before weft runs any git command in such a worktree, [`Repo::inspect_worktree`] reads,
//! without running git there, that its `.git` is still the file naming its admin folder,
//! that the admin folder still names the repository's common folder and holds no
//! `config.worktree` (whose settings, such as `core.fsmonitor`, git would run for weft
//! unconfined). The worktree it hands back runs git with both folders named outright
//! (`GIT_DIR`, `GIT_WORK_TREE`), so git does no discovery there: nothing the agent left
//! can show git another top level or git folder.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::cmd::Call;
use crate::repo::{lossy, nul_records};
use crate::worktree::normalize;
use crate::{GitError, Oid, Repo};

/// The private object folder's name inside a worktree's admin folder.
pub const PRIVATE_OBJECTS: &str = "weft-objects";

/// A worktree made for one attempt: detached at its start, with a private object folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptWorktree {
    /// The worktree's folder.
    pub path: PathBuf,
    /// Its admin folder (`<common>/worktrees/<id>`).
    pub admin: PathBuf,
    /// The private object folder inside `admin`.
    pub objects: PathBuf,
}

impl AttemptWorktree {
    /// The variables that point the agent's git at the private object folder, with the
    /// repository's store (`common_objects`) as a read-only alternate.
    pub fn git_env(&self, common_objects: &Path) -> Vec<(String, PathBuf)> {
        vec![
            ("GIT_OBJECT_DIRECTORY".into(), self.objects.clone()),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
                common_objects.to_owned(),
            ),
        ]
    }
}

/// What an agent did to its worktree's git registration that weft refuses to work with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tamper {
    /// `.git` is gone.
    GitDeleted,
    /// `.git` is no longer the file weft made (`now`: what it is).
    GitReplaced { now: &'static str },
    /// `.git` names another git folder.
    GitRepointed { to: String },
    /// The worktree's admin folder is gone.
    AdminDeleted,
    /// The admin folder's `commondir` names another repository.
    CommonDirChanged,
    /// A `config.worktree` appeared in the admin folder.
    WorktreeConfig,
}

impl std::fmt::Display for Tamper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tamper::GitDeleted => write!(f, "the agent deleted its worktree's `.git`"),
            Tamper::GitReplaced { now } => {
                write!(
                    f,
                    "the agent replaced its worktree's `.git` file with {now}"
                )
            }
            Tamper::GitRepointed { to } => write!(
                f,
                "the agent rewrote its worktree's `.git` to point at another git folder ({to})"
            ),
            Tamper::AdminDeleted => write!(
                f,
                "the agent deleted its worktree's admin folder in `.git/worktrees/`"
            ),
            Tamper::CommonDirChanged => write!(
                f,
                "the agent changed its worktree's `commondir` to name another repository"
            ),
            Tamper::WorktreeConfig => write!(
                f,
                "the agent wrote a git configuration for its worktree (`config.worktree`)"
            ),
        }
    }
}

/// Where a worktree's HEAD points, read from its admin folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminHead {
    /// Detached at a commit.
    Detached(Oid),
    /// On a branch (short name), at its commit if it has one.
    Branch { name: String, commit: Option<Oid> },
    /// Unreadable or missing.
    Unknown,
}

impl Repo {
    /// Create branch `branch` at `start` (for weft to set after the attempt) and a
    /// worktree at `path` checked out **detached** at `start`, with an empty private
    /// object folder in its admin folder. Same path rules as [`Repo::add_worktree`]; when
    /// the worktree cannot be made the branch is deleted again.
    pub fn add_attempt_worktree(
        &self,
        path: impl AsRef<Path>,
        branch: &str,
        start: &Oid,
    ) -> Result<AttemptWorktree, GitError> {
        let path = self.absolute(path.as_ref());
        self.check_branch_name(branch)?;
        self.create_branch(branch, start)?;
        let made = self
            .add_worktree_detached(&path, start)
            .and_then(|worktree| {
                let admin = read_gitfile(&worktree.path).ok_or_else(|| GitError::WorktreePath {
                    repo: self.root().to_owned(),
                    path: worktree.path.clone(),
                    reason: "git made no `.git` file naming its admin folder".into(),
                })?;
                let objects = admin.join(PRIVATE_OBJECTS);
                std::fs::create_dir_all(&objects).map_err(|e| GitError::io(&objects, e))?;
                Ok(AttemptWorktree {
                    path: worktree.path,
                    admin,
                    objects,
                })
            });
        if made.is_err() {
            let _ = self.delete_ref_cas(&crate::branch_ref(branch), start);
        }
        made
    }

    /// The repository's own object store (`<common>/objects`).
    pub fn objects_dir(&self) -> PathBuf {
        self.common_dir().join("objects")
    }

    /// The admin folder (`<common>/worktrees/<id>`) registered for the worktree at
    /// `path`, found by its `gitdir` back-link (not by the worktree's `.git`, which its
    /// agent could rewrite).
    pub fn worktree_admin_dir(&self, path: impl AsRef<Path>) -> Option<PathBuf> {
        self.admin_dir_of(&self.absolute(path.as_ref()))
    }

    /// Check the worktree at `path`, whose admin folder is `admin`, before weft runs git
    /// in it; returns it opened when intact. Reads files first and runs git there only
    /// once they are as weft made them (see the module documentation).
    pub fn inspect_worktree(
        &self,
        path: &Path,
        admin: &Path,
    ) -> Result<Result<Repo, Tamper>, GitError> {
        let gitfile = path.join(".git");
        let metadata = match std::fs::symlink_metadata(&gitfile) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Err(Tamper::GitDeleted));
            }
            Err(e) => return Err(GitError::io(&gitfile, e)),
        };
        if metadata.file_type().is_symlink() {
            return Ok(Err(Tamper::GitReplaced { now: "a symlink" }));
        }
        if metadata.is_dir() {
            return Ok(Err(Tamper::GitReplaced {
                now: "a folder (a repository of its own)",
            }));
        }
        match read_gitfile(path) {
            Some(named) if normalize(&named) == normalize(admin) => {}
            Some(named) => {
                return Ok(Err(Tamper::GitRepointed {
                    to: named.display().to_string(),
                }));
            }
            None => {
                return Ok(Err(Tamper::GitReplaced {
                    now: "something that names no git folder",
                }));
            }
        }
        if !admin.is_dir() {
            return Ok(Err(Tamper::AdminDeleted));
        }
        let common = std::fs::read(admin.join("commondir"))
            .ok()
            .map(|bytes| admin.join(OsStr::from_bytes(bytes.trim_ascii_end())));
        if common.is_none_or(|c| normalize(&c) != normalize(self.common_dir())) {
            return Ok(Err(Tamper::CommonDirChanged));
        }
        if std::fs::symlink_metadata(admin.join("config.worktree")).is_ok() {
            return Ok(Err(Tamper::WorktreeConfig));
        }
        // Opened by naming both folders to git, not by asking git to find them: it can
        // then see no other top level or git folder (and no git process is spent).
        Ok(Ok(self.located_worktree(path, admin)))
    }

    /// Where each of `references` (full names) points, in one git call (`git
    /// for-each-ref`): `None` for one that does not exist.
    pub fn ref_targets(&self, references: &[&str]) -> Result<Vec<Option<Oid>>, GitError> {
        for reference in references {
            self.check_full_ref(reference)?;
        }
        if let Some(found) = self.processes().ref_targets(self, references) {
            return Ok(found);
        }
        let call = self
            .read()
            .args(["for-each-ref", "--format=%(objectname) %(refname)"])
            .args(references);
        let out = call.run()?;
        let text = out.text();
        let found: Vec<(&str, &str)> = text
            .lines()
            .filter_map(|line| line.split_once(' '))
            .collect();
        references
            .iter()
            .map(|reference| {
                found
                    .iter()
                    .find(|(_, name)| name == reference)
                    .map(|(oid, _)| {
                        Oid::parse(oid)
                            .ok_or_else(|| call.unexpected(format!("{oid:?} is not an object id")))
                    })
                    .transpose()
            })
            .collect()
    }

    /// Compare-and-swap several refs in one atomic transaction (`git update-ref
    /// --stdin`): each `(ref, new, expected)` moves only if every ref is where expected
    /// (`None`: does not exist); otherwise none moves and the first one found elsewhere is
    /// [`GitError::RefMoved`].
    pub fn update_refs_cas(
        &self,
        updates: &[(&str, &Oid, Option<&Oid>)],
        message: &str,
    ) -> Result<(), GitError> {
        let mut input = String::new();
        for (reference, new, expected) in updates {
            self.check_full_ref(reference)?;
            match expected {
                Some(old) => input.push_str(&format!("update {reference} {new} {old}\n")),
                None => input.push_str(&format!("create {reference} {new}\n")),
            }
        }
        let call = self
            .call()
            .args(["update-ref", "-m", message, "--stdin"])
            .stdin(input.into_bytes());
        let out = call.output()?;
        if out.status.success() {
            return Ok(());
        }
        for (reference, _, expected) in updates {
            let found = self.ref_target(reference)?;
            if found.as_ref() != *expected {
                return Err(GitError::RefMoved {
                    repo: self.root().to_owned(),
                    reference: (*reference).to_owned(),
                    expected: expected.cloned(),
                    found,
                });
            }
        }
        Err(call.failed(&out))
    }

    /// Where the worktree whose admin folder is `admin` has HEAD, read from the file (no
    /// git runs in the worktree).
    pub fn admin_head(&self, admin: &Path) -> Result<AdminHead, GitError> {
        let Ok(text) = std::fs::read_to_string(admin.join("HEAD")) else {
            return Ok(AdminHead::Unknown);
        };
        let text = text.trim();
        if let Some(reference) = text.strip_prefix("ref:") {
            let reference = reference.trim();
            let name = reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_owned();
            let commit = if reference.starts_with("refs/") {
                self.rev_parse(reference)?
            } else {
                None
            };
            return Ok(AdminHead::Branch { name, commit });
        }
        Ok(Oid::parse(text).map_or(AdminHead::Unknown, AdminHead::Detached))
    }

    /// Copy every object of the private store `objects` into the repository's own, by
    /// `git pack-objects` from it piped into `git unpack-objects` here (which writes each
    /// object under the name its content hashes to). Returns how many objects it held.
    pub fn import_objects(&self, objects: &Path) -> Result<usize, GitError> {
        if !holds_objects(objects) {
            return Ok(0);
        }
        let private = self.git.clone().env("GIT_OBJECT_DIRECTORY", objects);
        let list = Call::new(&private, self.root())
            .read_only()
            .args([
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname)",
            ])
            .run()?
            .stdout;
        let count = list
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        if count == 0 {
            return Ok(0);
        }
        let pack = Call::new(&private, self.root())
            .config(&["pack.threads=1".into()])
            .args(["pack-objects", "--stdout", "-q"])
            .stdin(list);
        let unpack = self.call().args(["unpack-objects", "-q"]);
        pack.pipe_into(&unpack)?;
        Ok(count)
    }

    /// Copy into the repository every object reachable from `tip` and not from `base`,
    /// reading them wherever the attempt's git could: the private store `objects` and
    /// the `alternates` (a group's attempt has every repository's store as one, so its
    /// git wrote no object of its own for content a sibling repository already held:
    /// [`Repo::import_objects`] alone would leave this repository without it). Same
    /// pipe as `import_objects`: `git unpack-objects` names every object by its content.
    pub fn import_reachable(
        &self,
        objects: &Path,
        alternates: &[PathBuf],
        tip: &Oid,
        base: &Oid,
    ) -> Result<(), GitError> {
        let alternates = std::env::join_paths(alternates)
            .map_err(|e| GitError::io(objects, std::io::Error::other(e)))?;
        let attempt = self
            .git
            .clone()
            .env("GIT_OBJECT_DIRECTORY", objects)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", alternates);
        let pack = Call::new(&attempt, self.root())
            .config(&["pack.threads=1".into()])
            .args(["pack-objects", "--revs", "--stdout", "-q"])
            .stdin(format!("{tip}\n^{base}\n").into_bytes());
        let unpack = self.call().args(["unpack-objects", "-q"]);
        pack.pipe_into(&unpack)
    }

    /// Whether every object reachable from `tip` but not from `base` is in the
    /// repository's own store (after [`Repo::import_objects`]).
    pub fn objects_complete(&self, tip: &Oid, base: &Oid) -> Result<bool, GitError> {
        let out = self
            .read()
            .args(["rev-list", "--objects", "--quiet", tip.as_str()])
            .arg(format!("^{base}"))
            .output()?;
        Ok(out.status.success())
    }

    /// The commits reachable from `tip` and not from `base`, newest first: at most
    /// `limit` of them (sha and subject), and how many there are in all.
    pub fn commits_between(
        &self,
        base: &Oid,
        tip: &Oid,
        limit: usize,
    ) -> Result<(Vec<(Oid, String)>, usize), GitError> {
        let range = format!("{base}..{tip}");
        let call = self
            .read()
            .args(["log", "--no-decorate", "-z", "--format=%H %s", &range]);
        let out = call.run()?;
        let mut commits = Vec::new();
        let mut total = 0;
        for record in nul_records(&out.stdout) {
            total += 1;
            if commits.len() < limit {
                let text = lossy(record);
                let (sha, subject) = text.split_once(' ').unwrap_or((&text, ""));
                let oid = Oid::parse(sha.trim())
                    .ok_or_else(|| call.unexpected(format!("{sha:?} is not an object id")))?;
                commits.push((oid, subject.to_owned()));
            }
        }
        Ok((commits, total))
    }

    /// The symlinks that `to` adds or changes against `from` whose target points outside
    /// the tree (absolute, or escaping it with `..`): (path, target), in path order.
    pub fn outside_symlinks(
        &self,
        from: &Oid,
        to: &Oid,
    ) -> Result<Vec<(String, String)>, GitError> {
        if let Some(outside) = self.outside_symlinks_read(from, to) {
            return Ok(outside);
        }
        let call = self.read().args([
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--diff-filter=AMT",
            from.as_str(),
            to.as_str(),
        ]);
        let out = call.run()?;
        let mut links = Vec::new();
        let mut fields = nul_records(&out.stdout);
        while let Some(meta) = fields.next() {
            let Some(path) = fields.next() else { break };
            // ":<old mode> <new mode> <old oid> <new oid> <status>"
            let meta = lossy(meta);
            let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            if parts.len() >= 4 && parts[1] == "120000" {
                let oid = Oid::parse(parts[3])
                    .ok_or_else(|| call.unexpected(format!("no object id in {meta:?}")))?;
                links.push((lossy(path), oid));
            }
        }
        let mut outside = Vec::new();
        for (path, oid) in links {
            let target = self
                .read()
                .args(["cat-file", "blob", oid.as_str()])
                .run()?
                .stdout;
            let target = lossy(&target);
            if escapes(Path::new(&path), Path::new(&target)) {
                outside.push((path, target));
            }
        }
        Ok(outside)
    }
}

impl Repo {
    /// [`Repo::outside_symlinks`] read through the long-lived reader (see `batch`): the
    /// two trees compared in weft, descending only into folders whose trees differ.
    /// `None` when the reader failed or something did not parse (the caller then asks
    /// `git diff-tree`).
    fn outside_symlinks_read(&self, from: &Oid, to: &Oid) -> Option<Vec<(String, String)>> {
        let reader = self.processes();
        let peeled = [format!("{from}^{{tree}}"), format!("{to}^{{tree}}")];
        let trees = reader.info(self, &[&peeled[0], &peeled[1]])?;
        let [Some(old), Some(new)] = &trees[..] else {
            return None;
        };
        let hash_len = new.oid.as_str().len() / 2;
        // (folder path, old tree, new tree) still to compare; the links are sorted by path
        // at the end, which is diff-tree's order.
        let mut pending = vec![(Vec::new(), Some(old.oid.clone()), new.oid.clone())];
        let mut links = Vec::new();
        while let Some((folder, old, new)) = pending.pop() {
            if old.as_ref() == Some(&new) {
                continue;
            }
            let read = |oid: &Oid| match reader.contents(self, oid)? {
                Some((kind, content)) if kind == "tree" => Some(content),
                _ => None,
            };
            let new_content = read(&new)?;
            let old_content = match &old {
                Some(oid) => read(oid)?,
                None => Vec::new(),
            };
            let new_entries = crate::batch::tree_entries(&new_content, hash_len)?;
            // By name: a folder can hold many thousand entries.
            let old_entries: std::collections::HashMap<&[u8], crate::batch::Entry<'_>> =
                crate::batch::tree_entries(&old_content, hash_len)?
                    .into_iter()
                    .map(|e| (e.name, e))
                    .collect();
            for entry in new_entries {
                let before = old_entries.get(entry.name);
                let mut path = folder.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(entry.name);
                match entry.mode {
                    "120000" => {
                        let same =
                            before.is_some_and(|b| b.mode == entry.mode && b.oid == entry.oid);
                        if !same {
                            links.push((lossy(&path), entry.oid));
                        }
                    }
                    "40000" => {
                        let old_tree = before.filter(|b| b.mode == "40000").map(|b| b.oid.clone());
                        pending.push((path, old_tree, entry.oid));
                    }
                    _ => {}
                }
            }
        }
        links.sort_by(|a, b| a.0.cmp(&b.0));
        let mut outside = Vec::new();
        for (path, oid) in links {
            let (kind, target) = reader.contents(self, &oid)??;
            if kind != "blob" {
                return None;
            }
            let target = lossy(&target);
            if escapes(Path::new(&path), Path::new(&target)) {
                outside.push((path, target));
            }
        }
        Some(outside)
    }
}

/// Whether a symlink at `link` (relative to a tree's root) with `target` points outside
/// the tree: an absolute target, or one whose `..` climb above the root (judged on the
/// names alone).
pub fn escapes(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return true;
    }
    let mut depth: i64 = link
        .parent()
        .map(|p| {
            p.components()
                .filter(|c| matches!(c, Component::Normal(_)))
                .count() as i64
        })
        .unwrap_or(0);
    for component in target.components() {
        match component {
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return true,
        }
    }
    false
}

/// The git folder a worktree's `.git` file names (`gitdir: <path>`), absolute.
fn read_gitfile(worktree: &Path) -> Option<PathBuf> {
    let bytes = std::fs::read(worktree.join(".git")).ok()?;
    let line = bytes.split(|&b| b == b'\n').next()?;
    let named = line.strip_prefix(b"gitdir:")?.trim_ascii();
    let named = PathBuf::from(OsStr::from_bytes(named));
    Some(if named.is_absolute() {
        named
    } else {
        worktree.join(named)
    })
}

/// Whether a private object folder holds anything git could read as objects.
fn holds_objects(objects: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(objects) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let name = name.as_bytes();
        (name.len() == 2 || name == b"pack")
            && std::fs::read_dir(entry.path()).is_ok_and(|mut dir| dir.next().is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::escapes;
    use proptest::prelude::*;
    use std::path::{Path, PathBuf};

    fn names() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec("[a-z]{1,4}", 0..4)
    }

    proptest! {
        /// Descending only never escapes; climbing one level more than the link is deep
        /// always does, whatever follows; an absolute target always does.
        #[test]
        fn escaping_is_decided_by_how_far_a_target_climbs(
            dirs in names(), down in names(), extra in 0usize..3,
        ) {
            let link: PathBuf = dirs.iter().chain(std::iter::once(&"l".to_owned())).collect();
            let descending: PathBuf = down.iter().collect();
            prop_assert!(!escapes(&link, &descending));
            let mut climbing = PathBuf::new();
            for _ in 0..dirs.len() + 1 + extra {
                climbing.push("..");
            }
            climbing.push(descending.clone());
            prop_assert!(escapes(&link, &climbing));
            let mut staying = PathBuf::new();
            for _ in 0..dirs.len() {
                staying.push("..");
            }
            staying.push(descending.clone());
            prop_assert!(!escapes(&link, &staying));
            prop_assert!(escapes(&link, &Path::new("/").join(&descending)));
        }
    }

    #[test]
    fn symlinks_escape_when_absolute_or_climbing_above_the_root() {
        let e = |link: &str, target: &str| escapes(Path::new(link), Path::new(target));
        assert!(e("etc-link", "/etc"));
        assert!(e("a/b", "../../x"));
        assert!(e("x", ".."));
        assert!(e("a/x", "b/../../../y"));
        assert!(!e("a/b", "../c"));
        assert!(!e("a/b", "./c/d"));
        assert!(!e("x", "y"));
        assert!(!e("a/b/c", "../../d"));
    }
}
