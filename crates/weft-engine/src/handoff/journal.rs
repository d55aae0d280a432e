//! The handoff merge's journal: `.weft/handoff-merge.json`, written before the user's
//! checkout is touched and removed once every repository's merge is applied.
//!
//! Crash safety: the file is written whole to a temporary name, synced and renamed over
//! (then the folder is synced), so a reader finds either no journal or a complete one.
//! While it exists, the checkout of some repository may be half-way between its branch's
//! old commit and the merge; the journal names both for each repository
//! ([`weft_git::PreparedMerge`]), which is all it takes to finish
//! ([`weft_git::Repo::apply_merge`]) or undo ([`weft_git::Repo::unapply_merge`]) it. So
//! every command that would touch a checkout or end the run refuses while it exists
//! ([`refuse_if_pending`]); `weft handoff merge` finishes and `--abort` undoes.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use weft_git::PreparedMerge;

use crate::error::EngineError;

/// The journal's file name in the state folder.
pub const FILE: &str = "handoff-merge.json";
pub(crate) const VERSION: u32 = 1;

/// A handoff merge being applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeJournal {
    pub version: u32,
    pub run: String,
    pub integration_branch: String,
    /// When the merge began (milliseconds since the Unix epoch): an `index.lock` at least
    /// this recent was left by the merge's own git, one older by somebody else.
    pub started_ms: u64,
    /// The weft process that wrote it.
    pub pid: u32,
    /// `weft handoff merge --abort` began undoing it: only undoing finishes it now.
    pub aborting: bool,
    /// Every repository of the run, in order.
    pub repos: Vec<JournalRepo>,
}

/// One repository of a journaled merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalRepo {
    /// Its name in a multi-repo workspace; empty for the workspace itself.
    pub name: String,
    pub root: PathBuf,
    /// The merge to apply; `None` when the branch already contained the run's tip.
    pub merge: Option<PreparedMerge>,
}

impl MergeJournal {
    pub fn path(state_dir: &Path) -> PathBuf {
        state_dir.join(FILE)
    }

    /// The journal in `state_dir`, if a merge is being applied.
    pub fn load(state_dir: &Path) -> Result<Option<MergeJournal>, EngineError> {
        let path = MergeJournal::path(state_dir);
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path, e)),
        };
        let journal: MergeJournal = serde_json::from_str(&text).map_err(|e| EngineError::Refused {
            detail: format!(
                "the handoff merge journal {} cannot be read ({e}); a merge may be half-applied in your checkout",
                path.display()
            ),
            hint: "look at `git status`; once your checkout is as you want it, remove the journal file".into(),
        })?;
        if journal.version != VERSION {
            return Err(EngineError::Refused {
                detail: format!(
                    "the handoff merge journal {} is version {}, this weft reads version {VERSION}",
                    path.display(),
                    journal.version
                ),
                hint: "finish the merge with the weft that began it".into(),
            });
        }
        Ok(Some(journal))
    }

    /// Write the journal durably (temporary file, sync, rename, sync the folder).
    pub fn save(&self, state_dir: &Path) -> Result<(), EngineError> {
        let path = MergeJournal::path(state_dir);
        let temporary = state_dir.join(format!("{FILE}.tmp"));
        let text = serde_json::to_vec_pretty(self).map_err(|e| EngineError::Refused {
            detail: format!("cannot encode the handoff merge journal: {e}"),
            hint: "nothing was merged; report this as a bug".into(),
        })?;
        let mut file = fs_err::File::create(&temporary).map_err(|e| io(&temporary, e))?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(|e| io(&temporary, e))?;
        drop(file);
        fs_err::rename(&temporary, &path).map_err(|e| io(&path, e))?;
        sync_folder(state_dir)
    }

    /// Remove the journal (the merge is applied or undone), durably.
    pub fn remove(state_dir: &Path) -> Result<(), EngineError> {
        let path = MergeJournal::path(state_dir);
        match fs_err::remove_file(&path) {
            Ok(()) => sync_folder(state_dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&path, e)),
        }
    }
}

/// Refuse, with the way out, while a handoff merge is journaled: `action` (say "start a
/// run") would touch a checkout the merge may have left half-way, or end its run.
pub fn refuse_if_pending(state_dir: &Path, action: &str) -> Result<(), EngineError> {
    let Some(journal) = MergeJournal::load(state_dir)? else {
        return Ok(());
    };
    let (detail, hint) = if journal.aborting {
        (
            format!(
                "cannot {action}: undoing the handoff merge of run {} was interrupted, so your checkout may be half-way back",
                journal.run
            ),
            "run `weft handoff merge --abort` to finish putting your checkout back as it was"
                .to_owned(),
        )
    } else {
        (
            format!(
                "cannot {action}: the handoff merge of run {} was interrupted while it was writing your checkout",
                journal.run
            ),
            "run `weft handoff merge` to finish the merge, or `weft handoff merge --abort` to put your checkout back as it was".to_owned(),
        )
    };
    Err(EngineError::Refused { detail, hint })
}

fn sync_folder(dir: &Path) -> Result<(), EngineError> {
    fs_err::File::open(dir)
        .and_then(|folder| folder.sync_all())
        .map_err(|e| io(dir, e))
}

fn io(path: &Path, error: std::io::Error) -> EngineError {
    EngineError::Io {
        path: path.display().to_string(),
        error,
    }
}
