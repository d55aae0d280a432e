//! Linked worktrees: create (serialized per repository), list, remove, prune.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::repo::branch_ref;
use crate::{GitError, Oid, Repo};

/// One mutex per repository (keyed by its common git folder): worktree creation in this
/// process is serialized per repository.
static CREATION_LOCKS: LazyLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn creation_lock(common_dir: &Path) -> Arc<Mutex<()>> {
    let key = normalize(common_dir);
    let mut locks = CREATION_LOCKS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    locks.entry(key).or_default().clone()
}

/// A worktree weft created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// Absolute path of the worktree's folder.
    pub path: PathBuf,
    /// The branch checked out there (`None`: detached).
    pub branch: Option<String>,
    /// The commit checked out when it was created.
    pub head: Oid,
}

/// One entry of `git worktree list --porcelain -z`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeInfo {
    /// Absolute path, as git recorded it.
    pub path: PathBuf,
    /// The checked-out commit (`None` for a bare entry or an unborn branch).
    pub head: Option<Oid>,
    /// The checked-out branch, short name (`None`: detached or bare).
    pub branch: Option<String>,
    pub bare: bool,
    pub detached: bool,
    /// `Some(reason)` (possibly empty) when the worktree is locked (`git worktree lock`,
    /// or being created).
    pub locked: Option<String>,
    /// `Some(reason)` when git would prune it, typically because its folder was deleted
    /// by hand.
    pub prunable: Option<String>,
}

impl WorktreeInfo {
    /// The worktree's folder is gone (deleted by hand, or by the agent working in it).
    pub fn is_missing(&self) -> bool {
        self.prunable.is_some() || !self.path.exists()
    }
}

impl Repo {
    /// Create branch `branch` at `start_point` and a new worktree at `path` with that
    /// branch checked out. A relative `path` is taken from the repository root; missing
    /// parent folders are created; `path` itself must not exist or be an empty folder.
    ///
    /// Creation is serialized per repository within this process. A worktree previously
    /// registered at `path` whose folder was deleted by hand is pruned first. If the
    /// worktree cannot be created, the branch is deleted again (only if it still points at
    /// `start_point`). A branch that exists is [`GitError::BranchExists`]. Submodules are
    /// not initialized in the new worktree (their folders are empty); the worktree is
    /// usable and `git status` in it is clean.
    pub fn add_worktree(
        &self,
        path: impl AsRef<Path>,
        branch: &str,
        start_point: &Oid,
    ) -> Result<Worktree, GitError> {
        let path = self.absolute(path.as_ref());
        self.check_branch_name(branch)?;
        self.check_new_worktree_path(&path)?;
        let lock = creation_lock(self.common_dir());
        let _serialized = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.create_branch(branch, start_point)?;
        match self.worktree_add(&path, &[], &[OsString::from(branch)]) {
            Ok(()) => Ok(Worktree {
                path: normalize(&path),
                branch: Some(branch.to_owned()),
                head: start_point.clone(),
            }),
            Err(error) => {
                // Best effort: the failure is what the caller needs to see.
                let _ = self.delete_ref_cas(&branch_ref(branch), start_point);
                Err(error)
            }
        }
    }

    /// Create a worktree at `path` with `at` checked out detached (no branch), e.g. a
    /// run's integration checkout for ops tasks. Same path rules as
    /// [`Repo::add_worktree`].
    pub fn add_worktree_detached(
        &self,
        path: impl AsRef<Path>,
        at: &Oid,
    ) -> Result<Worktree, GitError> {
        let path = self.absolute(path.as_ref());
        self.check_new_worktree_path(&path)?;
        let lock = creation_lock(self.common_dir());
        let _serialized = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.worktree_add(&path, &["--detach"], &[OsString::from(at.as_str())])?;
        Ok(Worktree {
            path: normalize(&path),
            branch: None,
            head: at.clone(),
        })
    }

    /// In this working tree, check out `at` detached, discarding local changes to tracked
    /// files (`git checkout --force --detach`). Untracked files stay unless a checked-out
    /// file replaces them. Meant for checkouts nothing is ever committed from, such as a
    /// run's integration checkout.
    pub fn force_checkout_detached(&self, at: &Oid) -> Result<(), GitError> {
        self.call()
            .args(["checkout", "--quiet", "--force", "--detach", at.as_str()])
            .run()?;
        Ok(())
    }

    fn check_new_worktree_path(&self, path: &Path) -> Result<(), GitError> {
        let reason = match std::fs::symlink_metadata(path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(GitError::io(path, error)),
            Ok(metadata) if !metadata.is_dir() => "it exists and is not a folder",
            Ok(_) => {
                let mut entries =
                    std::fs::read_dir(path).map_err(|error| GitError::io(path, error))?;
                if entries.next().is_none() {
                    return Ok(());
                }
                "the folder exists and is not empty"
            }
        };
        Err(GitError::WorktreePath {
            repo: self.root().to_owned(),
            path: path.to_owned(),
            reason: reason.to_owned(),
        })
    }

    /// `git worktree add --quiet <options> <path> <rest>`; a stale registration of the
    /// same path (its folder deleted by hand) is pruned and the command run once more.
    fn worktree_add(
        &self,
        path: &Path,
        options: &[&str],
        rest: &[OsString],
    ) -> Result<(), GitError> {
        let call = self
            .call()
            .args(["worktree", "add", "--quiet"])
            .args(options)
            .arg(path)
            .args(rest);
        let out = call.output()?;
        if out.status.success() {
            return Ok(());
        }
        let stale = self
            .find_worktree(path)?
            .is_some_and(|info| info.is_missing() && info.locked.is_none());
        if !stale {
            return Err(call.failed(&out));
        }
        self.call().args(["worktree", "prune"]).run()?;
        call.run()?;
        Ok(())
    }

    /// Remove the worktree at `path` (`git worktree remove`; `force` also discards its
    /// uncommitted changes and untracked files — without it git refuses a worktree that
    /// has any). A worktree whose folder is already gone is unregistered; a path that is
    /// not (or no longer) a registered worktree and does not exist is not an error, so
    /// removing twice is fine. A locked worktree is waited for up to the handle's lock
    /// patience, then [`GitError::Locked`] naming its `locked` file. The branch is kept:
    /// see [`Repo::delete_branch`].
    pub fn remove_worktree(&self, path: impl AsRef<Path>, force: bool) -> Result<(), GitError> {
        let path = self.absolute(path.as_ref());
        let mut call = self.call().args(["worktree", "remove"]);
        if force {
            call = call.arg("--force");
        }
        let call = call.arg(&path);
        let start = Instant::now();
        let mut attempts = 0u32;
        let mut backoff = Duration::from_millis(10);
        let mut cleared = false;
        loop {
            let out = call.output()?;
            attempts += 1;
            if out.status.success() {
                return Ok(());
            }
            let Some(info) = self.find_worktree(&path)? else {
                if path.exists() {
                    return Err(GitError::WorktreePath {
                        repo: self.root().to_owned(),
                        path,
                        reason: "it is not a worktree of this repository".to_owned(),
                    });
                }
                // Already gone: removing twice is fine.
                return Ok(());
            };
            if force
                && !cleared
                && self.clear_interrupted_removal(&path, &info.path, &out.stderr)?
            {
                // What is left is a record whose folder is gone, which git removes.
                cleared = true;
                continue;
            }
            // Refused for a lock that has gone since: try again at once.
            let lock_refused = memchr::memmem::find(&out.stderr, b"locked working tree").is_some();
            let Some(reason) = info.locked else {
                if lock_refused && start.elapsed() < self.git.lock_wait_duration() {
                    // Not a busy loop: each round is two git processes.
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                return Err(call.failed(&out));
            };
            let waited = start.elapsed();
            if waited >= self.git.lock_wait_duration() {
                let lock = self
                    .admin_dir_of(&info.path)
                    .map(|dir| dir.join("locked"))
                    .unwrap_or_else(|| self.common_dir().join("worktrees"));
                return Err(GitError::Locked {
                    repo: self.root().to_owned(),
                    lock,
                    command: call.command_line(),
                    attempts,
                    waited,
                    stderr: format!("the worktree is locked: {reason}"),
                });
            }
            std::thread::sleep(backoff.min(self.git.lock_wait_duration() - waited));
            backoff = (backoff * 2).min(Duration::from_millis(100));
        }
    }

    /// Delete what is left of the folder of the linked worktree at `path` when an
    /// earlier `git worktree remove` began and did not end (`true` when it did so).
    ///
    /// Why: git deletes a worktree's files, its `.git` file among them, before it deletes
    /// the worktree's record in the repository; killed in between (a `weft handoff
    /// merge` killed as it cleans up: crash campaign, seed 1796416521076727039), it
    /// leaves a record whose folder has no `.git`, and every later `git worktree remove`
    /// refuses it ("validation failed, cannot remove working tree"), so the cleanup could
    /// never finish. Only then, and only for a linked worktree (one with a record under
    /// the common `worktrees/` folder), weft deletes the rest of the folder, as git would
    /// have; the caller asked for a forced removal, which discards whatever the folder
    /// held. The record is then git's to remove, as for any folder deleted by hand.
    fn clear_interrupted_removal(
        &self,
        path: &Path,
        recorded: &Path,
        stderr: &[u8],
    ) -> Result<bool, GitError> {
        if memchr::memmem::find(stderr, b"validation failed").is_none()
            || path.join(".git").exists()
            || self.admin_dir_of(recorded).is_none()
        {
            return Ok(false);
        }
        match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(GitError::io(path, e)),
            _ => Ok(true),
        }
    }

    /// Every worktree of the repository, the main one first
    /// (`git worktree list --porcelain -z`).
    pub fn list_worktrees(&self) -> Result<Vec<WorktreeInfo>, GitError> {
        let call = self.read().args(["worktree", "list", "--porcelain", "-z"]);
        let out = call.run()?;
        let mut list = Vec::new();
        let mut current: Option<WorktreeInfo> = None;
        for field in out.stdout.split(|&b| b == 0) {
            if field.is_empty() {
                list.extend(current.take());
                continue;
            }
            let (key, value) = match memchr::memchr(b' ', field) {
                Some(space) => (&field[..space], Some(&field[space + 1..])),
                None => (field, None),
            };
            if key == b"worktree" {
                list.extend(current.take());
                current = Some(WorktreeInfo {
                    path: PathBuf::from(OsStr::from_bytes(value.unwrap_or_default())),
                    head: None,
                    branch: None,
                    bare: false,
                    detached: false,
                    locked: None,
                    prunable: None,
                });
                continue;
            }
            let Some(info) = current.as_mut() else {
                return Err(call.unexpected(format!(
                    "{:?} before any worktree line",
                    String::from_utf8_lossy(field)
                )));
            };
            let text = value.map(|v| String::from_utf8_lossy(v).into_owned());
            match key {
                b"HEAD" => info.head = text.as_deref().and_then(Oid::parse),
                b"branch" => {
                    info.branch = text.map(|full| {
                        full.strip_prefix("refs/heads/")
                            .map(str::to_owned)
                            .unwrap_or(full)
                    });
                }
                b"bare" => info.bare = true,
                b"detached" => info.detached = true,
                b"locked" => info.locked = Some(text.unwrap_or_default()),
                b"prunable" => info.prunable = Some(text.unwrap_or_default()),
                _ => {}
            }
        }
        list.extend(current);
        Ok(list)
    }

    /// The registered worktree at `path`, if any.
    pub fn find_worktree(&self, path: impl AsRef<Path>) -> Result<Option<WorktreeInfo>, GitError> {
        let wanted = normalize(&self.absolute(path.as_ref()));
        Ok(self
            .list_worktrees()?
            .into_iter()
            .find(|info| normalize(&info.path) == wanted))
    }

    /// Unregister every worktree whose folder is gone (`git worktree prune`); returns the
    /// paths that were pruned. Locked worktrees are never pruned.
    pub fn prune_worktrees(&self) -> Result<Vec<PathBuf>, GitError> {
        let before = self.list_worktrees()?;
        self.call().args(["worktree", "prune"]).run()?;
        let after: Vec<PathBuf> = self
            .list_worktrees()?
            .into_iter()
            .map(|info| info.path)
            .collect();
        Ok(before
            .into_iter()
            .map(|info| info.path)
            .filter(|path| !after.contains(path))
            .collect())
    }

    /// The administrative folder (`<common>/worktrees/<id>`) of the worktree at `path`.
    pub(crate) fn admin_dir_of(&self, path: &Path) -> Option<PathBuf> {
        let wanted = normalize(path);
        let entries = std::fs::read_dir(self.common_dir().join("worktrees")).ok()?;
        entries.flatten().map(|entry| entry.path()).find(|dir| {
            std::fs::read(dir.join("gitdir")).is_ok_and(|bytes| {
                let gitfile = PathBuf::from(OsStr::from_bytes(bytes.trim_ascii_end()));
                gitfile
                    .parent()
                    .is_some_and(|parent| normalize(parent) == wanted)
            })
        })
    }
}

/// A path in a comparable form: canonical when it (or its parent) exists.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => normalize(parent).join(name),
        _ => path.to_owned(),
    }
}
