//! Run weft the same way on every machine: a fresh HOME, no user or system git config,
//! no colour, UTC.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use fs_err as fs;
use tempfile::TempDir;

/// A temporary root holding a fake HOME and a work folder.
#[derive(Debug)]
pub struct Hermetic {
    root: TempDir,
}

impl Default for Hermetic {
    fn default() -> Self {
        Self::new()
    }
}

impl Hermetic {
    pub fn new() -> Self {
        let root = tempfile::Builder::new()
            .prefix("weft-test-")
            .tempdir()
            .expect("a temporary folder can be created");
        fs::create_dir_all(root.path().join("home")).expect("home can be created");
        fs::create_dir_all(root.path().join("work")).expect("work can be created");
        Hermetic { root }
    }

    /// The fake HOME.
    pub fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// A folder to use as the workspace (not a repository until [`Hermetic::git_init`]).
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Make the work folder a git repository with one commit.
    pub fn git_init(&self) -> &Self {
        crate::TestRepo::init(&self.work(), self);
        self
    }

    /// The variables every hermetic child gets, on top of a cleared environment.
    pub fn vars(&self) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = vec![
            ("HOME".into(), self.home().into()),
            ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("GIT_TERMINAL_PROMPT".into(), "0".into()),
            ("NO_COLOR".into(), "1".into()),
            ("TZ".into(), "UTC".into()),
            ("LANG".into(), "C".into()),
        ];
        if let Some(path) = std::env::var_os("PATH") {
            vars.push(("PATH".into(), path));
        }
        vars
    }

    /// Clear `command`'s environment and give it the hermetic one, run in the work folder.
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command
            .env_clear()
            .envs(self.vars())
            .current_dir(self.work())
    }

    /// A `Command` for `program`, already hermetic.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        self.apply(&mut command);
        command
    }
}
