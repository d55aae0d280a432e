//! Opening a repository, HEAD, status, refs and branches.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::cmd::Call;
use crate::{CommitObject, Git, GitError, Oid};

/// The name weft commits as when the repository configures no identity.
pub const FALLBACK_NAME: &str = "weft";
/// The email weft commits as when the repository configures no identity.
pub const FALLBACK_EMAIL: &str = "weft@localhost";

/// A git working tree: the main checkout of a repository, or one of its linked worktrees.
///
/// Every method runs the git CLI in [`Repo::root`] through the [`Git`] handle the
/// repository was opened with. A `Repo` holds no locks; it is cheap to clone and safe to
/// share between threads. What it asks on every task of a run (refs, trees, single-ref
/// compare-and-swaps) goes to long-lived git processes it starts on first use and shares
/// with its clones (see `batch`: they hold nothing between exchanges and end with the
/// last handle).
#[derive(Debug, Clone)]
pub struct Repo {
    pub(crate) git: Git,
    root: PathBuf,
    git_dir: PathBuf,
    common_dir: PathBuf,
    /// `-c user.name=… -c user.email=…` for the parts of the identity the repository does
    /// not configure; looked up once per handle.
    identity: OnceLock<Vec<OsString>>,
    /// The last [`WRITTEN_LIMIT`] commits this handle (or a clone of it) wrote with
    /// `commit-tree`, with their tree, parents and message: objects never change, so
    /// what weft wrote it need not ask git about again (a landing's merge is the next
    /// landing's base, and its evidence note needs its tree and trailers).
    written: Arc<Mutex<VecDeque<CommitObject>>>,
    /// The long-lived git processes this handle and its clones share (see `batch`).
    processes: Arc<crate::batch::Processes>,
}

/// How many commits a [`Repo`] handle remembers writing.
const WRITTEN_LIMIT: usize = 16;

/// Where HEAD points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Head {
    /// On a branch with at least one commit. `name` is the short name (`main`).
    Branch { name: String, commit: Oid },
    /// Detached at a commit.
    Detached { commit: Oid },
    /// On a branch that has no commit yet (a fresh `git init`).
    Unborn { branch: String },
}

impl Head {
    /// The commit HEAD points at, unless unborn.
    pub fn commit(&self) -> Option<&Oid> {
        match self {
            Head::Branch { commit, .. } | Head::Detached { commit } => Some(commit),
            Head::Unborn { .. } => None,
        }
    }

    /// The branch HEAD is on (born or not), unless detached.
    pub fn branch(&self) -> Option<&str> {
        match self {
            Head::Branch { name, .. } => Some(name),
            Head::Unborn { branch } => Some(branch),
            Head::Detached { .. } => None,
        }
    }
}

/// `refs/heads/<branch>`.
pub fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

impl Repo {
    pub(crate) fn processes(&self) -> &crate::batch::Processes {
        &self.processes
    }

    /// Open the repository whose working tree contains `path`, with the default [`Git`]
    /// handle (inherited environment).
    pub fn open(path: impl AsRef<Path>) -> Result<Repo, GitError> {
        Repo::open_with(&Git::new(), path)
    }

    /// Open the working tree that contains `path` (a folder anywhere inside it). The
    /// repository is its top level (`git rev-parse --show-toplevel`); inside a linked
    /// worktree, that worktree.
    ///
    /// Errors: [`GitError::Io`] when `path` does not exist, [`GitError::NotARepository`]
    /// outside any repository, [`GitError::NoWorkTree`] for a bare repository or a folder
    /// inside `.git`.
    pub fn open_with(git: &Git, path: impl AsRef<Path>) -> Result<Repo, GitError> {
        let path = path.as_ref();
        let metadata = std::fs::metadata(path).map_err(|e| GitError::io(path, e))?;
        if !metadata.is_dir() {
            return Err(GitError::io(
                path,
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a folder"),
            ));
        }
        let call = Call::new(git, path).read_only().args([
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        ]);
        let out = call.output()?;
        if out.code().is_none() {
            // Killed (a Ctrl-C): say so, rather than guess what kind of folder this is.
            return Err(call.failed(&out));
        }
        if !out.status.success() {
            // Tell "no repository" from "no working tree" without reading git's prose.
            let probe = Call::new(git, path)
                .read_only()
                .args(["rev-parse", "--git-dir"])
                .output()?;
            return Err(if probe.status.success() {
                GitError::NoWorkTree {
                    path: path.to_owned(),
                }
            } else {
                GitError::NotARepository {
                    path: path.to_owned(),
                    detail: crate::cmd::bounded(&probe.stderr),
                }
            });
        }
        let lines: Vec<&[u8]> = out
            .stdout
            .strip_suffix(b"\n")
            .unwrap_or(&out.stdout)
            .split(|&b| b == b'\n')
            .collect();
        let [root, git_dir, common_dir] = lines[..] else {
            return Err(call.unexpected(format!(
                "expected three paths, got {} lines (does a path contain a newline?)",
                lines.len()
            )));
        };
        let as_path = |bytes: &[u8]| PathBuf::from(OsStr::from_bytes(bytes));
        Ok(Repo {
            git: git.clone(),
            root: as_path(root),
            git_dir: as_path(git_dir),
            common_dir: as_path(common_dir),
            identity: OnceLock::new(),
            written: Arc::default(),
            processes: Arc::default(),
        })
    }

    /// Open another working tree (say a worktree this repository created) with the same
    /// [`Git`] handle.
    pub fn open_worktree(&self, path: impl AsRef<Path>) -> Result<Repo, GitError> {
        let repo = Repo::open_with(&self.git, path)?;
        // Worktrees of one repository share its configuration, so its identity too.
        if repo.common_dir == self.common_dir
            && let Some(identity) = self.identity.get()
        {
            let _ = repo.identity.set(identity.clone());
        }
        Ok(repo)
    }

    /// A linked worktree of this repository at `root` whose git folder is `git_dir`, named
    /// to git outright (`GIT_DIR` and `GIT_WORK_TREE`) rather than found: git does no
    /// discovery for it, so nothing in the worktree (its `.git`) or its configuration
    /// (`core.worktree`) can point git elsewhere. No git runs to open it.
    pub(crate) fn located_worktree(&self, root: &Path, git_dir: &Path) -> Repo {
        let identity = OnceLock::new();
        if let Some(known) = self.identity.get() {
            let _ = identity.set(known.clone());
        }
        Repo {
            git: self
                .git
                .clone()
                .env("GIT_DIR", git_dir)
                .env("GIT_WORK_TREE", root),
            root: self.absolute(root),
            git_dir: git_dir.to_owned(),
            common_dir: self.common_dir.clone(),
            identity,
            written: Arc::default(),
            processes: Arc::default(),
        }
    }

    /// The top level of this working tree.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// This working tree's git folder (`.git`, or `.git/worktrees/<id>` for a linked
    /// worktree).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The folder shared by all worktrees of the repository (objects, refs, config).
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// The handle this repository runs git with.
    pub fn git(&self) -> &Git {
        &self.git
    }

    pub(crate) fn call(&self) -> Call<'_> {
        Call::new(&self.git, &self.root)
    }

    pub(crate) fn read(&self) -> Call<'_> {
        Call::new(&self.git, &self.root).read_only()
    }

    /// Where HEAD points: a branch, a detached commit, or an unborn branch.
    pub fn head(&self) -> Result<Head, GitError> {
        let call = self.read().args(["symbolic-ref", "-q", "HEAD"]);
        let out = call.run_accepting(&[0, 1])?;
        let branch = if out.code() == Some(0) {
            let full = out.text();
            Some(full.strip_prefix("refs/heads/").unwrap_or(&full).to_owned())
        } else {
            None
        };
        let commit = self.rev_parse("HEAD")?;
        match (branch, commit) {
            (Some(name), Some(commit)) => Ok(Head::Branch { name, commit }),
            (Some(branch), None) => Ok(Head::Unborn { branch }),
            (None, Some(commit)) => Ok(Head::Detached { commit }),
            (None, None) => Err(call.unexpected("HEAD is neither a branch nor a commit")),
        }
    }

    /// Tracked files with uncommitted changes (staged or not), repository-relative.
    /// Untracked files never count; an empty list means the tracked tree is clean.
    pub fn tracked_changes(&self) -> Result<Vec<String>, GitError> {
        Ok(self
            .status(false)?
            .into_iter()
            .map(|entry| entry.path)
            .collect())
    }

    /// Every path with uncommitted changes, untracked files included (ignored ones not),
    /// repository-relative: an empty list means the working tree holds nothing new.
    pub fn uncommitted_paths(&self) -> Result<Vec<String>, GitError> {
        Ok(self
            .status(true)?
            .into_iter()
            .map(|entry| entry.path)
            .collect())
    }

    /// Untracked files (ignored ones not), each named (no folder is collapsed),
    /// repository-relative.
    pub fn untracked_paths(&self) -> Result<Vec<String>, GitError> {
        Ok(self
            .status(true)?
            .into_iter()
            .filter(StatusEntry::untracked)
            .map(|entry| entry.path)
            .collect())
    }

    /// `git status --porcelain -z`, with or without untracked files.
    pub(crate) fn status(&self, untracked: bool) -> Result<Vec<StatusEntry>, GitError> {
        let call = self.read().args([
            "status",
            "--porcelain=v1",
            "-z",
            "--no-renames",
            if untracked {
                "--untracked-files=all"
            } else {
                "--untracked-files=no"
            },
        ]);
        let out = call.run()?;
        let mut entries = Vec::new();
        for record in nul_records(&out.stdout) {
            if record.len() < 4 || record[2] != b' ' {
                return Err(call.unexpected(format!(
                    "status entry {:?}",
                    String::from_utf8_lossy(record)
                )));
            }
            entries.push(StatusEntry {
                index: record[0],
                worktree: record[1],
                path: lossy(&record[3..]),
            });
        }
        Ok(entries)
    }

    /// Paths of the submodules (gitlinks) recorded in the index.
    pub fn submodules(&self) -> Result<Vec<String>, GitError> {
        let out = self.read().args(["ls-files", "-z", "--stage"]).run()?;
        // Each record: "<mode> <oid> <stage>\t<path>".
        Ok(nul_records(&out.stdout)
            .filter(|record| record.starts_with(b"160000 "))
            .filter_map(|record| {
                let tab = memchr::memchr(b'\t', record)?;
                Some(lossy(&record[tab + 1..]))
            })
            .collect())
    }

    /// Whether the repository has submodules.
    pub fn has_submodules(&self) -> Result<bool, GitError> {
        Ok(!self.submodules()?.is_empty())
    }

    /// The commit `rev` names (peeled: a tag gives its commit), or `None` when it names
    /// none.
    pub fn rev_parse(&self, rev: &str) -> Result<Option<Oid>, GitError> {
        let peeled = format!("{rev}^{{commit}}");
        let call = self
            .read()
            .args(["rev-parse", "-q", "--verify", "--end-of-options"])
            .arg(&peeled);
        let out = call.run_accepting(&[0, 1])?;
        if out.code() == Some(1) {
            return Ok(None);
        }
        parse_oid(&call, &out.text()).map(Some)
    }

    /// Like [`Repo::rev_parse`], but a missing commit is [`GitError::UnknownRevision`].
    pub fn resolve(&self, rev: &str) -> Result<Oid, GitError> {
        self.rev_parse(rev)?
            .ok_or_else(|| GitError::UnknownRevision {
                repo: self.root.clone(),
                rev: rev.to_owned(),
            })
    }

    /// Resolve several revisions in one git call (each as written, e.g. `x^{tree}`).
    /// Falls back to one call per revision to name the one that is missing.
    pub(crate) fn resolve_many(&self, revs: &[&str]) -> Result<Vec<Oid>, GitError> {
        self.check_revs(revs)?;
        let call = self.read().arg("rev-parse").args(revs).arg("--");
        let out = call.output()?;
        if out.status.success() {
            let oids: Vec<Oid> = out
                .text()
                .lines()
                .take(revs.len())
                .filter_map(Oid::parse)
                .collect();
            if oids.len() == revs.len() {
                return Ok(oids);
            }
            return Err(call.unexpected(format!("expected {} object ids", revs.len())));
        }
        for rev in revs {
            let single = self
                .read()
                .args(["rev-parse", "-q", "--verify", "--end-of-options", rev])
                .run_accepting(&[0, 1])?;
            if single.code() == Some(1) {
                let name = rev.split("^{").next().unwrap_or(rev);
                return Err(GitError::UnknownRevision {
                    repo: self.root.clone(),
                    rev: name.to_owned(),
                });
            }
        }
        Err(call.failed(&out))
    }

    /// Create branch `name` at `at`. Fails with [`GitError::BranchExists`] (naming the
    /// branch and where it points) when it exists; never moves an existing branch.
    pub fn create_branch(&self, name: &str, at: &Oid) -> Result<(), GitError> {
        self.check_branch_name(name)?;
        let reference = branch_ref(name);
        // One message for every branch, so its writer process is reused (see `batch`).
        match self.update_ref_with(&reference, at, None, "weft: create") {
            Ok(()) => Ok(()),
            Err(GitError::RefMoved {
                found: Some(found), ..
            }) => Err(GitError::BranchExists {
                repo: self.root.clone(),
                branch: name.to_owned(),
                at: found,
            }),
            Err(other) => Err(other),
        }
    }

    /// Delete branch `name` (`git branch -d`, or `-D` when `force`). Without `force`, git
    /// refuses a branch not merged into HEAD (or its upstream). Either way git refuses a
    /// branch checked out in some worktree. A missing branch is
    /// [`GitError::NoSuchBranch`].
    pub fn delete_branch(&self, name: &str, force: bool) -> Result<(), GitError> {
        self.check_branch_name(name)?;
        let call = self
            .call()
            .args(["branch", "-q", if force { "-D" } else { "-d" }, "--", name]);
        let out = call.output()?;
        if out.status.success() {
            return Ok(());
        }
        if !self.branch_exists(name)? {
            return Err(GitError::NoSuchBranch {
                repo: self.root.clone(),
                branch: name.to_owned(),
            });
        }
        Err(call.failed(&out))
    }

    /// Whether branch `name` exists.
    pub fn branch_exists(&self, name: &str) -> Result<bool, GitError> {
        Ok(self.rev_parse(&branch_ref(name))?.is_some())
    }

    /// Compare-and-swap: point `reference` (a full name, `refs/...`) at `new` only if it
    /// currently points at `expected` (`None`: only if it does not exist), with
    /// `git update-ref <ref> <new> <old>`, which is atomic. When the ref is elsewhere the
    /// error is [`GitError::RefMoved`] and the ref is untouched.
    pub fn update_ref_cas(
        &self,
        reference: &str,
        new: &Oid,
        expected: Option<&Oid>,
    ) -> Result<(), GitError> {
        self.update_ref_with(reference, new, expected, "weft: update")
    }

    /// Compare-and-swap delete: remove `reference` only if it points at `expected`
    /// ([`GitError::RefMoved`] otherwise; `found: None` when it does not exist).
    pub fn delete_ref_cas(&self, reference: &str, expected: &Oid) -> Result<(), GitError> {
        self.check_full_ref(reference)?;
        let call = self
            .call()
            .args(["update-ref", "-m", "weft: delete", "-d", "--"])
            .args([reference, expected.as_str()]);
        let out = call.output()?;
        if out.status.success() {
            return Ok(());
        }
        let found = self.ref_target(reference)?;
        if found.as_ref() != Some(expected) {
            return Err(GitError::RefMoved {
                repo: self.root.clone(),
                reference: reference.to_owned(),
                expected: Some(expected.clone()),
                found,
            });
        }
        Err(call.failed(&out))
    }

    pub(crate) fn update_ref_with(
        &self,
        reference: &str,
        new: &Oid,
        expected: Option<&Oid>,
        message: &str,
    ) -> Result<(), GitError> {
        self.check_full_ref(reference)?;
        let command = match expected {
            Some(old) => format!("update {reference} {new} {old}\n"),
            None => format!("create {reference} {new}\n"),
        };
        if self.processes.transaction(self, message, &command) {
            return Ok(());
        }
        // Refused, or the writer failed: the one-shot command gives the answer it always
        // gave (and waits out a lock another git holds).
        let call = self.call().args(["update-ref", "-m", message, "--"]).args([
            reference,
            new.as_str(),
            expected.map_or("", Oid::as_str),
        ]);
        let out = call.output()?;
        if out.status.success() {
            return Ok(());
        }
        // Lock contention was retried by `output`; what is left is a mismatch or a
        // genuine failure. Tell them apart by looking, not by parsing git's prose.
        let found = self.ref_target(reference)?;
        if found.as_ref() != expected {
            return Err(GitError::RefMoved {
                repo: self.root.clone(),
                reference: reference.to_owned(),
                expected: expected.cloned(),
                found,
            });
        }
        Err(call.failed(&out))
    }

    /// The object a ref points at (not peeled), or `None` when it does not exist.
    pub fn ref_target(&self, reference: &str) -> Result<Option<Oid>, GitError> {
        let call = self
            .read()
            .args(["rev-parse", "-q", "--verify", "--end-of-options"])
            .arg(reference);
        let out = call.run_accepting(&[0, 1])?;
        if out.code() == Some(1) {
            return Ok(None);
        }
        parse_oid(&call, &out.text()).map(Some)
    }

    /// Whether commit `ancestor` is an ancestor of (or equal to) `descendant`.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, GitError> {
        self.check_revs(&[ancestor, descendant])?;
        let out = self
            .read()
            .args(["merge-base", "--is-ancestor", ancestor, descendant])
            .run_accepting(&[0, 1])?;
        Ok(out.code() == Some(0))
    }

    /// The `-c` options that give a commit this repository's identity: nothing for the
    /// parts `git config user.name` / `user.email` set, `weft` / `weft@localhost` for the
    /// parts they do not. Looked up once per handle.
    /// Remember a commit this handle wrote (the oldest one remembered is forgotten past
    /// [`WRITTEN_LIMIT`]).
    pub(crate) fn remember_written(&self, object: CommitObject) {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if written.len() == WRITTEN_LIMIT {
            written.pop_front();
        }
        written.push_back(object);
    }

    /// A commit this handle wrote, if it still remembers it.
    pub(crate) fn written(&self, commit: &Oid) -> Option<CommitObject> {
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        written.iter().rev().find(|o| &o.commit == commit).cloned()
    }

    pub(crate) fn identity_config(&self) -> Result<&[OsString], GitError> {
        if let Some(options) = self.identity.get() {
            return Ok(options);
        }
        let out = self
            .read()
            .args(["config", "-z", "--get-regexp", r"^user\.(name|email)$"])
            .run_accepting(&[0, 1])?;
        let mut has_name = false;
        let mut has_email = false;
        for record in nul_records(&out.stdout) {
            let Some(newline) = memchr::memchr(b'\n', record) else {
                continue;
            };
            let value_set = !record[newline + 1..].trim_ascii().is_empty();
            match &record[..newline] {
                b"user.name" => has_name |= value_set,
                b"user.email" => has_email |= value_set,
                _ => {}
            }
        }
        let mut options = Vec::new();
        if !has_name {
            options.push(OsString::from(format!("user.name={FALLBACK_NAME}")));
        }
        if !has_email {
            options.push(OsString::from(format!("user.email={FALLBACK_EMAIL}")));
        }
        Ok(self.identity.get_or_init(|| options))
    }

    pub(crate) fn invalid(&self, name: &str, reason: &'static str) -> GitError {
        GitError::InvalidName {
            repo: self.root.clone(),
            name: name.to_owned(),
            reason,
        }
    }

    /// Refuse revisions git would take for options.
    pub(crate) fn check_revs(&self, revs: &[&str]) -> Result<(), GitError> {
        match revs
            .iter()
            .find(|rev| rev.is_empty() || rev.starts_with('-'))
        {
            Some(rev) => Err(self.invalid(rev, "a revision cannot be empty or start with '-'")),
            None => Ok(()),
        }
    }

    pub(crate) fn check_full_ref(&self, reference: &str) -> Result<(), GitError> {
        if !reference.starts_with("refs/") {
            return Err(self.invalid(reference, "a full ref name (refs/...) is needed here"));
        }
        Ok(())
    }

    pub(crate) fn check_branch_name(&self, name: &str) -> Result<(), GitError> {
        if name.is_empty() || name.starts_with('-') || name.starts_with("refs/") {
            return Err(self.invalid(
                name,
                "a branch name must not be empty, start with '-' or 'refs/'",
            ));
        }
        Ok(())
    }

    /// `path` made absolute: relative paths are taken from the repository root.
    pub(crate) fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.root.join(path)
        }
    }
}

/// One `git status --porcelain=v1` entry.
#[derive(Debug, Clone)]
pub(crate) struct StatusEntry {
    pub index: u8,
    pub worktree: u8,
    pub path: String,
}

impl StatusEntry {
    pub fn untracked(&self) -> bool {
        self.index == b'?'
    }

    pub fn unmerged(&self) -> bool {
        matches!(
            (self.index, self.worktree),
            (b'U', _) | (_, b'U') | (b'A', b'A') | (b'D', b'D')
        )
    }
}

/// The records of NUL-terminated output (the last may lack its NUL).
pub(crate) fn nul_records(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let bytes = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    bytes.split(|&b| b == 0).filter(move |_| !bytes.is_empty())
}

/// A path from git's output as text (non-UTF-8 bytes are replaced).
pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn parse_oid(call: &Call<'_>, text: &str) -> Result<Oid, GitError> {
    Oid::parse(text.trim()).ok_or_else(|| call.unexpected(format!("{text:?} is not an object id")))
}
