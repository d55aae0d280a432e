use std::path::PathBuf;
use std::time::Duration;

use rusqlite::ErrorCode;
use thiserror::Error;
use weft_core::{EditError, Hint};

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("weft's state folder {path} is a file, not a folder")]
    StateDirBlocked { path: PathBuf },
    /// A file-system operation on weft's state folder failed; the OS error is the source
    /// (shown as `caused by:`), not part of the message.
    #[error("cannot use {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "database {path} was written by a newer weft (schema version {found}; this weft knows up to {known})"
    )]
    TooNew {
        path: PathBuf,
        found: u32,
        known: u32,
    },
    #[error("database {path} is corrupt or not a weft database: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error("database {path} is busy: another weft process held it for longer than {waited_ms} ms")]
    Busy { path: PathBuf, waited_ms: u128 },
    #[error("database {path} cannot be written: {detail}")]
    ReadOnly { path: PathBuf, detail: String },
    /// SQLite failed in a way weft has no better words for; its error is the source.
    #[error("database {path} failed")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("plan {plan} in {path} is damaged: {detail}")]
    Damaged {
        path: PathBuf,
        plan: String,
        detail: String,
    },
    #[error("no plan {reference:?} in this workspace")]
    UnknownPlan { reference: String, known: String },
    #[error("{reference:?} matches more than one plan: {candidates}")]
    AmbiguousPlan {
        reference: String,
        candidates: String,
    },
    #[error("plan {plan} has no task {task:?}")]
    UnknownTask { plan: String, task: String },
    #[error("run {run} of this plan is being executed by another weft process (pid {pid})")]
    RunHeld { run: String, pid: u32 },
    #[error("plan {plan} was not changed: {detail}")]
    Stale { plan: String, detail: String },
    #[error(transparent)]
    Edit(#[from] EditError),
}

impl StoreError {
    pub(crate) fn from_sqlite(
        path: &std::path::Path,
        waited: Duration,
        error: rusqlite::Error,
    ) -> Self {
        let path = path.to_owned();
        let code = match &error {
            rusqlite::Error::SqliteFailure(failure, _) => Some(failure.code),
            _ => None,
        };
        match code {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy {
                path,
                waited_ms: waited.as_millis(),
            },
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
                path,
                detail: error.to_string(),
            },
            Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
                StoreError::ReadOnly {
                    path,
                    detail: error.to_string(),
                }
            }
            _ => StoreError::Sqlite {
                path,
                source: error,
            },
        }
    }
}

impl Hint for StoreError {
    fn hint(&self) -> Option<String> {
        match self {
            StoreError::StateDirBlocked { path } => Some(format!(
                "move or remove the file {} so weft can create its folder there",
                path.display()
            )),
            StoreError::Io { .. } | StoreError::ReadOnly { .. } => Some(
                "check that the workspace's .weft folder exists and is writable by you".into(),
            ),
            StoreError::TooNew { .. } => {
                Some("use the newer weft that wrote it, or upgrade this one".into())
            }
            StoreError::Corrupt { path, .. } | StoreError::Damaged { path, .. } => Some(format!(
                "weft never replaces it on its own: move {} aside to start with an empty store, or restore it from a backup",
                path.display()
            )),
            StoreError::Busy { .. } => Some(
                "wait for the other weft command to finish and try again (the wait is set by busy_timeout_ms)"
                    .into(),
            ),
            StoreError::Sqlite { .. } => None,
            StoreError::UnknownPlan { known, .. } if known.is_empty() => {
                Some("`weft sessions list` shows the plans of this workspace".into())
            }
            StoreError::UnknownPlan { known, .. } => Some(format!("plans here: {known}")),
            StoreError::AmbiguousPlan { .. } => Some("type more of the id".into()),
            StoreError::Stale { .. } => Some("nothing was written; run the command again".into()),
            StoreError::UnknownTask { .. } => {
                Some("`weft status` lists the tasks of the plan".into())
            }
            StoreError::RunHeld { pid, .. } => Some(format!(
                "follow it with `weft status --watch`, or stop it with `weft stop` (or end process {pid})"
            )),
            StoreError::Edit(edit) => edit.hint(),
        }
    }
}
