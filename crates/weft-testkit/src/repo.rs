//! Real git repositories in temporary folders.

use std::path::{Path, PathBuf};
use std::process::Command;

use fs_err as fs;

use crate::Hermetic;

/// A git repository the tests drive with the real git CLI.
#[derive(Debug)]
pub struct TestRepo {
    pub path: PathBuf,
}

impl TestRepo {
    /// `git init` at `path` (created if needed) on branch `main`, with one commit.
    pub fn init(path: &Path, env: &Hermetic) -> TestRepo {
        fs::create_dir_all(path).expect("the repository folder can be created");
        let repo = TestRepo {
            path: path.to_owned(),
        };
        repo.git(env, &["init", "-q", "-b", "main"]);
        repo.write("README.md", "# test repository\n");
        repo.commit_all(env, "initial commit");
        repo
    }

    pub fn write(&self, relative: &str, contents: &str) {
        let path = self.path.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("parent folders can be created");
        }
        fs::write(path, contents).expect("the file can be written");
    }

    pub fn commit_all(&self, env: &Hermetic, message: &str) {
        self.git(env, &["add", "-A"]);
        self.git(env, &["commit", "-q", "-m", message]);
    }

    /// Run git here with a fixed identity; panics with git's output on failure.
    pub fn git(&self, env: &Hermetic, args: &[&str]) -> String {
        let output = env
            .apply(&mut Command::new("git"))
            .current_dir(&self.path)
            .args([
                "-c",
                "user.name=weft test",
                "-c",
                "user.email=test@weft.invalid",
            ])
            .args(args)
            .output()
            .expect("git can be started");
        assert!(
            output.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}
