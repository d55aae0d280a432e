//! Making a repository for a front end (`weft demo`), so that no front end runs git itself.
//!
//! Git runs through weft-git with the inherited environment: never interactively, with
//! the configured identity or weft's own for whatever is not configured.

use std::path::Path;

use weft_git::Git;

use crate::error::EngineError;
use crate::isolation::git_error;

/// Make the existing folder `root` a git repository whose first commit, with `message`,
/// holds every file in it that git does not ignore. Hooks do not run.
pub fn create(root: &Path, message: &str) -> Result<(), EngineError> {
    create_with(&Git::new(), root, message)
}

fn create_with(git: &Git, root: &Path, message: &str) -> Result<(), EngineError> {
    let repo = git.init(root).map_err(git_error)?;
    repo.commit_all(message, &[] as &[&Path])
        .map_err(git_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_repository_has_one_commit_holding_the_folder() {
        let env = weft_testkit::Hermetic::new();
        let root = env.work();
        fs_err::write(root.join("README.md"), "# demo\n").unwrap();
        let git = Git::new().env_clear().envs(env.vars());
        create_with(&git, &root, "first").unwrap();
        let log = env
            .command("git")
            .args(["log", "--format=%s|%an", "--name-only"])
            .current_dir(&root)
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&log.stdout);
        // The hermetic environment configures no identity: weft's own signs the commit.
        assert_eq!(log.trim_end(), "first|weft\n\nREADME.md", "{log}");
    }

    #[test]
    fn a_missing_folder_is_a_git_error_naming_it() {
        let env = weft_testkit::Hermetic::new();
        let git = Git::new().env_clear().envs(env.vars());
        let missing = env.root().join("missing");
        let error = create_with(&git, &missing, "first").unwrap_err();
        assert!(matches!(error, EngineError::Git(_)), "{error:?}");
        assert!(error.to_string().contains("missing"), "{error}");
    }
}
