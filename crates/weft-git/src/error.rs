use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;

use crate::Oid;

/// Everything that can go wrong when weft drives git.
///
/// Every variant that comes from running git names the repository (`repo`: the folder git
/// ran in). [`GitError::Command`] and [`GitError::Locked`] also carry the full command
/// line, how git exited and its standard error (bounded to a few KiB).
#[derive(Debug, Error)]
pub enum GitError {
    /// The git program could not be started at all (usually: not installed or not on
    /// `PATH`).
    ///
    /// The OS error is part of the message and deliberately not a `source()`: git errors
    /// are often kept as one line (a verdict's reason, a landing detail), and a front end
    /// that prints the source chain would otherwise say it twice.
    #[error("cannot run `{program}`: {error}")]
    Spawn {
        program: String,
        error: std::io::Error,
    },
    /// A file-system operation weft did itself (not through git) failed (the OS error is
    /// in the message, as for [`GitError::Spawn`]).
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The folder is not inside any git repository git will open (`detail`: git's
    /// words, which also tell "dubious ownership" refusals apart).
    #[error("{path} is not in a git repository ({detail})")]
    NotARepository { path: PathBuf, detail: String },
    /// The folder belongs to a repository but not to a working tree (a bare repository, or
    /// a folder inside `.git`).
    #[error(
        "{path} is in a git repository without a working tree (a bare repository, or a folder inside .git)"
    )]
    NoWorkTree { path: PathBuf },
    /// The installed git is older than weft needs.
    #[error("git {found} is too old: weft needs git {needed} or newer")]
    TooOld { found: String, needed: String },
    /// A git command failed.
    #[error("in {repo}: `{command}` failed ({status}): {stderr}")]
    Command {
        repo: PathBuf,
        command: String,
        /// `exit code N` or `killed by signal N`.
        status: String,
        /// The exit code, when git exited (rather than being killed).
        code: Option<i32>,
        /// Git's standard error, trimmed and bounded.
        stderr: String,
    },
    /// A git command succeeded but printed something weft cannot read.
    #[error("in {repo}: `{command}` printed something unexpected: {detail}")]
    UnexpectedOutput {
        repo: PathBuf,
        command: String,
        detail: String,
    },
    /// A lock file was still there after weft retried for a while: another git process
    /// holds it, or one that died left it behind.
    #[error(
        "in {repo}: {lock} exists: another git process holds it, or one that crashed left it behind \
         (gave up after {attempts} attempts over {} ms; if no git process is running, remove the file). \
         `{command}`: {stderr}",
        waited.as_millis()
    )]
    Locked {
        repo: PathBuf,
        /// The lock file (`index.lock`, `<ref>.lock`, or a worktree's `locked` file).
        lock: PathBuf,
        command: String,
        attempts: u32,
        waited: Duration,
        stderr: String,
    },
    /// A branch that weft was asked to create already exists.
    #[error("in {repo}: branch {branch} already exists (at {at})")]
    BranchExists {
        repo: PathBuf,
        branch: String,
        at: Oid,
    },
    /// A branch weft was asked to use does not exist.
    #[error("in {repo}: there is no branch {branch}")]
    NoSuchBranch { repo: PathBuf, branch: String },
    /// A revision does not name a commit.
    #[error("in {repo}: {rev} does not name a commit")]
    UnknownRevision { repo: PathBuf, rev: String },
    /// A compare-and-swap ref update found the ref somewhere other than expected; the ref
    /// was not changed.
    #[error(
        "in {repo}: {reference} moved: expected {}, found {}; it was left as it is",
        describe(.expected.as_ref()),
        describe(.found.as_ref())
    )]
    RefMoved {
        repo: PathBuf,
        reference: String,
        /// What the caller expected (`None`: that the ref does not exist).
        expected: Option<Oid>,
        /// Where the ref is now (`None`: it does not exist).
        found: Option<Oid>,
    },
    /// A ref or branch name weft refuses to pass to git.
    #[error("in {repo}: {name:?} cannot be used: {reason}")]
    InvalidName {
        repo: PathBuf,
        name: String,
        reason: &'static str,
    },
    /// A worktree cannot be created at the requested path.
    #[error("in {repo}: cannot create a worktree at {path}: {reason}")]
    WorktreePath {
        repo: PathBuf,
        path: PathBuf,
        reason: String,
    },
    /// [`crate::Repo::merge_into_checked_out`] refused because its preflight failed;
    /// nothing was changed.
    #[error("in {repo}: {branch} was not merged, nothing was changed: {}", .problems.join("; "))]
    PreflightFailed {
        repo: PathBuf,
        branch: String,
        problems: Vec<String>,
    },
}

fn describe(oid: Option<&Oid>) -> String {
    match oid {
        Some(oid) => oid.to_string(),
        None => "no ref".to_owned(),
    }
}

impl weft_core::Hint for GitError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            GitError::Spawn { .. } => "install git and make sure it is on PATH".into(),
            GitError::Io { .. } => "check that the folder exists and is writable by you".into(),
            GitError::NotARepository { .. } | GitError::NoWorkTree { .. } => {
                "run weft in a git checkout (`git init` makes one), or run with --without-isolation"
                    .into()
            }
            GitError::TooOld { needed, .. } => format!("install git {needed} or newer"),
            GitError::Locked { lock, .. } => format!(
                "wait for the other git process; if none is running, remove {}",
                lock.display()
            ),
            GitError::BranchExists { branch, .. } => {
                format!("delete or rename the branch {branch}, or pick another name")
            }
            GitError::NoSuchBranch { .. } | GitError::UnknownRevision { .. } => {
                "`git branch --all` lists the branches of the repository".into()
            }
            GitError::RefMoved { .. } => {
                "another process moved it meanwhile; run the command again".into()
            }
            GitError::PreflightFailed { .. } => {
                "fix each problem named and run the command again; nothing was changed".into()
            }
            GitError::Command { .. }
            | GitError::UnexpectedOutput { .. }
            | GitError::InvalidName { .. }
            | GitError::WorktreePath { .. } => return None,
        })
    }
}

impl GitError {
    /// The repository (or folder) the error is about, when there is one.
    pub fn repo(&self) -> Option<&Path> {
        match self {
            GitError::Spawn { .. } | GitError::TooOld { .. } => None,
            GitError::Io { path, .. }
            | GitError::NotARepository { path, .. }
            | GitError::NoWorkTree { path } => Some(path),
            GitError::Command { repo, .. }
            | GitError::UnexpectedOutput { repo, .. }
            | GitError::Locked { repo, .. }
            | GitError::BranchExists { repo, .. }
            | GitError::NoSuchBranch { repo, .. }
            | GitError::UnknownRevision { repo, .. }
            | GitError::RefMoved { repo, .. }
            | GitError::InvalidName { repo, .. }
            | GitError::WorktreePath { repo, .. }
            | GitError::PreflightFailed { repo, .. } => Some(repo),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, error: std::io::Error) -> GitError {
        GitError::Io {
            path: path.into(),
            error,
        }
    }
}
