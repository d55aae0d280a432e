//! Helpers shared by the tests: a hermetic repository and a weft-git handle on it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fs_err as fs;
use weft_git::{Git, Oid, Repo};
use weft_testkit::{Hermetic, TestRepo};

/// Lock patience in tests: long enough to see retries, short enough to keep tests fast.
pub const TEST_LOCK_WAIT: Duration = Duration::from_millis(300);

/// A hermetic environment holding a repository on `main` with one commit (`README.md`).
#[derive(Debug)]
pub struct Fixture {
    pub env: Hermetic,
    pub repo: TestRepo,
}

impl Fixture {
    pub fn new() -> Fixture {
        let env = Hermetic::new();
        let repo = TestRepo::init(&env.work(), &env);
        Fixture { env, repo }
    }

    /// The weft-git handle with the hermetic environment.
    pub fn git(&self) -> Git {
        git_for(&self.env)
    }

    pub fn open(&self) -> Repo {
        self.git()
            .open(&self.repo.path)
            .expect("the fixture repository opens")
    }

    pub fn path(&self) -> &Path {
        &self.repo.path
    }

    /// Run git in the repository (fixed test identity); panics on failure.
    pub fn run(&self, args: &[&str]) -> String {
        self.repo.git(&self.env, args)
    }

    /// Run git in `dir` (fixed test identity); panics on failure.
    pub fn run_in(&self, dir: &Path, args: &[&str]) -> String {
        TestRepo {
            path: dir.to_owned(),
        }
        .git(&self.env, args)
    }

    /// Run git in `dir` and return (exit code, stdout, stderr), whatever happens.
    pub fn try_in(&self, dir: &Path, args: &[&str]) -> (i32, String, String) {
        let output = self
            .env
            .command("git")
            .current_dir(dir)
            .args([
                "-c",
                "user.name=weft test",
                "-c",
                "user.email=test@weft.invalid",
            ])
            .args(args)
            .output()
            .expect("git starts");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    pub fn write(&self, relative: &str, contents: &str) {
        self.repo.write(relative, contents);
    }

    pub fn read(&self, relative: &str) -> String {
        fs::read_to_string(self.repo.path.join(relative)).expect("the file reads")
    }

    pub fn oid(&self, rev: &str) -> Oid {
        self.run(&["rev-parse", &format!("{rev}^{{commit}}")])
            .trim()
            .parse()
            .expect("an object id")
    }

    /// The commit `main` is at.
    pub fn main(&self) -> Oid {
        self.oid("main")
    }

    /// Make a commit on a new branch `branch` cut from `from`, writing `files` (a `None`
    /// content deletes the file); HEAD returns to where it was. Returns the new tip.
    pub fn commit_on(&self, branch: &str, from: &Oid, files: &[(&str, Option<&str>)]) -> Oid {
        let head = self.run(&["symbolic-ref", "--short", "HEAD"]);
        self.run(&["checkout", "-q", "-b", branch, from.as_str()]);
        self.apply(files);
        self.run(&["commit", "-q", "-m", &format!("work on {branch}")]);
        let tip = self.oid("HEAD");
        self.run(&["checkout", "-q", head.trim()]);
        tip
    }

    /// Commit `files` on the branch checked out.
    pub fn commit_here(&self, files: &[(&str, Option<&str>)], message: &str) -> Oid {
        self.apply(files);
        self.run(&["commit", "-q", "-m", message]);
        self.oid("HEAD")
    }

    fn apply(&self, files: &[(&str, Option<&str>)]) {
        for (path, contents) in files {
            match contents {
                Some(contents) => {
                    self.write(path, contents);
                    self.run(&["add", "--", path]);
                }
                None => {
                    self.run(&["rm", "-q", "--", path]);
                }
            }
        }
    }

    /// Paths in a commit's tree.
    pub fn tree_paths(&self, rev: &str) -> Vec<String> {
        self.run(&["ls-tree", "-r", "-z", "--name-only", rev])
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// A file's content in a commit.
    pub fn show(&self, rev: &str, path: &str) -> String {
        self.run(&["show", &format!("{rev}:{path}")])
    }

    /// A commit's parents.
    pub fn parents(&self, rev: &str) -> Vec<Oid> {
        self.run(&["rev-list", "--parents", "-n", "1", rev])
            .split_whitespace()
            .skip(1)
            .map(|p| p.parse().expect("an object id"))
            .collect()
    }

    /// A folder for worktrees, outside the repository.
    pub fn worktrees_dir(&self) -> PathBuf {
        let dir = self.env.root().join("worktrees");
        fs::create_dir_all(&dir).expect("the folder can be created");
        dir
    }

    /// A separate repository in the hermetic root (for submodules).
    pub fn other_repo(&self, name: &str) -> TestRepo {
        TestRepo::init(&self.env.root().join(name), &self.env)
    }
}

/// The weft-git handle for a hermetic environment.
pub fn git_for(env: &Hermetic) -> Git {
    Git::new()
        .env_clear()
        .envs(env.vars())
        .lock_wait(TEST_LOCK_WAIT)
}

/// Two lines of three: a base file whose middle line two branches can fight over.
pub const BASE_TEXT: &str = "one\ntwo\nthree\n";

/// A script `<root>/<name>` that runs the shell line `prelude`, then the real git with its
/// arguments: a git that logs, or misbehaves once, for tests to start as their git.
pub fn wrapped_git(fx: &Fixture, name: &str, prelude: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .expect("sh starts")
            .stdout,
    )
    .expect("a path");
    let wrapper = fx.env.root().join(name);
    fs::write(
        &wrapper,
        format!("#!/bin/sh\n{prelude}\nexec '{}' \"$@\"\n", real.trim()),
    )
    .expect("the script is written");
    fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .expect("the script is made executable");
    wrapper
}
