//! Finding the workspace the way git finds a repository.

use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Name of weft's state folder inside a workspace.
pub const STATE_DIR: &str = ".weft";
/// Project settings file at the workspace root.
pub const PROJECT_SETTINGS: &str = "weft.toml";

#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
}

impl Workspace {
    /// The nearest folder, from `start` upwards, holding `.weft/`, `weft.toml` or `.git`.
    pub fn discover(start: &Path) -> Result<Workspace, CliError> {
        for dir in start.ancestors() {
            let marks = [STATE_DIR, PROJECT_SETTINGS, ".git"];
            if marks.iter().any(|mark| dir.join(mark).exists()) {
                return Ok(Workspace {
                    root: dir.to_owned(),
                });
            }
        }
        Err(CliError::new(format!(
            "{} is not inside a git repository or a weft workspace",
            start.display()
        ))
        .hint("run weft inside a repository, or `weft init` to make this folder a workspace"))
    }

    /// Use `root` as it is (from `--workspace` or `weft init`).
    pub fn at(root: &Path) -> Result<Workspace, CliError> {
        if !root.is_dir() {
            return Err(CliError::new(format!(
                "the workspace {} is not a folder",
                root.display()
            )));
        }
        Ok(Workspace {
            root: root.to_owned(),
        })
    }

    pub fn state_dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    pub fn settings_file(&self) -> PathBuf {
        self.root.join(PROJECT_SETTINGS)
    }
}
